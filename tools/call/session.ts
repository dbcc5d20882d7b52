/**
 * Per-session state shared by read, write and edit: the workspace root and, for
 * each real path read, what the file held at that read (the freshness gate,
 * `fs/freshness.ts`, compares against it).
 *
 * @module
 */

import { DEFAULT_SANDBOX_POLICY, type SandboxPolicy } from "../policy/sandbox.ts";
import { sha256 } from "../fs/sha256.ts";
import type { MediaSupport } from "../fs/media/limits.ts";

export { hashFile, sha256 } from "../fs/sha256.ts";

/** What a file held when this session last read or wrote it. */
export interface FileRecord {
  /** sha256 of the whole file, hex. */
  hash: string;
  size: number;
  mtimeMs: number | null;
}

/** One session: a workspace and what was read in it. Not carried across sessions. */
export class Session {
  /** Real path of the workspace root. */
  readonly workspace: string;
  readonly files: Map<string, FileRecord> = new Map();
  /** How far bash may reach; front ends set it from flags and the user's config. */
  sandbox: SandboxPolicy = DEFAULT_SANDBOX_POLICY;
  /**
   * What the model at the other end takes besides text; front ends set it from
   * the model table (`agent/providers/media.ts`). Text only until then.
   */
  media: MediaSupport = {};
  /** Notes given once per session that were given already (by name). */
  readonly said: Set<string> = new Set();

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
}
