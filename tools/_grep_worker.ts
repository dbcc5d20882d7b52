/**
 * The grep worker: reads files and runs one regular expression over each, so a
 * catastrophic pattern blocks this thread, not the agent's. It receives
 * {@link GrepRequest} messages and answers each with a {@link GrepReply}.
 *
 * @module
 */

/** One search request. */
export interface GrepRequest {
  pattern: string;
  flags: string;
  files: string[];
  /** Lines of context to return around each matching line. */
  context: number;
}

/** Matches in one file. */
export interface FileMatches {
  /** Index into the request's `files`. */
  file: number;
  /** 1-based numbers of matching lines, ascending, each once. */
  lines: number[];
  /** Text of matching and context lines by line number, cut at {@link MAX_LINE_CHARS}. */
  text: Record<number, string>;
}

/** The answer to one request. */
export type GrepReply = { ok: true; matches: FileMatches[] } | { ok: false; message: string };

/** Lines longer than this are cut. */
export const MAX_LINE_CHARS = 2000;

const BINARY_PROBE = 8192;

/** Decodes a file's bytes, or returns undefined for a binary file. */
export function decode(bytes: Uint8Array): string | undefined {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    return new TextDecoder("utf-16le").decode(bytes.subarray(2));
  }
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
    return new TextDecoder("utf-16be").decode(bytes.subarray(2));
  }
  const probe = bytes.subarray(0, BINARY_PROBE);
  if (probe.indexOf(0) !== -1) return undefined;
  return new TextDecoder("utf-8", { ignoreBOM: false }).decode(bytes);
}

/** Index of the last element of ascending `starts` that is <= `pos`. */
function lineIndex(starts: number[], pos: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Searches one decoded text; returns matching line numbers and the lines to show. */
export function searchText(
  re: RegExp,
  raw: string,
  context: number,
): { lines: number[]; text: Record<number, string> } | undefined {
  const text = raw.replace(/\r\n/g, "\n");
  re.lastIndex = 0;
  let m = re.exec(text);
  if (!m) return undefined;
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  // A trailing newline ends the last line; it does not start an empty one.
  if (starts.length > 1 && starts[starts.length - 1] === text.length) starts.pop();
  const matched = new Set<number>();
  while (m) {
    const first = lineIndex(starts, m.index);
    const endPos = m[0].length ? m.index + m[0].length - 1 : m.index;
    const last = lineIndex(starts, endPos);
    for (let l = first; l <= last; l++) matched.add(l);
    if (m[0].length === 0) re.lastIndex++;
    // Resume at the next line: each line is reported once.
    if (re.lastIndex < starts[last + 1]) re.lastIndex = starts[last + 1];
    if (last + 1 >= starts.length) break;
    m = re.exec(text);
  }
  const lineText = (l: number) => {
    const end = l + 1 < starts.length
      ? starts[l + 1] - 1
      : text.endsWith("\n")
      ? text.length - 1
      : text.length;
    const s = text.slice(starts[l], end);
    return s.length > MAX_LINE_CHARS ? s.slice(0, MAX_LINE_CHARS) : s;
  };
  const lines = [...matched].sort((a, b) => a - b);
  const out: Record<number, string> = {};
  for (const l of lines) {
    const lo = Math.max(0, l - context);
    const hi = Math.min(starts.length - 1, l + context);
    for (let k = lo; k <= hi; k++) if (!(k + 1 in out)) out[k + 1] = lineText(k);
  }
  return { lines: lines.map((l) => l + 1), text: out };
}

/** Runs one request. */
export function runRequest(req: GrepRequest): GrepReply {
  let re: RegExp;
  try {
    re = new RegExp(req.pattern, req.flags);
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
  const matches: FileMatches[] = [];
  req.files.forEach((path, file) => {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(path);
    } catch {
      return; // vanished or unreadable: skipped, like rg
    }
    const text = decode(bytes);
    if (text === undefined) return;
    const r = searchText(re, text, req.context);
    if (r) matches.push({ file, ...r });
  });
  return { ok: true, matches };
}

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;
if (typeof scope.WorkerGlobalScope !== "undefined" && scope instanceof scope.WorkerGlobalScope) {
  scope.onmessage = (e: MessageEvent<GrepRequest>) => {
    scope.postMessage(runRequest(e.data));
  };
}
