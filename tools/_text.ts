/**
 * Shared internals of read, write and edit: atomic writes, UTF-8 checks and
 * lengths, diffs.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { ToolError } from "./tool.ts";

/** Prefix of the temp files an atomic write renames into place. */
export const TEMP_PREFIX = ".crab-tmp-";

/** The OS error codes of a full disk or quota: the write cannot succeed as is. */
const NO_SPACE = new Set(["ENOSPC", "EDQUOT"]);

/**
 * Writes `data` to `real` atomically: a temp file in the same directory, written
 * and fsynced, then renamed over the target (and the directory synced), so a
 * reader or a crash sees the old file or the new one, never a mix. An existing
 * file's mode is kept, and its owner where the OS lets us. On failure the temp
 * file is removed and the target is untouched; a full disk is a `no_space` error.
 */
export async function atomicWrite(
  real: string,
  data: Uint8Array,
  display: string,
  existing: Deno.FileInfo | null,
): Promise<void> {
  const dir = dirname(real);
  const tmp = join(dir, `${TEMP_PREFIX}${crypto.randomUUID()}`);
  let renamed = false;
  try {
    {
      using f = await Deno.open(tmp, { write: true, createNew: true, mode: 0o666 });
      let off = 0;
      while (off < data.byteLength) off += await f.write(data.subarray(off));
      await f.sync();
    }
    if (existing) {
      if (existing.uid !== null && existing.gid !== null) {
        // Best effort: only root (or the owner, for the group) may hand a file back.
        await Deno.chown(tmp, existing.uid, existing.gid).catch(() => {});
      }
      // After chown, which clears set-id bits.
      if (existing.mode !== null) await Deno.chmod(tmp, existing.mode & 0o7777);
    }
    await Deno.rename(tmp, real);
    renamed = true;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NO_SPACE.has(code)) {
      throw new ToolError(
        "no_space",
        `Cannot write "${display}": no space left on the device (${code})`,
        "The file was left as it was. Ask the user to free disk space, then retry.",
      );
    }
    throw e;
  } finally {
    if (!renamed) await Deno.remove(tmp).catch(() => {});
  }
  await syncDir(dir);
}

/** Makes a rename durable; not every file system can sync a directory, so best effort. */
async function syncDir(dir: string): Promise<void> {
  try {
    using d = await Deno.open(dir, { read: true });
    await d.sync();
  } catch {
    // The rename happened; only its durability across a power loss is at stake.
  }
}

/** UTF-8 length of a string, without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2; // a pair: 2 units, 4 bytes
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
}

/** Decodes UTF-8 strictly; refuses anything else. */
export function decodeUtf8(bytes: Uint8Array, display: string, verb: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ToolError(
      "invalid_utf8",
      `Cannot ${verb} "${display}": file is not valid UTF-8`,
      "Only UTF-8 text files can be edited; use write to replace it wholesale.",
    );
  }
}

/** A minimal line diff of `a` vs `b` (common prefix/suffix trimmed), unified style. */
export function unifiedDiff(a: string, b: string, name: string): string {
  const x = a.split("\n"), y = b.split("\n");
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let s = 0;
  while (s < x.length - p && s < y.length - p && x[x.length - 1 - s] === y[y.length - 1 - s]) s++;
  const out = [`--- ${name}`, `+++ ${name}`, `@@ -${p + 1} +${p + 1} @@`];
  for (const l of x.slice(p, x.length - s)) out.push(`-${l}`);
  for (const l of y.slice(p, y.length - s)) out.push(`+${l}`);
  return out.join("\n");
}
