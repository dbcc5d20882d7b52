/**
 * The system prompt: the contract-teaching base prompt (`system_prompt.md`) plus
 * the instruction files that apply to the workspace, read the way Codex reads
 * `AGENTS.md` and Claude Code reads `CLAUDE.md`: the user's own files first
 * (`AGENTS.md` in crab's config dir, then `~/.claude/CLAUDE.md`), then each
 * folder from the repository root down to the workspace, so the most specific
 * instructions come last. In each folder every one of `AGENTS.md`, `CLAUDE.md`,
 * `.claude/CLAUDE.md` and `CLAUDE.local.md` that is there is read, in that
 * order; a file reached twice (a `CLAUDE.md` linked to `AGENTS.md`) counts once.
 * The repository root is the nearest folder at or above the workspace holding
 * `.git` (a directory, or a file in worktrees and submodules); a workspace
 * outside any repository contributes only its own folder.
 *
 * `@path` in a file imports another, as Claude Code has it: the path is relative
 * to the importing file (`@~/x` is under the home folder), the imported file
 * follows its importer, imports nest five deep, and a file already read is not
 * read again, so cycles end. A project file comes with the repository, so its
 * imports stay inside the project (the repository root, or the workspace outside
 * one) or under `~/.claude/`, where Claude Code keeps personal instructions: an
 * import elsewhere would hand any file the user can read to the model. The
 * user's own files may import from the project or the home folder. An import
 * not followed stays as text, with a note saying why.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { dirname, isAbsolute, join, relative, resolve } from "../../tools/fs/path.ts";
import { configDir } from "../../tools/fs/data_dir.ts";
import base from "./system_prompt.md" with { type: "text" };
import { Policy } from "../../tools/policy/policy.ts";

/** Instruction file names in one folder, in the order they are read. */
export const INSTRUCTION_FILES = [
  "AGENTS.md",
  "CLAUDE.md",
  join(".claude", "CLAUDE.md"),
  "CLAUDE.local.md",
] as const;

/** Characters of all instruction files together that go into the prompt. */
export const MAX_INSTRUCTIONS = 64 * 1024;

/** Characters of one instruction file that go into the prompt. */
export const MAX_INSTRUCTION_FILE = 32 * 1024;

/** How deep `@path` imports nest (an import of an import is depth 2). */
export const MAX_IMPORT_DEPTH = 5;

/** An instruction file that applies to the workspace. */
export interface InstructionFile {
  /** Absolute path. */
  path: string;
  /**
   * `user`: crab's config dir or `~/.claude/`; `project`: a folder from the
   * repository root to the workspace. An imported file has its importer's scope.
   */
  scope: "user" | "project";
  /** The text that goes into the prompt (empty when the file was left out). */
  text: string;
  /** True when the file was cut, or left out, to keep within the limits. */
  cut: boolean;
  /** The file whose `@path` brought this one in. */
  importedBy?: string;
}

/**
 * The nearest folder at or above `dir` that holds `.git` (directory or file),
 * or undefined outside any repository. Found by looking, not by running git.
 */
export function gitRoot(dir: string): string | undefined {
  for (let d = dir;; d = dirname(d)) {
    try {
      Deno.statSync(join(d, ".git"));
      return d;
    } catch {
      // Not here (or unreadable): look one level up.
    }
    if (dirname(d) === d) return undefined;
  }
}

/** Folders whose instruction files apply to `workspace`, outermost first. */
export function instructionFolders(workspace: string): string[] {
  const root = gitRoot(workspace);
  if (root === undefined) return [workspace];
  const folders: string[] = [];
  for (let d = workspace; d !== root; d = dirname(d)) folders.unshift(d);
  folders.unshift(root);
  return folders;
}

/** A file's text, at most `max` characters of it, or why it cannot be read. */
function readBounded(
  path: string,
  max: number,
): { text: string; cut: boolean } | { why: string } {
  let file: Deno.FsFile | undefined;
  try {
    // Only a regular file: a FIFO or a device named like one would block or never end.
    if (!Deno.statSync(path).isFile) return { why: "not a file" };
    file = Deno.openSync(path);
    // Enough bytes for `max` characters of any UTF-8 text, and one more to see a cut.
    const buf = new Uint8Array(max * 4 + 1);
    let n = 0;
    while (n < buf.length) {
      const got = file.readSync(buf.subarray(n));
      if (got === null) break;
      n += got;
    }
    const bytes = buf.subarray(0, n);
    if (bytes.includes(0)) return { why: "not text" };
    const text = new TextDecoder().decode(bytes);
    return text.length > max || n === buf.length
      ? { text: text.slice(0, max), cut: true }
      : { text, cut: false };
  } catch (e) {
    return { why: e instanceof Deno.errors.NotFound ? "no such file" : "unreadable" };
  } finally {
    file?.close();
  }
}

function realPath(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

/** `@path` words outside code spans and fenced blocks, in order. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, " ");
    for (const m of prose.matchAll(/(?:^|\s)@((?:[^\s\\]|\\ )+)/g)) {
      out.push(m[1].replaceAll("\\ ", " "));
    }
  }
  return out;
}

interface ReadContext {
  home: string;
  /** Real paths imports of each scope may reach. */
  roots: Record<InstructionFile["scope"], string[]>;
  /** Real paths already read. */
  seen: Set<string>;
  maxFile: number;
  out: Omit<InstructionFile, "cut">[];
  cutFiles: Set<string>;
  /** The door's question: why an import may not be read into the prompt. */
  policy: ImportPolicy;
  /** The home directory, a real path. */
  homeReal: string;
  /** Says on stderr why an import was left out. */
  notice?: (message: string) => void;
}

/** What the prompt's reader asks the policy (`Policy.importRefusal`). */
export type ImportPolicy = Pick<Policy, "importRefusal">;

/** Reads `path` (unless absent, empty or read already) and, after it, what it imports. */
function readWithImports(
  ctx: ReadContext,
  path: string,
  scope: InstructionFile["scope"],
  depth: number,
  importedBy?: string,
): void {
  const real = realPath(path);
  if (real === undefined || ctx.seen.has(real)) return;
  const read = readBounded(path, ctx.maxFile);
  if ("why" in read || !read.text.trim()) return;
  ctx.seen.add(real);
  const at = ctx.out.length;
  ctx.out.push({ path, scope, text: read.text, importedBy });
  const notes: string[] = [];
  if (read.cut) {
    ctx.cutFiles.add(path);
    notes.push(`[… cut: an instruction file is limited to ${ctx.maxFile} chars]`);
  }
  for (const word of importsOf(read.text)) {
    const target = word.startsWith("~/")
      ? join(ctx.home, word.slice(2))
      : isAbsolute(word)
      ? word
      : resolve(dirname(path), word);
    const note = (why: string) => notes.push(`[@${word} not imported: ${why}]`);
    if (depth >= MAX_IMPORT_DEPTH) {
      note(`imports nest at most ${MAX_IMPORT_DEPTH} deep`);
      continue;
    }
    const targetReal = realPath(target);
    if (targetReal === undefined) {
      note("no such file");
      continue;
    }
    if (ctx.seen.has(targetReal)) continue; // Read already: above, or a cycle.
    const refused = ctx.policy.importRefusal({
      scope,
      path: targetReal,
      roots: ctx.roots[scope],
      home: ctx.homeReal,
    });
    if (refused !== undefined) {
      note(refused);
      ctx.notice?.(`@${word} in ${path} not imported: ${refused}`);
      continue;
    }
    const before = ctx.out.length;
    readWithImports(ctx, target, scope, depth + 1, path);
    if (ctx.out.length === before) {
      const r = readBounded(target, 1);
      note("why" in r ? r.why : "empty");
    }
  }
  if (notes.length) ctx.out[at].text = `${read.text.trimEnd()}\n\n${notes.join("\n")}`;
}

/**
 * The instruction files used for `workspace` (an absolute, real path), in the
 * order they enter the prompt, each file's imports right after it. Empty files
 * are skipped. A file is cut at {@link MAX_INSTRUCTION_FILE}; once the texts
 * reach {@link MAX_INSTRUCTIONS} the file crossing the limit is cut and later
 * ones are left out (kept in the list with `cut` and no text), as Codex does:
 * the outer files set the frame the inner ones refine.
 */
export function instructionFiles(
  workspace: string,
  opts: {
    userDir?: string;
    home?: string;
    max?: number;
    maxFile?: number;
    /** The session's policy (default: one nobody configured). */
    policy?: ImportPolicy;
    /** Told why an import was left out. */
    notice?: (message: string) => void;
  } = {},
): InstructionFile[] {
  const max = opts.max ?? MAX_INSTRUCTIONS;
  const home = opts.home ?? runEnv.get("HOME") ?? runEnv.get("USERPROFILE") ?? "/";
  const project = gitRoot(workspace) ?? workspace;
  const real = (paths: string[]) => paths.map(realPath).filter((p) => p !== undefined);
  const ctx: ReadContext = {
    home,
    roots: {
      project: real([project, join(home, ".claude")]),
      user: real([project, home]),
    },
    seen: new Set(),
    maxFile: opts.maxFile ?? MAX_INSTRUCTION_FILE,
    out: [],
    cutFiles: new Set(),
    policy: opts.policy ?? new Policy(),
    homeReal: realPath(home) ?? home,
    ...(opts.notice ? { notice: opts.notice } : {}),
  };
  readWithImports(ctx, join(opts.userDir ?? configDir(), "AGENTS.md"), "user", 0);
  readWithImports(ctx, join(home, ".claude", "CLAUDE.md"), "user", 0);
  for (const folder of instructionFolders(workspace)) {
    for (const name of INSTRUCTION_FILES) readWithImports(ctx, join(folder, name), "project", 0);
  }
  let left = max;
  return ctx.out.map((file) => {
    const cut = ctx.cutFiles.has(file.path);
    if (file.text.length <= left) {
      left -= file.text.length;
      return { ...file, cut };
    }
    const kept = file.text.slice(0, left);
    left = 0;
    return {
      ...file,
      text: kept ? `${kept}\n[… cut: instruction files are limited to ${max} chars]` : "",
      cut: true,
    };
  });
}

/** How the prompt and `/init` name an instruction file: relative to the workspace, or whole. */
export function instructionLabel(file: InstructionFile, workspace: string): string {
  const name = file.scope === "user" ? file.path : relative(workspace, file.path);
  if (!file.importedBy) return name;
  const by = { ...file, path: file.importedBy, importedBy: undefined };
  return `${name}, imported by ${instructionLabel(by, workspace)}`;
}

/** What shapes the system prompt besides the workspace. */
export interface PromptOptions {
  now?: Date;
  /** The instruction files (default: those that apply to the workspace). */
  files?: InstructionFile[];
  /** Text that takes the place of crab's own prompt (`--system-prompt`). */
  replace?: string;
  /** Text added at the very end (`--append-system-prompt`). */
  append?: string;
  /** The section on the skills the model may load (`agent/skills/listing.ts`), after the instruction files. */
  skills?: string;
  /** The session's policy, which the instruction files' imports ask. */
  policy?: ImportPolicy;
  /** Told why an import was left out (stderr). */
  notice?: (message: string) => void;
}

/**
 * Builds the system prompt for `workspace`: crab's own prompt (or the text that
 * replaces it), the instruction files, then the appended text. A replaced prompt
 * loses crab's advice on working, not the tools' contracts: each tool's
 * description, which the model reads in the tool list, states them too.
 */
export function systemPrompt(workspace: string, opts: PromptOptions = {}): string {
  const now = opts.now ?? new Date();
  const files = opts.files ??
    instructionFiles(workspace, {
      ...(opts.policy ? { policy: opts.policy } : {}),
      ...(opts.notice ? { notice: opts.notice } : {}),
    });
  let prompt = opts.replace ?? base.replaceAll("{{workspace}}", workspace).replaceAll(
    "{{date}}",
    now.toISOString().slice(0, 10),
  );
  for (const file of files) {
    const label = instructionLabel(file, workspace);
    const head = file.scope === "user"
      ? `# The user's instructions (${label})`
      : `# Project instructions (${label})`;
    const body = file.text.trim() ||
      `[left out: instruction files are limited to ${MAX_INSTRUCTIONS} chars]`;
    prompt += `\n\n${head}\n\n${body}\n`;
  }
  if (opts.skills) prompt += `\n\n${opts.skills}`;
  if (opts.append !== undefined) prompt += `\n\n${opts.append}`;
  return prompt;
}
