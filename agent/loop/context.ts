/**
 * Keeping a conversation inside the model's window: how big a message is, the
 * stub that replaces an old tool result or a bulky old tool call, and the
 * bound on one turn's new results (each cut, with a note saying how to get the
 * rest, so one large read never ends a run).
 *
 * @module
 */

import { MAX_ARGS_BYTES } from "../../tools/call/dispatch.ts";
import { formatBytes } from "../../tools/tool.ts";
import type { Message, ToolCallBlock, ToolResultBlock } from "../providers/types.ts";

/** One turn's tool results never exceed this many bytes together, whatever the window. */
export const TURN_RESULTS_MAX_BYTES = 512 * 1024;
/** Each cut result keeps at least this many characters, so the model sees its start and the note. */
const MIN_SHARE_CHARS = 600;
/** Room a cut result's note takes. */
const NOTE_CHARS = 240;
/** Old tool-call arguments larger than this are replaced by a stub. */
const BULKY_ARGS_CHARS = 2048;

/** The start of every stub that replaced an old tool result. */
export const STUB_PREFIX = "[Old tool result removed to save context:";
/** The key of the object that stands in for arguments that were removed. */
export const OMITTED_KEY = "_crab_omitted";

const encoder = new TextEncoder();

/**
 * Characters a message adds to a request (a close stand-in for its tokens, at
 * 4 characters a token); an image or PDF counts as its estimated tokens
 * (`Attachment.tokens`), not as its base64.
 */
export function messageChars(m: Message): number {
  if (typeof m.content === "string") return m.content.length;
  let n = 0;
  for (const b of m.content) {
    if (b.type === "text") n += b.text.length;
    else if (b.type === "tool_call") n += b.name.length + b.argsJson.length + 20;
    else if (b.type === "media") n += b.tokens * 4;
    else n += b.text.length + 20 + (b.attachment ? b.attachment.tokens * 4 : 0);
  }
  return n;
}

/** The argument a call acts on, cut to 120 characters. */
function targetOf(call: ToolCallBlock | undefined): string {
  try {
    const args = JSON.parse(call?.argsJson ?? "{}") as Record<string, unknown>;
    const target = args.path ?? args.command ?? args.pattern ?? args.url;
    if (typeof target === "string") {
      return ` ${target.length > 120 ? target.slice(0, 119) + "…" : target}`;
    }
  } catch {
    // Malformed arguments: the tool name is enough.
  }
  return "";
}

/** The stub for an old result: tool, target, size. */
export function stubFor(call: ToolCallBlock | undefined, text: string): string {
  const what = (call?.name ?? "tool") + targetOf(call);
  return `${STUB_PREFIX} ${what} · ${formatBytes(encoder.encode(text).byteLength)}. ` +
    "Call the tool again if you need it.]";
}

/** Arguments standing in for ones removed from the history (still a JSON object). */
export function omittedArgs(call: ToolCallBlock, why: string): string {
  return JSON.stringify({
    [OMITTED_KEY]: `${formatBytes(encoder.encode(call.argsJson).byteLength)} of ${call.name} ` +
      `arguments ${why}`,
  });
}

/**
 * A call as the history keeps it: arguments over the dispatch limit (refused
 * anyway) are replaced by a stub, so they cannot fill every later request.
 */
export function historyCall(call: ToolCallBlock): ToolCallBlock {
  if (call.argsJson.length * 3 <= MAX_ARGS_BYTES) return call;
  if (encoder.encode(call.argsJson).byteLength <= MAX_ARGS_BYTES) return call;
  return { ...call, argsJson: omittedArgs(call, "were refused as too large and removed") };
}

/**
 * Replaces old tool results (and bulky old call arguments) in `messages[0..end)`
 * by stubs, oldest first, until `over()` is false. Returns how many were replaced
 * and calls `changed(i)` for each rewritten message.
 */
export function stubOld(
  messages: Message[],
  end: number,
  over: () => boolean,
  changed: (index: number) => void,
): number {
  const callsById = new Map<string, ToolCallBlock>();
  for (const m of messages) {
    if (typeof m.content === "string") continue;
    for (const b of m.content) if (b.type === "tool_call") callsById.set(b.id, b);
  }
  let trimmed = 0;
  for (let i = 0; i < end && over(); i++) {
    const m = messages[i];
    if (typeof m.content === "string") continue;
    let touched = false;
    const content = m.content.map((b) => {
      if (b.type === "tool_result" && !b.text.startsWith(STUB_PREFIX)) {
        touched = true;
        trimmed++;
        // A stub keeps no image: dropping one is most of what stubbing a read of it saves.
        const { attachment: _attachment, ...rest } = b;
        return { ...rest, text: stubFor(callsById.get(b.callId), b.text) };
      }
      if (b.type === "tool_call" && b.argsJson.length > BULKY_ARGS_CHARS) {
        touched = true;
        trimmed++;
        return { ...b, argsJson: omittedArgs(b, "removed to save context") };
      }
      return b;
    });
    if (touched) {
      messages[i] = { ...m, content } as Message;
      changed(i);
    }
  }
  return trimmed;
}

/** What to do to get the part of a result that was cut. */
function continueHint(call: ToolCallBlock | undefined, kept: string): string {
  switch (call?.name) {
    case "read": {
      const numbered = kept.match(/(?:^|\n) *(\d+)\t[^\n]*\n[^\n]*$/);
      const next = numbered ? Number(numbered[1]) + 1 : undefined;
      return next
        ? `Read the rest with offset=${next} (and a limit), a part at a time.`
        : "Read the file in parts with offset and limit.";
    }
    case "bash":
      return "Run the command again with its output narrowed (grep, head, tail, or a file you read in parts).";
    case "grep":
      return "Narrow the search with path, glob or a more specific pattern.";
    case "glob":
      return "Narrow the pattern or the path.";
    default:
      return "Ask for less at a time (a narrower range or pattern).";
  }
}

/** `text` cut to about `chars` characters at a line end, with a note on how to continue. */
function cutResult(call: ToolCallBlock | undefined, text: string, chars: number): string {
  let head = text.slice(0, chars);
  const nl = head.lastIndexOf("\n");
  if (nl > chars / 2) head = head.slice(0, nl + 1);
  const total = encoder.encode(text).byteLength;
  const kept = encoder.encode(head).byteLength;
  return `${head}${head.endsWith("\n") ? "" : "\n"}[crab: result cut to ${formatBytes(kept)} ` +
    `of ${formatBytes(total)} to fit the model's context window. ${continueHint(call, head)}]`;
}

/**
 * Bounds one turn's results to `roomChars` characters together (and to
 * {@link TURN_RESULTS_MAX_BYTES}): small results stay whole, the large ones share
 * what is left equally, each cut with a note. Returns the results and how many were cut.
 */
export function boundResults(
  results: ToolResultBlock[],
  calls: ToolCallBlock[],
  roomChars: number,
): { results: ToolResultBlock[]; cut: number } {
  const room = Math.max(
    MIN_SHARE_CHARS * results.length,
    Math.min(roomChars, TURN_RESULTS_MAX_BYTES),
  );
  const total = results.reduce((n, r) => n + r.text.length, 0);
  if (total <= room) return { results, cut: 0 };
  // Water-filling: results under the fair share keep everything; the rest split what remains.
  const sizes = results.map((r) => r.text.length).sort((a, b) => a - b);
  let left = room;
  let share = room / results.length;
  for (let i = 0; i < sizes.length; i++) {
    share = left / (sizes.length - i);
    if (sizes[i] > share) break;
    left -= sizes[i];
  }
  // The note itself takes room too.
  const cap = Math.max(MIN_SHARE_CHARS, Math.floor(share) - NOTE_CHARS);
  const byId = new Map(calls.map((c) => [c.id, c]));
  let cut = 0;
  const out = results.map((r) => {
    if (r.text.length <= cap) return r;
    cut++;
    return { ...r, text: cutResult(byId.get(r.callId), r.text, cap) };
  });
  return { results: out, cut };
}

/**
 * The window a server named when it refused a prompt as too long, e.g.
 * "maximum context length is 8192 tokens" (OpenAI, vLLM), "available context
 * size (4096 tokens)" (llama.cpp), "40000 tokens > 32768 maximum" (Anthropic).
 */
export function windowFromError(message: string): number | undefined {
  const m = message.match(/maximum context length is (\d+)/i) ??
    message.match(/context size \((\d+) tokens\)/i) ??
    message.match(/\d+ tokens > (\d+)/i) ??
    message.match(/context window of (\d+)/i);
  const n = m ? Number(m[1]) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
