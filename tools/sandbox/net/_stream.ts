/**
 * Byte plumbing shared by the proxies: a reader that keeps what it read past
 * a boundary, and a copy from one connection to another that counts bytes.
 *
 * @module
 */

/** Read size of a download's copy: measured, 1 MiB moves loopback data half again as fast as 64 KiB. */
export const DOWN_CHUNK = 1024 * 1024;
/** Read size of everything else (requests, uploads): small, a connection holds one per direction. */
const CHUNK = 64 * 1024;

/** Reads a connection with a buffer of what was read ahead. */
export class BufferedConn {
  buf = new Uint8Array(0);
  #eof = false;
  constructor(readonly conn: Deno.Conn) {}

  /** Reads more into the buffer; false at the end of the stream. */
  async fill(): Promise<boolean> {
    if (this.#eof) return false;
    const chunk = new Uint8Array(CHUNK);
    const n = await this.conn.read(chunk);
    if (n === null) {
      this.#eof = true;
      return false;
    }
    const next = new Uint8Array(this.buf.length + n);
    next.set(this.buf);
    next.set(chunk.subarray(0, n), this.buf.length);
    this.buf = next;
    return true;
  }

  /** Takes `n` bytes off the front of the buffer. */
  take(n: number): Uint8Array {
    const out = this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    return out;
  }

  /** Reads until `n` bytes are buffered; false when the stream ends first. */
  async need(n: number): Promise<boolean> {
    while (this.buf.length < n) if (!await this.fill()) return false;
    return true;
  }

  /** The index just past the first `\r\n\r\n`, reading up to `max` bytes; -1 if none. */
  async headEnd(max: number): Promise<number> {
    let from = 0;
    while (true) {
      for (let i = Math.max(0, from - 3); i + 3 < this.buf.length; i++) {
        if (
          this.buf[i] === 13 && this.buf[i + 1] === 10 && this.buf[i + 2] === 13 &&
          this.buf[i + 3] === 10
        ) return i + 4;
      }
      from = this.buf.length;
      if (this.buf.length >= max || !await this.fill()) return -1;
    }
  }
}

/** Bytes as text, one character per byte (header bytes survive the round trip). */
export function latin1(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return s;
}

/** Text of one character per byte back to bytes. */
export function bytesOf(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0xff;
  return out;
}

/** Writes all of `bytes`. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/**
 * Copies `from` to `to` until `from` ends (or `limit` bytes), then closes `to`
 * for writing. Errors end the copy quietly: either side may go away.
 */
export async function copy(
  from: Deno.Conn,
  to: Deno.Conn,
  count: (n: number) => void,
  limit = Infinity,
  size = CHUNK,
): Promise<void> {
  const buf = new Uint8Array(size);
  let left = limit;
  try {
    while (left > 0) {
      const n = await from.read(left < size ? buf.subarray(0, left) : buf);
      if (n === null) break;
      await writeAll(to, buf.subarray(0, n));
      count(n);
      left -= n;
    }
  } catch {
    // A side closed or reset: the other learns it from the close below.
  }
  if (limit === Infinity) await closeWrite(to);
}

/** Half-closes `conn` (the peer reads the end), ignoring a connection already gone. */
export async function closeWrite(conn: Deno.Conn): Promise<void> {
  try {
    await conn.closeWrite();
  } catch {
    // Gone already.
  }
}

/** Closes `conn`, ignoring a connection already closed. */
export function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Closed already.
  }
}
