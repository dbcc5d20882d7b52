/**
 * A real terminal for tests: crab runs inside a tmux session on a private tmux
 * server; tests type with `send-keys` and read the screen with `capture-pane`.
 *
 * Each `capture-pane` is a tmux client process, and a hundred tests wait on their
 * screens side by side: a wait reads the screen again only once the program wrote
 * something, which the pane's output copied to a file (`pipe-pane`) tells without a
 * process, and at least once a second besides.
 *
 * @module
 */

/** One tmux session running one command. */
export interface Terminal {
  /** Types literal text (no key names interpreted). */
  type(text: string): Promise<void>;
  /** Sends tmux key names, e.g. `Enter`, `C-c`, `Up`. */
  keys(...names: string[]): Promise<void>;
  /** Pastes `text` as a bracketed paste (when the program asked for one), as a terminal does. */
  paste(text: string): Promise<void>;
  /** The visible screen plus scrollback, as plain text. */
  screen(): Promise<string>;
  /** Waits until `pattern` appears on the screen (bounded); returns the screen. */
  waitFor(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  /** True while the command runs. */
  alive(): Promise<boolean>;
  /** The pid of the command (the pane's process). */
  pid(): Promise<number>;
  [Symbol.asyncDispose](): Promise<void>;
}

async function tmux(socket: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("tmux", {
    args: ["-L", socket, "-f", "/dev/null", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`tmux ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * Whether process `pid` exists and is not a zombie. Read through `cat`: Deno reads
 * another process's `/proc` entry only with every permission, and the suite runs
 * with named ones.
 */
function running(pid: number): boolean {
  const out = new Deno.Command("cat", {
    args: [`/proc/${pid}/stat`],
    stdout: "piped",
    stderr: "null",
  })
    .outputSync();
  return out.success && !/\) Z /.test(new TextDecoder().decode(out.stdout));
}

/** Starts `argv` in a fresh tmux server (size `cols`×`rows`) with exactly `env`. */
export async function terminal(
  argv: string[],
  opts: { env: Record<string, string>; cwd: string; cols?: number; rows?: number },
): Promise<Terminal> {
  const socket = `crab-test-${crypto.randomUUID().slice(0, 8)}`;
  const envPrefix = Object.entries({ TERM: "xterm-256color", ...opts.env })
    .map(([k, v]) => `${k}=${shellQuote(v)}`).join(" ");
  const command = `cd ${shellQuote(opts.cwd)} && exec env -i ${envPrefix} ${
    argv.map(shellQuote).join(" ")
  }`;
  await tmux(
    socket,
    "new-session",
    "-d",
    "-s",
    "t",
    "-x",
    String(opts.cols ?? 120),
    "-y",
    String(opts.rows ?? 40),
    command,
  );
  await tmux(socket, "set-option", "-t", "t", "remain-on-exit", "on");
  await tmux(socket, "set-option", "-t", "t", "history-limit", "5000");
  // What the program writes, copied: its size grows after the server has drawn it.
  const copy = Deno.makeTempFileSync({ prefix: "crab-tmux-" });
  await tmux(socket, "pipe-pane", "-O", "-t", "t", `cat >> ${shellQuote(copy)}`);
  const written = () => {
    try {
      return Deno.statSync(copy).size;
    } catch {
      return -1;
    }
  };
  const screen = () => tmux(socket, "capture-pane", "-p", "-J", "-S", "-5000", "-t", "t");
  return {
    type: async (text) => {
      await tmux(socket, "send-keys", "-t", "t", "-l", text);
    },
    keys: async (...names) => {
      await tmux(socket, "send-keys", "-t", "t", ...names);
    },
    paste: async (text) => {
      await tmux(socket, "set-buffer", "-b", "p", "--", text);
      await tmux(socket, "paste-buffer", "-p", "-d", "-b", "p", "-t", "t");
    },
    screen,
    async waitFor(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let last = "";
      let seen = Number.NaN;
      let readAt = 0;
      while (Date.now() < deadline) {
        // The screen changes when the program writes; once a second it is read regardless.
        const size = written();
        if (size !== seen || Date.now() - readAt >= 1000) {
          seen = size;
          readAt = Date.now();
          last = await screen();
          if (typeof pattern === "string" ? last.includes(pattern) : pattern.test(last)) {
            return last;
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`Timed out waiting for ${pattern} on the screen:\n${last}`);
    },
    async alive() {
      const dead = await tmux(socket, "display-message", "-p", "-t", "t", "#{pane_dead}");
      return dead.trim() === "0";
    },
    async pid() {
      return Number(await tmux(socket, "display-message", "-p", "-t", "t", "#{pane_pid}"));
    },
    async [Symbol.asyncDispose]() {
      // The program gets SIGHUP and may still write its files as it exits: wait for it
      // (at most 15 s) before the caller removes them.
      const pid = await tmux(socket, "display-message", "-p", "-t", "t", "#{pane_pid}")
        .then((p) => Number(p), () => 0);
      await tmux(socket, "kill-server").catch(() => {});
      for (let i = 0; pid > 0 && i < 300 && running(pid); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      try {
        Deno.removeSync(copy);
      } catch {
        // already gone
      }
    },
  };
}

/**
 * crab's interactive mode in a terminal, run like the `crab` task (full preset
 * flags) in sandbox `s`, with `args` after the entry point and `env` added.
 */
export async function crabTerminal(
  s: { ws: string; env: Record<string, string> },
  args: string[],
  env: Record<string, string> = {},
): Promise<Terminal> {
  const { crabArgs } = await import("./cli.ts");
  return await terminal([Deno.execPath(), ...crabArgs(), ...args], {
    env: { ...s.env, ...env },
    cwd: s.ws,
  });
}

/**
 * crab's interactive mode in a terminal against the fake model `fake` (Anthropic
 * wire format), model `fake-model` unless `model` says otherwise, `args` after.
 */
export function replAgainst(
  s: { ws: string; env: Record<string, string> },
  fake: { baseUrlFor(format: "anthropic"): string },
  args: string[] = [],
  model = "fake-model",
): Promise<Terminal> {
  return crabTerminal(
    s,
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      model,
      ...args,
    ],
    { ANTHROPIC_API_KEY: "test-key", NO_COLOR: "1" },
  );
}

/** Waits for crab's prompt, types `text` and presses Enter. */
export async function submit(t: Terminal, text: string): Promise<void> {
  await t.waitFor(/› $/m);
  await t.type(text);
  await t.keys("Enter");
}

/**
 * An approval prompt drawn whole: `header` (the `⚠ tool — …` line) and, below
 * it, the `allow? …: ` question that ends it. A screen caught between the two
 * has only half the prompt.
 */
export function promptAfter(header: string): RegExp {
  return new RegExp(
    `${header.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[\\s\\S]*allow\\? [^\\n]*: $`,
    "m",
  );
}
