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
import { utf8Length } from "./_text.ts";
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { fileHasher } from "./sha256.ts";
import { assertRegularFile, guardPath } from "./workspace.ts";

/** Arguments of {@link readTool}. */
export interface ReadArgs {
  path: string;
  offset?: number;
  limit?: number;
}

/** Lines longer than this many characters (UTF-16 units) are cut. */
export const MAX_LINE_CHARS = 2000;
/** Lines returned when no limit is given. */
export const DEFAULT_LIMIT = 2000;
/** The numbered output never exceeds this many bytes. */
export const MAX_OUTPUT_BYTES = 256 * 1024;
/** A NUL byte in this many leading bytes makes a file binary. */
export const BINARY_SNIFF_BYTES = 8192;

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

async function scan(real: string, offset: number, limit: number): Promise<Scan> {
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

  using file = await Deno.open(real, { read: true });
  const hasher = await fileHasher((await file.stat()).size);
  const buf = new Uint8Array(CHUNK);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    const chunk = buf.subarray(0, n);
    hasher.update(chunk);
    if (!binary && size < BINARY_SNIFF_BYTES) {
      binary = chunk.subarray(0, BINARY_SNIFF_BYTES - size).includes(0);
    }
    size += n;
    lastByte = chunk[n - 1];
    if (binary) continue;
    let pos = 0;
    while (pos < n) {
      const nl = chunk.indexOf(10, pos);
      if (wanted()) keep(chunk.subarray(pos, nl === -1 ? n : nl));
      if (nl === -1) break;
      if (wanted()) emit();
      line++;
      pos = nl + 1;
    }
  }
  const hasPartialLast = size > 0 && lastByte !== 10;
  if (!binary && hasPartialLast && wanted()) emit();
  return {
    hash: hasher.digest("hex"),
    size,
    binary,
    total: hasPartialLast ? line : line - 1,
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
    },
    required: ["path"],
    additionalProperties: false,
  },
  summarize: (args) => `read: ${args.path}`,
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "read");
    const info = await statFile(p.real, p.display);
    assertRegularFile(info, p.display, "read");
    const offset = args.offset ?? 1;
    const limit = args.limit ?? DEFAULT_LIMIT;
    const s = await scan(p.real, offset, limit);
    ctx.session.recordDigest(p.real, {
      hash: s.hash,
      size: s.size,
      mtimeMs: info.mtime?.getTime() ?? null,
    });
    if (s.size === 0) return { output: `(file "${p.display}" is empty)` };
    if (s.binary) {
      return { output: `"${p.display}" is a binary file (${formatBytes(s.size)})` };
    }
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
    let out = "";
    for (const r of s.rows) out += `${String(r.n).padStart(width)}\t${r.text}\n`;
    const shownLast = s.rows[s.rows.length - 1].n;
    if (s.cappedAt) {
      out += `\n(output capped at ${formatBytes(MAX_OUTPUT_BYTES)}; file has ${s.total} lines;` +
        ` continue with offset=${s.cappedAt})`;
    } else if (shownLast < s.total) {
      out += `\n(file has ${s.total} lines; continue with offset=${shownLast + 1})`;
    }
    return { output: out };
  },
};
