/**
 * The grep worker: reads files and runs one regular expression over each, so a
 * catastrophic pattern blocks this thread, not the agent's. It answers each
 * {@link GrepBatch} with a {@link BatchReply}; {@link searchFile} is the whole
 * per-file search, exported for tests.
 *
 * Per file, the cheap checks come first: a NUL byte makes it binary (skipped,
 * like rg); an ASCII file is turned into a string by a byte copy (Latin-1), which
 * is exact for ASCII and several times faster than UTF-8 decoding; only other
 * files pay for the UTF-8 (or BOM-marked UTF-16) decoder.
 *
 * @module
 */

import { Buffer, isAscii } from "node:buffer";
import { isMainThread, parentPort, workerData } from "node:worker_threads";

/** What to return per file. */
export type GrepMode = "content" | "files_with_matches" | "count";

/** One batch of files to search for one search. */
export interface GrepBatch {
  /** The search this batch belongs to; batches of a cancelled search are skipped. */
  search: number;
  batch: number;
  pattern: string;
  flags: string;
  mode: GrepMode;
  /** Lines of context around each matching line (content mode). */
  context: number;
  /** Most matching lines worth returning per file; a file stops being searched there. */
  lineCap: number;
  files: string[];
}

/** Matches in one file. */
export interface FileMatches {
  /** Index of the file in its batch. */
  index: number;
  /** Matching lines found (at most `lineCap` in content mode, 1 in files mode). */
  count: number;
  /** True when the search of this file stopped at a cap before the end: more lines may match. */
  more: boolean;
  /** 1-based numbers of the matching lines, ascending (content mode). */
  lines: number[];
  /** Matching and context lines to show, ascending, and their text (content mode). */
  shown: number[];
  texts: string[];
}

/** The answer to one batch. */
export interface BatchReply {
  search: number;
  batch: number;
  matches: FileMatches[];
  /** Set when the pattern does not compile (then `matches` is empty). */
  error?: string;
}

/** Lines longer than this are cut. */
export const MAX_LINE_CHARS = 2000;

const utf8 = new TextDecoder("utf-8");
const utf16le = new TextDecoder("utf-16le");
const utf16be = new TextDecoder("utf-16be");

let buf = new Uint8Array(1 << 20);
let nodeBuf = Buffer.from(buf.buffer, 0, buf.byteLength);

/** Reads a whole file into the reused buffer; returns its length, or -1 when unreadable. */
function readInto(path: string): number {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path);
  } catch {
    return -1; // vanished or unreadable: skipped, like rg
  }
  try {
    let len = 0;
    for (;;) {
      if (len === buf.byteLength) {
        const bigger = new Uint8Array(buf.byteLength * 2);
        bigger.set(buf);
        buf = bigger;
        nodeBuf = Buffer.from(buf.buffer, 0, buf.byteLength);
      }
      const n = file.readSync(buf.subarray(len));
      if (n === null || n === 0) break;
      len += n;
      // A short read of a regular file is its end; saves a system call per file.
      if (len < buf.byteLength) break;
    }
    return len;
  } catch {
    return -1;
  } finally {
    file.close();
  }
}

/** Decodes file bytes to text, or undefined for a binary file. */
export function decode(bytes: Uint8Array, latin1?: () => string): string | undefined {
  const b0 = bytes[0], b1 = bytes[1];
  if (bytes.length >= 2 && b0 === 0xff && b1 === 0xfe) return utf16le.decode(bytes.subarray(2));
  if (bytes.length >= 2 && b0 === 0xfe && b1 === 0xff) return utf16be.decode(bytes.subarray(2));
  if (bytes.indexOf(0) !== -1) return undefined;
  if (isAscii(bytes)) {
    return latin1 ? latin1() : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
      .toString("latin1");
  }
  return utf8.decode(bytes); // drops a UTF-8 BOM, replaces invalid sequences
}

function cut(line: string): string {
  return line.length > MAX_LINE_CHARS ? line.slice(0, MAX_LINE_CHARS) : line;
}

/**
 * Searches one decoded text. Lines end at `\n`; a `\r` before it is not part of
 * the line, so `x$` matches `x\r\n` (rg's `--crlf`). The regex runs over the whole
 * text for speed; a match that crosses a line end (possible with `\s` or `[^x]`)
 * is re-checked line by line, so, as with rg, only lines that match on their own
 * are reported.
 */
export function searchText(
  re: RegExp,
  raw: string,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  const text = raw.indexOf("\r\n") === -1 ? raw : raw.replace(/\r\n/g, "\n");
  re.lastIndex = 0;
  let m = re.exec(text);
  if (!m) return undefined;
  const lines: number[] = [];
  const starts: number[] = []; // start offset of each matching line
  let scanPos = 0; // newlines before scanPos are counted in scanLine
  let scanLine = 1;
  const lineOf = (pos: number): number => {
    for (let i = text.indexOf("\n", scanPos); i !== -1 && i < pos; i = text.indexOf("\n", i + 1)) {
      scanLine++;
      scanPos = i + 1;
    }
    return scanLine;
  };
  const single = new RegExp(re.source, re.flags.replace("g", ""));
  const limit = mode === "files_with_matches" ? 1 : mode === "count" ? Infinity : lineCap;
  let more = false;
  // A text ending in a line end has no line after it: a match there (`^`, `$`) is on no line.
  const endsClean = text.length === 0 || text.charCodeAt(text.length - 1) === 10;
  while (m) {
    const at = m.index;
    if (at === text.length && endsClean) break;
    const startLine = lineOf(at);
    const lineStart = text.lastIndexOf("\n", at - 1) + 1;
    const end = at + m[0].length;
    let nl = text.indexOf("\n", at);
    if (nl === -1) nl = text.length;
    if (end <= nl) {
      lines.push(startLine);
      starts.push(lineStart);
      re.lastIndex = nl + 1;
    } else {
      // Crosses line ends: each line it touches counts only if it matches on its own.
      let ls = lineStart;
      let ln = startLine;
      for (;;) {
        let le = text.indexOf("\n", ls);
        if (le === -1) le = text.length;
        if (single.test(text.slice(ls, le))) {
          lines.push(ln);
          starts.push(ls);
          if (lines.length >= limit) {
            re.lastIndex = le + 1;
            break;
          }
        }
        if (le >= end - 1 || le >= text.length) {
          re.lastIndex = le + 1;
          break;
        }
        ls = le + 1;
        ln++;
      }
    }
    if (lines.length >= limit) {
      // Stopped at the cap; whether more lines match is not worth another scan.
      more = re.lastIndex < text.length;
      break;
    }
    if (re.lastIndex > text.length) break;
    m = re.exec(text);
  }
  if (lines.length === 0) return undefined;
  if (mode !== "content") return { count: lines.length, more, lines: [], shown: [], texts: [] };
  const shown: number[] = [];
  const texts: string[] = [];
  if (context === 0) {
    for (let k = 0; k < lines.length; k++) {
      let e = text.indexOf("\n", starts[k]);
      if (e === -1) e = text.length;
      shown.push(lines[k]);
      texts.push(cut(text.slice(starts[k], e)));
    }
    return { count: lines.length, more, lines, shown, texts };
  }
  // With context: every line start of the file, to slice any line by number.
  const lineStarts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  if (lineStarts[lineStarts.length - 1] === text.length && lineStarts.length > 1) lineStarts.pop();
  const total = lineStarts.length;
  let last = 0;
  for (const l of lines) {
    const lo = Math.max(last + 1, l - context);
    const hi = Math.min(total, l + context);
    for (let k = lo; k <= hi; k++) {
      const s = lineStarts[k - 1];
      const e = k < total ? lineStarts[k] - 1 : text.endsWith("\n") ? text.length - 1 : text.length;
      shown.push(k);
      texts.push(cut(text.slice(s, e)));
      last = k;
    }
  }
  return { count: lines.length, more, lines, shown, texts };
}

let cached: { key: string; re: RegExp } | undefined;

function regexOf(pattern: string, flags: string): RegExp {
  const key = flags + "/" + pattern;
  if (cached?.key !== key) cached = { key, re: new RegExp(pattern, flags) };
  return cached.re;
}

/** Searches one file; undefined when it has no match, is binary or is unreadable. */
export function searchFile(
  path: string,
  re: RegExp,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  const len = readInto(path);
  if (len <= 0) return undefined;
  const bytes = buf.subarray(0, len);
  const text = decode(bytes, () => nodeBuf.toString("latin1", 0, len));
  if (text === undefined) return undefined;
  return searchText(re, text, mode, context, lineCap);
}

/** Runs one batch; `cancelled()` is polled between files. */
export function runBatch(req: GrepBatch, cancelled: () => boolean = () => false): BatchReply {
  let re: RegExp;
  try {
    re = regexOf(req.pattern, req.flags);
  } catch (e) {
    return {
      search: req.search,
      batch: req.batch,
      matches: [],
      error: e instanceof Error ? e.message : String(e),
    };
  }
  const matches: FileMatches[] = [];
  for (let i = 0; i < req.files.length; i++) {
    if (cancelled()) break;
    const r = searchFile(req.files[i], re, req.mode, req.context, req.lineCap);
    if (r) matches.push({ index: i, ...r });
  }
  return { search: req.search, batch: req.batch, matches };
}

if (!isMainThread && parentPort && workerData?.crabGrep) {
  // Holds the id of the newest cancelled search; its remaining files are skipped.
  const cancel = new Int32Array(workerData.cancel as SharedArrayBuffer);
  const port = parentPort;
  port.on("message", (req: GrepBatch) => {
    port.postMessage(runBatch(req, () => Atomics.load(cancel, 0) >= req.search));
  });
}
