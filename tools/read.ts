/**
 * The read tool: a numbered slice of a file, recorded for the freshness gate.
 * The file is streamed once in chunks: every byte goes into the whole-file hash
 * and the line count, but only the requested lines (each cut to a bounded prefix)
 * are kept, so a multi-gigabyte log or a one-line minified bundle reads in
 * bounded memory.
 *
 * @module
 */

import description from "./read.md" with { type: "text" };
import { utf8Length } from "./fs/text.ts";
import { fileHasher } from "./fs/sha256.ts";
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { assertRegularFile, guardPath } from "./fs/workspace.ts";
import { openChecked } from "./fs/open_checked.ts";
import { BinarySniffer, bomEncoding, type Encoding, Utf8Checker } from "./fs/encoding.ts";
import { HEADER_BYTES, type ImageHeader, imageHeader } from "./fs/media/image_header.ts";
import { assertDecodable, imageResult, noImagesNote } from "./fs/media/image_result.ts";
import { isPdf, MAX_PDF_FILE_BYTES, pdfResult } from "./fs/media/pdf_result.ts";
import { sha256 } from "./fs/sha256.ts";

/** Arguments of {@link readTool}. */
export interface ReadArgs {
  path: string;
  offset?: number;
  limit?: number;
  /** A PDF's pages: `"3"` or `"1-5"`. */
  pages?: string;
}

/** Lines longer than this many characters (UTF-16 units) are cut. */
export const MAX_LINE_CHARS = 2000;
/** Lines returned when no limit is given. */
export const DEFAULT_LIMIT = 2000;
/** The numbered output never exceeds this many bytes. */
export const MAX_OUTPUT_BYTES = 256 * 1024;

const CHUNK = 64 * 1024;
/** Bytes kept of one line: enough for MAX_LINE_CHARS characters of up to 4 bytes each. */
const LINE_KEEP_BYTES = 4 * MAX_LINE_CHARS + 4;

/** What one pass over the file found. */
interface Scan {
  hash: string;
  size: number;
  binary: boolean;
  /** Number of lines (a last line without a newline counts). */
  total: number;
  rows: { n: number; text: string }[];
  /** First line not shown because the output cap was reached; 0 when not capped. */
  cappedAt: number;
  /** The encoding its byte order mark names (UTF-8 without one). */
  encoding: Encoding;
  /** Where a UTF-8 file first is not valid UTF-8. */
  firstInvalid?: { offset: number; line: number };
}

const encoder = new TextEncoder();

function countNewlines(bytes: Uint8Array): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function cutLine(text: string, lineBytes: number): string {
  if (text.length <= MAX_LINE_CHARS && lineBytes <= LINE_KEEP_BYTES) return text;
  let cut = Math.min(MAX_LINE_CHARS, text.length);
  // Never split a surrogate pair.
  const c = text.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--;
  return `${
    text.slice(0, cut)
  } … [line cut at ${MAX_LINE_CHARS} chars; the line is ${lineBytes} bytes]`;
}

async function scan(file: Deno.FsFile, offset: number, limit: number): Promise<Scan> {
  const hasher = await fileHasher((await file.stat()).size);
  const last = offset + limit - 1;
  // Row bytes are budgeted with the widest number this call could print.
  const numberWidth = String(last).length + 1;
  const rows: { n: number; text: string }[] = [];
  let outBytes = 0;
  let cappedAt = 0;
  let size = 0;
  let binary = false;
  let line = 1;
  let lastByte = -1;
  let parts: Uint8Array[] = [];
  let kept = 0;
  let lineBytes = 0;

  const wanted = () => cappedAt === 0 && line >= offset && line <= last;
  const keep = (bytes: Uint8Array) => {
    lineBytes += bytes.byteLength;
    if (kept >= LINE_KEEP_BYTES || bytes.byteLength === 0) return;
    const part = bytes.slice(0, LINE_KEEP_BYTES - kept); // a copy: the buffer is reused
    parts.push(part);
    kept += part.byteLength;
  };
  const emit = () => {
    const bytes = parts.length === 1 ? parts[0] : concat(parts, kept);
    let text = decoder.decode(bytes);
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    text = cutLine(text, lineBytes);
    parts = [];
    kept = 0;
    lineBytes = 0;
    const rowBytes = numberWidth + 1 + utf8Length(text) + 1;
    if (rows.length > 0 && outBytes + rowBytes > MAX_OUTPUT_BYTES) {
      cappedAt = line;
      return;
    }
    outBytes += rowBytes;
    rows.push({ n: line, text });
  };

  /** Splits text bytes into lines, keeping the wanted ones. */
  const feed = (chunk: Uint8Array) => {
    const n = chunk.length;
    if (n === 0) return;
    lastByte = chunk[n - 1];
    let pos = 0;
    while (pos < n) {
      const nl = chunk.indexOf(10, pos);
      if (wanted()) keep(chunk.subarray(pos, nl === -1 ? n : nl));
      if (nl === -1) break;
      if (wanted()) emit();
      line++;
      pos = nl + 1;
    }
  };

  const sniffer = new BinarySniffer();
  const utf8 = new Utf8Checker();
  let encoding: Encoding | undefined;
  // UTF-16 is decoded and re-encoded as UTF-8, so the line splitting below stays byte-based.
  let utf16: TextDecoder | undefined;
  let badLine = 0;
  const buf = new Uint8Array(CHUNK);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    const raw = buf.subarray(0, n);
    hasher.update(raw);
    if (encoding === undefined) {
      encoding = bomEncoding(raw);
      if (encoding !== "utf-8") utf16 = new TextDecoder(encoding);
    }
    size += n;
    if (utf16) {
      feed(encoder.encode(utf16.decode(raw, { stream: true })));
      continue;
    }
    if (binary) continue;
    sniffer.push(raw);
    binary = sniffer.binary();
    if (binary) continue;
    const bad = utf8.push(raw);
    if (bad >= 0) badLine = line + countNewlines(raw.subarray(0, bad));
    feed(raw);
  }
  if (utf16) feed(encoder.encode(utf16.decode()));
  else {
    binary ||= sniffer.binary(true);
    utf8.finish();
    if (utf8.firstInvalid !== undefined && badLine === 0) badLine = line;
  }
  const hasPartialLast = size > 0 && lastByte !== 10 && lastByte !== -1;
  if (!binary && hasPartialLast && wanted()) emit();
  return {
    hash: hasher.digest("hex"),
    size,
    binary,
    total: hasPartialLast ? line : line - 1,
    encoding: encoding ?? "utf-8",
    firstInvalid: utf8.firstInvalid === undefined
      ? undefined
      : { offset: utf8.firstInvalid, line: badLine },
    rows,
    cappedAt,
  };
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}

/**
 * The line said before the text of a file that is not plain UTF-8: decoded
 * UTF-16, or the first invalid byte. Invalid bytes are shown as U+FFFD rather
 * than as a Latin-1 view: in the usual case, a UTF-8 file with a few bad bytes,
 * every other character stays right, where Latin-1 would garble each non-ASCII one.
 */
function encodingNote(s: Scan): string {
  if (s.encoding !== "utf-8") {
    const name = s.encoding === "utf-16le" ? "UTF-16 LE" : "UTF-16 BE";
    return `[${name} text with a byte order mark, shown decoded; edit refuses this file, ` +
      "write would save it as UTF-8]\n";
  }
  if (!s.firstInvalid) return "";
  const { offset, line } = s.firstInvalid;
  return `[not valid UTF-8: the first invalid byte is at offset ${offset} (line ${line}); ` +
    "invalid bytes are shown as U+FFFD; edit refuses this file, write replaces it whole]\n";
}

/** The first bytes of a file (enough for an image's header); the file is left at its start. */
async function peek(file: Deno.FsFile): Promise<Uint8Array> {
  const head = new Uint8Array(HEADER_BYTES);
  let n = 0;
  while (n < head.length) {
    const got = await file.read(head.subarray(n));
    if (got === null) break;
    n += got;
    // Most headers sit in the first bytes; only a JPEG's frame may come later.
    if (n >= 32 && head[0] !== 0xff) break;
  }
  await file.seek(0, Deno.SeekMode.Start);
  return head.subarray(0, n);
}

/** The whole file, which is `size` bytes long (more, if it grew since). */
async function readAll(file: Deno.FsFile, size: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const buf = new Uint8Array(Math.max(CHUNK, Math.min(size, 16 * CHUNK)));
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    parts.push(buf.slice(0, n));
    total += n;
  }
  return concat(parts, total);
}

async function statFile(real: string, display: string): Promise<Deno.FileInfo> {
  try {
    return await Deno.stat(real);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) {
      throw new ToolError(
        "file_not_found",
        `Cannot read "${display}": file does not exist`,
        "Check the path; glob lists the files that exist.",
      );
    }
    throw e;
  }
}

/** Reads a file slice with line numbers. */
export const readTool: Tool<ReadArgs> = {
  name: "read",
  class: "read",
  description,
  schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      offset: { type: "integer", minimum: 1, description: "1-based first line (default 1)." },
      limit: {
        type: "integer",
        minimum: 1,
        description: `Number of lines (default ${DEFAULT_LIMIT}).`,
      },
      pages: {
        type: "string",
        maxLength: 40,
        description: 'PDF pages to read: "3" or "1-5" (default all; at most 100).',
      },
    },
    required: ["path"],
    additionalProperties: false,
  },
  summarize: (args) => `read: ${args.path}`,
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "read");
    // A stat first: anything but a regular file is refused before an open could hang on it.
    assertRegularFile(await statFile(p.real, p.display), p.display, "read");
    const offset = args.offset ?? 1;
    const limit = args.limit ?? DEFAULT_LIMIT;
    const { file, info } = await openChecked(p, "read");
    let s: Scan;
    let image: ImageHeader | undefined;
    try {
      const head = await peek(file);
      image = imageHeader(head);
      const images = ctx.session.media.images;
      const pdf = isPdf(head);
      if (args.pages !== undefined && !pdf) {
        throw new ToolError(
          "invalid_pages",
          `Cannot read "${p.display}" with pages: it is not a PDF`,
          "Leave pages out; offset and limit choose the lines of a text file.",
        );
      }
      if ((image && images) || pdf) {
        if (image) assertDecodable(image, info.size, p.display);
        else if (info.size > MAX_PDF_FILE_BYTES) {
          throw new ToolError(
            "file_too_large",
            `Cannot read PDF "${p.display}": the file is ${formatBytes(info.size)}, over the ` +
              `${formatBytes(MAX_PDF_FILE_BYTES)} crab opens`,
            "Split it into smaller PDFs and read those.",
          );
        }
        const bytes = await readAll(file, info.size);
        ctx.session.recordDigest(p.real, {
          hash: sha256(bytes),
          size: bytes.byteLength,
          mtimeMs: info.mtime?.getTime() ?? null,
        });
        return image && images
          ? await imageResult(p.display, bytes, image, images, ctx.signal)
          : await pdfResult(p.display, bytes, args.pages, ctx.session.media.pdf, ctx.signal);
      }
      s = await scan(file, offset, limit);
    } finally {
      file.close();
    }
    ctx.session.recordDigest(p.real, {
      hash: s.hash,
      size: s.size,
      mtimeMs: info.mtime?.getTime() ?? null,
    });
    if (s.size === 0) return { output: `(file "${p.display}" is empty)` };
    if (s.binary) {
      const note = image ? noImagesNote(image) : "";
      return { output: `"${p.display}" is a binary file (${formatBytes(s.size)})${note}` };
    }
    const note = encodingNote(s);
    if (s.total === 0) return { output: `${note}(file "${p.display}" holds no text)` };
    if (offset > s.total) {
      throw new ToolError(
        "offset_out_of_range",
        `Cannot read "${p.display}" at offset ${offset}: file has ${s.total} line${
          s.total === 1 ? "" : "s"
        }`,
        `Use an offset between 1 and ${s.total}.`,
      );
    }
    const width = String(s.rows[s.rows.length - 1].n).length;
    let out = note;
    for (const r of s.rows) out += `${String(r.n).padStart(width)}\t${r.text}\n`;
    const shownLast = s.rows[s.rows.length - 1].n;
    if (s.cappedAt) {
      out += `\n(output capped at ${formatBytes(MAX_OUTPUT_BYTES)}; file has ${s.total} lines;` +
        ` continue with offset=${s.cappedAt})`;
    } else if (shownLast < s.total) {
      out += `\n(file has ${s.total} lines; continue with offset=${shownLast + 1})`;
    }
    // Cut by the byte cap or the default line limit (not by a limit the caller chose).
    const cut = s.cappedAt > 0 || (shownLast < s.total && args.limit === undefined);
    return { output: out, bytesFull: cut ? s.size : undefined };
  },
};
