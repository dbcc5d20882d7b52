/**
 * The freshness gate of write and edit: a file may be changed only when it was
 * read in this session (or written by crab) and still holds what was seen then.
 * mtime alone cannot tell: millisecond mtimes collide on same-size rewrites and
 * an mtime can be restored, so the content's hash decides.
 *
 * @module
 */

import { ToolError } from "../tool.ts";
import { hashFile, sha256 } from "./sha256.ts";

/** What a session saw of each real path it read or wrote: the whole content's sha256 and size. */
export type SeenFiles = ReadonlyMap<string, { readonly hash: string; readonly size: number }>;

/**
 * Throws unless `realPath` was read in this session (`files`) and its content
 * is what that read saw. `current` is the file's content now. A size change
 * rejects at once; otherwise the hash decides. A touch that leaves the content
 * alone passes.
 *
 * @example
 * ```ts
 * assertFresh(ctx.session.files, real, "src/a.ts", "edit", bytes);
 * ```
 */
export function assertFresh(
  files: SeenFiles,
  realPath: string,
  display: string,
  verb: "edit" | "write",
  current: Uint8Array,
): void {
  const seen = seenOrThrow(files, realPath, display, verb);
  if (seen.size !== current.byteLength || seen.hash !== sha256(current)) {
    throw changed(display, verb);
  }
}

/**
 * The freshness gate for a file not loaded in memory: `size` is its size now
 * (from a stat); the content is hashed in chunks only when the size matches.
 */
export async function assertFreshOnDisk(
  files: SeenFiles,
  realPath: string,
  display: string,
  verb: "edit" | "write",
  size: number,
): Promise<void> {
  const seen = seenOrThrow(files, realPath, display, verb);
  if (seen.size !== size) throw changed(display, verb);
  const now = await hashFile(realPath);
  if (now.size !== seen.size || now.hash !== seen.hash) throw changed(display, verb);
}

function seenOrThrow(
  files: SeenFiles,
  realPath: string,
  display: string,
  verb: string,
): { hash: string; size: number } {
  const seen = files.get(realPath);
  if (!seen) {
    throw new ToolError(
      "file_not_read",
      `Cannot ${verb} "${display}": file was not read in this session`,
      `Read "${display}" with the read tool first, then retry the ${verb}.`,
    );
  }
  return seen;
}

function changed(display: string, verb: string): ToolError {
  return new ToolError(
    "file_changed_since_read",
    `Cannot ${verb} "${display}": file changed on disk since it was read`,
    `Someone else modified "${display}". Read it again to see the current content, then redo the ${verb} against it.`,
  );
}
