/**
 * Capability classes mapped onto Deno permission flags: the single source of the
 * flag lists that the `crab` task and compiled binaries run with, and the
 * start-up self-check that leaves out every tool the process lacks permission for.
 *
 * Flags are fixed when the process starts, so what a binary may do is decided at
 * build time: a read-only reviewer built without `--allow-run` cannot run a shell
 * even if the model asks, because Deno refuses.
 *
 * The exec class maps to `--allow-run=bwrap`: bash runs inside bubblewrap, the
 * only program crab itself starts for it, so a build's own process cannot start
 * `bash` directly. A macOS build's is `--allow-run=/usr/bin/sandbox-exec`
 * (Seatbelt, `sandbox/seatbelt.ts`), by its absolute path. The agent class
 * (`task`) maps to no flag: a subagent asks the model's host, which every
 * build may reach, and each of its calls needs its own tool's flag. Stdio MCP servers add their commands. The `full` preset (the
 * downloadable binary and the `crab` task) must start servers the user
 * configures after it was built, so it keeps an unscoped `--allow-run`; there
 * the sandbox alone fences bash.
 *
 * Store location of restricted builds: a build without the write class may write
 * only crab's own store and spill files. Deno resolves a relative grant against the
 * working directory at run time (an absolute one is fixed at build time, on the
 * builder's machine), so such builds are granted `--allow-write=.crab` and keep
 * their store in `.crab/` under the directory they run in (see `dataDir()`).
 *
 * @module
 */

import type { AnyTool, ToolClass } from "../tool.ts";
import { BUILTIN_CLASSES, type Preset, PRESET_TOOLS } from "../table.ts";
import type { SandboxMode } from "../policy/sandbox.ts";
import { findProgram } from "./find_program.ts";

export { BUILTIN_CLASSES, type Preset, PRESET_TOOLS, PRESETS } from "../table.ts";

/** Hosts of the default providers: Anthropic, OpenAI and a local Ollama. */
export const DEFAULT_PROVIDER_HOSTS: readonly string[] = [
  "api.anthropic.com",
  "api.openai.com",
  "127.0.0.1:11434",
];

/** Where a build without the write class keeps its store (relative: resolved at run time). */
export const RESTRICTED_STORE_DIR = ".crab";

/**
 * Private ranges for `--deny-net`, as Deno 2.9 parses them (measured): IPv4 CIDR
 * ranges work and cover IPv4-mapped IPv6 spellings (`[::ffff:127.0.0.1]`); IPv6
 * must be bracketed (`[::1]`; a bare `::1` breaks the parser) and cannot be a
 * CIDR range, so ULA and link-local IPv6 are not fenced here. Deno matches the
 * literal host of a request, not the address a name resolves to, and does not
 * treat `0.0.0.0` as loopback: web_fetch's own address check (which resolves
 * names first) stays the fence for all of those; `localhost` is listed by name.
 */
export const PRIVATE_RANGES: readonly string[] = [
  "localhost",
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "[::1]",
  "[::]",
];

/** What a build enables. */
export interface BuildSpec {
  /** Built-in tool names. */
  tools: readonly string[];
  /** The model provider's API host(s), `host` or `host:port`. */
  providerHosts: readonly string[];
  /** Hosts of configured HTTP MCP servers. */
  mcpHosts?: readonly string[];
  /** Commands of configured stdio MCP servers. */
  mcpCommands?: readonly string[];
  /** Let any command start (stdio MCP servers configured after the build): unscoped `--allow-run`. */
  anyCommand?: boolean;
  /** The OS the build runs on (`Deno.build.os` names), which picks the sandbox program. */
  os?: string;
}

/** The one program crab runs for the macOS sandbox (never one found on PATH). */
export const SANDBOX_EXEC = "/usr/bin/sandbox-exec";

/** The program bash's sandbox runs on `os`: bubblewrap, or Seatbelt's sandbox-exec on macOS. */
export function sandboxProgram(os: string = Deno.build.os): string {
  return os === "darwin" ? SANDBOX_EXEC : "bwrap";
}

/** A flag list and what the reader of a build log should know about it. */
export interface Fence {
  flags: string[];
  notes: string[];
}

/** True for a host (with or without port) that names a loopback or private address. */
export function isPrivateHost(hostWithPort: string): boolean {
  let host = hostWithPort.toLowerCase();
  if (host.startsWith("[")) host = host.slice(1, host.indexOf("]"));
  else if ((host.match(/:/g) ?? []).length === 1) host = host.slice(0, host.indexOf(":"));
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local")) return true;
  if (host.endsWith(".internal")) return true;
  const v4 = host.match(/^(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b < 128) ||
      (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168);
  }
  if (host.includes(":")) {
    return host === "::1" || host === "::" || /^f[cd]/.test(host) || /^fe[89ab]/.test(host) ||
      host.startsWith("::ffff:");
  }
  return false;
}

/** The Deno flags for a build: every enabled class gets its flag, nothing else. */
export function fenceFlags(spec: BuildSpec): Fence {
  const classes = new Set<ToolClass>();
  for (const t of spec.tools) {
    const c = BUILTIN_CLASSES[t];
    if (!c) throw new Error(`Cannot build with tool "${t}": not a built-in tool`);
    classes.add(c);
  }
  const notes: string[] = [];
  // Reading is the base of every build: config files, the store, the workspace.
  const flags = ["--allow-read"];
  flags.push(
    classes.has("write") ? "--allow-write" : `--allow-write=${RESTRICTED_STORE_DIR}`,
  );
  if (!classes.has("write")) {
    notes.push(
      `no write tools: crab may write only its store, kept in ./${RESTRICTED_STORE_DIR}/ of the directory it runs in`,
    );
  }
  const commands = [
    ...new Set([
      ...(classes.has("exec") ? [sandboxProgram(spec.os)] : []),
      ...(spec.mcpCommands ?? []),
    ]),
  ];
  if (spec.anyCommand) {
    flags.push("--allow-run");
    notes.push(
      "unscoped --allow-run: MCP servers configured after the build can start; " +
        "bash is fenced by its sandbox, not by this flag",
    );
  } else if (commands.length) flags.push(`--allow-run=${commands.join(",")}`);
  flags.push("--allow-env");
  const hosts = [...new Set([...spec.providerHosts, ...(spec.mcpHosts ?? [])])];
  if (classes.has("net")) {
    flags.push("--allow-net");
    const privateHosts = hosts.filter(isPrivateHost);
    if (privateHosts.length === 0) {
      flags.push(`--deny-net=${PRIVATE_RANGES.join(",")}`);
    } else {
      notes.push(
        `runtime fence for private addresses is off: ${privateHosts.join(", ")} ${
          privateHosts.length === 1 ? "is" : "are"
        } private and must stay reachable; web_fetch's own address check still refuses private addresses`,
      );
    }
  } else if (hosts.length) {
    flags.push(`--allow-net=${hosts.join(",")}`);
  }
  // Unscoped run already grants everything (a program crab starts is not fenced by Deno), so a
  // build that also writes and reaches any host, with no deny list, is given the rest as well:
  // with every permission Deno stops resolving each opened file's path, folder by folder, to
  // check it (a readlink per folder; on 100,000 files, a third of undo's first snapshot).
  const all = spec.anyCommand && classes.has("write") && flags.includes("--allow-net") &&
    !flags.some((f) => f.startsWith("--deny-net"));
  if (all) {
    flags.push("--allow-sys", "--allow-ffi", "--allow-import");
    notes.push(
      "every permission: unscoped --allow-run grants as much, and Deno checks no path with all of them",
    );
  }
  flags.push("--no-prompt");
  return { flags, notes };
}

/**
 * The build spec of a preset. `full` lets any MCP server command start unless
 * `mcp.anyCommand` is false (a build that names its servers).
 */
export function presetSpec(
  preset: Preset,
  providerHosts: readonly string[] = DEFAULT_PROVIDER_HOSTS,
  mcp: { hosts?: readonly string[]; commands?: readonly string[]; anyCommand?: boolean } = {},
): BuildSpec {
  return {
    tools: PRESET_TOOLS[preset],
    providerHosts,
    mcpHosts: mcp.hosts ?? [],
    mcpCommands: mcp.commands ?? [],
    anyCommand: mcp.anyCommand ?? preset === "full",
  };
}

/**
 * V8's flags wherever crab starts: its young generation with semi-spaces of 1
 * MB instead of up to 16. Undo's first snapshot of a big workspace reads a
 * buffer per file, and small semi-spaces let them go sooner: peak memory of a
 * run on 100,000 files 196 → 156 MB, at no cost to start-up
 * (`scripts/bench/monorepo.ts`). A slower-growing old generation would keep
 * that run lower still, but every other big heap pays for it in collections:
 * `--optimize-for-size` (141–144 MB) cost that snapshot 7%, `crab tool read`
 * 2–3 ms and web_fetch's biggest test page (1 MB of HTML) 256–277 ms, past
 * its 250 ms target; `--heap-growing-percent=5` (152–162 MB) cost that page
 * 30–70 ms, to its target's edge (`scripts/bench/web_fetch.ts`, which runs
 * under these flags). Set at launch: `v8.setFlagsFromString` later changes
 * nothing.
 *
 * And V8 going over to its linear-time regex engine once a pattern that engine
 * can take has backtracked 50,000 times (V8's default count): a grep pattern
 * such as `(a+)+$` then ends, with the same matches, instead of running until
 * grep's bound. Its thread could not be stopped otherwise: in this Deno,
 * `worker.terminate()` does not stop a thread busy in JavaScript
 * (denoland/deno#35657), so a search stopped at its bound left a core busy for
 * as long as the process lived. Patterns with backreferences, lookarounds or
 * a counted repetition such as `{1,20}` are not that engine's, and still stop
 * at grep's bound; so may one whose greedy loop over a class backtracks
 * (`(a+)+[^b]*c`), since V8 does not count those backtracks toward its
 * hand-over. Nor is the `i` flag: grep rewrites a case-insensitive
 * pattern without it where it can (`caseFolded`, `tools/search/grep_pattern.ts`).
 */
const V8_FLAGS = [
  "--max-semi-space-size=1",
  "--expose-gc",
  "--enable-experimental-regexp-engine-on-excessive-backtracks",
];

/** Flags for the runtime itself in the compiled binary, beside the permission flags. */
export const COMPILED_RUNTIME_FLAGS: readonly string[] = [`--v8-flags=${V8_FLAGS.join(",")}`];

/**
 * Flags for the runtime itself, beside the permission flags, wherever crab is
 * started by `deno run` (the installed command, `deno task crab`): the
 * binary's, and V8 compiling every function of a module when it loads it
 * (`--no-lazy`). Deno keeps V8's code cache of each module it loads (in
 * `DENO_DIR`), made when the module is compiled: with lazy compilation that
 * cache holds the module's top level only, and every function a run calls is
 * parsed and compiled again at its first call, each run. Compiled whole, a
 * module comes out of the cache ready: a print run 78 → 71 ms, `crab tool
 * read` 47 → 46 ms (`scripts/bench/print_startup.ts`), for 4–7 MB more memory
 * and about 40 ms more on the first run after an install or upgrade, which
 * fills the cache. The compiled binary keeps lazy compilation: its code cache
 * covers only the modules it loads at start, and crab loads its commands later.
 */
export const RUNTIME_FLAGS: readonly string[] = [
  `--v8-flags=${[...V8_FLAGS, "--no-lazy"].join(",")}`,
];

/** The Deno flags of a preset (with the default provider hosts unless given). */
export function presetFlags(
  preset: Preset,
  providerHosts: readonly string[] = DEFAULT_PROVIDER_HOSTS,
): string[] {
  return fenceFlags(presetSpec(preset, providerHosts)).flags;
}

/** What a tool needs from the runtime to work here. */
export type Need =
  | { name: "read"; path: string }
  | { name: "write"; path: string }
  | { name: "run"; command: string }
  | { name: "net"; host?: string };

/**
 * The permission a tool of `cls` needs in `workspace` (stdio MCP: its command;
 * HTTP MCP: its host). bash needs bwrap (sandbox-exec on macOS), or bash itself in
 * danger-full-access.
 */
export function needOf(
  cls: ToolClass,
  workspace: string,
  mcp?: { command?: string; host?: string },
  sandbox: SandboxMode = "workspace-write",
  os: string = Deno.build.os,
): Need {
  // A subagent's own calls need their tools' permissions; running one needs what every build has.
  if (cls === "read" || cls === "agent") return { name: "read", path: workspace };
  if (cls === "write") return { name: "write", path: workspace };
  if (cls === "exec") {
    return {
      name: "run",
      command: sandbox === "danger-full-access" ? "bash" : sandboxProgram(os),
    };
  }
  if (cls === "net") return { name: "net" };
  if (mcp?.host) return { name: "net", host: mcp.host };
  return { name: "run", command: mcp?.command ?? "" };
}

/** True when the process holds `need` (a scoped grant does not satisfy a scope-less need). */
export function hasPermission(need: Need): boolean {
  try {
    const desc = need.name === "run"
      ? (need.command ? { name: "run" as const, command: need.command } : { name: "run" as const })
      : need.name === "net"
      ? (need.host ? { name: "net" as const, host: need.host } : { name: "net" as const })
      : { name: need.name, path: need.path };
    return Deno.permissions.querySync(desc).state === "granted";
  } catch {
    return false;
  }
}

/** Names the flag a missing need asks for, for the one start-up line. */
export function describeNeed(need: Need): string {
  switch (need.name) {
    case "read":
      return "--allow-read";
    case "write":
      return "--allow-write";
    case "run":
      return need.command ? `--allow-run=${need.command}` : "--allow-run";
    case "net":
      return need.host ? `--allow-net=${need.host}` : "unscoped --allow-net";
  }
}

/**
 * The start-up self-check: leaves out every tool whose permission this process
 * lacks (a restricted build), saying so once. bash stays when bubblewrap is
 * not installed at all (Deno cannot resolve a grant for a missing program):
 * its calls then fail with `sandbox_unavailable`, which says how to install it.
 */
export function withPermission(
  tools: AnyTool[],
  workspace: string,
  notice: (message: string) => void,
  sandbox: SandboxMode = "workspace-write",
): AnyTool[] {
  const kept: AnyTool[] = [];
  const missing = new Map<string, string[]>();
  for (const t of tools) {
    // An MCP tool exists only because its server connected: the permission was there.
    if (t.class.startsWith("mcp:")) {
      kept.push(t);
      continue;
    }
    const need = needOf(t.class, workspace, undefined, sandbox);
    const noBwrap = need.name === "run" && need.command === "bwrap" && !findProgram("bwrap");
    if (noBwrap || hasPermission(need)) kept.push(t);
    else {
      const flag = describeNeed(need);
      missing.set(flag, [...(missing.get(flag) ?? []), t.name]);
    }
  }
  if (missing.size) {
    notice(
      "this build leaves out " +
        [...missing].map(([flag, names]) => `${names.join(", ")} (no ${flag})`).join("; "),
    );
  }
  return kept;
}
