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

/** Marks a last line without a newline, so it differs from the same text with one. */
const NO_EOL = "\u0000no-eol";

function diffLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else lines[lines.length - 1] += NO_EOL;
  return lines;
}

/** Lines of context around each change in {@link unifiedDiff}. */
const DIFF_CONTEXT = 3;
/** Beyond this many differing lines the diff stops searching and shows one replacement. */
const DIFF_MAX_EDITS = 2000;

type Op = { kind: " " | "-" | "+"; line: string };

/**
 * Myers' shortest edit script between two line arrays; null when the edit
 * distance exceeds `maxEdits` (the caller shows a plain replacement instead).
 */
function editScript(x: string[], y: string[], maxEdits: number): Op[] | null {
  const n = x.length, m = y.length, max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let xi = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
        ? v[offset + k + 1]
        : v[offset + k - 1] + 1;
      let yi = xi - k;
      while (xi < n && yi < m && x[xi] === y[yi]) xi++, yi++;
      v[offset + k] = xi;
      if (xi >= n && yi >= m) {
        // Walk the trace back to recover the script.
        const ops: Op[] = [];
        let cx = n, cy = m;
        for (let dd = d; dd > 0; dd--) {
          const pv = trace[dd];
          const kk = cx - cy;
          const down = kk === -dd || (kk !== dd && pv[offset + kk - 1] < pv[offset + kk + 1]);
          const pk = down ? kk + 1 : kk - 1;
          const px = pv[offset + pk], py = px - pk;
          while (cx > px && cy > py && cx > (down ? px : px + 1)) {
            ops.push({ kind: " ", line: x[--cx] });
            cy--;
          }
          if (down) ops.push({ kind: "+", line: y[--cy] });
          else ops.push({ kind: "-", line: x[--cx] });
        }
        while (cx > 0) ops.push({ kind: " ", line: x[--cx] }), cy--;
        return ops.reverse();
      }
    }
  }
  return null;
}

/**
 * A unified diff of `a` against `b` (`--- name`, `+++ name`, hunks with three
 * lines of context), for the approval prompt: what the user approves is the change.
 */
export function unifiedDiff(a: string, b: string, name: string): string {
  const x = diffLines(a), y = diffLines(b);
  // Common head and tail first: cheap, and it keeps the search small for big files.
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let s = 0;
  while (s < x.length - p && s < y.length - p && x[x.length - 1 - s] === y[y.length - 1 - s]) s++;
  const midX = x.slice(p, x.length - s), midY = y.slice(p, y.length - s);
  const middle = editScript(midX, midY, DIFF_MAX_EDITS) ?? [
    ...midX.map((line): Op => ({ kind: "-", line })),
    ...midY.map((line): Op => ({ kind: "+", line })),
  ];
  const ops: Op[] = [
    ...x.slice(Math.max(0, p - DIFF_CONTEXT), p).map((line): Op => ({ kind: " ", line })),
    ...middle,
    ...x.slice(x.length - s, x.length - s + DIFF_CONTEXT).map((line): Op => ({ kind: " ", line })),
  ];
  const out = [`--- ${name}`, `+++ ${name}`];
  // Line numbers (1-based) of ops[0] in a and b.
  let lineA = Math.max(0, p - DIFF_CONTEXT) + 1, lineB = lineA;
  let i = 0;
  while (i < ops.length) {
    // Skip to the next change, keeping context before it.
    let j = i;
    while (j < ops.length && ops[j].kind === " ") j++;
    if (j === ops.length) break;
    const start = Math.max(i, j - DIFF_CONTEXT);
    for (let k = i; k < start; k++) lineA++, lineB++;
    // Extend the hunk while changes are within 2 × context of each other.
    let end = j;
    let quiet = 0;
    for (let k = j; k < ops.length; k++) {
      if (ops[k].kind === " ") {
        quiet++;
        if (quiet > 2 * DIFF_CONTEXT) break;
      } else {
        quiet = 0;
        end = k;
      }
    }
    const stop = Math.min(ops.length, end + 1 + DIFF_CONTEXT);
    const hunk = ops.slice(start, stop);
    const countA = hunk.filter((o) => o.kind !== "+").length;
    const countB = hunk.filter((o) => o.kind !== "-").length;
    out.push(
      `@@ -${countA ? lineA : lineA - 1},${countA} +${countB ? lineB : lineB - 1},${countB} @@`,
    );
    for (const o of hunk) {
      if (o.line.endsWith(NO_EOL)) {
        out.push(o.kind + o.line.slice(0, -NO_EOL.length), "\\ No newline at end of file");
      } else out.push(o.kind + o.line);
    }
    lineA += countA;
    lineB += countB;
    i = stop;
  }
  return out.join("\n");
}
