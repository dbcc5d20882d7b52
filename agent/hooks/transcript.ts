/**
 * The session's transcript as Claude Code writes one, for the hooks that read
 * `transcript_path` (a Stop hook reading the last answer, a PreCompact hook
 * backing the conversation up): one JSON line per message of the conversation,
 * in `<data dir>/transcripts/<session id>.jsonl`, private to the user (0600 in
 * a 0700 folder).
 *
 * The store keeps the conversation; this file is a copy kept in step with it,
 * so a hook sees every message up to the moment it runs. A new message is
 * appended; a message changed in place (a merged user message, a stubbed old
 * result), a compacted or rewound conversation rewrites the file whole, through a
 * temporary file renamed over it. A line keeps its `uuid` and `timestamp` when
 * its message changes in place or a resumed session reopens the file; a
 * compacted conversation is new lines. Each line is kept as written, so a
 * rewrite serialises only what changed.
 *
 * Tool calls carry Claude Code's names and argument shapes, as hooks' tool
 * events do (`Bash` with `command`, `Read` with an absolute `file_path`).
 *
 * A subagent's conversation is a sidechain, kept as Claude Code keeps one:
 * `transcripts/<session id>/subagents/agent-<agent id>.jsonl`, each line with
 * `isSidechain: true` and the `agentId` (SubagentStop's `agent_transcript_path`).
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import type { ContentBlock, Message } from "../providers/types.ts";
import { dataDir } from "../../tools/fs/data_dir.ts";
import { VERSION } from "../../version.ts";
import { claudeCall } from "./stage.ts";

/**
 * Where a session's transcript file goes; undefined for an id unfit for a file name.
 *
 * @example
 * ```ts
 * transcriptPath("0b5f3a52-8f7e-4c1e-9a55-6a3d2f1e0c4b", "/home/me/.local/share/crab");
 * // "/home/me/.local/share/crab/transcripts/0b5f3a52-8f7e-4c1e-9a55-6a3d2f1e0c4b.jsonl"
 * ```
 */
export function transcriptPath(
  sessionId: string,
  root: string = dataDir(),
  agentId?: string,
): string | undefined {
  const fit = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
  if (!fit.test(sessionId)) return undefined;
  if (agentId === undefined) return join(root, "transcripts", `${sessionId}.jsonl`);
  if (!fit.test(agentId)) return undefined;
  return join(root, "transcripts", sessionId, "subagents", `agent-${agentId}.jsonl`);
}

/** Options of {@link TranscriptFile.open}. */
export interface TranscriptFileOptions {
  sessionId: string;
  /** The workspace: each line's `cwd`, and what relative paths are absolute in. */
  cwd: string;
  /** The Claude Code name of a tool that is not built in (an MCP tool's `mcp__server__tool`). */
  alias?(tool: string): string | undefined;
  /** Told once when the file cannot be written; the conversation goes on without it. */
  onProblem?(message: string): void;
  /** The data directory (by default crab's). */
  root?: string;
  /** A subagent's sidechain: its id (the file is its own). */
  agentId?: string;
}

/** A line of the file: its id and time, kept when it is rewritten, and its JSON. */
interface Entry {
  uuid: string;
  timestamp: string;
  line: string;
}

/** One session's transcript file. */
export class TranscriptFile {
  /** Where the file is. */
  readonly path: string;
  readonly #opts: TranscriptFileOptions;
  #entries: Entry[] = [];
  /** A write failed: the next one rewrites the file whole. */
  #stale = false;
  #told = false;

  private constructor(path: string, opts: TranscriptFileOptions) {
    this.path = path;
    this.#opts = opts;
  }

  /**
   * Opens the file of a session whose conversation so far is `messages` (none
   * for a new one) and writes them; the lines already there for them keep their
   * ids and times. Undefined when the id is unfit for a file name.
   *
   * @example
   * ```ts
   * const file = TranscriptFile.open({ sessionId, cwd: "/ws" }, []);
   * file?.put({ role: "user", content: [{ type: "text", text: "hi" }] }, 0);
   * ```
   */
  static open(
    opts: TranscriptFileOptions,
    messages: readonly Message[],
  ): TranscriptFile | undefined {
    const path = transcriptPath(opts.sessionId, opts.root, opts.agentId);
    if (path === undefined) return undefined;
    const file = new TranscriptFile(path, opts);
    const kept = readLines(path);
    const now = new Date().toISOString();
    messages.forEach((message, i) => {
      file.#entries.push(
        file.#entry(message, i, kept[i]?.uuid ?? crypto.randomUUID(), kept[i]?.timestamp ?? now),
      );
    });
    file.#rewrite();
    return file;
  }

  /** Message `index` of the conversation is `message`: appended when new, else rewritten. */
  put(message: Message, index: number): void {
    const old = this.#entries[index];
    if (old) {
      this.#entries[index] = this.#entry(message, index, old.uuid, old.timestamp);
      this.#rewrite();
      return;
    }
    const at = this.#entries.length;
    this.#entries.push(
      this.#entry(message, at, crypto.randomUUID(), new Date().toISOString()),
    );
    if (this.#stale || index !== at) {
      this.#rewrite();
      return;
    }
    this.#write(() =>
      Deno.writeTextFileSync(this.path, this.#entries[at].line + "\n", {
        append: true,
        mode: 0o600,
      })
    );
  }

  /** Drops the messages from `index` on (the conversation was rewound). */
  truncate(index: number): void {
    if (index >= this.#entries.length) return;
    this.#entries.length = Math.max(0, index);
    this.#rewrite();
  }

  /** The conversation was replaced (compacted): the file holds `messages`, as new lines. */
  replace(messages: readonly Message[]): void {
    const now = new Date().toISOString();
    this.#entries = [];
    messages.forEach((message, i) => {
      this.#entries.push(this.#entry(message, i, crypto.randomUUID(), now));
    });
    this.#rewrite();
  }

  #rewrite(): void {
    const text = this.#entries.map((e) => e.line + "\n").join("");
    const tmp = `${this.path}.${crypto.randomUUID()}.tmp`;
    this.#write(() => {
      Deno.mkdirSync(join(this.path, ".."), { recursive: true, mode: 0o700 });
      try {
        Deno.writeTextFileSync(tmp, text, { createNew: true, mode: 0o600 });
        Deno.renameSync(tmp, this.path);
      } catch (e) {
        try {
          Deno.removeSync(tmp);
        } catch {
          // never made
        }
        throw e;
      }
    });
  }

  #write(write: () => void): void {
    try {
      write();
      this.#stale = false;
    } catch (e) {
      this.#stale = true;
      if (this.#told) return;
      this.#told = true;
      this.#opts.onProblem?.(
        `cannot write the transcript file "${this.path}" (hooks read it as transcript_path): ${
          e instanceof Error ? e.message : e
        }`,
      );
    }
  }

  /** Message `i` as Claude Code's transcript line (its parent is line `i - 1`). */
  #entry(message: Message, i: number, uuid: string, timestamp: string): Entry {
    const line = JSON.stringify({
      parentUuid: i === 0 ? null : this.#entries[i - 1].uuid,
      isSidechain: this.#opts.agentId !== undefined,
      ...(this.#opts.agentId !== undefined ? { agentId: this.#opts.agentId } : {}),
      userType: "external",
      cwd: this.#opts.cwd,
      sessionId: this.#opts.sessionId,
      version: VERSION,
      type: message.role,
      message: { role: message.role, content: this.#content(message) },
      uuid,
      timestamp,
    });
    return { uuid, timestamp, line };
  }

  /** A message's content as Anthropic's content blocks. */
  #content(message: Message): string | Record<string, unknown>[] {
    if (typeof message.content === "string") return message.content;
    return message.content.map((b: ContentBlock) => {
      switch (b.type) {
        case "text":
          return { type: "text", text: b.text };
        case "tool_result":
          return {
            type: "tool_result",
            tool_use_id: b.callId,
            content: b.text,
            is_error: b.isError,
          };
        case "tool_call": {
          const claude = claudeCall(
            b.name,
            this.#opts.alias?.(b.name),
            argsOf(b.argsJson),
            this.#opts.cwd,
          );
          return { type: "tool_use", id: b.id, name: claude.name, input: claude.input };
        }
        case "media":
          // Hooks read sizes, never the bytes of an image or PDF.
          return { type: "text", text: `[${b.kind}: ${b.label}]` };
      }
    });
  }
}

/** A call's arguments as an object; malformed ones (the model's) as none. */
function argsOf(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** The ids and times of a transcript file's lines, in order; none when it is missing or unreadable. */
function readLines(path: string): { uuid?: string; timestamp?: string }[] {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch {
    return [];
  }
  const out: { uuid?: string; timestamp?: string }[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    try {
      const v = JSON.parse(line);
      out.push({
        ...(typeof v.uuid === "string" ? { uuid: v.uuid } : {}),
        ...(typeof v.timestamp === "string" ? { timestamp: v.timestamp } : {}),
      });
    } catch {
      out.push({});
    }
  }
  return out;
}
