/**
 * A minimal HTTP/1.1 client for one GET over a connection the caller opened:
 * the request is written, the response head parsed (1xx interim answers
 * skipped), and the body framed as RFC 9112 §6.3 says (chunked, Content-Length,
 * or until the connection closes), so web_fetch can speak HTTP over a socket
 * it connected to a checked address itself. Every read is bounded.
 *
 * @module
 */

/** Largest response head (status line and headers) accepted. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Longest chunk-size line (with extensions) accepted. */
const MAX_CHUNK_LINE = 4096;

const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** Reads from a byte stream with lookahead: lines, exact counts, or what comes. */
class ByteReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf: Uint8Array = new Uint8Array(0);
  #eof = false;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    const r = await this.#reader.read();
    if (r.done) {
      this.#eof = true;
      return false;
    }
    if (this.#buf.length === 0) this.#buf = r.value;
    else {
      const joined = new Uint8Array(this.#buf.length + r.value.length);
      joined.set(this.#buf);
      joined.set(r.value, this.#buf.length);
      this.#buf = joined;
    }
    return true;
  }

  /** Bytes up to and without `delim` (CRLF or CRLFCRLF); undefined at a clean end of stream. */
  async until(delim: Uint8Array, max: number, what: string): Promise<Uint8Array | undefined> {
    let from = 0;
    for (;;) {
      const at = indexOf(this.#buf, delim, from);
      if (at > max) throw new TypeError(`the server sent a ${what} over ${max} bytes`);
      if (at !== -1) {
        const out = this.#buf.subarray(0, at);
        this.#buf = this.#buf.subarray(at + delim.length);
        return out;
      }
      if (this.#buf.length > max) {
        throw new TypeError(`the server sent a ${what} over ${max} bytes`);
      }
      from = Math.max(0, this.#buf.length - delim.length + 1);
      if (!await this.#fill()) {
        if (this.#buf.length === 0) return undefined;
        throw new TypeError(`the connection closed inside the ${what}`);
      }
    }
  }

  /**
   * A response head: bytes up to the empty line that ends it, which may be
   * written with bare LF line ends as some servers do; undefined at a clean end.
   */
  async head(max: number): Promise<Uint8Array | undefined> {
    let from = 0;
    for (;;) {
      for (let i = this.#buf.indexOf(LF, from); i !== -1; i = this.#buf.indexOf(LF, i + 1)) {
        const next = this.#buf[i + 1] === CR ? i + 2 : i + 1;
        if (next >= this.#buf.length) break;
        if (this.#buf[next] !== LF) continue;
        if (i > max) break;
        const out = this.#buf.subarray(0, this.#buf[i - 1] === CR ? i - 1 : i);
        this.#buf = this.#buf.subarray(next + 1);
        return out;
      }
      if (this.#buf.length > max) {
        throw new TypeError(`the server sent a response head over ${max} bytes`);
      }
      from = Math.max(0, this.#buf.length - 3);
      if (!await this.#fill()) {
        if (this.#buf.length === 0) return undefined;
        throw new TypeError("the connection closed inside the response head");
      }
    }
  }

  /** Up to `max` bytes (at least one), or undefined at the end of the stream. */
  async some(max: number): Promise<Uint8Array | undefined> {
    if (this.#buf.length === 0 && !await this.#fill()) return undefined;
    const n = Math.min(max, this.#buf.length);
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = hay.indexOf(needle[0], from); i !== -1; i = hay.indexOf(needle[0], i + 1)) {
    if (i + needle.length > hay.length) return -1;
    for (let j = 1; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const CRLF = encoder.encode("\r\n");
const CR = 0x0d, LF = 0x0a;

/** A parsed response head. */
interface Head {
  status: number;
  statusText: string;
  headers: Headers;
}

function parseHead(bytes: Uint8Array): Head {
  const lines = latin1.decode(bytes).split(/\r?\n/);
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0]);
  if (!m) {
    throw new TypeError(`the server sent no HTTP/1.1 status line: "${lines[0].slice(0, 80)}"`);
  }
  const headers = new Headers();
  let last: [string, string] | undefined;
  const flush = () => {
    if (!last) return;
    try {
      headers.append(last[0], last[1].trim());
    } catch {
      // A header a browser would not accept either: left out.
    }
  };
  for (const line of lines.slice(1)) {
    if (/^[ \t]/.test(line) && last) {
      last[1] += " " + line.trim(); // an obsolete folded line continues the previous header
      continue;
    }
    flush();
    const colon = line.indexOf(":");
    last = colon > 0 ? [line.slice(0, colon), line.slice(colon + 1)] : undefined;
  }
  flush();
  return { status: Number(m[1]), statusText: m[2] ?? "", headers };
}

/** The body of a chunked message, as a stream of the chunks' data. */
function chunked(r: ByteReader): ReadableStream<Uint8Array> {
  let left = 0;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (left === 0) {
        if (done) return controller.close();
        const line = await r.until(CRLF, MAX_CHUNK_LINE, "chunk size line");
        if (line === undefined) throw new TypeError("the connection closed inside a chunked body");
        const size = latin1.decode(line).split(";")[0].trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(size)) {
          throw new TypeError(`the server sent a bad chunk size "${size.slice(0, 20)}"`);
        }
        left = parseInt(size, 16);
        if (left === 0) {
          // Trailers, then the empty line that ends the message.
          while (((await r.until(CRLF, MAX_HEAD_BYTES, "trailer")) ?? new Uint8Array(0)).length) {
            // trailers are not used
          }
          done = true;
        }
      }
      const bytes = await r.some(left);
      if (!bytes) throw new TypeError("the connection closed inside a chunk");
      left -= bytes.length;
      if (left === 0 && (await r.until(CRLF, 2, "chunk end"))?.length !== 0) {
        throw new TypeError("the server sent a chunk longer than its size");
      }
      controller.enqueue(bytes.slice());
    },
    cancel: () => r.cancel(),
  }, { highWaterMark: 0 });
}

/** A body of `length` bytes, or (undefined) everything until the connection closes. */
function sized(r: ByteReader, length: number | undefined): ReadableStream<Uint8Array> {
  let left = length ?? Infinity;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (left === 0) return controller.close();
      const bytes = await r.some(Math.min(left, 64 * 1024));
      if (!bytes) {
        if (length === undefined) return controller.close();
        throw new TypeError(`the connection closed ${left} bytes before the end of the body`);
      }
      left -= bytes.length;
      controller.enqueue(bytes.slice());
    },
    cancel: () => r.cancel(),
  }, { highWaterMark: 0 });
}

/** What {@link http1Get} sends. */
export interface Http1Request {
  /** `host[:port]` as the Host header says it. */
  authority: string;
  /** Path and query, e.g. `/a?b=1`. */
  target: string;
  headers: Record<string, string>;
}

/**
 * Sends one GET over `conn` (with `Connection: close`) and returns the response
 * head and a body stream that is not yet decoded (Content-Encoding applies).
 * Closing or cancelling is the caller's: cancelling the body cancels `conn`'s reading.
 */
export async function http1Get(
  conn: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> },
  request: Http1Request,
): Promise<Head & { body: ReadableStream<Uint8Array> | null }> {
  let text = `GET ${request.target} HTTP/1.1\r\nHost: ${request.authority}\r\n`;
  for (const [k, v] of Object.entries(request.headers)) {
    if (/[\r\n]/.test(k + v)) throw new TypeError(`Cannot send header "${k}": it has a line break`);
    text += `${k}: ${v}\r\n`;
  }
  text += "Connection: close\r\n\r\n";
  const writer = conn.writable.getWriter();
  await writer.write(encoder.encode(text));
  writer.releaseLock();

  const r = new ByteReader(conn.readable);
  for (;;) {
    const bytes = await r.head(MAX_HEAD_BYTES);
    if (bytes === undefined) {
      throw new TypeError("the server closed the connection without an answer");
    }
    const head = parseHead(bytes);
    // Interim answers (100 Continue, 103 Early Hints) precede the real one.
    if (head.status >= 100 && head.status < 200 && head.status !== 101) continue;
    if (head.status < 200 || head.status > 599) {
      throw new TypeError(`the server answered with an invalid status ${head.status}`);
    }
    if (head.status === 204 || head.status === 304) {
      await r.cancel();
      return { ...head, body: null };
    }
    const te = head.headers.get("transfer-encoding");
    if (te !== null) {
      const last = te.split(",").map((s) => s.trim().toLowerCase()).pop();
      return { ...head, body: last === "chunked" ? chunked(r) : sized(r, undefined) };
    }
    const cl = head.headers.get("content-length");
    if (cl !== null) {
      const values = new Set(cl.split(",").map((s) => s.trim()));
      const [v] = values;
      if (values.size !== 1 || !/^\d{1,15}$/.test(v)) {
        throw new TypeError(`the server sent a bad Content-Length "${cl.slice(0, 40)}"`);
      }
      return { ...head, body: sized(r, Number(v)) };
    }
    return { ...head, body: sized(r, undefined) };
  }
}
