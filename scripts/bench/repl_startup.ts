/**
 * REPL start-up: time from spawning `crab` in a real terminal (a pty from
 * `script`) until its prompt is drawn, against the fake model with no MCP
 * servers and with one reference MCP server (the prompt does not wait for it),
 * next to an empty `deno run` with the same flags that prints one line (the
 * floor). Target: crab ≤ 250 ms.
 *
 * Then Ctrl-C during a long bash call: the time from the key to the REPL's
 * `⏹ interrupted`, the prompt being back, beside the start-up above. Target:
 * ≤ 1000 ms.
 *
 * @module
 */

import { join } from "node:path";
import { startFakeModel } from "../../tests/support/fake_model.ts";
import { pinned, RUN_CACHED } from "../../tests/support/mcp_servers.ts";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { reportRow } from "./_table.ts";

const RUNS = Number(Deno.args[0] ?? 10);
const TARGET_MS = 250;
const INTERRUPT_TARGET_MS = 1000;
const main = new URL("../../main.ts", import.meta.url).pathname;
const dir = Deno.makeTempDirSync({ prefix: "crab-repl-startup-" });
const ws = join(dir, "ws");
Deno.mkdirSync(ws);
const empty = join(dir, "empty.ts");
Deno.writeTextFileSync(
  empty,
  "console.log('› ');\nawait new Promise((r) => setTimeout(r, 5000));\n",
);

await using fake = await startFakeModel([]);

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** `argv` on a pty (through `script`), in `cwd`, with stdin piped to the terminal. */
function onPty(argv: string[], cwd: string): Deno.ChildProcess {
  return new Deno.Command("script", {
    args: ["-q", "-e", "-c", argv.map(shellQuote).join(" "), "/dev/null"],
    cwd,
    env: {
      CRAB_HOME: join(dir, "home"),
      XDG_CONFIG_HOME: join(dir, "config"),
      ANTHROPIC_API_KEY: "k",
      TERM: "xterm-256color",
      NO_COLOR: "1",
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
}

/** Spawns `argv` on a pty; resolves with the ms until `› ` appears in its output. */
async function untilPrompt(argv: string[], cwd = ws): Promise<number> {
  const t0 = performance.now();
  const child = onPty(argv, cwd);
  const decoder = new TextDecoder();
  let seen = "";
  let ms = -1;
  const reader = child.stdout.getReader();
  const deadline = setTimeout(() => child.kill("SIGKILL"), 10_000);
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
    if (seen.includes("› ")) {
      ms = performance.now() - t0;
      break;
    }
  }
  clearTimeout(deadline);
  try {
    child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
  await reader.cancel().catch(() => {});
  await child.stdin.close().catch(() => {});
  await child.status;
  if (ms < 0) throw new Error(`no prompt appeared:\n${seen}`);
  return ms;
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const withMcp = join(dir, "mcp");
Deno.mkdirSync(withMcp);
Deno.writeTextFileSync(
  join(withMcp, ".mcp.json"),
  JSON.stringify({
    mcpServers: {
      e1: {
        command: Deno.execPath(),
        args: [...RUN_CACHED, pinned("@modelcontextprotocol/server-everything"), "stdio"],
      },
    },
  }),
);
const crab = [
  Deno.execPath(),
  "run",
  ...presetFlags("full"),
  main,
  "--provider",
  "anthropic",
  "--base-url",
  fake.baseUrlFor("anthropic"),
  "--model",
  "fake-model",
];
const cases: [string, string[], string][] = [
  ["crab (REPL)", crab, ws],
  ["crab, 1 MCP server", [...crab, "--trust-project"], withMcp],
  ["empty deno run", [Deno.execPath(), "run", ...presetFlags("full"), empty], ws],
];
/** Ctrl-C during `sleep` in a bash call: ms from the key to `⏹ interrupted` on the pty. */
async function interrupted(): Promise<number> {
  const marker = `600.${Math.floor(Math.random() * 1e6)}`;
  await using model = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
    { text: "ok" },
  ]);
  const child = onPty([
    ...crab.slice(0, crab.indexOf("--base-url") + 1),
    model.baseUrlFor("anthropic"),
    "--model",
    "fake-model",
    "--yolo",
  ], ws);
  const keys = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  const upTo = async (text: string) => {
    while (!seen.includes(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`no "${text}" on the screen:\n${seen}`);
      seen += value;
    }
  };
  const deadline = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    await upTo("› ");
    await keys.write(new TextEncoder().encode("go\r"));
    const sleeping = () =>
      new TextDecoder().decode(
        new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).outputSync().stdout,
      ).includes(`sleep ${marker}`);
    while (!sleeping()) await new Promise((r) => setTimeout(r, 10));
    const t0 = performance.now();
    await keys.write(new Uint8Array([3]));
    await upTo("⏹ interrupted");
    return performance.now() - t0;
  } finally {
    clearTimeout(deadline);
    child.kill("SIGKILL");
    await reader.cancel().catch(() => {});
    await keys.close().catch(() => {});
    await child.status;
  }
}

const results: Record<string, number[]> = {};
for (const [, argv, cwd] of cases) await untilPrompt(argv, cwd); // warm the module cache
for (let i = 0; i < RUNS; i++) {
  for (const [name, argv, cwd] of cases) {
    (results[name] ??= []).push(await untilPrompt(argv, cwd));
  }
}
const interrupts: number[] = [];
for (let i = 0; i < Math.min(RUNS, 5); i++) interrupts.push(await interrupted());
Deno.removeSync(dir, { recursive: true });

console.log(`runs ${RUNS}; spawn → prompt drawn on a pty (median ms)`);
const floor = median(results["empty deno run"]);
console.log(`${"empty deno run".padEnd(20)} ${floor.toFixed(0).padStart(5)}`);
for (const name of ["crab (REPL)", "crab, 1 MCP server"]) {
  const m = median(results[name]);
  console.log(
    `${name.padEnd(20)} ${m.toFixed(0).padStart(5)}  (target ≤ ${TARGET_MS} ms ${
      m <= TARGET_MS ? "met" : "missed"
    }; +${(m - floor).toFixed(0)} over the floor)`,
  );
}
const plain = median(results["crab (REPL)"]);
reportRow({
  measure: "repl_start",
  value: plain,
  detail: `crab ${plain.toFixed(0)} ms, with 1 MCP server ${
    median(results["crab, 1 MCP server"]).toFixed(0)
  } ms, empty deno run ${floor.toFixed(0)} ms`,
});
const back = median(interrupts);
console.log(
  `Ctrl-C during a bash call → ⏹ interrupted: ${
    back.toFixed(0)
  } ms (median of ${interrupts.length}; ` +
    `${(back / plain).toFixed(2)}× the start-up; target ≤ ${INTERRUPT_TARGET_MS} ms ${
      back <= INTERRUPT_TARGET_MS ? "met" : "missed"
    })`,
);
