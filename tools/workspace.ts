/**
 * Workspace confinement: every path argument is resolved and real-path resolved,
 * so `..`, absolute paths, symlinks and symlinked parents that lead outside the
 * workspace are seen as outside accesses. Deno's `--allow-read=DIR` does not stop
 * symlink escapes, so this check lives here.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { type ToolContext, ToolError } from "./tool.ts";

/** A path argument after resolution. */
export interface ResolvedPath {
  /** The path as resolved lexically against the workspace (symlinks not followed). */
  abs: string;
  /** The real path: symlinks followed; for a missing file, its real parent plus the name. */
  real: string;
  /** True when the real path is inside the workspace. */
  inside: boolean;
  /** How to name the path to the model: workspace-relative when inside, else absolute. */
  display: string;
}

const MAX_LINK_HOPS = 40;

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
  const real = realPathOf(abs);
  const inside = isWithin(workspace, real);
  const display = inside ? (relative(workspace, real) || ".") : real;
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
 * approval of the `outside` class. Paths into `/proc`, `/sys` and `/dev` are refused.
 */
export async function guardPath(
  ctx: ToolContext,
  path: string,
  verb: string,
): Promise<ResolvedPath> {
  if (path.length === 0) {
    throw new ToolError("invalid_path", "Cannot use an empty path", "Pass a file path.");
  }
  if (path.includes("\0")) {
    throw new ToolError(
      "invalid_path",
      `Cannot use path ${JSON.stringify(path)}: it contains a NUL byte`,
      "Pass the path without NUL characters.",
    );
  }
  const workspace = ctx.session.workspace;
  // Lexically first: Deno refuses to even resolve most of these paths.
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  if (isSystemPath(workspace, abs)) throw refuseSystemPath(abs, verb);
  const resolved = resolvePath(workspace, path);
  if (isSystemPath(workspace, resolved.real)) throw refuseSystemPath(resolved.real, verb);
  if (!resolved.inside) {
    await ctx.requestApproval({
      class: "outside",
      summary: `${verb} outside the workspace: ${resolved.real}` +
        (resolved.real !== resolved.abs ? ` (via ${path})` : ""),
    });
  }
  return resolved;
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
 * Asks for approval (class `outside`) before replacing a file that has more than
 * one hard link: another link may be a file outside the workspace, and since the
 * write renames a new file into place, the other links keep the old content.
 */
export async function guardHardLinks(
  ctx: ToolContext,
  info: Deno.FileInfo,
  display: string,
  verb: string,
): Promise<void> {
  if (info.nlink === null || info.nlink <= 1) return;
  await ctx.requestApproval({
    class: "outside",
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
