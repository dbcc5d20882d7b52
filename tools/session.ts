/**
 * Per-session state shared by read, write and edit: the workspace root and, for
 * each real path read, what the file held at that read (the freshness gate).
 *
 * @module
 */

import { ToolError } from "./tool.ts";
import { DEFAULT_SANDBOX_POLICY, type SandboxPolicy } from "./sandbox/policy.ts";
import { fileHasher, sha256 } from "./fs/sha256.ts";

export { sha256 } from "./fs/sha256.ts";

/** What a file held when this session last read or wrote it. */
export interface FileRecord {
  /** sha256 of the whole file, hex. */
  hash: string;
  size: number;
  mtimeMs: number | null;
}

const HASH_CHUNK = 256 * 1024;

/** sha256 and size of a file's whole content, read in chunks (memory stays bounded). */
export async function hashFile(path: string): Promise<{ hash: string; size: number }> {
  const buf = new Uint8Array(HASH_CHUNK);
  let size = 0;
  using file = await Deno.open(path, { read: true });
  const hasher = await fileHasher((await file.stat()).size);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    hasher.update(buf.subarray(0, n));
    size += n;
  }
  return { hash: hasher.digest("hex"), size };
}

/** One session: a workspace and what was read in it. Not carried across sessions. */
export class Session {
  /** Real path of the workspace root. */
  readonly workspace: string;
  readonly files: Map<string, FileRecord> = new Map();
  /** How far bash may reach; front ends set it from flags and the user's config. */
  sandbox: SandboxPolicy = DEFAULT_SANDBOX_POLICY;

  constructor(workspace: string) {
    this.workspace = Deno.realPathSync(workspace);
  }

  /** Remembers the whole content of `realPath` as seen now (after a read or crab's own write). */
  record(realPath: string, content: Uint8Array, mtime: Date | null): void {
    this.files.set(realPath, {
      hash: sha256(content),
      size: content.byteLength,
      mtimeMs: mtime?.getTime() ?? null,
    });
  }

  /** Like {@link record}, for a caller that hashed the content while streaming it. */
  recordDigest(realPath: string, record: FileRecord): void {
    this.files.set(realPath, record);
  }

  /**
   * The freshness gate: throws unless `realPath` was read in this session and its
   * content is what that read saw. `current` is the file's content now. A size
   * change rejects at once; otherwise the hash decides, because millisecond mtimes
   * collide on same-size rewrites and an mtime can be restored. A touch that leaves
   * the content alone passes.
   */
  assertFresh(
    realPath: string,
    display: string,
    verb: "edit" | "write",
    current: Uint8Array,
  ): void {
    const seen = this.#seen(realPath, display, verb);
    if (seen.size !== current.byteLength || seen.hash !== sha256(current)) {
      throw changed(display, verb);
    }
  }

  /**
   * The freshness gate for a file not loaded in memory: `size` is its size now
   * (from a stat); the content is hashed in chunks only when the size matches.
   */
  async assertFreshOnDisk(
    realPath: string,
    display: string,
    verb: "edit" | "write",
    size: number,
  ): Promise<void> {
    const seen = this.#seen(realPath, display, verb);
    if (seen.size !== size) throw changed(display, verb);
    const now = await hashFile(realPath);
    if (now.size !== seen.size || now.hash !== seen.hash) throw changed(display, verb);
  }

  #seen(realPath: string, display: string, verb: string): FileRecord {
    const seen = this.files.get(realPath);
    if (!seen) {
      throw new ToolError(
        "file_not_read",
        `Cannot ${verb} "${display}": file was not read in this session`,
        `Read "${display}" with the read tool first, then retry the ${verb}.`,
      );
    }
    return seen;
  }
}

function changed(display: string, verb: string): ToolError {
  return new ToolError(
    "file_changed_since_read",
    `Cannot ${verb} "${display}": file changed on disk since it was read`,
    `Someone else modified "${display}". Read it again to see the current content, then redo the ${verb} against it.`,
  );
}
