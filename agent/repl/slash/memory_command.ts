/**
 * Memory, as Claude Code users know it: a line begun with `#` is a note,
 * appended to the instruction file the user picks — the project's
 * (`CLAUDE.md`, or `AGENTS.md` where that is the one in use), the local
 * `CLAUDE.local.md` (kept out of git), or the user's `~/.claude/CLAUDE.md` —
 * and `/memory` lists the instruction files in force and opens one in
 * `$EDITOR`.
 *
 * A note is a write the user asked for: it asks nothing more, but the
 * session's policy decides it as a write of that file first, so a deny rule
 * (`Edit(CLAUDE.md)`) and crab's closed paths refuse it.
 *
 * @module
 */

import { dirname, join, relative } from "../../../tools/fs/path.ts";
import { existsSync } from "node:fs";
import { printable } from "../../../tools/fs/printable.ts";
import type { Runtime } from "../../run/runtime.ts";
import { instructionFiles, instructionLabel } from "../../run/system_prompt.ts";
import { excludeFromGit } from "../../settings/permissions.ts";
import { type KeyReader, setMode } from "../keys.ts";
import { readText } from "../approval_prompt.ts";
import type { Screen } from "../screen.ts";

/** Where a note may go: the key that picks it, its name and its file. */
export interface MemoryTarget {
  key: "p" | "l" | "u";
  scope: "project" | "local" | "user";
  path: string;
}

/**
 * The three files a note may go to in `workspace`: the project's `CLAUDE.md`
 * (`AGENTS.md` when only that one is there), `CLAUDE.local.md`, and the user's
 * `~/.claude/CLAUDE.md`.
 *
 * @example
 * ```ts
 * memoryTargets("/src/app", "/home/me")[2].path; // "/home/me/.claude/CLAUDE.md"
 * ```
 */
export function memoryTargets(workspace: string, home: string): MemoryTarget[] {
  const claude = join(workspace, "CLAUDE.md");
  const agents = join(workspace, "AGENTS.md");
  const project = !existsSync(claude) && existsSync(agents) ? agents : claude;
  return [
    { key: "p", scope: "project", path: project },
    { key: "l", scope: "local", path: join(workspace, "CLAUDE.local.md") },
    { key: "u", scope: "user", path: join(home, ".claude", "CLAUDE.md") },
  ];
}

/** Appends `note` as a list item, on a line of its own, making the file and its folder if needed. */
export function appendNote(path: string, note: string): void {
  let before = "";
  try {
    before = Deno.readTextFileSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    Deno.mkdirSync(dirname(path), { recursive: true });
  }
  const sep = before === "" || before.endsWith("\n") ? "" : "\n";
  Deno.writeTextFileSync(path, `${sep}- ${note}\n`, { append: true });
}

/** What the memory commands act through. */
export interface MemoryContext {
  rt: Runtime;
  screen: Screen;
  keys: KeyReader;
}

const home = () => Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? "/";

/** Shows a path: relative inside the workspace, else whole. */
function shown(path: string, workspace: string): string {
  const rel = relative(workspace, path);
  return printable(rel.startsWith("..") ? path : rel, "strict");
}

/** Reads one of `choices` (Esc, Ctrl-C and Enter cancel). */
async function choose(keys: KeyReader, choices: string[]): Promise<string | undefined> {
  setMode("raw");
  try {
    while (true) {
      const key = await keys.next();
      if (key === null || ["ctrl-c", "escape", "enter"].includes(key.name)) return undefined;
      if (key.name !== "text") continue;
      const ch = [...key.text.toLowerCase()].find((ch) => choices.includes(ch));
      if (ch) return ch;
    }
  } finally {
    setMode("cooked");
  }
}

/** `# note`: asks which file, then appends the note to it. */
export async function saveNote(ctx: MemoryContext, line: string): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c;
  const note = line.replace(/^#+\s*/, "").trim();
  if (!note) return;
  const workspace = rt.dispatcher.session.workspace;
  const targets = memoryTargets(workspace, home());
  screen.raw(
    "save to? " +
      targets.map((t) => `[${t.key}]${t.scope.slice(1)} ${shown(t.path, workspace)}`).join(" / ") +
      " (Esc cancels): ",
  );
  const key = await choose(ctx.keys, targets.map((t) => t.key));
  const target = targets.find((t) => t.key === key);
  screen.raw((target ? target.scope : "cancelled") + "\n");
  if (!target) return;
  const refusal = await noteRefusal(rt, target.path, note);
  if (refusal) return screen.line(c.red(`Cannot save the note: ${printable(refusal, "prose")}`));
  try {
    appendNote(target.path, note);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return screen.line(c.red(`Cannot save the note: ${printable(why, "prose")}`));
  }
  if (target.scope === "local") excludeFromGit(workspace, target.path);
  screen.line(c.dim(`Noted in ${shown(target.path, workspace)}; it is read at the next start.`));
}

/**
 * Why the session's policy refuses the note's write of `path`, or undefined:
 * a denial holds, but the mode's (a note is the user's own, not the model's).
 */
export async function noteRefusal(
  rt: Runtime,
  path: string,
  note: string,
): Promise<string | undefined> {
  const tool = rt.dispatcher.registry.get("write");
  if (!tool) return undefined;
  const d = await rt.policy.decide({
    tool,
    input: { path, content: note },
    session: rt.dispatcher.session,
  });
  if (typeof d === "object" && "effect" in d && d.effect === "deny" && !d.byMode) return d.why;
  if (typeof d === "object" && "deny" in d) return d.deny;
  return undefined;
}

/** `/memory`: the instruction files in force and where notes go; opens the one picked in `$EDITOR`. */
export async function memoryCommand(ctx: MemoryContext): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c;
  const workspace = rt.dispatcher.session.workspace;
  const inForce = instructionFiles(workspace);
  const paths: string[] = [];
  screen.line(inForce.length ? "Instruction files in force:" : "No instruction file in force yet.");
  for (const f of inForce) {
    paths.push(f.path);
    screen.line(`  ${paths.length}. ${printable(instructionLabel(f, workspace), "strict")}`);
  }
  const more = memoryTargets(workspace, home()).filter((t) => !paths.includes(t.path));
  if (more.length) screen.line("Where # notes go, not there yet:");
  for (const t of more) {
    paths.push(t.path);
    screen.line(`  ${paths.length}. ${shown(t.path, workspace)} (${t.scope})`);
  }
  const editor = Deno.env.get("VISUAL") || Deno.env.get("EDITOR");
  if (!editor) {
    screen.line(c.dim("Set $EDITOR (or $VISUAL) to open one from here."));
    return;
  }
  const answer = await readText(screen, ctx.keys, "open which? (number; Enter cancels): ");
  const n = Number(answer?.trim());
  if (!answer?.trim() || !Number.isInteger(n) || n < 1 || n > paths.length) {
    screen.line(c.dim("(nothing opened)"));
    return;
  }
  const path = paths[n - 1];
  Deno.mkdirSync(dirname(path), { recursive: true });
  // The editor is the user's own program, given the file as its last word.
  const status = await new Deno.Command("sh", {
    args: ["-c", `${editor} "$1"`, "sh", path],
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).output().catch((e) => ({ success: false, code: -1, error: e }));
  screen.line(
    status.success
      ? c.dim(`Closed ${shown(path, workspace)}; changes are read at the next start.`)
      : c.red(`The editor ${printable(editor, "strict")} failed (exit ${status.code}).`),
  );
}
