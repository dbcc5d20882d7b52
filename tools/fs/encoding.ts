/**
 * What read needs to know about a file's bytes before it shows them as text: a
 * UTF-16 byte order mark, binary content (a NUL byte, or many control bytes), and
 * where UTF-8 first goes wrong. Everything works on chunks, so a file is looked
 * at once, in bounded memory.
 *
 * @module
 */

/** Bytes at the start of a file that decide whether it is binary. */
export const SNIFF_BYTES = 8192;
/** More than this share of control bytes in the sniffed start makes a file binary. */
export const CONTROL_RATIO = 0.05;

/** A file's text encoding, from its byte order mark. */
export type Encoding = "utf-8" | "utf-16le" | "utf-16be";

/** The encoding a byte order mark at the start of `head` names (UTF-8 without one). */
export function bomEncoding(head: Uint8Array): Encoding {
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  return "utf-8";
}

/**
 * True for a byte that text does not contain: C0 controls other than tab, line
 * feed, vertical tab, form feed, carriage return, backspace and escape (coloured
 * logs are text), and DEL.
 */
function isControl(b: number): boolean {
  return (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0b && b !== 0x0c && b !== 0x0d &&
    b !== 0x08 && b !== 0x1b) || b === 0x7f;
}

/** Decides from the first {@link SNIFF_BYTES} whether a file is binary. */
export class BinarySniffer {
  #seen = 0;
  #controls = 0;
  #nul = false;

  /** Looks at the next chunk (only its part within the sniffed start counts). */
  push(chunk: Uint8Array): void {
    if (this.#seen >= SNIFF_BYTES) return;
    const part = chunk.subarray(0, SNIFF_BYTES - this.#seen);
    if (part.includes(0)) this.#nul = true;
    for (let i = 0; i < part.length; i++) if (isControl(part[i])) this.#controls++;
    this.#seen += part.length;
  }

  /** True once a NUL byte was seen; at the end, also for too many control bytes. */
  binary(final = false): boolean {
    if (this.#nul) return true;
    if (!final && this.#seen < SNIFF_BYTES) return false;
    return this.#controls > CONTROL_RATIO * this.#seen;
  }
}

/** Length of the UTF-8 sequence a lead byte starts; 0 for a byte that cannot lead. */
function sequenceLength(b: number): number {
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return 2;
  if (b >= 0xe0 && b <= 0xef) return 3;
  if (b >= 0xf0 && b <= 0xf4) return 4;
  return 0;
}

/** Whether `b` may follow lead byte `lead` as the second byte (overlongs and surrogates refused). */
function validSecond(lead: number, b: number): boolean {
  if (lead === 0xe0) return b >= 0xa0 && b <= 0xbf;
  if (lead === 0xed) return b >= 0x80 && b <= 0x9f;
  if (lead === 0xf0) return b >= 0x90 && b <= 0xbf;
  if (lead === 0xf4) return b >= 0x80 && b <= 0x8f;
  return b >= 0x80 && b <= 0xbf;
}

/**
 * Finds the offset of the first byte that is not valid UTF-8, chunk by chunk. The
 * common case (valid text) runs through the native decoder; only the chunk where
 * it fails is walked byte by byte.
 */
export class Utf8Checker {
  #fast = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  /** Bytes of a sequence left open at the end of the last chunk. */
  #carry: number[] = [];
  #offset = 0;
  /** Offset of the first invalid byte; undefined while everything was valid. */
  firstInvalid: number | undefined;

  /** Checks the next chunk; returns the offset of the first invalid byte in it, or -1. */
  push(chunk: Uint8Array): number {
    const start = this.#offset;
    this.#offset += chunk.length;
    if (this.firstInvalid !== undefined) return -1;
    try {
      this.#fast.decode(chunk, { stream: true });
      this.#carry = openTail(this.#carry, chunk);
      return -1;
    } catch {
      const at = locate(this.#carry, chunk);
      this.firstInvalid = start + at;
      return Math.max(0, at);
    }
  }

  /** Ends the check: a sequence left open at the end of the file is invalid. */
  finish(): void {
    if (this.firstInvalid === undefined && this.#carry.length > 0) {
      this.firstInvalid = this.#offset - this.#carry.length;
    }
  }
}

/** The bytes of an unfinished sequence at the end of `carry` + `chunk`. */
function openTail(carry: number[], chunk: Uint8Array): number[] {
  const all = chunk.length >= 3 ? Array.from(chunk.subarray(chunk.length - 3)) : [
    ...carry,
    ...chunk,
  ].slice(-3);
  for (let back = 1; back <= Math.min(3, all.length); back++) {
    const b = all[all.length - back];
    if ((b & 0xc0) === 0x80) continue;
    const len = sequenceLength(b);
    return len > back ? all.slice(all.length - back) : [];
  }
  return [];
}

/**
 * Offset in `chunk` of the first invalid byte, given the open sequence `carry`
 * from before it (a negative offset points into the carry).
 */
function locate(carry: number[], chunk: Uint8Array): number {
  const bytes = [...carry, ...chunk];
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const len = sequenceLength(b);
    if (len === 0) return i - carry.length;
    if (len === 1) {
      i++;
      continue;
    }
    for (let k = 1; k < len; k++) {
      if (i + k >= bytes.length) return i - carry.length; // cut off: the decoder saw its end
      const c = bytes[i + k];
      const ok = k === 1 ? validSecond(b, c) : c >= 0x80 && c <= 0xbf;
      if (!ok) return i - carry.length;
    }
    i += len;
  }
  return bytes.length - carry.length;
}
