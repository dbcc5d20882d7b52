/**
 * Workspace confinement: every path argument is resolved and real-path resolved,
 * so `..`, absolute paths, symlinks and symlinked parents that lead outside the
 * workspace are seen as outside accesses (`outside-read` or `outside-write`).
 * Deno's `--allow-read=DIR` does not stop symlink escapes, so this check lives
 * here. It decides on a path; `confine.ts` then makes sure that the file opened
 * or written is the one this check decided on, even while other processes rename
 * directories on the way.
 *
 * Names are shown through {@link printablePath}: a newline, an escape sequence or
 * a bidi override in a file name is printed as `\n`, `\x1b`, `<U+202E>`.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "./path.ts";
import { entryExists } from "./exists.ts";
import { printablePath, unsafeNameReason } from "./printable.ts";
import { type OutsideClass, type ToolContext, ToolError } from "../tool.ts";
import { spillFileOf } from "./data_dir.ts";

/** A path argument after resolution. */
export interface ResolvedPath {
  /** The path as resolved lexically against the workspace (symlinks not followed). */
  abs: string;
  /** The real path: symlinks followed; for a missing file, its real parent plus the name. */
  real: string;
  /** True when the real path is inside the workspace. */
  inside: boolean;
  /**
   * How to name the path to the model and the user: workspace-relative when inside,
   * else absolute, with control and invisible characters escaped.
   */
  display: string;
  /** Set when the path is a spill file this process wrote (readable without approval). */
  spill?: { dev: number; ino: number | null };
}

const MAX_LINK_HOPS = 40;

/** Longest file name (bytes) and path (bytes) Linux accepts. */
const NAME_MAX = 255;
const PATH_MAX = 4095;

const encoder = new TextEncoder();

function pathTooLong(path: string, why: string): ToolError {
  const shown = printablePath(path.length > 80 ? `${path.slice(0, 80)}…` : path);
  return new ToolError(
    "path_too_long",
    `Cannot use path "${shown}": ${why}`,
    `Use a path under ${PATH_MAX} bytes whose names are each at most ${NAME_MAX} bytes.`,
  );
}

/** Refuses a path the OS would refuse as too long, before any file system call. */
function assertPathLength(abs: string): void {
  if (encoder.encode(abs).byteLength > PATH_MAX) {
    throw pathTooLong(abs, `it is longer than ${PATH_MAX} bytes`);
  }
  for (const name of abs.split(sep)) {
    if (name.length * 3 > NAME_MAX && encoder.encode(name).byteLength > NAME_MAX) {
      throw pathTooLong(abs, `a name in it is longer than ${NAME_MAX} bytes`);
    }
  }
}

const SYSTEM_TREES = ["/proc", "/sys", "/dev"];

function inSystemTree(path: string): boolean {
  return SYSTEM_TREES.some((t) => isWithin(t, path));
}

function symlinkLoop(abs: string): ToolError {
  return new ToolError(
    "symlink_loop",
    `Cannot resolve "${abs}": too many levels of symbolic links`,
    "The path goes through a symlink loop; use a different path.",
  );
}

/** Real path of `abs`, following symlinks; a missing tail is appended to its real parent. */
export function realPathOf(abs: string): string {
  let current = abs;
  const missing: string[] = [];
  for (let hops = 0; hops < MAX_LINK_HOPS; hops++) {
    try {
      const real = Deno.realPathSync(current);
      return missing.length ? join(real, ...missing.reverse()) : real;
    } catch (e) {
      if (e instanceof Deno.errors.FilesystemLoop) throw symlinkLoop(abs);
      if ((e as { code?: unknown }).code === "ENAMETOOLONG") {
        throw pathTooLong(abs, "the OS says it is too long");
      }
      // Deno will not resolve inside /proc and /sys without --allow-all; such a
      // path is refused anyway, so its lexical form is enough.
      if (e instanceof Deno.errors.NotCapable && inSystemTree(current)) {
        return join(current, ...missing.reverse());
      }
      // A path under a regular file does not exist either; keep walking up.
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) throw e;
    }
    // A dangling symlink: follow it by hand so a link to a missing outside file is caught.
    let target: string | undefined;
    try {
      target = Deno.readLinkSync(current);
    } catch {
      target = undefined;
    }
    if (target !== undefined) {
      current = resolve(dirname(current), target);
      continue;
    }
    const parent = dirname(current);
    if (parent === current) return join(current, ...missing.reverse());
    missing.push(basename(current));
    current = parent;
  }
  throw symlinkLoop(abs);
}

/** True when `real` is `root` or lies beneath it. */
export function isWithin(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Resolves a path argument against the workspace without asking anything. */
export function resolvePath(workspace: string, path: string): ResolvedPath {
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  assertPathLength(abs);
  const real = realPathOf(abs);
  const inside = isWithin(workspace, real);
  const display = printablePath(inside ? (relative(workspace, real) || ".") : real);
  return { abs, real, inside, display };
}

/**
 * True for a path under `/proc`, `/sys` or `/dev`, unless the workspace itself lives
 * in that tree (a workspace in `/dev/shm` may use its own files; devices there are
 * still refused as non-regular files).
 */
export function isSystemPath(workspace: string, path: string): boolean {
  return SYSTEM_TREES.some((t) => isWithin(t, path) && !isWithin(t, workspace));
}

function refuseSystemPath(path: string, verb: string): ToolError {
  return new ToolError(
    "not_regular_file",
    `Cannot ${verb} "${path}": system files under /proc, /sys and /dev are refused`,
    "Use bash for system inspection, or pick a regular file.",
  );
}

/**
 * Resolves a path argument and, when it leads outside the workspace, asks for
 * approval of `outside-read` or `outside-write` (by `access`). Paths into `/proc`,
 * `/sys` and `/dev` are refused. A spill file this process wrote (the full output
 * of an earlier call) may be read without approval, and is never written.
 */
export async function guardPath(
  ctx: ToolContext,
  path: string,
  verb: string,
  access: "read" | "write" = "read",
): Promise<ResolvedPath> {
  if (path.length === 0) {
    throw new ToolError("invalid_path", "Cannot use an empty path", "Pass a file path.");
  }
  if (path.includes("\0")) {
    throw new ToolError(
      "invalid_path",
      `Cannot use path "${printablePath(path)}": it contains a NUL byte`,
      "Pass the path without NUL characters.",
    );
  }
  const workspace = ctx.session.workspace;
  // Lexically first: Deno refuses to even resolve most of these paths.
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  if (isSystemPath(workspace, abs)) throw refuseSystemPath(abs, verb);
  const resolved = resolvePath(workspace, path);
  if (isSystemPath(workspace, resolved.real)) throw refuseSystemPath(resolved.real, verb);
  // What the call's path decided may not be where it leads now (a glob's pattern, a swap).
  ctx.assertOpen?.(resolved.real, `${verb} "${resolved.display}"`);
  if (resolved.inside) return resolved;
  const spill = spillOf(resolved);
  if (spill && access === "read") return { ...resolved, spill };
  if (spill) {
    throw new ToolError(
      "read_only",
      `Cannot ${verb} "${resolved.display}": it is the saved output of an earlier call, kept read-only`,
      "Read it, or write your own file in the workspace.",
    );
  }
  await ctx.requestApproval({
    class: outsideClass(access),
    summary: `${verb} outside the workspace: ${printablePath(resolved.real)}` +
      (resolved.real !== resolved.abs ? ` (via ${printablePath(path)})` : ""),
  });
  return resolved;
}

function outsideClass(access: "read" | "write"): OutsideClass {
  return access === "read" ? "outside-read" : "outside-write";
}

/**
 * The spill file `p` names, if this process wrote it and the name still holds that
 * file (same device and inode, not a symlink put in its place).
 */
function spillOf(p: ResolvedPath): { dev: number; ino: number | null } | undefined {
  const known = spillFileOf(p.abs) ?? spillFileOf(p.real);
  if (!known) return undefined;
  try {
    const now = Deno.lstatSync(p.real);
    return now.isFile && now.dev === known.dev && now.ino === known.ino ? known : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Refuses to create a file or directory whose name contains control characters
 * (newline and CR included) or bidi controls (`invalid_path`). Only the names this
 * call would create are checked: the file and the parents that do not exist yet.
 */
export function assertCreatable(p: ResolvedPath, verb: string): void {
  let current = p.real;
  for (;;) {
    const reason = unsafeNameReason(basename(current));
    if (reason) {
      throw new ToolError(
        "invalid_path",
        `Cannot ${verb} "${p.display}": ${reason}`,
        "Choose a name made of printable characters; such names show up misleadingly " +
          "in listings and prompts.",
      );
    }
    const parent = dirname(current);
    if (parent === current || entryExists(parent)) return;
    current = parent;
  }
}

/** Refuses anything but a regular file (FIFOs, sockets, devices, directories). */
export function assertRegularFile(info: Deno.FileInfo, display: string, verb: string): void {
  if (info.isFile) return;
  const kind = info.isDirectory
    ? "a directory"
    : info.isFifo
    ? "a FIFO"
    : info.isSocket
    ? "a socket"
    : info.isCharDevice || info.isBlockDevice
    ? "a device"
    : "not a regular file";
  throw new ToolError(
    info.isDirectory ? "is_directory" : "not_regular_file",
    `Cannot ${verb} "${display}": it is ${kind}`,
    info.isDirectory
      ? "Pass a file path; use glob to list a directory."
      : "Only regular files can be read or written by this tool.",
  );
}

/**
 * Asks for approval (class `outside-write`) before replacing a file that has more
 * than one hard link: another link may be a file outside the workspace, and since
 * the write renames a new file into place, the other links keep the old content.
 */
export async function guardHardLinks(
  ctx: ToolContext,
  info: Deno.FileInfo,
  display: string,
  verb: string,
): Promise<void> {
  if (info.nlink === null || info.nlink <= 1) return;
  await ctx.requestApproval({
    class: "outside-write",
    summary: `${verb} a file with ${info.nlink} hard links: ${display}` +
      " (only this name gets the new content; the other links keep the old one)",
  });
}

/** What {@link peekPath} found. */
export type Peek =
  | { kind: "file"; resolved: ResolvedPath; info: Deno.FileInfo }
  | { kind: "missing" | "other"; resolved: ResolvedPath };

/**
 * Resolves a path for an approval preview without asking anything, and says
 * whether it is a regular file that is safe to read (`other`: a FIFO, device,
 * directory or system path). Reading a FIFO here would hang before the prompt.
 */
export async function peekPath(workspace: string, path: string): Promise<Peek> {
  const resolved = resolvePath(workspace, path);
  if (isSystemPath(workspace, resolved.abs) || isSystemPath(workspace, resolved.real)) {
    return { kind: "other", resolved };
  }
  try {
    const info = await Deno.stat(resolved.real);
    return info.isFile ? { kind: "file", resolved, info } : { kind: "other", resolved };
  } catch (e) {
    return { kind: e instanceof Deno.errors.NotFound ? "missing" : "other", resolved };
  }
}
