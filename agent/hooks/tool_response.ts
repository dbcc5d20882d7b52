/**
 * The `tool_response` a PostToolUse hook reads: for Read, Write, Edit and Bash
 * the fields Claude Code gives (a file's lines, the content before and the
 * patch, a command's stdout), so a hook written for it reads crab's calls
 * unchanged; crab's own facts beside them as `crab_*`. Other tools give crab's
 * `output`.
 *
 * Write and edit need the file as it was: it is read just before the tool
 * runs (inside the workspace lock), and only when a PostToolUse hook will read
 * it. A file larger than {@link ORIGINAL_MAX_BYTES}, or not text, is given as
 * `originalFile: null` with an empty patch, and `crab_note` says why.
 *
 * @module
 */

import { resolve } from "../../tools/fs/path.ts";
import type { CheckedCall, RunOutcome } from "../../tools/call/stages.ts";

/** The largest file whose content before a write or edit is read for the hooks. */
export const ORIGINAL_MAX_BYTES = 16 * 1024 * 1024;

/** A file before the call: absent, its text, or why it is not given. */
type Before = { kind: "absent" } | { kind: "text"; text: string } | {
  kind: "skipped";
  why: string;
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The text of a regular file, or why it is not read; absent when there is none. */
async function fileText(path: string): Promise<Before> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { kind: "absent" };
    return { kind: "skipped", why: `cannot read it: ${e instanceof Error ? e.message : e}` };
  }
  if (!info.isFile) return { kind: "skipped", why: "it is not a regular file" };
  if (info.size > ORIGINAL_MAX_BYTES) {
    return { kind: "skipped", why: `it is larger than ${ORIGINAL_MAX_BYTES} bytes` };
  }
  try {
    const text = utf8.decode(await Deno.readFile(path));
    return text.includes("\0") ? { kind: "skipped", why: "it is binary" } : { kind: "text", text };
  } catch (e) {
    return {
      kind: "skipped",
      why: `cannot read it as text: ${e instanceof Error ? e.message : e}`,
    };
  }
}

/** The absolute path a call's `path` argument names, if it has one. */
function pathOf(call: CheckedCall): string | undefined {
  const p = call.input.path;
  return typeof p === "string" ? resolve(call.session.workspace, p) : undefined;
}

/** What PostToolUse hooks read of each call: files kept from before write and edit. */
export class ToolResponses {
  readonly #before = new WeakMap<CheckedCall, Before>();

  /** Just before the tool runs: keeps the file a write or edit will change. Never throws. */
  async remember(call: CheckedCall): Promise<void> {
    if (call.tool.name !== "write" && call.tool.name !== "edit") return;
    const path = pathOf(call);
    if (path) this.#before.set(call, await fileText(path));
  }

  /** The `tool_response` of a call that succeeded. */
  async of(call: CheckedCall, ran: RunOutcome & { ok: true }): Promise<Record<string, unknown>> {
    const r = ran.result;
    const path = pathOf(call);
    switch (call.tool.name) {
      case "bash": {
        // A background job's start, as Claude Code gives it: the job's id to read it by.
        const job = call.input.run_in_background === true
          ? /^Started background job (b\d+):/.exec(r.output)?.[1]
          : undefined;
        return {
          stdout: r.output.replace(/\n+$/, ""),
          stderr: "",
          interrupted: r.outcome === "timeout",
          isImage: false,
          noOutputExpected: false,
          ...(job ? { backgroundTaskId: job } : {}),
          crab_exit_code: r.exitCode ?? null,
        };
      }
      case "read":
        // An image or PDF: Claude Code's shape, with its sizes; its bytes go to the model only.
        if (path && r.media) {
          const { type, size, width, height, pages } = r.media;
          return {
            type: type === "pdf" ? "pdf" : "image",
            file: {
              filePath: path,
              type,
              originalSize: size,
              ...(width ? { dimensions: { originalWidth: width, originalHeight: height } } : {}),
              ...(pages ? { numPages: pages } : {}),
            },
          };
        }
        return path ? readResponse(call, path, r.output) : { output: r.output };
      case "write":
      case "edit": {
        if (!path) break;
        const before = this.#before.get(call) ?? { kind: "skipped", why: "it was not read" };
        return call.tool.name === "write"
          ? await writeResponse(path, String(call.input.content ?? ""), before)
          : await editResponse(call, path, before);
      }
    }
    return { ...(path ? { filePath: path, success: true } : {}), output: r.output };
  }
}

/**
 * The content before, the patch to `after`, and a note when the content is not
 * given. The differ loads with the first patch: a run without hooks never needs it.
 */
async function change(before: Before, after: string | undefined) {
  const original = before.kind === "text" ? before.text : null;
  return {
    originalFile: original,
    structuredPatch: original !== null && after !== undefined
      ? (await import("../../tools/call/diff.ts")).structuredPatch(original, after)
      : [],
    ...(before.kind === "skipped" ? { crab_note: `originalFile is not given: ${before.why}` } : {}),
  };
}

async function writeResponse(path: string, content: string, before: Before) {
  const { originalFile, structuredPatch, ...note } = await change(before, content);
  return {
    type: before.kind === "absent" ? "create" : "update",
    filePath: path,
    content,
    structuredPatch: before.kind === "absent" ? [] : structuredPatch,
    originalFile,
    userModified: false,
    ...note,
  };
}

async function editResponse(call: CheckedCall, path: string, before: Before) {
  const now = await fileText(path);
  const edits = Array.isArray(call.input.edits)
    ? call.input.edits as { old?: string; new?: string; replace_all?: boolean }[]
    : [];
  const { originalFile, structuredPatch, ...note } = await change(
    before,
    now.kind === "text" ? now.text : undefined,
  );
  // Claude Code's Edit makes one edit; crab's may make several.
  const what = edits.length === 1
    ? { oldString: edits[0].old ?? "", newString: edits[0].new ?? "" }
    : {
      edits: edits.map((e) => ({
        old_string: e.old ?? "",
        new_string: e.new ?? "",
        replace_all: e.replace_all ?? false,
      })),
    };
  return {
    filePath: path,
    ...what,
    originalFile,
    structuredPatch,
    userModified: false,
    ...(edits.length === 1 ? { replaceAll: edits[0].replace_all ?? false } : {}),
    ...note,
  };
}

/**
 * Claude Code's Read response: the lines read (as crab's numbered output
 * shows them), where they start, and the file's line count as Claude Code
 * counts it (a final newline starts one more, empty, line).
 */
async function readResponse(call: CheckedCall, path: string, output: string) {
  const rows: string[] = [];
  let startLine = typeof call.input.offset === "number" ? call.input.offset : 1;
  for (const line of output.split("\n")) {
    const m = /^ *(\d+)\t(.*)$/.exec(line);
    if (!m) continue;
    if (rows.length === 0) startLine = Number(m[1]);
    rows.push(m[2]);
  }
  const total = /file has (\d+) lines/.exec(output);
  let totalLines = total ? Number(total[1]) : startLine + rows.length - 1;
  const endsWithNewline = await lastByteIsNewline(path);
  if (endsWithNewline) totalLines++;
  // The last line read is the file's last: its newline starts the empty line after it.
  // The read tool's own default; its module is loaded, as a read call just ran.
  const { DEFAULT_LIMIT } = await import("../../tools/read.ts");
  const limit = typeof call.input.limit === "number" ? call.input.limit : DEFAULT_LIMIT;
  if (rows.length && rows.length < limit && startLine + rows.length === totalLines) rows.push("");
  return {
    type: "text",
    file: {
      filePath: path,
      content: rows.join("\n"),
      numLines: rows.length,
      startLine,
      totalLines,
    },
  };
}

/** Whether a file ends with a newline (false when it cannot be read). */
async function lastByteIsNewline(path: string): Promise<boolean> {
  try {
    using file = await Deno.open(path);
    const size = (await file.stat()).size;
    if (size === 0) return false;
    await file.seek(size - 1, Deno.SeekMode.Start);
    const byte = new Uint8Array(1);
    return (await file.read(byte)) === 1 && byte[0] === 10;
  } catch {
    return false;
  }
}
