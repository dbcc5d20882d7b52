/**
 * The one truncation helper behind every bounded output (read, bash, grep, MCP).
 * It takes text whole or as a stream of chunks in bounded memory, keeps the head
 * (and optionally the tail), says what was cut in bytes and lines, and can spill
 * the full text to a file in crab's data dir so the model can read it.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { join } from "../fs/path.ts";
import { ensureDataDir, ensureOwnSpillDir, noteSpillFile } from "../fs/data_dir.ts";

export { spillFileOf } from "../fs/data_dir.ts";
import { formatBytes } from "../tool.ts";

/** A spill file never grows past this. */
export const SPILL_CAP_BYTES = 64 * 1024 * 1024;
/** Spill files older than this are removed at start-up. */
export const SPILL_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** How to bound an output. */
export interface TruncateOptions {
  /** Bytes kept from the start. */
  headBytes: number;
  /** Bytes kept from the end; 0 keeps the head only. */
  tailBytes?: number;
  /** Keep the full output in a spill file and name it in the marker. */
  spill?: boolean;
  /** A short label for the spill file name, e.g. `bash`. */
  label?: string;
  /** Extra advice appended to the marker, e.g. how to continue. */
  hint?: string;
  /** The environment crab's data dir (where spill files go) is found in; default the process's. */
  env?: Pick<Deno.Env, "get">;
}

/** A bounded output. */
export interface Truncated {
  /** The text with a marker where something was cut. */
  text: string;
  truncated: boolean;
  totalBytes: number;
  totalLines: number;
  elidedBytes: number;
  elidedLines: number;
  /** Path of the spill file with the full output, when one was written. */
  spillPath?: string;
  /** True when the spill file hit its cap and is itself incomplete. */
  spillCapped?: boolean;
}

const encoder = new TextEncoder();

/**
 * Counts `\n` bytes four at a time (SWAR): one `indexOf` per line made
 * `yes | head -c 256M` spend 2 s here, one call per newline; this takes 70 ms.
 */
export function countNewlines(bytes: Uint8Array): number {
  const len = bytes.length;
  let n = 0;
  let i = 0;
  // Up to the first 4-byte boundary of the buffer, so the words below are aligned.
  const lead = Math.min(len, (4 - (bytes.byteOffset & 3)) & 3);
  for (; i < lead; i++) if (bytes[i] === 10) n++;
  const words = (len - i) >>> 2;
  if (words > 0) {
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset + i, words);
    for (let k = 0; k < words; k++) {
      const x = w[k] ^ 0x0a0a0a0a; // a zero byte wherever there was a newline
      // High bit of each byte set exactly where that byte of x is zero (no false positives).
      const zero = ~(((x & 0x7f7f7f7f) + 0x7f7f7f7f) | x | 0x7f7f7f7f);
      n += Math.imul((zero >>> 7) & 0x01010101, 0x01010101) >>> 24;
    }
    i += words << 2;
  }
  for (; i < len; i++) if (bytes[i] === 10) n++;
  return n;
}

/** Backs `end` up so `bytes[0..end)` does not end inside a UTF-8 sequence. */
function utf8Floor(bytes: Uint8Array, end: number): number {
  let lead = end - 1;
  while (lead > 0 && lead > end - 4 && (bytes[lead] & 0xc0) === 0x80) lead--;
  if (lead < 0) return end;
  const b = bytes[lead];
  const len = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return lead + len > end ? lead : end;
}

/** Moves `start` forward past UTF-8 continuation bytes. */
function utf8Ceil(bytes: Uint8Array, start: number): number {
  let i = start;
  while (i < bytes.length && (bytes[i] & 0xc0) === 0x80) i++;
  return i;
}

/**
 * Collects an output chunk by chunk in bounded memory: the head, a ring of the
 * tail, counts of everything, and (optionally) the whole stream in a spill file.
 */
export class OutputCollector {
  readonly #opts: Required<Omit<TruncateOptions, "hint" | "label">> & TruncateOptions;
  #head: Uint8Array;
  #headLen = 0;
  #tail: Uint8Array;
  #tailStart = 0;
  #tailLen = 0;
  #total = 0;
  #newlines = 0;
  #lastByte = -1;
  #spill: Deno.FsFile | undefined;
  #spillPath: string | undefined;
  #spillWritten = 0;
  /** Chunks held until we know the output overflows, so short outputs never touch disk. */
  #pending: Uint8Array[] = [];

  constructor(opts: TruncateOptions) {
    this.#opts = { tailBytes: 0, spill: false, env: runEnv, ...opts };
    this.#head = new Uint8Array(opts.headBytes);
    this.#tail = new Uint8Array(this.#opts.tailBytes);
  }

  /** Bytes seen so far. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Adds a chunk. */
  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.#total += chunk.byteLength;
    this.#newlines += countNewlines(chunk);
    this.#lastByte = chunk[chunk.byteLength - 1];
    let rest = chunk;
    if (this.#headLen < this.#head.length) {
      const n = Math.min(this.#head.length - this.#headLen, rest.byteLength);
      this.#head.set(rest.subarray(0, n), this.#headLen);
      this.#headLen += n;
      rest = rest.subarray(n);
    }
    if (this.#opts.spill) this.#spillChunk(chunk);
    if (rest.byteLength === 0 || this.#tail.length === 0) return;
    this.#pushTail(rest);
  }

  #pushTail(bytes: Uint8Array): void {
    const cap = this.#tail.length;
    if (bytes.byteLength >= cap) {
      this.#tail.set(bytes.subarray(bytes.byteLength - cap));
      this.#tailStart = 0;
      this.#tailLen = cap;
      return;
    }
    let write = (this.#tailStart + this.#tailLen) % cap;
    for (let off = 0; off < bytes.byteLength;) {
      const n = Math.min(cap - write, bytes.byteLength - off);
      this.#tail.set(bytes.subarray(off, off + n), write);
      off += n;
      write = (write + n) % cap;
    }
    const len = this.#tailLen + bytes.byteLength;
    if (len > cap) {
      this.#tailStart = (this.#tailStart + len - cap) % cap;
      this.#tailLen = cap;
    } else {
      this.#tailLen = len;
    }
  }

  #tailBytes(): Uint8Array {
    const cap = this.#tail.length;
    const out = new Uint8Array(this.#tailLen);
    const first = Math.min(this.#tailLen, cap - this.#tailStart);
    out.set(this.#tail.subarray(this.#tailStart, this.#tailStart + first));
    out.set(this.#tail.subarray(0, this.#tailLen - first), first);
    return out;
  }

  #spillChunk(chunk: Uint8Array): void {
    const limit = this.#opts.headBytes + (this.#opts.tailBytes ?? 0);
    if (!this.#spill) {
      this.#pending.push(chunk);
      if (this.#total <= limit) return;
      const dir = ensureOwnSpillDir(this.#opts.env);
      const stamp = new Date().toISOString().replace(/[:.]/g, "-");
      const rand = crypto.randomUUID().slice(0, 8);
      this.#spillPath = join(dir, `${this.#opts.label ?? "output"}-${stamp}-${rand}.txt`);
      this.#spill = Deno.openSync(this.#spillPath, { write: true, createNew: true, mode: 0o600 });
      const { dev, ino } = this.#spill.statSync();
      noteSpillFile(this.#spillPath, { dev, ino });
      const pending = this.#pending;
      this.#pending = [];
      for (const p of pending) this.#writeSpill(p);
      return;
    }
    this.#writeSpill(chunk);
  }

  #writeSpill(bytes: Uint8Array): void {
    const room = SPILL_CAP_BYTES - this.#spillWritten;
    if (room <= 0 || !this.#spill) return;
    const part = bytes.byteLength > room ? bytes.subarray(0, room) : bytes;
    let off = 0;
    while (off < part.byteLength) off += this.#spill.writeSync(part.subarray(off));
    this.#spillWritten += part.byteLength;
  }

  /** Ends the stream and returns the bounded text. */
  finish(): Truncated {
    this.#spill?.close();
    this.#spill = undefined;
    this.#pending = [];
    const decoder = new TextDecoder();
    const totalLines = this.#newlines + (this.#total > 0 && this.#lastByte !== 10 ? 1 : 0);
    const keptHeadLimit = this.#opts.headBytes;
    const keepAll = this.#total <= keptHeadLimit + (this.#opts.tailBytes ?? 0);
    if (keepAll) {
      const all = new Uint8Array(this.#total);
      all.set(this.#head.subarray(0, this.#headLen));
      if (this.#tailLen) all.set(this.#tailBytes(), this.#headLen);
      return {
        text: decoder.decode(all),
        truncated: false,
        totalBytes: this.#total,
        totalLines,
        elidedBytes: 0,
        elidedLines: 0,
      };
    }
    const headEnd = utf8Floor(this.#head, this.#headLen);
    const head = this.#head.subarray(0, headEnd);
    const tailRaw = this.#tailLen ? this.#tailBytes() : new Uint8Array(0);
    const tail = tailRaw.subarray(utf8Ceil(tailRaw, 0));
    const elidedBytes = this.#total - head.byteLength - tail.byteLength;
    const keptLines = countNewlines(head) + countNewlines(tail);
    const elidedLines = Math.max(0, this.#newlines - keptLines);
    const where = this.#spillPath
      ? ` Full output (${formatBytes(this.#total)}) saved to ${this.#spillPath}` +
        (this.#spillWritten < this.#total
          ? ` (first ${formatBytes(this.#spillWritten)} only: spill files are capped)`
          : "") +
        "; read it with offset/limit or search it with grep."
      : "";
    const marker = `[… ${elidedBytes} bytes (${elidedLines} lines) elided of ${this.#total} bytes` +
      ` (${totalLines} lines) …]${where}${this.#opts.hint ? " " + this.#opts.hint : ""}`;
    const headText = decoder.decode(head);
    const tailText = decoder.decode(tail);
    const sepBefore = headText.length && !headText.endsWith("\n") ? "\n" : "";
    const text = tail.byteLength
      ? `${headText}${sepBefore}${marker}\n${tailText}`
      : `${headText}${sepBefore}${marker}`;
    return {
      text,
      truncated: true,
      totalBytes: this.#total,
      totalLines,
      elidedBytes,
      elidedLines,
      spillPath: this.#spillPath,
      spillCapped: this.#spillPath ? this.#spillWritten < this.#total : undefined,
    };
  }
}

/**
 * Bounds a whole text: head (and tail), a marker saying what was cut, an optional
 * spill file with the full text.
 *
 * @example
 * ```ts
 * const t = truncateText("x".repeat(100_000), { headBytes: 1000, tailBytes: 1000 });
 * t.truncated; // true
 * ```
 */
export function truncateText(text: string, opts: TruncateOptions): Truncated {
  const c = new OutputCollector(opts);
  c.push(encoder.encode(text));
  return c.finish();
}

/** How often the spill folder is swept: a start-up within this of the last sweep skips it. */
export const SPILL_SWEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * Removes spill files older than seven days, in the spill folder and in the
 * folders below it (each run's, each background job's in a run's), and a
 * folder once it is empty and as old; called at start-up, it walks the folder
 * at most once an hour (`spill.swept` in the data folder marks the last
 * sweep), so a folder of many runs costs a start-up one stat. Never throws.
 */
export function cleanSpillFiles(now = Date.now(), env: Pick<Deno.Env, "get"> = runEnv): number {
  let dir: string;
  try {
    dir = ensureDataDir("spill", env);
  } catch {
    return 0;
  }
  const stamp = join(dir, "..", "spill.swept");
  try {
    const last = Deno.statSync(stamp).mtime?.getTime() ?? 0;
    if (now - last < SPILL_SWEEP_EVERY_MS && last <= now) return 0;
  } catch {
    // Never swept.
  }
  try {
    Deno.writeFileSync(stamp, new Uint8Array());
    const at = new Date(now);
    Deno.utimeSync(stamp, at, at);
  } catch {
    // Swept again next time.
  }
  const old = (p: string) => {
    try {
      return now - (Deno.lstatSync(p).mtime?.getTime() ?? now) > SPILL_MAX_AGE_MS;
    } catch {
      return false; // another crab removed it first
    }
  };
  const clean = (folder: string): number => {
    let removed = 0;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(folder)];
    } catch {
      return 0; // no folder to clean
    }
    for (const entry of entries) {
      const p = join(folder, entry.name);
      // A run's folder, and a background job's in it (its output file).
      if (entry.isDirectory) {
        // Old before its own old files go (their removal makes it new again); the removal is
        // not recursive: a run that spilled meanwhile keeps its folder.
        const stale = old(p);
        removed += clean(p);
        if (stale) tryRemove(p);
        continue;
      }
      if (old(p) && tryRemove(p)) removed++;
    }
    return removed;
  };
  return clean(dir);
}

function tryRemove(path: string): boolean {
  try {
    Deno.removeSync(path);
    return true;
  } catch {
    return false; // removed by another crab, or not empty
  }
}
