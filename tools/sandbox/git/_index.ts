/**
 * Reads the paths a git index marks `skip-worktree` or `assume-unchanged`:
 * with those bits set, `git status` and `git diff` stop showing changes to a
 * file. Index versions 2, 3 and 4; SHA-1 and SHA-256 object ids.
 *
 * @module
 */

const ASSUME_VALID = 0x8000;
const EXTENDED = 0x4000;
const SKIP_WORKTREE = 0x4000;
/** Entries read at most; an index larger than this is read in part. */
const MAX_ENTRIES = 1_000_000;

/**
 * The paths `index` marks skip-worktree or assume-unchanged, or null when it is
 * not an index this reads. `idBytes`: 20 (SHA-1) or 32 (SHA-256).
 */
export function hiddenPaths(index: Uint8Array, idBytes = 20): Set<string> | null {
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  if (index.byteLength < 12 || new TextDecoder().decode(index.subarray(0, 4)) !== "DIRC") {
    return null;
  }
  const version = view.getUint32(4);
  if (version < 2 || version > 4) return null;
  const count = Math.min(view.getUint32(8), MAX_ENTRIES);
  const decoder = new TextDecoder();
  const out = new Set<string>();
  let off = 12;
  let previous: Uint8Array = new Uint8Array(0);
  try {
    for (let i = 0; i < count; i++) {
      const start = off;
      const flags = view.getUint16(off + 40 + idBytes);
      off += 40 + idBytes + 2;
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
        if (end < 0) return null;
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
      if ((flags & ASSUME_VALID) || (extended & SKIP_WORKTREE)) out.add(decoder.decode(name));
    }
  } catch {
    return null;
  }
  return out;
}
