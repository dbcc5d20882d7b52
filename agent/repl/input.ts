/**
 * What the REPL does with typed input before it reaches the model: the prompt
 * history file, `@path` mentions (each file attached through the read tool, so
 * the freshness gate knows it was read), Tab completion of paths after `@`, and
 * telling a slash command from a prompt that starts with a path.
 *
 * @module
 */

import { dirname, join } from "../../tools/fs/path.ts";
import { dataDir, ensureDataDir } from "../../tools/fs/data_dir.ts";
import type { Dispatcher, DispatchResult } from "../../tools/call/dispatch.ts";
import type { MediaBlock } from "../providers/types.ts";

const HISTORY_MAX = 1000;

/** The prompt history, oldest first. */
export function loadHistory(): string[] {
  try {
    const lines = Deno.readTextFileSync(join(dataDir(), "history.jsonl")).split("\n");
    const out: string[] = [];
    for (const l of lines.slice(-HISTORY_MAX - 1)) {
      if (!l) continue;
      try {
        const v = JSON.parse(l);
        if (typeof v === "string") out.push(v);
      } catch {
        // A damaged line is skipped.
      }
    }
    return out;
  } catch {
    return [];
  }
}

/** Appends one entry to the history file. */
export function appendHistory(entry: string): void {
  try {
    ensureDataDir();
    Deno.writeTextFileSync(join(dataDir(), "history.jsonl"), JSON.stringify(entry) + "\n", {
      append: true,
      mode: 0o600,
    });
  } catch {
    // History is a convenience; a read-only data dir must not stop the session.
  }
}

/**
 * True when `text` is a slash command rather than a prompt: `/name` with a
 * name of letters, digits, `-` or `_` (namespaced: `/frontend:test`).
 * `/tmp/x.py has a bug` is a prompt.
 */
export function isCommand(text: string): boolean {
  return /^\/[A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*(\s|$)/.test(text);
}

const MENTION = /(^|\s)@((?:\\ |[^\s])+)/g;

/**
 * A path a terminal pastes when a file is dropped on it: absolute, `~/` or
 * `./`, maybe quoted or with escaped spaces, naming an image or a PDF.
 */
const PASTED = /(^|\s)(['"]?)((?:~|\.)?\/(?:\\ |[^\s'"])+\.(?:png|jpe?g|gif|webp|pdf))\2(?=\s|$)/gi;

/**
 * The paths mentioned with `@path` in a prompt, and the pasted or dropped
 * paths of images and PDFs, in order, without duplicates.
 */
export function mentions(text: string, home = Deno.env.get("HOME") ?? ""): string[] {
  const out: string[] = [];
  const add = (path: string) => {
    if (path && !out.includes(path)) out.push(path);
  };
  for (const m of text.matchAll(MENTION)) {
    add(m[2].replaceAll("\\ ", " ").replace(/[,.;:!?)]+$/, ""));
  }
  for (const m of text.matchAll(PASTED)) {
    const path = m[3].replaceAll("\\ ", " ");
    add(path.startsWith("~/") && home ? home + path.slice(1) : path);
  }
  return out;
}

/** A mentioned file as read for the prompt. */
export interface Attachment {
  path: string;
  result: DispatchResult;
}

/**
 * Reads every `@path` of `text` (and every pasted path of an image or PDF)
 * through the dispatcher, so the policy decides as for any read, and returns
 * the prompt with the files' contents attached after it, the images and PDFs
 * to send with it, and what each read returned.
 */
export async function attachMentions(
  text: string,
  dispatcher: Dispatcher,
  signal: AbortSignal,
): Promise<{ prompt: string; attachments: Attachment[]; media: MediaBlock[] }> {
  const attachments: Attachment[] = [];
  const media: MediaBlock[] = [];
  let prompt = text;
  for (const path of mentions(text)) {
    const result = await dispatcher.dispatch("read", { path }, signal);
    attachments.push({ path, result });
    if (result.ok) {
      prompt += `\n\n[Attached: the read tool's output for ${path}]\n${result.output}`;
      if (result.attachment) media.push({ type: "media", ...result.attachment });
    }
  }
  return { prompt, attachments, media };
}

/**
 * Completions of a path after `@`, relative to `workspace`: directories end in
 * `/`; hidden entries only when the typed name starts with a dot.
 */
export function completePath(workspace: string, partial: string): string[] {
  const dir = partial.endsWith("/")
    ? partial
    : dirname(partial) === "."
    ? ""
    : dirname(partial) + "/";
  const base = partial.slice(dir.length);
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(join(workspace, dir || "."))) {
      if (!e.name.startsWith(base)) continue;
      if (e.name.startsWith(".") && !base.startsWith(".")) continue;
      out.push(dir + e.name + (e.isDirectory ? "/" : ""));
    }
  } catch {
    // Not a directory: nothing to complete.
  }
  return out.sort();
}

/** The longest prefix the candidates share. */
export function commonPrefix(items: string[]): string {
  if (items.length === 0) return "";
  let p = items[0];
  for (const s of items) while (!s.startsWith(p)) p = p.slice(0, -1);
  return p;
}
