/**
 * A background job's output file: everything the job writes, in a file of
 * bounded size that later calls of the session can read while the job runs.
 *
 * The file keeps the first {@link HEAD_BYTES} as they came. Past them it keeps
 * the latest output, between half of {@link TAIL_BYTES} and all of it: when
 * the kept end grows past {@link TAIL_BYTES}, its older half is dropped (the
 * rest moved up, from the start of a line). Between the two a marker line of
 * fixed width says how many bytes were dropped there, rewritten in place at
 * each drop. So the file never passes about 10 MiB, whatever the job writes,
 * and it stays one file (same inode) from start to end, which read and grep
 * recognise as this process's own saved output.
 *
 * Offsets here count the job's whole output, dropped bytes included: a reader
 * ({@link JobOutput.read}) asks from where it stopped, and learns when some of
 * what it had not read was dropped.
 *
 * @module
 */

/** Bytes kept from the start of a job's output. */
export const HEAD_BYTES = 5 * 1024 * 1024;
/** The most bytes kept of its end; after a drop, half of it. */
export const TAIL_BYTES = 5 * 1024 * 1024;

/** Width of the marker line, newlines included; the count is padded to keep it. */
const MARKER_WIDTH = 160;
/** How far into the kept end a drop looks for a line's start. */
const LINE_LOOKUP = 4096;

const encoder = new TextEncoder();

/** The marker line for `dropped` bytes, {@link MARKER_WIDTH} bytes long (in UTF-8). */
export function markerLine(dropped: number): string {
  const text = `[… ${dropped} bytes of this job's output were dropped here: the file keeps ` +
    `its first ${HEAD_BYTES / 1024 / 1024} MiB and its latest output …]`;
  const pad = Math.max(0, MARKER_WIDTH - 2 - encoder.encode(text).byteLength);
  return `\n${text}${" ".repeat(pad)}\n`;
}

/** What {@link JobOutput.read} found from an offset. */
export interface OutputSlice {
  /** The bytes, in order; the part before {@link OutputSlice.dropped} and the part after. */
  before: Uint8Array;
  after: Uint8Array;
  /** Bytes the reader had not read that were dropped between the two parts (0: none). */
  dropped: number;
  /** The offset to read from next time. */
  next: number;
}

/** A job's output file, written as the output comes (see the module doc). */
export class JobOutput {
  readonly path: string;
  readonly #file: Deno.FsFile;
  readonly #head: number;
  readonly #tail: number;
  /** Bytes the job wrote in all. */
  #total = 0;
  /** Offset (in the whole output) of the first byte kept after the head. */
  #tailStart = 0;
  /** Whether the marker is in the file (the output passed head + tail once). */
  #cut = false;
  #closed = false;
  /** Why writing stopped before the job ended (a full disk), if it did. */
  #broken: string | undefined;

  /** Creates the file at `path` (mode 0600; it must not exist). */
  constructor(path: string, opts: { headBytes?: number; tailBytes?: number } = {}) {
    this.path = path;
    this.#head = opts.headBytes ?? HEAD_BYTES;
    this.#tail = opts.tailBytes ?? TAIL_BYTES;
    this.#file = Deno.openSync(path, { read: true, write: true, createNew: true, mode: 0o600 });
  }

  /** The file's device and inode, as read and grep check a saved output's identity. */
  identity(): { dev: number; ino: number | null } {
    const { dev, ino } = this.#file.statSync();
    return { dev, ino };
  }

  /** Bytes the job wrote in all. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Bytes dropped from the middle so far. */
  get droppedBytes(): number {
    return this.#cut ? this.#tailStart - this.#head : 0;
  }

  /** Where the kept end starts in the file. */
  get #tailAt(): number {
    return this.#head + MARKER_WIDTH;
  }

  /** Why the file stopped taking output before the job ended (a full disk), if it did. */
  get broken(): string | undefined {
    return this.#broken;
  }

  /**
   * Appends output. Never throws: when a write fails (a full disk) the file
   * keeps what it has and takes nothing more ({@link broken} says why).
   */
  push(chunk: Uint8Array): void {
    if (this.#closed || chunk.byteLength === 0) return;
    try {
      this.#push(chunk);
    } catch (e) {
      this.#broken = e instanceof Error ? e.message : String(e);
      this.close();
    }
  }

  #push(chunk: Uint8Array): void {
    let rest = chunk;
    if (this.#total < this.#head) {
      const n = Math.min(this.#head - this.#total, rest.byteLength);
      this.#writeAt(this.#total, rest.subarray(0, n));
      this.#total += n;
      rest = rest.subarray(n);
      if (rest.byteLength === 0) return;
    }
    if (!this.#cut) {
      this.#cut = true;
      this.#tailStart = this.#head;
      this.#writeAt(this.#head, encoder.encode(markerLine(0)));
    }
    let kept = this.#total - this.#tailStart;
    if (kept + rest.byteLength > this.#tail) {
      // A chunk larger than the whole end keeps its own end only.
      if (rest.byteLength >= this.#tail) {
        const skip = rest.byteLength - Math.floor(this.#tail / 2);
        this.#tailStart = this.#total + skip;
        this.#total += skip;
        rest = rest.subarray(skip);
        this.#file.truncateSync(this.#tailAt);
        kept = 0;
      } else {
        kept = this.#dropOlderHalf(kept);
      }
      this.#writeAt(this.#head, encoder.encode(markerLine(this.droppedBytes)));
    }
    this.#writeAt(this.#tailAt + kept, rest);
    this.#total += rest.byteLength;
  }

  /** Drops the older half of the kept end (up to a line's start); returns what is kept. */
  #dropOlderHalf(kept: number): number {
    let keep = Math.floor(this.#tail / 2);
    let from = this.#tailAt + kept - keep;
    // From the start of a line, when one starts soon after the cut.
    const look = new Uint8Array(Math.min(LINE_LOOKUP, keep));
    const n = this.#readAt(from, look);
    const nl = look.subarray(0, n).indexOf(10);
    if (nl !== -1 && nl + 1 < keep) {
      from += nl + 1;
      keep -= nl + 1;
    }
    const moved = new Uint8Array(keep);
    const got = this.#readAt(from, moved);
    this.#writeAt(this.#tailAt, moved.subarray(0, got));
    this.#file.truncateSync(this.#tailAt + got);
    this.#tailStart = this.#total - got;
    return got;
  }

  #writeAt(at: number, bytes: Uint8Array): void {
    this.#file.seekSync(at, Deno.SeekMode.Start);
    for (let off = 0; off < bytes.byteLength;) off += this.#file.writeSync(bytes.subarray(off));
  }

  #readAt(at: number, into: Uint8Array, file: Deno.FsFile = this.#file): number {
    file.seekSync(at, Deno.SeekMode.Start);
    let got = 0;
    while (got < into.byteLength) {
      const n = file.readSync(into.subarray(got));
      if (n === null || n === 0) break;
      got += n;
    }
    return got;
  }

  /**
   * The output from offset `from` on, at most `max` bytes of it (the first
   * ones): what was dropped from the middle meanwhile is skipped and counted.
   */
  read(from: number, max = Infinity): OutputSlice {
    // Once written whole the file is read through a handle of its own.
    if (!this.#closed) return this.#read(from, max, this.#file);
    using file = Deno.openSync(this.path, { read: true });
    return this.#read(from, max, file);
  }

  #read(from: number, max: number, file: Deno.FsFile): OutputSlice {
    const empty: Uint8Array = new Uint8Array(0);
    let at = Math.max(0, Math.min(from, this.#total));
    let before = empty;
    let left = max;
    if (at < Math.min(this.#head, this.#total)) {
      const end = Math.min(this.#head, this.#total, at + left);
      before = this.#range(at, end, file);
      left -= before.byteLength;
      at = end;
    }
    let dropped = 0;
    if (this.#cut && at < this.#tailStart && left > 0) {
      dropped = this.#tailStart - Math.max(at, this.#head);
      at = this.#tailStart;
    }
    let after = empty;
    if (at >= this.#tailStart && this.#cut && at < this.#total && left > 0) {
      const end = Math.min(this.#total, at + left);
      const base = this.#tailAt - this.#tailStart;
      after = this.#range(base + at, base + end, file);
      at = end;
    }
    return { before, after, dropped, next: at };
  }

  #range(start: number, end: number, file: Deno.FsFile): Uint8Array {
    const out = new Uint8Array(Math.max(0, end - start));
    const got = this.#readAt(start, out, file);
    return out.subarray(0, got);
  }

  /**
   * Stops writing (the job ended); the file stays for later calls to read, and
   * goes with the other saved output of calls after seven days.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#file.close();
    } catch {
      // Closed already.
    }
  }
}
