/**
 * Skills: folders of instructions a model loads when a task calls for them,
 * in the `SKILL.md` format Claude Code, Codex and others share. A skill is a
 * folder `NAME/` holding `SKILL.md` (and whatever files it refers to:
 * templates, references, scripts), found in these folders, the first of a
 * name winning:
 *
 * | scope | crab's | Claude Code's | the shared one |
 * |---|---|---|---|
 * | user | `~/.config/crab/skills/` | `~/.claude/skills/` | |
 * | project | `.crab/skills/` | `.claude/skills/` | `.agents/skills/` |
 *
 * The user's come first, as in Claude Code, so a repository cannot take the
 * name of a skill the user relies on. A workspace's own skills come with the
 * repository: they load only once the workspace is trusted (until then they
 * wait, and `/skills` says so), and trust covers each of their files by
 * content (`../settings/trust_digest.ts`).
 *
 * `SKILL.md` opens with YAML front matter; its body is the instructions:
 *
 * | field | what it does |
 * |---|---|
 * | `name` | shown as written; the skill's name is its folder's (what `/NAME` and the `skill` tool take) |
 * | `description` | what the skill does and when to use it: the line the model reads to choose it |
 * | `allowed-tools` | permission rules (`Bash(./scripts/x.sh:*), Read`) that allow calls for the turn that loaded the skill |
 * | `disable-model-invocation` | `true`: only the user runs it (`/NAME`); the model is not told of it |
 * | `user-invocable` | `false`: no `/NAME`; the model may still load it |
 * | `argument-hint` | the arguments `/skills` shows after the name |
 * | `model` | the model `/NAME`'s prompt asks |
 *
 * @module
 */

import { join, relative } from "../../tools/fs/path.ts";
import { runEnv } from "../../tools/fs/run_env.ts";
import { configDir } from "../../tools/fs/data_dir.ts";
import { PROJECT_AGENT_FOLDERS } from "../../tools/fs/protected.ts";
import { sha256 } from "../../tools/fs/sha256.ts";
import { claudeDir } from "../settings/files.ts";
import { commandFront, splitFront } from "../settings/commands.ts";

/** One skill, as found. */
export interface Skill {
  /** Its folder's name: what `/NAME` and the `skill` tool take. */
  name: string;
  /** What it does and when to use it (front matter, else the body's first paragraph). */
  description: string;
  /** The folder, a real path. */
  dir: string;
  /** Its `SKILL.md`. */
  file: string;
  scope: "user" | "project";
  /** The folder it was found in, as shown: `~/.claude/skills`, `.agents/skills`. */
  from: string;
  /** `allowed-tools`, as written: one entry per YAML item (or the one line). */
  allowedTools: string[];
  argumentHint?: string;
  /** `model`, as written. */
  model?: string;
  /** False under `disable-model-invocation: true`. */
  modelInvocable: boolean;
  /** False under `user-invocable: false`. */
  userInvocable: boolean;
  /** The hash of `SKILL.md` when it was found: a project's skill loads only as trusted. */
  digest: string;
}

/** What a workspace has in skills. */
export interface SkillCatalog {
  /** The skills in use, by name. */
  skills: Skill[];
  /** The workspace's own, waiting for it to be trusted. */
  waiting: Skill[];
  /** What was left out, and why, one line each. */
  notes: string[];
}

/** A skill's name: a folder name `/NAME` can be typed as. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Skills one folder may give, and the size of a `SKILL.md` crab reads. */
const MAX_SKILLS = 500;
export const MAX_SKILL_FILE = 256 * 1024;
/** Characters of a description the listing keeps (Claude Code's limit). */
export const MAX_DESCRIPTION = 1024;

/** Where skills are looked for, the first of a name winning: the user's, then the project's. */
export function skillFolders(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): { path: string; scope: Skill["scope"]; shown: string }[] {
  const home = env.get("HOME") ?? "";
  const tilde = (p: string) => home && p.startsWith(home + "/") ? `~${p.slice(home.length)}` : p;
  const user = [join(configDir(env), "skills"), join(claudeDir(env), "skills")];
  return [
    ...user.map((path) => ({ path, scope: "user" as const, shown: tilde(path) })),
    ...PROJECT_AGENT_FOLDERS.filter((f) => f.holds === "skills").map((f) => ({
      path: join(workspace, f.path),
      scope: "project" as const,
      shown: f.path,
    })),
  ];
}

/**
 * The skills of `workspace`: the user's, and the workspace's own when it is
 * `trusted` (else they wait). `bare`: none at all.
 *
 * @example
 * ```ts
 * const { skills, waiting } = findSkills("/src/app", { trusted: false });
 * // skills: the user's; waiting: .claude/skills/deploy and the like
 * ```
 */
export function findSkills(
  workspace: string,
  opts: { trusted: boolean; bare?: boolean; env?: Pick<Deno.Env, "get"> },
): SkillCatalog {
  const out: SkillCatalog = { skills: [], waiting: [], notes: [] };
  if (opts.bare) return out;
  const taken = new Set<string>();
  for (const folder of skillFolders(workspace, opts.env)) {
    for (const skill of skillsIn(folder, out.notes)) {
      if (taken.has(skill.name)) continue;
      taken.add(skill.name);
      if (skill.scope === "project" && !opts.trusted) out.waiting.push(skill);
      else out.skills.push(skill);
    }
  }
  const byName = (a: Skill, b: Skill) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  out.skills.sort(byName);
  out.waiting.sort(byName);
  return out;
}

/** The skills of one folder, each `NAME/SKILL.md` below it; what cannot be used, noted. */
function skillsIn(
  folder: { path: string; scope: Skill["scope"]; shown: string },
  notes: string[],
): Skill[] {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(folder.path)];
  } catch {
    return []; // No such folder.
  }
  const out: Skill[] = [];
  for (const e of entries.sort((a, b) => a.name < b.name ? -1 : 1).slice(0, MAX_SKILLS)) {
    const file = join(folder.path, e.name, "SKILL.md");
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(file);
    } catch {
      continue; // A folder without SKILL.md, or a file: not a skill.
    }
    const shown = `${folder.shown}/${e.name}`;
    if (!NAME.test(e.name)) {
      notes.push(
        `ignoring the skill ${JSON.stringify(shown)}: a skill's folder name is letters, digits, ` +
          `"_" and "-" (at most 64)`,
      );
      continue;
    }
    // Never opened unless regular: a FIFO would hold the start for good.
    if (!info.isFile || info.size > MAX_SKILL_FILE) {
      notes.push(
        `ignoring the skill ${shown}: its SKILL.md is ${
          info.isFile ? `larger than ${MAX_SKILL_FILE / 1024} KiB` : "not a regular file"
        }`,
      );
      continue;
    }
    let text: string;
    let dir: string;
    try {
      text = Deno.readTextFileSync(file);
      dir = Deno.realPathSync(join(folder.path, e.name));
    } catch {
      notes.push(`ignoring the skill ${shown}: its SKILL.md cannot be read`);
      continue;
    }
    out.push(skillOf(e.name, text, { dir, file, scope: folder.scope, from: folder.shown }));
  }
  return out;
}

/** A skill from its `SKILL.md` text. */
export function skillOf(
  name: string,
  text: string,
  where: Pick<Skill, "dir" | "file" | "scope" | "from">,
): Skill {
  const fields = frontFields(text);
  const { allowedTools, argumentHint, model } = commandFront(text);
  const description = oneLine(fields.get("description") ?? firstParagraph(text));
  return {
    name,
    description: description.length > MAX_DESCRIPTION
      ? description.slice(0, MAX_DESCRIPTION - 1) + "…"
      : description,
    ...where,
    allowedTools: allowedTools ?? [],
    ...(argumentHint ? { argumentHint } : {}),
    ...(model ? { model } : {}),
    modelInvocable: fields.get("disable-model-invocation")?.toLowerCase() !== "true",
    userInvocable: fields.get("user-invocable")?.toLowerCase() !== "false",
    digest: sha256(text),
  };
}

/**
 * The scalar fields of front matter, as skills write them: `key: value`
 * (quoted or not, a plain value going on over more-indented lines), and the
 * block scalars `|` and `>` (with `-` or `+`), whose lines are kept (`|`) or
 * folded into one (`>`).
 */
export function frontFields(source: string): Map<string, string> {
  const lines = splitFront(source).front.split(/\r?\n/);
  const out = new Map<string, string>();
  const indented = (i: number) => i < lines.length && /^(\s+\S|\s*$)/.test(lines[i]);
  for (let i = 0; i < lines.length; i++) {
    const m = /^([A-Za-z][A-Za-z0-9_-]*):[ \t]*(.*)$/.exec(lines[i]);
    if (!m) continue;
    const [, key, rest] = m;
    const value = rest.trim();
    const more: string[] = [];
    while (indented(i + 1) && !/^\s*-\s/.test(lines[i + 1])) more.push(lines[++i].trim());
    while (more.length && more[more.length - 1] === "") more.pop();
    if (/^[|>][+-]?$/.test(value)) {
      out.set(key, value.startsWith("|") ? more.join("\n") : more.join(" ").replace(/ {2,}/g, " "));
    } else if (/^(["']).*\1$/.test(value)) out.set(key, value.slice(1, -1));
    else out.set(key, [value, ...more].filter(Boolean).join(" "));
  }
  return out;
}

/** The body's first paragraph that is not a heading: a description where none is given. */
function firstParagraph(source: string): string {
  const lines = splitFront(source).body.split(/\r?\n/).map((l) => l.trim())
    .filter((l) => !l.startsWith("#"));
  const start = lines.findIndex((l) => l !== "");
  if (start < 0) return "";
  const end = lines.indexOf("", start);
  return lines.slice(start, end < 0 ? undefined : end).join(" ").slice(0, 250);
}

/** Text on one line: whitespace and control characters become single spaces. */
function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

/** `skill` as `/skills` and the trust prompt name it: its name and where it is. */
export function skillPlace(skill: Skill, workspace: string): string {
  return skill.scope === "project"
    ? relative(workspace, skill.file).replace(/\/SKILL\.md$/, "")
    : `${skill.from}/${skill.name}`;
}
