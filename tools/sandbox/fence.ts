/**
 * What crab's sandbox refused inside a command, said only where crab knows it
 * for certain. A program's error names a path; when that path is one the
 * call's layout made read-only or hidden and the same line carries the
 * kernel's words for it (`Read-only file system`, `Permission denied`,
 * `Operation not permitted`), the refusal is crab's, and the result gets a line
 * naming the layer, the target and what would allow it. A path outside the
 * writable folders counts only with `Read-only file system`: a `Permission
 * denied` there may be the file's own mode, which crab did not set. Nothing is
 * inferred from a program's other words: `cat missing.txt` gets no line.
 *
 * The layers, as `permission_denials` and the report name them: `rule` (a
 * `Read(…)`/`Edit(…)` deny rule made a mount), `protected` (a protected path,
 * crab's own code), `sandbox-fs` (outside the writable folders, a credential
 * store, crab's data), `proxy` (a host crab's proxy refused: `bash.ts` reads
 * its contacts), `limit` (a cap, from the cgroup's counters: `linux/cgroup.ts`).
 *
 * @module
 */

import { isAbsolute, join, normalize, relative } from "../fs/path.ts";
import type { RefusalLayer, SandboxRefusal } from "../tool.ts";
import { isWithin } from "../fs/workspace.ts";
import type { SandboxMode } from "../policy/sandbox.ts";

/** Why one path of a layout is closed: what a refusal there says. */
export interface Closed {
  /** `hidden`: unreadable; `read-only`: nothing may be written. */
  access: "hidden" | "read-only";
  layer: RefusalLayer;
  why: string;
  allow: string;
  rule?: string;
  source?: string;
}

/** The closed paths of one call, and the folders it may write. */
export interface Fence {
  workspace: string;
  /** Real paths, each with why it is closed; the longest match decides. */
  closed: Map<string, Closed>;
  /** Where commands may write: the writable roots, private tmpfs folders, `/dev`. */
  open: readonly string[];
  /** What allows writing outside `open` (`--add-dir`, or another sandbox mode). */
  outside: { why: string; allow: string };
}

/** What {@link fenceOf} reads of a call's layout (`layout.ts`). */
export interface LaidOut {
  closed: Map<string, Closed>;
  writable: readonly string[];
  tmpfs: readonly string[];
}

/** The fence of a call laid out as `layout` in `workspace`, under sandbox `mode`. */
export function fenceOf(layout: LaidOut, workspace: string, mode: SandboxMode): Fence {
  const outside = mode === "read-only"
    ? {
      why: "the sandbox is read-only (--sandbox read-only)",
      allow: "the user allows writing to the workspace with --sandbox workspace-write",
    }
    : {
      why: "outside the folders commands may write (the workspace and sandbox.writable)",
      allow: "the user allows a folder with sandbox.writable in the user config",
    };
  return {
    workspace,
    closed: layout.closed,
    open: [...layout.writable, ...layout.tmpfs, "/dev"],
    outside,
  };
}

/** The kernel's words for a refusal, as programs print them (strerror, Python, Node). */
const REFUSED = /read-only file system|permission denied|operation not permitted/i;
const READ_ONLY_FS = /read-only file system/i;
/** Filesystems the kernel keeps read-only whatever crab does. */
const KERNEL = ["/proc", "/sys"];
/** Longest line looked at: an error line is short; a minified file is not an error. */
const MAX_LINE = 2000;

/** The words of a quoted path: '…', "…", ‘…’, `…'. */
const QUOTED = /'([^']+)'|"([^"]+)"|‘([^’]+)’|`([^'`]+)'/g;

/** The strings of `line` that may name the path its error is about, nearest first. */
function candidates(line: string, at: number, length: number): string[] {
  const before = line.slice(0, at).replace(/[:,]\s*$/, "");
  const after = line.slice(at + length).replace(/^[:,]\s*(open\s+)?/, "");
  const out: string[] = [];
  // `touch: cannot touch '/etc/x': Read-only…`: the last quoted string before, else its last word.
  const quotedBefore = [...before.matchAll(QUOTED)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]);
  const segment = before.split(/:\s/).at(-1) ?? "";
  if (quotedBefore.length) out.push(quotedBefore.at(-1)!);
  else if (segment.trim()) out.push(segment.trim().split(/\s+/).at(-1)!);
  // `PermissionError: [Errno 13] Permission denied: '.env'`: the first string after.
  const quotedAfter = [...after.matchAll(QUOTED)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]);
  if (quotedAfter.length) out.push(quotedAfter[0]);
  else if (after.trim()) out.push(after.trim().split(/\s+/)[0]);
  return out.filter((c) => c !== "" && !/\s$/.test(c));
}

/** `name` as a real-looking absolute path: relative names are taken from the workspace. */
function resolveName(name: string, workspace: string): string | undefined {
  const home = Deno.env.get("HOME");
  const expanded = name.startsWith("~/") && home ? join(home, name.slice(2)) : name;
  if (expanded.includes("\0")) return undefined;
  return normalize(isAbsolute(expanded) ? expanded : join(workspace, expanded));
}

/** The closed path that holds `path`, the nearest one. */
function closedAt(fence: Fence, path: string): [string, Closed] | undefined {
  let best: [string, Closed] | undefined;
  for (const entry of fence.closed) {
    if (isWithin(entry[0], path) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best;
}

/** What `path` under `fence` says about an error `words` on it, if the fence is why. */
function refusalAt(fence: Fence, path: string, words: string): SandboxRefusal | undefined {
  const target = isWithin(fence.workspace, path) && path !== fence.workspace
    ? relative(fence.workspace, path)
    : path;
  const closed = closedAt(fence, path);
  if (closed) {
    const c = closed[1];
    return {
      layer: c.layer,
      // A hidden path refuses any use, a write as well as a read.
      action: c.access === "hidden" ? "access" : "write",
      target,
      why: c.why,
      allow: c.allow,
      ...(c.rule ? { rule: c.rule, source: c.source } : {}),
    };
  }
  if (!READ_ONLY_FS.test(words)) return undefined;
  if (fence.open.some((o) => isWithin(o, path)) || KERNEL.some((k) => isWithin(k, path))) {
    return undefined;
  }
  return { layer: "sandbox-fs", action: "write", target, ...fence.outside };
}

/**
 * The refusals of crab's fence that `output` (a command's output as the
 * model reads it) shows, one per layer, action and target.
 *
 * @example refusalsIn("touch: cannot touch '/etc/x': Read-only file system", fence)
 */
export function refusalsIn(output: string, fence: Fence): SandboxRefusal[] {
  const out = new Map<string, SandboxRefusal>();
  for (const line of output.split("\n")) {
    if (line.length > MAX_LINE) continue;
    const m = REFUSED.exec(line);
    if (!m) continue;
    for (const name of candidates(line, m.index, m[0].length)) {
      const path = resolveName(name, fence.workspace);
      const r = path && refusalAt(fence, path, m[0]);
      if (!r) continue;
      out.set(`${r.layer}\0${r.action}\0${r.target}`, r);
      break;
    }
  }
  return [...out.values()];
}

/** The layers as a result's line names them. */
export const LAYER_WORDS: Record<RefusalLayer, string> = {
  rule: "a permission rule",
  mode: "the permission mode",
  protected: "a protected path",
  "sandbox-fs": "the sandbox's filesystem",
  "sandbox-net": "the sandbox's network",
  proxy: "crab's proxy",
  limit: "a sandbox limit",
};

/** What every refusal line ends with: the model is not to find another way. */
export const POLICY_WORDS = "This is the user's policy, not a fault: do not try another way " +
  "around it; tell the user what you need and why.";

const ACTION_WORDS: Record<string, string> = {
  write: "a write to",
  read: "a read of",
  access: "an access to",
  connect: "a connection to",
};

/**
 * One line per kind of refusal (layer, action, why, what allows it), its
 * targets listed: what a call's result gets after the command's output.
 */
export function refusalLines(refusals: readonly SandboxRefusal[]): string[] {
  const kinds = new Map<string, { r: SandboxRefusal; targets: string[] }>();
  for (const r of refusals) {
    const key = [r.layer, r.action, r.why, r.allow, r.rule ?? "", r.source ?? ""].join("\0");
    const kind = kinds.get(key);
    if (kind) kind.targets.push(r.target);
    else kinds.set(key, { r, targets: [r.target] });
  }
  return [...kinds.values()].map(({ r, targets }) => {
    const shown = targets.slice(0, 5).join(", ") +
      (targets.length > 5 ? ` and ${targets.length - 5} more` : "");
    const rule = r.rule ? ` ${r.rule}${r.source ? ` (${r.source})` : ""}` : "";
    return `Refused by ${LAYER_WORDS[r.layer]}${rule}: ${
      ACTION_WORDS[r.action] ?? r.action
    } ${shown} — ${r.why}; ${r.allow}. ${POLICY_WORDS}`;
  });
}
