/**
 * Slash commands in print mode (`crab -p "/review calc.py"`): a skill's
 * `/NAME` and a custom command expand into their prompt and grant what their
 * file grants while it runs (`../run/command_turn.ts`), as interactively;
 * `/cost` and `/compact` run here without a prompt to the model's
 * conversation; `/init` sends its prompt; the REPL's other built-ins, and
 * names no command has, are refused by name (exit 2).
 *
 * @module
 */

import type { TurnResult } from "../loop/loop.ts";
import { compactNotice } from "../loop/compact.ts";
import type { Runtime } from "../run/runtime.ts";
import {
  costLine,
  findCommand,
  initCommand,
  INTERACTIVE_ONLY,
  runCommands,
  slashCommand,
} from "../run/slash_commands.ts";
import { type CommandTurn, commandTurn, skillTurn } from "../run/command_turn.ts";
import { ToolError } from "../../tools/tool.ts";

/** What a print-mode prompt does. */
export type PrintSlash =
  /** A prompt for the model: the prompt given, or what a command expands to (`note` for stderr). */
  | { kind: "prompt"; text: string; note?: string }
  /** A custom command: its prompt, with what its file grants while it runs. */
  | { kind: "command"; turn: CommandTurn }
  /** A command run here, answered as a prompt's result is. */
  | { kind: "local"; run(signal: AbortSignal): Promise<TurnResult> }
  /** A command print mode cannot run: a usage error. */
  | { kind: "refused"; message: string };

/** The built-ins print mode runs. */
const LOCAL_COMMANDS = ["compact", "cost", "init"];

/** The commands a print-mode prompt may start with, without the slash (the init event's list). */
export function printCommands(rt: Runtime): string[] {
  const custom = runCommands(rt).map((c) => c.name);
  const skills = rt.skills.skills.filter((s) => s.userInvocable).map((s) => s.name);
  return [...new Set([...LOCAL_COMMANDS, ...custom, ...skills])].sort();
}

/** Reads a print-mode prompt: a slash command, or a prompt as it is. */
export function printSlash(prompt: string, rt: Runtime): PrintSlash {
  const cmd = slashCommand(prompt);
  if (!cmd) return { kind: "prompt", text: prompt };
  const workspace = rt.dispatcher.session.workspace;
  // A skill's name wins over a custom command's, as in Claude Code.
  const skill = rt.skills.forUser(cmd.name);
  if (skill) {
    try {
      return { kind: "command", turn: skillTurn(rt, skill, cmd.args) };
    } catch (e) {
      if (!(e instanceof ToolError)) throw e;
      return { kind: "refused", message: `${e.message}\nhint: ${e.hint}` };
    }
  }
  const custom = findCommand(runCommands(rt), cmd.name);
  if (custom) return { kind: "command", turn: commandTurn(rt, custom, cmd.args) };
  switch (cmd.name) {
    case "cost":
      return {
        kind: "local",
        run: () =>
          Promise.resolve({
            status: "ok",
            text: costLine(rt.agent.usage, rt.agent.model, rt.agent.spent),
            turns: 0,
          }),
      };
    case "compact":
      return {
        kind: "local",
        run: async (signal) => {
          const r = await rt.agent.compact(cmd.args || undefined, signal);
          if (r.ok) return { status: "ok", text: compactNotice(r.info), turns: 1 };
          if (signal.aborted) {
            return { status: "aborted", text: "", turns: 1, error: "Interrupted" };
          }
          if (r.error === "nothing to compact yet") {
            return {
              status: "ok",
              text: "nothing to compact yet (with --continue or --resume ID, /compact compacts " +
                "that session)",
              turns: 0,
            };
          }
          return { status: "provider_error", text: "", turns: 1, error: r.error };
        },
      };
    case "init": {
      const init = initCommand(workspace, rt.bare);
      return { kind: "prompt", text: init.prompt, note: init.note };
    }
  }
  const what = INTERACTIVE_ONLY[cmd.name];
  if (what) {
    return {
      kind: "refused",
      message: `Cannot run /${cmd.name} in print mode: it ${what}\n` +
        "hint: print mode runs /cost, /compact, /init and custom commands; start crab without -p " +
        `for /${cmd.name}`,
    };
  }
  const known = runCommands(rt).map((c) => `/${c.name}`);
  return {
    kind: "refused",
    message: `Cannot run /${cmd.name}: no such command\n` +
      `hint: ${
        known.length ? `custom commands here: ${known.join(", ")}; ` : ""
      }a prompt that starts with a slash is read as a command: put a word before it`,
  };
}
