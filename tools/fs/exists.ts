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
