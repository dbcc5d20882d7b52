/**
 * Whether a path names something, without following symlinks: a dangling link
 * exists (a file cannot be created in its place, and git sees it), and a link
 * to a directory is not that directory. Any error, a missing parent or a
 * refused permission as much as a missing name, counts as absent.
 *
 * @module
 */

/** The path's own file info (a symlink's, not its target's), or null. */
export function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * True when `path` names something, a dangling symlink included.
 *
 * @example
 * ```ts
 * Deno.symlinkSync("/nonexistent", "/tmp/dangling");
 * entryExists("/tmp/dangling"); // true
 * ```
 */
export function entryExists(path: string): boolean {
  return lstatOrNull(path) !== null;
}

/**
 * True when `path` is an empty regular file or an empty directory (what a
 * sandbox placeholder or mount stub looks like); `info` spares the lookup.
 */
export function isEmptyEntry(path: string, info = lstatOrNull(path)): boolean {
  if (!info) return false;
  if (info.isFile) return info.size === 0;
  if (!info.isDirectory) return false;
  try {
    for (const _ of Deno.readDirSync(path)) return false;
    return true;
  } catch {
    return false;
  }
}

/** The text of `path`, or null when it cannot be read. */
export function readTextOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** The real path of `path` (symlinks resolved), or null when it does not resolve. */
export function realPathOrNull(path: string): string | null {
  try {
    return Deno.realPathSync(path);
  } catch {
    return null;
  }
}
