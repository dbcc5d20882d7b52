/**
 * Runs crab as a subprocess the way a user does: `deno run` of the bundle the
 * installed command runs ({@link MAIN}) with the `full` preset's permission
 * flags, or the command `deno task install` wrote ({@link installCrab}), in a
 * temp workspace with its own data dir (`CRAB_HOME`) and config dir
 * (`XDG_CONFIG_HOME`).
 *
 * @module
 */

import { dirname, join } from "node:path";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";
import { OWN_DENO_DIR_VAR } from "../../tools/host/own_roots.ts";
import { bounded } from "./bounded.ts";
import { bundledMain } from "./bundled.ts";

/** Absolute path of crab's source entry point, which `deno task crab` runs. */
export const SOURCE_MAIN = new URL("../../main.ts", import.meta.url).pathname;

/**
 * Absolute path of the entry the tests run: the bundle of the source as it is
 * now (`tests/support/bundled.ts`), built when a test file first loads this.
 */
export const MAIN = await bundledMain();

/**
 * `deno run` arguments that start {@link MAIN} as the installed command does:
 * permission `flags` (the `full` preset's unless given), the runtime's own
 * (`RUNTIME_FLAGS`: V8's, as every way crab starts gives them), then `--quiet`,
 * which keeps Deno's own progress line (drawn when a chunk loads) off crab's
 * screen.
 */
export function crabArgs(
  flags: readonly string[] = presetFlags("full"),
  entry: string = MAIN,
): string[] {
  return ["run", ...flags, ...RUNTIME_FLAGS, "--quiet", entry];
}

/** What a finished crab process printed. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of one crab invocation. */
export interface CrabRunOptions {
  /** Text written to stdin, which is then closed; without it stdin is /dev/null. */
  stdin?: string;
  /** Extra environment (merged over the sandbox's). */
  env?: Record<string, string>;
  /** Deno flags instead of the `full` preset's (not for an installed command). */
  flags?: string[];
  /** Working directory instead of the workspace. */
  cwd?: string;
}

/**
 * How long one crab run may take, at most: far beyond any test's, so only a
 * hang reaches it, and the test then fails with what was still running
 * (`bounded.ts`) instead of holding the suite.
 */
export const RUN_LIMIT_MS = 180_000;

/** Deno's cache (npm packages), which a sandboxed HOME would otherwise hide. */
export function denoDir(): string {
  const set = Deno.env.get("DENO_DIR");
  if (set) return set;
  const cache = Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache");
  return join(cache, "deno");
}

/** A temp workspace, data dir and config dir, and a way to run crab in them. */
export interface Sandbox {
  root: string;
  /** The workspace (crab's cwd). */
  ws: string;
  /** `CRAB_HOME`: the store, spill files, trust record. */
  home: string;
  /** `XDG_CONFIG_HOME`: crab reads `crab/config.json` and `crab/mcp.json` below it. */
  config: string;
  /** The environment crab runs with (no API keys unless a test adds them). */
  env: Record<string, string>;
  /** Runs crab to completion; a string `opts` is the stdin text. */
  crab(args: string[], opts?: CrabRunOptions | string): Promise<Ran>;
  /** Starts crab and returns the child (stdin/stdout/stderr piped). */
  spawn(args: string[], opts?: Omit<CrabRunOptions, "stdin">): Deno.ChildProcess;
  /** Writes a file relative to the workspace (parents created). */
  put(rel: string, content: string): string;
  [Symbol.dispose](): void;
}

/** Where a sandbox is and which crab it runs. */
export interface SandboxOptions {
  /** An installed `crab` ({@link installCrab}) to run instead of the source. */
  launcher?: string;
  /** A directory to create and use as the root, instead of a new temp dir. */
  root?: string;
  /** Runs the source ({@link SOURCE_MAIN}), as `deno task crab` does, instead of the bundle. */
  source?: boolean;
}

/** Creates a sandbox; `using s = sandbox()` removes it afterwards. */
export function sandbox(prefix = "crab-cli-", options: SandboxOptions = {}): Sandbox {
  const { launcher } = options;
  const entry = options.source ? SOURCE_MAIN : MAIN;
  if (options.root) Deno.mkdirSync(options.root);
  const root = Deno.realPathSync(options.root ?? Deno.makeTempDirSync({ prefix }));
  const ws = join(root, "ws");
  const home = join(root, "home");
  const config = join(root, "config");
  for (const d of [ws, home, config]) Deno.mkdirSync(d);
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: denoDir(),
    // `deno task crab` runs crab with a cache of its own: this one, which has its packages.
    CRAB_DENO_DIR: denoDir(),
    HOME: root,
    CRAB_HOME: home,
    XDG_CONFIG_HOME: config,
    NO_COLOR: "1",
  };
  // The installed command is a shell script that runs `deno` from PATH.
  if (launcher) env.PATH = `${dirname(Deno.execPath())}:${env.PATH}`;
  const command = (args: string[], opts: CrabRunOptions, stdin: "piped" | "null") =>
    new Deno.Command(launcher ?? Deno.execPath(), {
      args: launcher ? args : [...crabArgs(opts.flags, entry), ...args],
      cwd: opts.cwd ?? ws,
      env: { ...env, ...opts.env },
      clearEnv: true,
      stdin,
      stdout: "piped",
      stderr: "piped",
    });
  return {
    root,
    ws,
    home,
    config,
    env,
    async crab(args, o = {}) {
      const opts = typeof o === "string" ? { stdin: o } : o;
      const child = command(args, opts, opts.stdin === undefined ? "null" : "piped").spawn();
      if (opts.stdin !== undefined) {
        const w = child.stdin.getWriter();
        await w.write(new TextEncoder().encode(opts.stdin));
        await w.close();
      }
      const out = await bounded(child, root, RUN_LIMIT_MS);
      const dec = new TextDecoder();
      const stderr = dec.decode(out.stderr) + (out.overrun ? `\n[crab ${out.overrun}]` : "");
      return { code: out.code, stdout: dec.decode(out.stdout), stderr };
    },
    spawn(args, opts = {}) {
      return command(args, opts, "piped").spawn();
    },
    put(rel, content) {
      const p = join(ws, rel);
      Deno.mkdirSync(join(p, ".."), { recursive: true });
      Deno.writeTextFileSync(p, content);
      return p;
    },
    [Symbol.dispose]() {
      try {
        removeAll(root);
      } catch (e) {
        if (!(e instanceof Deno.errors.PermissionDenied)) throw e;
        // The sandbox's unreadable directory (mode 000): only root removes it as it is.
        new Deno.Command("chmod", { args: ["-R", "u+rwx", root] }).outputSync();
        removeAll(root);
      }
    },
  };
}

/**
 * Removes `dir` whole. A process crab started may still be ending (a sandbox's
 * keeper tidying its folder) and add an entry while the folder is emptied:
 * that is tried again, a bounded number of times, 50 ms apart.
 */
function removeAll(dir: string): void {
  for (let tries = 1;; tries++) {
    try {
      return Deno.removeSync(dir, { recursive: true });
    } catch (e) {
      const notEmpty = e instanceof Error && /Directory not empty/.test(e.message);
      if (!notEmpty || tries === 20) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}

/**
 * `crab -p x ARGS` against a fake model's Anthropic endpoint (its `url`), with
 * a key in the environment and `env` besides.
 */
export function printAgainst(
  s: Sandbox,
  fake: { url: string },
  args: string[],
  env: Record<string, string> = {},
): Promise<Ran> {
  return s.crab(["-p", "x", "--provider", "anthropic", "--base-url", fake.url, ...args], {
    env: { ANTHROPIC_API_KEY: "k", ...env },
  });
}

/** A `crab` that `deno task install` put into a temp root, as a user installs it. */
export interface InstalledCrab extends Disposable {
  /** The temp dir that holds the install root and crab's own Deno cache. */
  dir: string;
  /** The command: `DIR/root/bin/crab`. */
  bin: string;
  /**
   * The environment the install ran with: `DENO_INSTALL_ROOT`, crab's own cache in
   * `CRAB_DENO_DIR`, and the PATH and DENO_DIR the command needs.
   */
  env: Record<string, string>;
  /** What `deno task install` printed. */
  ran: Ran;
}

/**
 * Runs `deno task install` for this checkout with `DENO_INSTALL_ROOT=DIR/root`
 * and `env` besides.
 * The bundle is built into the checkout's `dist/`, as for a user; crab's own Deno
 * cache is in the temp dir, linked to this process's npm packages and bundler so
 * that nothing is downloaded. The caller checks `ran`. One installed crab of
 * this checkout is in use at a time (a lock in `dist/` held until disposal):
 * each test of one rebuilds the bundle and switches `dist/installed`.
 */
export async function installCrab(env: Record<string, string> = {}): Promise<InstalledCrab> {
  const dist = new URL("../../dist/", import.meta.url).pathname;
  Deno.mkdirSync(dist, { recursive: true });
  const lock = await Deno.open(join(dist, ".tests.lock"), { write: true, create: true });
  await lock.lock(true);
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-install-" }));
  const crabCache = join(dir, "crab-deno");
  Deno.mkdirSync(crabCache);
  Deno.symlinkSync(join(denoDir(), "npm"), join(crabCache, "npm"));
  Deno.symlinkSync(join(denoDir(), "dl"), join(crabCache, "dl"));
  const root = join(dir, "root");
  const all = {
    PATH: `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
    HOME: dir,
    DENO_DIR: denoDir(),
    [OWN_DENO_DIR_VAR]: crabCache,
    DENO_INSTALL_ROOT: root,
    NO_COLOR: "1",
    ...env,
  };
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--config", new URL("../../deno.json", import.meta.url).pathname, "install"],
    cwd: dir,
    env: all,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    dir,
    bin: join(root, "bin", "crab"),
    env: all,
    ran: { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) },
    [Symbol.dispose]() {
      Deno.removeSync(dir, { recursive: true });
      lock.close();
    },
  };
}
