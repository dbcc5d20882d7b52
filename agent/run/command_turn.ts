/**
 * A custom command's turn: what its file grants while its prompt runs, for
 * both front ends. Its `allowed-tools` become rules of the command's own
 * source (`Bash(python3:*) (/repo/.claude/commands/py.md)`), added to the
 * session's policy when the prompt starts and taken out when it ends, so they
 * allow those calls for that prompt only; its `model` is the model that prompt
 * asks, resolved as `--model` resolves it; its `!` lines run before the prompt
 * is sent, through the dispatcher like any call (rules, hooks, sandbox), with
 * the command's rules in force, and their output takes their place. A skill's
 * `/NAME` is such a turn too ({@link skillTurn}), its rules of scope `skill`.
 *
 * A workspace's own command grants nothing until the workspace is trusted:
 * its text still expands (a prompt the user chose to send), its `!` lines stay
 * as written and its `allowed-tools` are left out, said in a note. A rule that
 * cannot be parsed is left out with a note: an allow rule missing only makes
 * crab stricter.
 *
 * ```ts
 * const turn = commandTurn(rt, command, "calc.py");
 * for (const note of turn.notes) say(note);
 * const prompt = await turn.begin(signal);
 * try {
 *   await rt.agent.send(prompt, signal);
 * } finally {
 *   turn.end();
 * }
 * ```
 *
 * @module
 */

import { relative } from "../../tools/fs/path.ts";
import { resultText } from "../../tools/call/dispatch.ts";
import type { Rule } from "../../tools/policy/mod.ts";
import { commandFront, type CustomCommand, shellCommands } from "../settings/commands.ts";
import { allowedToolRules } from "../settings/allowed_tools.ts";
import type { Skill } from "../skills/catalog.ts";
import { knownContextWindow, resolveModel } from "../providers/models.ts";
import { expandCommand } from "./slash_commands.ts";
import type { Runtime } from "./runtime.ts";

/** What a command's turn acts on. */
export type CommandRuntime =
  & Pick<
    Runtime,
    "agent" | "policy" | "dispatcher" | "provider" | "skills"
  >
  & {
    /** Whether the workspace's own files apply (`Runtime.trusted`). */
    readonly trusted: boolean;
  };

/** One run of a custom command (see the module doc). */
export interface CommandTurn {
  /** What was left out, and why, one line each (for stderr or the screen). */
  readonly notes: readonly string[];
  /** The model the prompt asks, when the file names one (resolved). */
  readonly model?: string;
  /** The rules the prompt runs with. */
  readonly rules: readonly Rule[];
  /** Puts the rules and the model in force, runs the `!` lines, and gives the prompt. */
  begin(signal: AbortSignal): Promise<string>;
  /** Takes the rules and the model out again (safe to call twice, or without begin). */
  end(): void;
}

/** Prepares `command` run with `args` in `rt`: reads its file, parses what it grants. */
export function commandTurn(rt: CommandRuntime, command: CustomCommand, args: string): CommandTurn {
  const source = Deno.readTextFileSync(command.path);
  const front = commandFront(source);
  const workspace = rt.dispatcher.session.workspace;
  const shown = command.scope === "project" ? relative(workspace, command.path) : command.path;
  const notes: string[] = [];
  const grants = command.scope === "user" || rt.trusted;
  const runs = shellCommands(source);
  if (!grants && (front.allowedTools || runs.length)) {
    const what = [front.allowedTools && "allowed-tools", runs.length && "! lines"]
      .filter(Boolean).join(" and ");
    notes.push(
      `ignoring the ${what} of /${command.name} (${shown}): this workspace is not trusted ` +
        "(its text is sent; pass --trust-project to use them)",
    );
  }
  const rules = grants
    ? allowedToolRules(
      front.allowedTools ?? [],
      { scope: "command", file: command.path },
      `/${command.name}`,
      workspace,
      notes,
    )
    : [];
  const model = front.model && front.model !== "inherit"
    ? resolveModel(rt.provider.name, front.model)
    : undefined;

  let restore: (() => void) | undefined;
  return {
    notes,
    rules,
    ...(model ? { model } : {}),
    async begin(signal) {
      restore ??= apply(rt, rules, model);
      if (!grants || runs.length === 0) return expandCommand(source, args);
      return expandCommand(source, args, await runLines(rt, runs, signal));
    },
    end() {
      restore?.();
      restore = undefined;
    },
  };
}

/**
 * Prepares `/NAME` of `skill` (one of `rt.skills`, so a workspace's only when
 * trusted) with `args`: its instructions headed by its folder, which is
 * opened to reading (`../skills/session.ts`); its `allowed-tools` and its
 * `model` for the prompt, and its `!` lines run before it is sent, as a
 * custom command's. Throws a `ToolError` when its file cannot be used.
 */
export function skillTurn(rt: CommandRuntime, skill: Skill, args: string): CommandTurn {
  const { rules, notes } = rt.skills.read(skill, args);
  const runs = shellCommands(Deno.readTextFileSync(skill.file));
  const model = skill.model && skill.model !== "inherit"
    ? resolveModel(rt.provider.name, skill.model)
    : undefined;
  let restore: (() => void) | undefined;
  return {
    notes,
    rules,
    ...(model ? { model } : {}),
    async begin(signal) {
      restore ??= apply(rt, rules, model);
      const outputs = runs.length ? await runLines(rt, runs, signal) : undefined;
      return rt.skills.read(skill, args, outputs).text;
    },
    end() {
      restore?.();
      restore = undefined;
    },
  };
}

/** Runs a file's `!` lines through the dispatcher, as bash calls; their output, in order. */
async function runLines(
  rt: CommandRuntime,
  runs: readonly string[],
  signal: AbortSignal,
): Promise<string[]> {
  const outputs: string[] = [];
  for (const command of runs) {
    const r = await rt.dispatcher.dispatch("bash", { command }, signal);
    outputs.push(resultText(r).trimEnd());
  }
  return outputs;
}

/** Puts `rules` and `model` in force in `rt`; returns what takes them out. */
function apply(rt: CommandRuntime, rules: readonly Rule[], model: string | undefined): () => void {
  const live = rt.policy.rules;
  live.push(...rules);
  const before = { model: rt.agent.model, window: rt.agent.contextWindow };
  if (model) {
    rt.agent.model = model;
    rt.agent.contextWindow = knownContextWindow(model) ?? before.window;
  }
  return () => {
    for (const r of rules) {
      const at = live.indexOf(r);
      if (at >= 0) live.splice(at, 1);
    }
    if (model) {
      rt.agent.model = before.model;
      rt.agent.contextWindow = before.window;
    }
  };
}
