/**
 * A session's skills and what loading one grants. Loading a skill — the
 * model's `skill` call, or the user's `/NAME` — reads its `SKILL.md` body into
 * the conversation with the folder it lives in, and asks the session's
 * policy to open that folder to read, glob and grep for the rest of the
 * session (`Policy.openFolder`: an allow rule of the skill's source, so deny
 * and ask rules still win). The model's load also puts the skill's
 * `allowed-tools` in force as allow rules of the skill's source until the
 * turn ends ({@link SkillSession.endTurn}); the user's `/NAME` holds them for
 * its prompt, as a custom command's (`../run/command_turn.ts`). A skill's
 * scripts run through bash like any command: the rules, the sandbox and the
 * protected paths decide them.
 *
 * A workspace's own skill loads only as trusted: its `SKILL.md` must be what
 * it was when crab started (trust covered that content).
 *
 * @module
 */

import type { Rule, RuleSource } from "../../tools/policy/mod.ts";
import { ToolError } from "../../tools/tool.ts";
import { allowedToolRules } from "../settings/allowed_tools.ts";
import { expandCommand } from "../settings/commands.ts";
import { sha256 } from "../../tools/fs/sha256.ts";
import { MAX_SKILL_FILE, type Skill, type SkillCatalog } from "./catalog.ts";

/** What loading a skill asks of the session's policy. */
export interface SkillPolicy {
  /** The live rules: the turn's allow rules are pushed here, and taken out at its end. */
  readonly rules: Rule[];
  /** Opens a folder to reading (`Policy.openFolder`); returns why not. */
  openFolder(dir: string, source: RuleSource, workspace: string): string | undefined;
}

/** A skill as loaded: the text the model reads, and what its file grants. */
export interface LoadedSkill {
  /** Its instructions, headed by its folder. */
  text: string;
  /** Its `allowed-tools` as rules of its own source (not yet in force). */
  rules: Rule[];
  /** What was left out, and why, one line each. */
  notes: string[];
}

/** The skills of one session (see the module doc). */
export class SkillSession {
  readonly #catalog: SkillCatalog;
  readonly #policy: () => SkillPolicy;
  readonly #workspace: string;
  /** The rules the model's loads put in force this turn. */
  #turn: Rule[] = [];

  constructor(catalog: SkillCatalog, opts: { policy: () => SkillPolicy; workspace: string }) {
    this.#catalog = catalog;
    this.#policy = opts.policy;
    this.#workspace = opts.workspace;
  }

  /** The skills in use, by name. */
  get skills(): readonly Skill[] {
    return this.#catalog.skills;
  }

  /** The workspace's own skills that wait for it to be trusted. */
  get waiting(): readonly Skill[] {
    return this.#catalog.waiting;
  }

  /** What was left out when the skills were found, one line each. */
  get notes(): readonly string[] {
    return this.#catalog.notes;
  }

  /** The skill the model may load by `name`. */
  forModel(name: string): Skill | undefined {
    return this.skills.find((s) => s.name === name && s.modelInvocable);
  }

  /** The skill `/name` runs. */
  forUser(name: string): Skill | undefined {
    return this.skills.find((s) => s.name === name && s.userInvocable);
  }

  /**
   * Reads `skill` for the conversation with `args` in place of `$ARGUMENTS`
   * (and `shell`, when given, in place of its `!` lines: their output), and
   * opens its folder to reading. Throws a `ToolError` when its file cannot be
   * used.
   */
  read(skill: Skill, args: string, shell?: readonly string[]): LoadedSkill {
    const text = this.#source(skill);
    const notes: string[] = [];
    const source = { scope: "skill" as const, file: skill.file };
    const closed = this.#policy().openFolder(skill.dir, source, this.#workspace);
    const rules = allowedToolRules(
      skill.allowedTools,
      source,
      `skill ${skill.name}`,
      this.#workspace,
      notes,
    );
    const head = [
      `Base directory for this skill: ${skill.dir}`,
      closed
        ? `(its folder stays closed to read, glob and grep: ${closed})`
        : "(read, glob and grep reach its files for the rest of this session; run its scripts " +
          "with bash)",
    ];
    if (rules.length) {
      head.push(`Allowed without asking for this turn: ${rules.map((r) => r.text).join(", ")}`);
    }
    return {
      text: `${head.join("\n")}\n\n${expandCommand(text, args, shell).trim()}\n`,
      rules,
      notes,
    };
  }

  /** The model's load: {@link read}, its rules in force until {@link endTurn}. */
  load(skill: Skill, args: string): LoadedSkill {
    const loaded = this.read(skill, args);
    const live = this.#policy().rules;
    for (const r of loaded.rules) {
      live.push(r);
      this.#turn.push(r);
    }
    return loaded;
  }

  /** Takes the rules the model's loads put in force out again: the turn is over. */
  endTurn(): void {
    if (this.#turn.length === 0) return;
    const live = this.#policy().rules;
    for (const r of this.#turn) {
      const at = live.indexOf(r);
      if (at >= 0) live.splice(at, 1);
    }
    this.#turn = [];
  }

  /** The text of `skill`'s file, which for a workspace's skill must be as trusted. */
  #source(skill: Skill): string {
    let text: string;
    try {
      const info = Deno.statSync(skill.file);
      if (!info.isFile || info.size > MAX_SKILL_FILE) throw new Error("not a regular file");
      text = Deno.readTextFileSync(skill.file);
    } catch (e) {
      throw new ToolError(
        "unknown_skill",
        `Cannot load skill "${skill.name}": its SKILL.md cannot be read (${
          e instanceof Error ? e.message : e
        })`,
        "Tell the user the skill's file is gone or unreadable; do the task without it.",
      );
    }
    if (skill.scope === "project" && sha256(text) !== skill.digest) {
      throw new ToolError(
        "refused",
        `Cannot load skill "${skill.name}": its SKILL.md changed since crab started, and the ` +
          "workspace's trust covers what it held then",
        "Do not retry. Tell the user: restarting crab asks them to trust the workspace again.",
        "refused",
      );
    }
    return text;
  }
}
