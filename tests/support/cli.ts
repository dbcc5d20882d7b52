/**
 * Runs crab as a subprocess the way a user does: `deno run` with the `full`
 * preset's permission flags (the flags of the `crab` task), in a temp workspace
 * with its own data dir (`CRAB_HOME`) and config dir (`XDG_CONFIG_HOME`).
 *
 * @module
 */

import { join } from "node:path";
import { presetFlags } from "../../tools/host/capabilities.ts";

/** Absolute path of crab's entry point. */
export const MAIN = new URL("../../main.ts", import.meta.url).pathname;

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
  /** Deno flags instead of the `full` preset's. */
  flags?: string[];
  /** Working directory instead of the workspace. */
  cwd?: string;
}

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

/** Creates a sandbox; `using s = sandbox()` removes it afterwards. */
export function sandbox(prefix = "crab-cli-"): Sandbox {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix }));
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
  const command = (args: string[], opts: CrabRunOptions, stdin: "piped" | "null") =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", ...(opts.flags ?? presetFlags("full")), MAIN, ...args],
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
      const out = await child.output();
      const dec = new TextDecoder();
      return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
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
        Deno.removeSync(root, { recursive: true });
      } catch (e) {
        if (!(e instanceof Deno.errors.PermissionDenied)) throw e;
        // The sandbox's unreadable directory (mode 000): only root removes it as it is.
        new Deno.Command("chmod", { args: ["-R", "u+rwx", root] }).outputSync();
        Deno.removeSync(root, { recursive: true });
      }
    },
  };
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
