/**
 * Compaction: the model summarises the conversation so far, and the history is
 * replaced by that summary plus the list of files read, by path. The files must
 * be read again before an edit (the caller clears the freshness gate), as after
 * a resume.
 *
 * @module
 */

import { relative } from "../../tools/fs/path.ts";
import type { ContentBlock, Message, Provider, ToolCallBlock } from "../providers/types.ts";
import { messageChars, STUB_PREFIX, stubFor } from "./context.ts";

/** What a compaction did. */
export interface CompactInfo {
  /** `auto` when crab compacted because the window was filling. */
  reason: "auto" | "manual";
  /** Messages before, and estimated tokens before and after. */
  messages: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Files the freshness gate forgot. */
  files: number;
  /** Images and PDFs the summary left out, by label (`shot.png 1280×720`). */
  dropped?: string[];
}

/** The line the user is shown after a compaction. */
export function compactNotice(info: CompactInfo): string {
  return `context: compacted the conversation (${info.messages} messages, about ` +
    `${info.tokensBefore} tokens → ${info.tokensAfter})` +
    (info.reason === "auto" ? ", as the model's window was filling" : "") +
    `; ${info.files} file${info.files === 1 ? "" : "s"} must be read again before editing` +
    (info.dropped?.length ? `; images and PDFs dropped: ${info.dropped.join(", ")}` : "");
}

/**
 * `messages` without their images and PDFs, each replaced by a line naming it
 * (a summary is text: the model summarising need not see them again), and the
 * labels of what was dropped.
 */
export function withoutMedia(messages: Message[]): { messages: Message[]; dropped: string[] } {
  const dropped: string[] = [];
  const note = (kind: string, label: string) => {
    dropped.push(label);
    return `[${kind} ${label} was here; left out of the summary]`;
  };
  const out = messages.map((m): Message => {
    if (typeof m.content === "string") return m;
    return {
      ...m,
      content: m.content.map((b): ContentBlock => {
        if (b.type === "media") return { type: "text", text: note(b.kind, b.label) };
        if (b.type !== "tool_result" || !b.attachment) return b;
        const { attachment: a, ...rest } = b;
        return { ...rest, text: `${b.text}\n${note(a.kind, a.label)}` };
      }),
    } as Message;
  });
  return { messages: out, dropped };
}

/** The system prompt of a summary request. */
const SYSTEM = "You write the working notes of a coding session so that it can go on " +
  "after its history is dropped. You only summarise; you call no tools.";

/** The instruction appended to the conversation to get its summary. */
export function summaryInstruction(focus?: string): string {
  return "Summarise our conversation so far for yourself, so that we can go on from the summary " +
    "alone. Keep: what I asked for and my preferences; decisions and their reasons; the files " +
    "involved and what changed in them; commands run and what they showed (errors verbatim, " +
    "briefly); what is done, what is left, and the next step. Be concise and specific; no " +
    "preamble." + (focus ? `\nFocus on: ${focus}` : "");
}

/** The conversation sent for a summary, kept under `maxChars`: results stubbed, then oldest dropped. */
export function summaryRequest(old: Message[], focus: string | undefined, maxChars: number) {
  const calls = new Map<string, ToolCallBlock>();
  for (const m of old) {
    if (typeof m.content !== "string") {
      for (const b of m.content) if (b.type === "tool_call") calls.set(b.id, b);
    }
  }
  let { messages } = withoutMedia(old);
  const size = () => messages.reduce((n, m) => n + messageChars(m), 0);
  // Long results say little a summary needs; cut them first, then whole old messages.
  if (size() > maxChars) {
    messages = messages.map((m) =>
      typeof m.content === "string" ? m : {
        ...m,
        content: m.content.map((b): ContentBlock =>
          b.type === "tool_result" && b.text.length > 1500 && !b.text.startsWith(STUB_PREFIX)
            ? { ...b, text: b.text.slice(0, 1000) + "\n…\n" + stubFor(calls.get(b.callId), b.text) }
            : b
        ),
      } as Message
    );
  }
  // Then long texts keep their start and end.
  if (size() > maxChars) {
    messages = messages.map((m) => {
      const cut = (t: string) =>
        t.length > 3000
          ? `${t.slice(0, 1500)}\n[… ${t.length - 2500} characters left out …]\n${t.slice(-1000)}`
          : t;
      if (typeof m.content === "string") return { ...m, content: cut(m.content) } as Message;
      return {
        ...m,
        content: m.content.map((b) => b.type === "text" ? { ...b, text: cut(b.text) } : b),
      } as Message;
    });
  }
  while (size() > maxChars && messages.length > 1) {
    messages.shift();
    // A result never comes without its call.
    while (messages.length > 1 && !startsCleanly(messages[0])) messages.shift();
  }
  // A conversation starts with the user.
  if (messages[0]?.role === "assistant") {
    messages.unshift({
      role: "user",
      content: [{ type: "text", text: "[earlier messages left out]" }],
    });
  }
  const instruction: ContentBlock = { type: "text", text: summaryInstruction(focus) };
  const last = messages[messages.length - 1];
  if (last?.role === "user") {
    const prior: ContentBlock[] = typeof last.content === "string"
      ? [{ type: "text", text: last.content }]
      : last.content;
    messages[messages.length - 1] = { role: "user", content: [...prior, instruction] };
  } else messages.push({ role: "user", content: [instruction] });
  return { system: SYSTEM, messages };
}

function startsCleanly(m: Message): boolean {
  if (m.role !== "user") return m.content.every((b) => b.type !== "tool_call");
  return typeof m.content === "string" || !m.content.some((b) => b.type === "tool_result");
}

/** Asks the model for the summary; throws what the provider throws, or on an empty summary. */
export async function summarise(
  provider: Provider,
  model: string,
  request: { system: string; messages: Message[] },
  signal: AbortSignal,
  onUsage: (input: number, output: number) => void,
): Promise<string> {
  let text = "";
  for await (
    const ev of provider.stream({
      model,
      system: request.system,
      messages: request.messages,
      tools: [],
      maxTokens: 4096,
      signal,
    })
  ) {
    if (ev.type === "text_delta") text += ev.text;
    else if (ev.type === "usage") onUsage(ev.inputTokens, ev.outputTokens);
  }
  if (!text.trim()) throw new Error("the model returned no summary");
  return text.trim();
}

/**
 * The files a conversation read or wrote, workspace-relative: those the
 * freshness gate knows (`realPaths`) and those named by read, write and edit calls.
 */
export function filesTouched(
  messages: Message[],
  realPaths: string[],
  workspace: string,
): string[] {
  const out = new Set<string>();
  for (const p of realPaths) {
    const rel = relative(workspace, p);
    out.add(rel && !rel.startsWith("..") ? rel : p);
  }
  for (const m of messages) {
    if (typeof m.content === "string" || m.role !== "assistant") continue;
    for (const b of m.content) {
      if (b.type !== "tool_call" || !["read", "write", "edit"].includes(b.name)) continue;
      try {
        const path = (JSON.parse(b.argsJson) as { path?: unknown }).path;
        if (typeof path === "string" && path) out.add(path.replace(/^\.\//, ""));
      } catch {
        // Malformed arguments name no file.
      }
    }
  }
  return [...out].sort();
}

/** The message that opens a compacted history. */
export function summaryText(
  summary: string,
  files: string[],
  workspace: string,
  focus?: string,
): string {
  const paths = files.map((f) => {
    if (!f.startsWith("/")) return f;
    const rel = relative(workspace, f);
    return rel && !rel.startsWith("..") ? rel : f;
  }).sort();
  return `[This conversation was compacted${focus ? ` (focus: ${focus})` : ""}. ` +
    `Summary of what came before:]\n\n${summary}` +
    (paths.length
      ? `\n\n[Files read or written before the compaction; read them again before editing:]\n` +
        paths.map((p) => `- ${p}`).join("\n")
      : "");
}

/**
 * The compacted history: the summary, then `kept` (the exchange still under
 * way) with the summary leading its first user message.
 */
export function compactedHistory(summary: string, kept: Message[]): Message[] {
  const lead: ContentBlock = { type: "text", text: summary };
  if (kept.length === 0 || kept[0].role !== "user") {
    return [{ role: "user", content: [lead] }, ...(kept.length ? [ack(), ...kept] : [])];
  }
  const first = kept[0];
  // Results whose calls were summarised away cannot stay.
  const blocks: ContentBlock[] = typeof first.content === "string"
    ? [{ type: "text", text: first.content }]
    : first.content.filter((b) => b.type !== "tool_result");
  return [{ role: "user", content: [lead, ...blocks] }, ...kept.slice(1)];
}

function ack(): Message {
  return { role: "assistant", content: [{ type: "text", text: "Understood." }] };
}
