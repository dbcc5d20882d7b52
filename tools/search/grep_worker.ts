/**
 * The grep worker: reads files and runs one regular expression over each, so a
 * catastrophic pattern blocks this thread, not the agent's. It answers each
 * {@link GrepBatch} with a {@link BatchReply}; {@link searchFile} is the whole
 * per-file search, exported for tests.
 *
 * Per file, the cheap work comes first. When every match must contain some
 * ASCII text (`export ` in `export (const|function)`, `TODO` or `FIXME` in
 * `TODO|FIXME`), the bytes are scanned for it and a file without it is done.
 * The bytes become a string by a plain byte copy (Latin-1), several times
 * faster than UTF-8 decoding, whenever that cannot change the answer: the file
 * is ASCII, or the pattern can only match ASCII text (`asciiOnly`), since UTF-8
 * encodes every other character with bytes ≥ 0x80 that such a pattern never
 * matches. A NUL makes the file binary (skipped, like rg). Only a file that
 * matches is decoded exactly (UTF-8, or UTF-16 with a BOM) and searched line by
 * line for the output.
 *
 * The first searches of a process may run here on the calling thread too
 * ({@link searchHere}), for patterns whose work is bounded, while no worker is
 * up yet. That thread does without Node's `Buffer`, whose Latin-1 copy the
 * rest relies on: loading Deno's Node layer would cost a one-shot search about
 * 10 ms. There an ASCII file's text is its UTF-8 decoding (the same string,
 * as fast to make) and any other file is decoded, which changes no answer for
 * the reasons above ({@link searchDecoded}).
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import { alternatives, asciiOnly, requiredLiteral } from "./grep_pattern.ts";
import type { nativeRead } from "./file_reader.ts";

/** What to return per file. */
export type GrepMode = "content" | "files_with_matches" | "count";

/**
 * One batch of files for one search. Every worker gets every batch and claims
 * its files one at a time from a shared counter, so all workers share the work
 * of a batch whatever the file sizes, and none idles while another is stuck
 * with a large file.
 */
export interface GrepBatch {
  /** The search this batch belongs to; batches of a cancelled search are skipped. */
  search: number;
  batch: number;
  /** Cell of the shared claim counter for this batch. */
  slot: number;
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
  /** 1-based numbers of the matching lines, ascending (content mode). */
  lines: number[];
  /** Matching and context lines to show, ascending, and their text (content mode). */
  shown: number[];
  texts: string[];
}

/** One worker's answer to one batch: the files it claimed and searched. */
export interface BatchReply {
  search: number;
  batch: number;
  slot: number;
  /** Files of the batch this worker claimed (searched, or skipped once cancelled). */
  claimed: number;
  /** Sizes of large files searched, as `[index, bytes, ...]`: the next search claims them first. */
  big: number[];
  /** Files served from the copies kept since an earlier search. */
  fromMemory: number;
  matches: FileMatches[];
  /** Set when the pattern does not compile (then `matches` is empty). */
  error?: string;
}

/** Lines longer than this are cut. */
export const MAX_LINE_CHARS = 2000;

/** Leading bytes probed for NUL before any decoding, to drop most binaries early. */
const BINARY_PROBE = 8192;

const utf8 = new TextDecoder("utf-8");
/** For a line inside a file: a BOM there is a character (the file's own is skipped before). */
const utf8InLine = new TextDecoder("utf-8", { ignoreBOM: true });
/** Throws on invalid UTF-8: valid text as many characters as bytes is ASCII. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const utf16le = new TextDecoder("utf-16le");
const utf16be = new TextDecoder("utf-16be");

/** Node's Buffer has an undocumented `latin1Slice`, twice as fast as `toString("latin1")`. */
type Latin1Buffer = Buffer & { latin1Slice(start: number, end: number): string };

let buf = new Uint8Array(1 << 20);

/** `node:buffer`, once {@link loadLatin1} loaded it (every worker does as it starts). */
let node: typeof import("node:buffer") | undefined;
/** The Latin-1 view of {@link buf}, while `node` is loaded. */
let nodeBuf: Latin1Buffer | undefined;

/** Makes `bytes` the reused buffer, with its Latin-1 view while `node` is loaded. */
function useBuffer(bytes: Uint8Array<ArrayBuffer>): void {
  buf = bytes;
  nodeBuf = node ? viewOf(bytes) : undefined;
}

/** Node's Latin-1 view of `bytes` (from their start). */
function viewOf(bytes: Uint8Array): Latin1Buffer {
  const b = bytes.buffer as ArrayBuffer;
  return node!.Buffer.from(b, bytes.byteOffset, bytes.byteLength) as Latin1Buffer;
}

/**
 * Loads `node:buffer` for this thread's searches: its Latin-1 copy is several
 * times faster than decoding a file that is not ASCII.
 */
export async function loadLatin1(): Promise<void> {
  node ??= await import("node:buffer");
  nodeBuf ??= viewOf(buf);
}

/** The text of `bytes` when they are all ASCII (`view`: Node's view of them, if loaded). */
function asciiText(bytes: Uint8Array, view: Latin1Buffer | undefined): string | undefined {
  if (view) return node!.isAscii(bytes) ? view.latin1Slice(0, bytes.length) : undefined;
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
  // Valid UTF-8 spends more than one byte on any other character (and a BOM, dropped, three).
  return text.length === bytes.length ? text : undefined;
}

/**
 * Files larger than this are not searched: a JavaScript string holds at most
 * about 512 MiB, and the buffer would stay that large.
 */
export const MAX_FILE_BYTES = 256 * 1024 * 1024;
/** The reused buffer shrinks back to 1 MiB after a file larger than this. */
const KEEP_BUFFER_BYTES = 64 * 1024 * 1024;

/** What {@link readInto} returns for a file longer than the limit it was given. */
const TOO_LONG = -2;

/**
 * Reads a whole file into the reused buffer; returns its length, -1 when it is
 * unreadable or larger than {@link MAX_FILE_BYTES}, or {@link TOO_LONG} when it
 * fills `limit` bytes (below that maximum).
 */
function readInto(path: string, keep: boolean, limit = MAX_FILE_BYTES): number {
  if (native) return readNative(native, path, keep, limit);
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
        if (len >= MAX_FILE_BYTES) return -1;
        if (len >= limit) return TOO_LONG;
        ensureCapacity(len + 1);
      }
      const n = file.readSync(len === 0 ? buf : buf.subarray(len));
      if (n === null || n === 0) break;
      len += n;
      // A short read of a regular file is its end; saves a system call per file.
      if (len < buf.byteLength) break;
    }
    // fstat costs no permission check; it keys the copy kept for the next search.
    if (keep && mayKeep(len)) {
      const info = file.statSync();
      remember(path, {
        ino: info.ino,
        size: info.size,
        mtime: info.mtime?.getTime() ?? NaN,
        ctime: info.ctime?.getTime() ?? NaN,
      }, len);
    }
    return len;
  } catch {
    return -1;
  } finally {
    file.close();
  }
}

/**
 * Whether a file of `len` bytes just read may be kept for the next search: a
 * full cache with nothing to drop takes no more, so its stat need not be taken.
 */
function mayKeep(len: number): boolean {
  return len <= CACHED_FILE_MAX && (keptBytes + len <= bounds.bytes || noneToDrop !== searchesSeen);
}

/**
 * libc's reader (`file_reader.ts`) in a worker of the pool, where it may be
 * made (FFI granted, Linux): an `open`, a `read` and a `close` per file, where
 * Deno's own file object and permission check cost a quarter more (10,000
 * small files: 66 against 86 ms, with the stat a kept copy needs 72 against
 * 97). A worker loads it as it starts; the calling thread, which searches a
 * few files before the workers are up, never loads it and keeps Deno's calls.
 * Symlinks are not followed (the walk lists none).
 */
let native: ReturnType<typeof nativeRead> | undefined;
/** The stat {@link native} gives of a file it reads for a kept copy. */
const nativeStat = new Float64Array(6);

/** {@link readInto} through {@link native}. */
function readNative(
  read: NonNullable<typeof native>,
  path: string,
  keep: boolean,
  limit: number,
): number {
  for (;;) {
    const len = read(path, buf, 0, limit, keep ? nativeStat : undefined);
    if (len === -3) {
      // Too small (a file over 1 MiB, few): read again into one as large as the file.
      let size = 0;
      try {
        size = Deno.statSync(path).size;
      } catch {
        return -1;
      }
      useBuffer(new Uint8Array(Math.min(Math.max(size + 1, buf.byteLength * 2), limit + 1)));
      continue;
    }
    if (len === -2) return limit < MAX_FILE_BYTES ? TOO_LONG : -1;
    if (len < 0) return -1;
    if (keep && mayKeep(len)) {
      const [ino, size, mtime, ctime] = nativeStat;
      remember(path, { ino, size, mtime, ctime }, len);
    }
    return len;
  }
}

/** A file's stat as a kept copy is checked against: `ctime` in whole seconds, as libc's reader gives it. */
interface KeyStat {
  ino: number | null;
  size: number;
  mtime: number;
  ctime: number;
}

/**
 * Whole seconds of a time in milliseconds: libc's reader gives a file's
 * ctime so. A copy is kept only when its ctime is {@link STABLE_AFTER_MS}
 * old, more than a second even in whole seconds, so any change after it
 * falls in another second.
 */
const seconds = (ms: number) => Math.floor(ms / 1000) * 1000;

/**
 * Small files kept between searches. Under crab's permission flags Deno checks
 * every `open` against special files, which costs about 10 µs here (rg pays
 * nothing of the kind); a `stat` costs a quarter of that, so a file whose inode,
 * size, mtime and ctime are unchanged is searched from memory. A file changed
 * in the last two seconds is not kept, so a change within the timestamp
 * granularity cannot be missed. Filled from a worker's second search on, so a
 * one-shot `crab tool grep` pays nothing for it.
 *
 * An ASCII file is kept as the string the search runs over (a one-byte string:
 * the same memory as its bytes), so a search from memory copies nothing; an
 * ASCII file with a NUL is binary, and kept as that verdict alone.
 */
interface KeptFile {
  ino: number | null;
  size: number;
  mtime: number;
  ctime: number;
  /** Bytes counted against the cache's bound. */
  cost: number;
  /** The last search that kept or used it (`searchesSeen` then). */
  seen: number;
  /** The content when it is ASCII without NUL. */
  text?: string;
  /** ASCII with a NUL: never a match. */
  binary?: boolean;
  /** The content otherwise. */
  bytes?: Uint8Array;
  view?: Latin1Buffer;
}

/** Files larger than this are read each time (there are few, and they are costly to keep). */
const CACHED_FILE_MAX = 256 * 1024;
/** Bytes kept per worker, at most. */
const CACHE_MAX_BYTES = 32 * 1024 * 1024;
/** A file changed this recently is not kept. */
const STABLE_AFTER_MS = 2000;

/** How much a worker keeps, and how old a kept file must be (the pool may set both, for tests). */
export interface KeepBounds {
  bytes: number;
  stableAfterMs: number;
}
let bounds: KeepBounds = { bytes: CACHE_MAX_BYTES, stableAfterMs: STABLE_AFTER_MS };

const kept = new Map<string, KeptFile>();
let keptBytes = 0;
/** Searches this worker has taken part in; keeping starts with the second. */
let searchesSeen = 0;
let lastSearch = -1;
/** Files served from kept copies so far (reported per batch). */
let keptHits = 0;
/** Where the look for copies to drop stopped, oldest first; none left: the search it ran out in. */
let dropCursor: MapIterator<[string, KeptFile]> | undefined;
let noneToDrop = -1;

function forget(path: string, k: KeptFile): void {
  kept.delete(path);
  keptBytes -= k.cost;
}

/** Searches in a row (this one and those before) a copy may go unused and still be kept. */
const UNUSED_KEPT = 4;

/**
 * A full cache makes room by dropping copies that none of the last
 * {@link UNUSED_KEPT} searches used, oldest first. Searches go through their
 * files in the same order each time, so dropping the oldest copy for each new
 * one would lose every copy before its next turn on a tree larger than the
 * bound: a copy the searches use stays, and the cache keeps a stable part of
 * such a tree (a file is read by whichever worker claims it first, so a
 * worker's copy may go unused a search or two). Copies of files a narrower
 * search no longer reads make way for the files it does.
 */
function makeRoom(len: number): boolean {
  if (noneToDrop === searchesSeen) return false;
  dropCursor ??= kept.entries();
  while (keptBytes + len > bounds.bytes) {
    const next = dropCursor.next();
    if (next.done) {
      dropCursor = undefined;
      noneToDrop = searchesSeen;
      return false;
    }
    const [path, k] = next.value;
    if (k.seen <= searchesSeen - UNUSED_KEPT) forget(path, k);
  }
  return true;
}

function remember(path: string, info: KeyStat, len: number): void {
  const mtime = info.mtime;
  const ctime = seconds(info.ctime);
  const stableBefore = Date.now() - bounds.stableAfterMs;
  if (!(mtime < stableBefore && ctime < stableBefore) || info.size !== len) return;
  const old = kept.get(path);
  if (old) forget(path, old);
  if (keptBytes + len > bounds.bytes && !makeRoom(len)) return;
  const k: KeptFile = { ino: info.ino, size: len, mtime, ctime, cost: len, seen: searchesSeen };
  const text = asciiText(buf.subarray(0, len), nodeBuf);
  if (text !== undefined) {
    if (text.indexOf("\0") === -1) k.text = text;
    else {
      k.binary = true;
      k.cost = 0;
    }
  } else {
    k.bytes = buf.slice(0, len);
    if (node) k.view = viewOf(k.bytes);
  }
  kept.set(path, k);
  keptBytes += k.cost;
}

/** The kept copy of `path` when the file is unchanged since it was kept. */
function keptCopy(path: string): KeptFile | undefined {
  const k = kept.get(path);
  if (!k) return undefined;
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    forget(path, k);
    return undefined;
  }
  if (
    info.ino === k.ino && info.size === k.size && info.mtime?.getTime() === k.mtime &&
    seconds(info.ctime?.getTime() ?? NaN) === k.ctime
  ) {
    k.seen = searchesSeen;
    return k;
  }
  forget(path, k);
  return undefined;
}

/** The text of `[start, end)`, cut at {@link MAX_LINE_CHARS} (reading at most 4 bytes a char). */
function cutLine(lineText: (start: number, end: number) => string, start: number, end: number) {
  const line = lineText(start, Math.min(end, start + 4 * MAX_LINE_CHARS));
  return line.length > MAX_LINE_CHARS ? line.slice(0, MAX_LINE_CHARS) : line;
}

/** Options of {@link searchText}. */
export interface TextOptions {
  /** The text of a line by offsets (decodes bytes when the text is a Latin-1 view). */
  lineText?: (start: number, end: number) => string;
  /** The first match, when the caller already ran the regex from the start. */
  first?: RegExpExecArray;
}

/**
 * Counts matching lines without numbering them (count and files modes): after
 * each match the search resumes at the next line.
 */
function countLines(re: RegExp, single: RegExp, text: string, limit: number): number {
  const endsClean = text.length === 0 || text.charCodeAt(text.length - 1) === 10;
  let count = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const at = m.index;
    if (at === text.length && endsClean) break;
    let nl = text.indexOf("\n", at);
    if (nl === -1) nl = text.length;
    if (at + m[0].length <= nl) {
      count++;
      re.lastIndex = nl + 1;
    } else {
      // Crosses a line end: count the touched lines that match on their own.
      const end = at + m[0].length;
      let ls = text.lastIndexOf("\n", at - 1) + 1;
      for (;;) {
        let le = text.indexOf("\n", ls);
        if (le === -1) le = text.length;
        if (single.test(text.slice(ls, le)) && ++count >= limit) return count;
        re.lastIndex = le + 1;
        if (le >= end - 1 || le >= text.length) break;
        ls = le + 1;
      }
    }
    if (count >= limit || re.lastIndex > text.length) break;
  }
  return count;
}

/**
 * Searches one decoded text. Lines end at `\n`; a `\r` before it is not part of
 * the line, so `x$` matches `x\r\n` (rg's `--crlf`). The regex runs over the whole
 * text for speed; a match that crosses a line end (possible with `\s` or `[^x]`)
 * is re-checked line by line, so, as with rg, only lines that match on their own
 * are reported.
 */
export function searchText(
  c: Compiled,
  raw: string,
  mode: GrepMode,
  context: number,
  lineCap: number,
  opts: TextOptions = {},
): Omit<FileMatches, "index"> | undefined {
  const { re, single } = c;
  const normalize = raw.indexOf("\r") !== -1;
  const text = normalize ? raw.replace(/\r\n/g, "\n") : raw;
  // Offsets into the text (and a known first match) stay valid only if nothing was removed.
  const lineText = !normalize && opts.lineText
    ? opts.lineText
    : (a: number, b: number) => text.slice(a, b);
  if (mode !== "content") {
    const count = countLines(re, single, text, mode === "count" ? Infinity : 1);
    return count ? { count, lines: [], shown: [], texts: [] } : undefined;
  }
  let m: RegExpExecArray | null;
  if (!normalize && opts.first) {
    m = opts.first;
  } else {
    re.lastIndex = 0;
    m = re.exec(text);
  }
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
        }
        re.lastIndex = le + 1;
        if (lines.length >= lineCap || le >= end - 1 || le >= text.length) break;
        ls = le + 1;
        ln++;
      }
    }
    if (lines.length >= lineCap || re.lastIndex > text.length) break;
    m = re.exec(text);
  }
  if (lines.length === 0) return undefined;
  const shown: number[] = [];
  const texts: string[] = [];
  if (context === 0) {
    for (let k = 0; k < lines.length; k++) {
      let e = text.indexOf("\n", starts[k]);
      if (e === -1) e = text.length;
      shown.push(lines[k]);
      texts.push(cutLine(lineText, starts[k], e));
    }
    return { count: lines.length, lines, shown, texts };
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
      texts.push(cutLine(lineText, s, e));
      last = k;
    }
  }
  return { count: lines.length, lines, shown, texts };
}

/** A compiled search: the regex and whether the Latin-1 shortcut is exact for it. */
export interface Compiled {
  /** The regex with the `g` flag, run over whole texts. */
  re: RegExp;
  /** The same without `g`, to test one line. */
  single: RegExp;
  latin1: boolean;
  /**
   * ASCII texts of which every match contains at least one (one per top-level
   * alternative), to reject a file before any decoding; empty when some
   * alternative has none.
   */
  literals: string[];
}

/** Compiles a pattern the way the worker uses it. */
export function compile(pattern: string, flags: string): Compiled {
  const re = new RegExp(pattern, flags.includes("g") ? flags : flags + "g");
  const single = new RegExp(pattern, re.flags.replace("g", ""));
  const lits = /[iuv]/.test(flags) ? [] : alternatives(pattern).map(requiredLiteral);
  const literals = lits.length && lits.every((l) => l.length >= 3) ? lits : [];
  return { re, single, latin1: !/[uv]/.test(flags) && asciiOnly(pattern), literals };
}

/**
 * Searches the first `len` bytes of the reused buffer (a file just read);
 * undefined when they have no match or are binary. One code path for files and
 * for {@link searchBytes}; no view or closure is made per file. Without Node's
 * `view` (on the calling thread), {@link searchDecoded}.
 */
function searchLoaded(
  bytes: Uint8Array,
  view: Latin1Buffer | undefined,
  c: Compiled,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  const len = bytes.length;
  if (len === 0) return undefined;
  const b0 = bytes[0], b1 = bytes[1];
  if (len >= 2 && ((b0 === 0xff && b1 === 0xfe) || (b0 === 0xfe && b1 === 0xff))) {
    const text = (b0 === 0xff ? utf16le : utf16be).decode(bytes.subarray(2));
    return searchText(c, text, mode, context, lineCap);
  }
  if (!view) return searchDecoded(bytes, c, mode, context, lineCap);
  // A required literal the bytes lack: no match, whatever the encoding of the rest. The bytes are
  // scanned as their Latin-1 view: a plain copy, which V8's string search then scans faster than
  // any byte loop here, and which becomes the text to search when the Latin-1 path applies.
  let whole: string | undefined;
  if (c.literals.length) {
    const all = view.latin1Slice(0, len);
    if (!c.literals.some((l) => all.indexOf(l) !== -1)) return undefined;
    whole = all;
  }
  let text: string;
  let latin1 = c.latin1;
  let bom = 0;
  if (!latin1) {
    // Probe the head for NUL before paying for a decode: most binaries show one early.
    if (bytes.subarray(0, BINARY_PROBE).indexOf(0) !== -1) return undefined;
    latin1 = node!.isAscii(bytes);
  }
  if (latin1) {
    bom = len >= 3 && b0 === 0xef && b1 === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    text = whole === undefined ? view.latin1Slice(bom, len) : bom ? whole.slice(bom) : whole;
  } else {
    text = utf8.decode(bytes); // drops a UTF-8 BOM, replaces invalid sequences
  }
  if (text.indexOf("\0") !== -1) return undefined;
  c.re.lastIndex = 0;
  const first = c.re.exec(text);
  if (!first) return undefined;
  if (!latin1 || mode !== "content" || node!.isAscii(bytes)) {
    return searchText(c, text, mode, context, lineCap, { first });
  }
  // Removing CRs would shift the offsets the line decoding relies on: decode it all.
  if (text.indexOf("\r") !== -1) return searchText(c, utf8.decode(bytes), mode, context, lineCap);
  // A Latin-1 view of UTF-8 text: offsets are byte offsets, so decode just the lines shown.
  const lineText = (s: number, e: number) => {
    const view = text.slice(s, e);
    return /[\x80-\xff]/.test(view) ? utf8InLine.decode(bytes.subarray(s + bom, e + bom)) : view;
  };
  return searchText(c, text, mode, context, lineCap, { first, lineText });
}

/**
 * {@link searchLoaded} without a Latin-1 view: an ASCII file's text is its
 * Latin-1 view, any other file is searched decoded. The same answers: a
 * pattern the view is taken for matches only ASCII, which UTF-8 decoding
 * leaves where it was (an invalid byte becomes U+FFFD, which such a pattern
 * never matches, and no ASCII byte is ever taken into a replaced sequence);
 * lines are shown decoded either way.
 */
function searchDecoded(
  bytes: Uint8Array,
  c: Compiled,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  let text = asciiText(bytes, undefined);
  if (text === undefined) {
    if (bytes.subarray(0, BINARY_PROBE).indexOf(0) !== -1) return undefined;
    text = utf8.decode(bytes); // drops a UTF-8 BOM, replaces invalid sequences
  }
  if (c.literals.length && !c.literals.some((l) => text.indexOf(l) !== -1)) return undefined;
  if (text.indexOf("\0") !== -1) return undefined;
  c.re.lastIndex = 0;
  const first = c.re.exec(text);
  if (!first) return undefined;
  return searchText(c, text, mode, context, lineCap, { first });
}

/**
 * Searches an ASCII text without NUL as {@link searchBytes} searches its bytes:
 * for such a file every shortcut there ends in this same search of the text.
 */
export function searchAscii(
  text: string,
  c: Compiled,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  if (text.length === 0) return undefined;
  if (c.literals.length && !c.literals.some((l) => text.indexOf(l) !== -1)) return undefined;
  c.re.lastIndex = 0;
  const first = c.re.exec(text);
  if (!first) return undefined;
  return searchText(c, text, mode, context, lineCap, { first });
}

/** Makes the reused buffer at least `n` bytes, keeping its content. */
function ensureCapacity(n: number): void {
  if (n <= buf.byteLength) return;
  let size = buf.byteLength;
  while (size < n) size *= 2;
  const bigger = new Uint8Array(size);
  bigger.set(buf);
  useBuffer(bigger);
}

/**
 * Searches a file's bytes as {@link searchFile} searches a file (for tests):
 * through Node's Latin-1 view once {@link loadLatin1} loaded it, else (or with
 * `viaNode` false) as the calling thread does without it.
 */
export function searchBytes(
  bytes: Uint8Array,
  c: Compiled,
  mode: GrepMode,
  context: number,
  lineCap: number,
  viaNode = true,
): Omit<FileMatches, "index"> | undefined {
  const view = node && viaNode ? viewOf(bytes) : undefined;
  return searchLoaded(bytes, view, c, mode, context, lineCap);
}

/** Files at least this large are reported back with their size. */
const BIG_FILE = 512 * 1024;

/** Bytes read by the last {@link searchFile}. */
let lastLength = 0;

/** Searches one file; undefined when it has no match, is binary or is unreadable. */
export function searchFile(
  path: string,
  c: Compiled,
  mode: GrepMode,
  context: number,
  lineCap: number,
): Omit<FileMatches, "index"> | undefined {
  const k = keptCopy(path);
  if (k) {
    lastLength = k.size;
    keptHits++;
    if (k.binary) return undefined;
    if (k.text !== undefined) return searchAscii(k.text, c, mode, context, lineCap);
    return searchLoaded(k.bytes!, k.view!, c, mode, context, lineCap);
  }
  const len = readInto(path, searchesSeen > 1);
  lastLength = len;
  try {
    return len <= 0
      ? undefined
      : searchLoaded(buf.subarray(0, len), nodeBuf, c, mode, context, lineCap);
  } finally {
    if (buf.byteLength > KEEP_BUFFER_BYTES) {
      useBuffer(new Uint8Array(1 << 20));
    }
  }
}

let cached: { key: string; compiled: Compiled } | undefined;

/** The compiled form of a pattern, reused while the same search goes on. Throws when invalid. */
function compiled(pattern: string, flags: string): Compiled {
  const key = flags + "/" + pattern;
  if (cached?.key !== key) cached = { key, compiled: compile(pattern, flags) };
  return cached.compiled;
}

/** The largest file {@link searchHere} searches; larger ones are left to the workers. */
export const HERE_MAX_BYTES = 2 * 1024 * 1024;

/** What {@link searchHere} did with a list of files. */
export interface HereResult {
  /** Matches of the files searched, in file order. */
  matches: FileMatches[];
  /** Files searched, from the start of the list; the rest is someone else's. */
  searched: number;
  /** True when it stopped before a file larger than {@link HERE_MAX_BYTES}. */
  tooLong: boolean;
}

/**
 * Searches `req.files` in order on the calling thread, for the first searches
 * of a process, before any worker is up. Only for a pattern that passed
 * `boundedWork`: nothing could stop a runaway regex here. The thread is held
 * for at most about `sliceMs` (checked between files) and no file larger than
 * {@link HERE_MAX_BYTES} is searched, so signals and timers get through soon.
 * Nothing is kept for later searches: that memory belongs to the workers.
 */
export function searchHere(
  req: Pick<GrepBatch, "pattern" | "flags" | "mode" | "context" | "lineCap" | "files">,
  sliceMs: number,
): HereResult {
  const c = compiled(req.pattern, req.flags);
  const end = performance.now() + sliceMs;
  const matches: FileMatches[] = [];
  for (let i = 0; i < req.files.length; i++) {
    if (i > 0 && performance.now() > end) return { matches, searched: i, tooLong: false };
    const len = readInto(req.files[i], false, HERE_MAX_BYTES);
    if (len === TOO_LONG) return { matches, searched: i, tooLong: true };
    if (len <= 0) continue;
    let r: Omit<FileMatches, "index"> | undefined;
    try {
      r = searchLoaded(buf.subarray(0, len), nodeBuf, c, req.mode, req.context, req.lineCap);
    } catch {
      r = undefined; // as in runBatch
    }
    if (r) matches.push({ index: i, ...r });
  }
  return { matches, searched: req.files.length, tooLong: false };
}

/**
 * Runs one batch: claims files with `claim()` (the next index, shared with the
 * other workers) until none is left; `cancelled()` is polled between files.
 */
export function runBatch(
  req: GrepBatch,
  claim: () => number,
  cancelled: () => boolean = () => false,
): BatchReply {
  const reply: BatchReply = {
    search: req.search,
    batch: req.batch,
    slot: req.slot,
    claimed: 0,
    matches: [],
    big: [],
    fromMemory: 0,
  };
  let c: Compiled;
  try {
    c = compiled(req.pattern, req.flags);
  } catch (e) {
    reply.error = e instanceof Error ? e.message : String(e);
    for (let i = claim(); i < req.files.length; i = claim()) reply.claimed++;
    return reply;
  }
  if (req.search !== lastSearch) {
    lastSearch = req.search;
    searchesSeen++;
  }
  const hitsBefore = keptHits;
  for (let i = claim(); i < req.files.length; i = claim()) {
    reply.claimed++;
    if (cancelled()) continue;
    let r: Omit<FileMatches, "index"> | undefined;
    try {
      r = searchFile(req.files[i], c, req.mode, req.context, req.lineCap);
    } catch {
      r = undefined; // a file that cannot be searched (out of memory, odd bytes) is skipped
    }
    if (r) reply.matches.push({ index: i, ...r });
    if (lastLength >= BIG_FILE) reply.big.push(i, lastLength);
  }
  reply.fromMemory = keptHits - hitsBefore;
  return reply;
}

/** The first message a worker gets: the shared arrays of its pool. */
export interface WorkerInit {
  init: {
    cancel: SharedArrayBuffer;
    claims: SharedArrayBuffer;
    started: SharedArrayBuffer;
    keep?: KeepBounds;
  };
}

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;
if (typeof scope.WorkerGlobalScope === "function" && scope instanceof scope.WorkerGlobalScope) {
  let cancel: Int32Array | undefined;
  let claims: Int32Array | undefined;
  // A worker searches many files: Node's Latin-1 copy is worth its load here. Until it is loaded
  // (about 10 ms, between batches), or should it fail, the worker searches as the calling thread
  // does, with the same answers: a one-shot search that only the workers may run starts as soon.
  loadLatin1().catch(() => {});
  // libc's reader, loaded as the worker starts: until then, and where it may not be made, Deno's.
  import("./file_reader.ts").then(({ nativeRead }) => native = nativeRead()).catch(() => {});
  // The pool moves a thread it cannot stop to the idle scheduling class, by this id.
  import("../fs/threads.ts").then(({ announceThread }) => announceThread()).catch(() => {});
  scope.onmessage = (e: MessageEvent<GrepBatch | WorkerInit>) => {
    const msg = e.data;
    if ("init" in msg) {
      // One cell per search id (modulo its length); a cancelled search's id is stored in it.
      cancel = new Int32Array(msg.init.cancel);
      claims = new Int32Array(msg.init.claims);
      if (msg.init.keep) bounds = msg.init.keep;
      Atomics.add(new Int32Array(msg.init.started), 0, 1);
      return;
    }
    const c = cancel!, cl = claims!;
    const claim = () => Atomics.add(cl, msg.slot, 1);
    const cancelled = () => Atomics.load(c, msg.search % c.length) === msg.search;
    scope.postMessage(runBatch(msg, claim, cancelled));
  };
}
