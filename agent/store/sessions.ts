/**
 * Session transcripts in the observation store: each message of a conversation
 * is one row, written as the conversation grows, so `--continue` and `--resume`
 * pick up where a run stopped (even one that was killed). Freshness-gate state is
 * not part of a transcript: a resumed session reads files again before editing.
 *
 * @module
 */

import type { Message } from "../providers/types.ts";
import type { Store } from "./observe.ts";

/** A stored session, as `crab sessions` lists it. */
export interface SessionInfo {
  id: string;
  workspace: string;
  createdAt: number;
  updatedAt: number;
  provider: string | null;
  model: string | null;
  /** The first line of the first prompt. */
  title: string;
  messages: number;
}

/** Transcripts of one store. */
export class Transcripts {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /**
   * Starts a session and returns its id (a new UUID unless given). Like every write here, a failure (a full
   * disk) is reported by the store once and dropped: the conversation goes on.
   */
  create(
    workspace: string,
    provider: string | null,
    model: string | null,
    id: string = crypto.randomUUID(),
  ): string {
    const now = Date.now();
    this.#store.write((db) =>
      db.prepare(
        `INSERT INTO sessions (id, workspace, created_at, updated_at, provider, model)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(id, workspace, now, now, provider, model), undefined);
    return id;
  }

  /** Appends messages after the `from` already stored ones, all or none. */
  append(sessionId: string, from: number, messages: readonly Message[]): void {
    if (messages.length === 0) return;
    const now = Date.now();
    this.#store.write((db) => {
      const insert = db.prepare(
        "INSERT OR REPLACE INTO messages (session_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
      );
      db.exec("BEGIN IMMEDIATE");
      try {
        messages.forEach((m, i) => {
          insert.run(sessionId, from + i, m.role, JSON.stringify(storedContent(m)), now);
        });
        const title = titleOf(messages);
        db.prepare(
          "UPDATE sessions SET updated_at = ?, title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
        ).run(now, title, sessionId);
        db.exec("COMMIT");
      } catch (e) {
        // SQLite may have rolled back already (a full disk does): roll back only what is open.
        if (db.isTransaction) db.exec("ROLLBACK");
        throw e;
      }
    }, undefined);
  }

  /** Drops stored messages from `from` on (the conversation was rewritten, e.g. `/clear`). */
  truncate(sessionId: string, from: number): void {
    this.#store.write(
      (db) =>
        db.prepare("DELETE FROM messages WHERE session_id = ? AND seq >= ?").run(sessionId, from),
      undefined,
    );
  }

  /** The messages of a session, in order. */
  load(sessionId: string): Message[] {
    const rows = this.#store.db.prepare(
      "SELECT role, content FROM messages WHERE session_id = ? ORDER BY seq",
    ).all(sessionId) as { role: string; content: string }[];
    return rows.map((r) => ({ role: r.role, content: JSON.parse(r.content) }) as Message);
  }

  /** One session, by id or unique id prefix. */
  find(idOrPrefix: string): SessionInfo | undefined {
    const escaped = idOrPrefix.replace(/[\\%_]/g, (c) => "\\" + c);
    const rows = this.#select("WHERE s.id LIKE ? ESCAPE '\\' ORDER BY s.updated_at DESC LIMIT 2", [
      escaped + "%",
    ]);
    if (rows.length > 1 && rows[0].id !== idOrPrefix) {
      throw new Error(
        `Cannot resume "${idOrPrefix}": the prefix matches several sessions; give more of the id`,
      );
    }
    return rows[0];
  }

  /** The most recently used session of a workspace. */
  latest(workspace: string): SessionInfo | undefined {
    return this.#select("WHERE s.workspace = ? ORDER BY s.updated_at DESC, s.id DESC LIMIT 1", [
      workspace,
    ])[0];
  }

  /** Sessions, newest first; of one workspace when given. */
  list(limit = 20, workspace?: string): SessionInfo[] {
    return workspace
      ? this.#select("WHERE s.workspace = ? ORDER BY s.updated_at DESC, s.id DESC LIMIT ?", [
        workspace,
        limit,
      ])
      : this.#select("ORDER BY s.updated_at DESC, s.id DESC LIMIT ?", [limit]);
  }

  #select(tail: string, params: (string | number)[]): SessionInfo[] {
    const rows = this.#store.db.prepare(
      `SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n
       FROM sessions s ${tail}`,
    ).all(...params) as Record<string, unknown>[];
    return rows.map((r) => ({
      id: String(r.id),
      workspace: String(r.workspace),
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
      provider: r.provider == null ? null : String(r.provider),
      model: r.model == null ? null : String(r.model),
      title: String(r.title ?? ""),
      messages: Number(r.n),
    }));
  }
}

function titleOf(messages: readonly Message[]): string {
  for (const m of messages) {
    if (m.role !== "user") continue;
    const text = typeof m.content === "string"
      ? m.content
      : m.content.flatMap((b) => b.type === "text" ? [b.text] : []).join(" ");
    const line = text.trim().split("\n")[0] ?? "";
    if (line) return line.length > 80 ? line.slice(0, 79) + "…" : line;
  }
  return "";
}

/** What a saved transcript keeps of an image or PDF: its name and size, never its bytes. */
const NOT_KEPT = "not kept in the saved transcript; read the file again to see it";

/**
 * A message's content as the store keeps it: images and PDFs (a read's
 * attachment, an attached file) become a line naming them, so their bytes
 * never reach crab's data dir, and a resumed session says what is gone.
 */
export function storedContent(m: Message): Message["content"] {
  if (typeof m.content === "string") return m.content;
  return m.content.map((b) => {
    if (b.type === "media") return { type: "text", text: `[${b.kind} ${b.label}: ${NOT_KEPT}]` };
    if (b.type !== "tool_result" || !b.attachment) return b;
    const { attachment: a, ...rest } = b;
    return { ...rest, text: `${b.text}\n[${a.kind} ${a.label}: ${NOT_KEPT}]` };
  });
}
