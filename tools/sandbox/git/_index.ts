/**
 * Reads and sets the bits of a git index that hide a file's changes from
 * `git status` and `git diff`: `skip-worktree` and `assume-unchanged`. Index
 * versions 2, 3 and 4; SHA-1 and SHA-256 object ids.
 *
 * The assume-unchanged bit lies in each entry's 16-bit flags, so setting or
 * clearing it changes no entry's size: the bytes are flipped in place and the
 * trailing checksum made again (left all zeros when git wrote none,
 * `index.skipHash`). A split index (a `link` extension, its entries in
 * `sharedindex.*`) is not edited.
 *
 * @module
 */

const ASSUME_VALID = 0x8000;
const EXTENDED = 0x4000;
const SKIP_WORKTREE = 0x4000;
/** Entries read at most; an index larger than this is read in part. */
const MAX_ENTRIES = 1_000_000;

/** One entry: its path and where its flags field lies. */
interface Entry {
  name: Uint8Array;
  flagsAt: number;
  flags: number;
  extended: number;
}

/**
 * Calls `visit` on each entry of `index` (at most {@link MAX_ENTRIES}); returns
 * the offset after the last one read and the entry count the header gives, or
 * null when it is not an index this reads.
 */
function walk(
  index: Uint8Array,
  idBytes: number,
  visit: (e: Entry) => void,
): { end: number; count: number } | null {
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  if (index.byteLength < 12 || new TextDecoder().decode(index.subarray(0, 4)) !== "DIRC") {
    return null;
  }
  const version = view.getUint32(4);
  if (version < 2 || version > 4) return null;
  const count = view.getUint32(8);
  let off = 12;
  let previous: Uint8Array = new Uint8Array(0);
  try {
    for (let i = 0; i < Math.min(count, MAX_ENTRIES); i++) {
      const start = off;
      const flagsAt = off + 40 + idBytes;
      const flags = view.getUint16(flagsAt);
      off = flagsAt + 2;
      let extended = 0;
      if (flags & EXTENDED) {
        extended = view.getUint16(off);
        off += 2;
      }
      let name: Uint8Array;
      if (version === 4) {
        // Prefix compression: strip N bytes of the previous name, then a NUL-terminated suffix.
        let c = index[off++];
        let strip = c & 127;
        while (c & 128) {
          c = index[off++];
          strip = ((strip + 1) << 7) | (c & 127);
        }
        const end = index.indexOf(0, off);
        if (end < 0 || strip > previous.length) return null;
        const kept = previous.subarray(0, previous.length - strip);
        name = new Uint8Array(kept.length + end - off);
        name.set(kept);
        name.set(index.subarray(off, end), kept.length);
        off = end + 1;
        previous = name;
      } else {
        const end = index.indexOf(0, off);
        if (end < 0) return null;
        name = index.subarray(off, end);
        // 1 to 8 NULs pad the entry to a multiple of 8 bytes.
        off = start + ((end - start + 8) & ~7);
      }
      if (off > index.byteLength) return null;
      visit({ name, flagsAt, flags, extended });
    }
  } catch {
    return null;
  }
  return { end: off, count };
}

/**
 * The paths `index` marks skip-worktree or assume-unchanged, or null when it is
 * not an index this reads. `idBytes`: 20 (SHA-1) or 32 (SHA-256).
 */
export function hiddenPaths(index: Uint8Array, idBytes = 20): Set<string> | null {
  const decoder = new TextDecoder();
  const out = new Set<string>();
  const walked = walk(index, idBytes, (e) => {
    if ((e.flags & ASSUME_VALID) || (e.extended & SKIP_WORKTREE)) out.add(decoder.decode(e.name));
  });
  return walked ? out : null;
}

/** The entries whose assume-unchanged bit a change would flip, found by {@link assumeUnchangedFlips}. */
export interface Flips {
  /** Offsets of their flags fields. */
  at: number[];
  /** Their paths. */
  paths: string[];
}

/**
 * The entries of `index` that `pick` selects (by path) whose assume-unchanged
 * bit is not yet `on`; null when `index` is not one this edits (another
 * version, cut short, or split: a `link` extension).
 */
export function assumeUnchangedFlips(
  index: Uint8Array,
  idBytes: number,
  pick: (path: string) => boolean,
  on: boolean,
): Flips | null {
  const decoder = new TextDecoder();
  const flips: Flips = { at: [], paths: [] };
  const walked = walk(index, idBytes, (e) => {
    if (Boolean(e.flags & ASSUME_VALID) === on) return;
    const path = decoder.decode(e.name);
    if (!pick(path)) return;
    flips.at.push(e.flagsAt);
    flips.paths.push(path);
  });
  if (!walked || walked.count > MAX_ENTRIES || isSplit(index, idBytes, walked.end)) return null;
  return flips;
}

/** Whether `index` is split (a `link` extension among those from `end` up to its checksum). */
function isSplit(index: Uint8Array, idBytes: number, end: number): boolean {
  // Extensions up to the checksum: a split index keeps most entries elsewhere.
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  for (let off = end; off + 8 <= index.byteLength - idBytes;) {
    const signature = new TextDecoder().decode(index.subarray(off, off + 4));
    if (signature === "link") return true;
    off += 8 + view.getUint32(off + 4);
  }
  return false;
}

/** The stat git kept of a tracked file when it last found its content to be blob {@link oid}. */
export interface IndexStat {
  ctimeSec: number;
  ctimeNsec: number;
  mtimeSec: number;
  mtimeNsec: number;
  ino: number;
  /** git's mode: 0o100644, 0o100755, 0o120000 (a symlink), 0o160000 (a submodule). */
  mode: number;
  /** The size's low 32 bits. */
  size: number;
  oid: Uint8Array;
}

/**
 * Each stage-0 entry of a SHA-1 `index`: path → its stat and blob id, or null
 * when it is not an index this reads whole (another version or id, cut short,
 * over {@link MAX_ENTRIES}, or split). The entries' ids are views of `index`.
 */
export function indexEntries(index: Uint8Array): Map<string, IndexStat> | null {
  const decoder = new TextDecoder();
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  const out = new Map<string, IndexStat>();
  const walked = walk(index, 20, (e) => {
    // Stage bits 12-13: an entry of a conflict is not what the file holds.
    if (e.flags & 0x3000) return;
    const at = e.flagsAt - 60;
    out.set(decoder.decode(e.name), {
      ctimeSec: view.getUint32(at),
      ctimeNsec: view.getUint32(at + 4),
      mtimeSec: view.getUint32(at + 8),
      mtimeNsec: view.getUint32(at + 12),
      ino: view.getUint32(at + 20),
      mode: view.getUint32(at + 24),
      size: view.getUint32(at + 36),
      oid: index.subarray(at + 40, at + 60),
    });
  });
  if (!walked || walked.count > MAX_ENTRIES || isSplit(index, 20, walked.end)) return null;
  return out;
}

/** A hash of bytes: `sha1` or `sha256`, as the index's checksum is. */
export type Digest = (algorithm: "sha1" | "sha256", data: Uint8Array) => Uint8Array;

/**
 * A copy of `index` with the assume-unchanged bit of each entry of `flips`
 * flipped and the trailing checksum made again with `digest`.
 */
export function flipAssumeUnchanged(
  index: Uint8Array,
  flips: Flips,
  idBytes: number,
  digest: Digest,
): Uint8Array {
  const out = index.slice();
  for (const at of flips.at) out[at] ^= ASSUME_VALID >> 8;
  const body = out.length - idBytes;
  // git writes zeros instead of a checksum under index.skipHash: keep them.
  if (out.subarray(body).every((b) => b === 0)) return out;
  out.set(digest(idBytes === 32 ? "sha256" : "sha1", out.subarray(0, body)), body);
  return out;
}
