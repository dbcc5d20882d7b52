/**
 * The policy parser against what bash really runs: each command is decided
 * under one fixed rule set, and each one the rules would let run (`allow`, or
 * `default`, which runs under `--yolo` and in print mode with rules from files
 * only) is run in crab's sandbox under an exec tracer (`exec_trace.ts`). Every
 * program that ran must be one the parser saw: for `allow`, in a part the
 * rules allowed (or that needs no rule); for `default`, in some part (so the
 * deny rules had their chance). A program nobody saw is a mismatch.
 *
 * @module
 */

import { basename, join } from "node:path";
import { decide, type Decision, parseRule } from "../../tools/policy/mod.ts";
import {
  commandSubject,
  compileCommandPattern,
  matchCommand,
  type MatchWord,
} from "../../tools/policy/command_pattern.ts";
import type { ShellWord } from "../../tools/policy/shell.ts";
import { realPathOf } from "../../tools/fs/workspace.ts";
import { bashEnv } from "../../tools/host/command_env.ts";
import { type Exec, traceInSandbox } from "./exec_trace.ts";
import { DIFFERENTIAL_RULES } from "./policy_commands.ts";

export { DIFFERENTIAL_RULES };

/** A program that ran but that the parser did not see (or the rules did not allow). */
export interface Mismatch {
  command: string;
  effect: Decision["effect"];
  /** The program as it ran: its words. */
  program: string[];
  why: string;
}

/** What a differential run counted. */
export interface Counts {
  commands: number;
  /** Decisions, by effect. */
  decided: Record<Decision["effect"], number>;
  /** Commands run under the tracer (the allowed and the `default` ones). */
  run: number;
  /** Programs the tracer counted, over every run. */
  programs: number;
  /** Commands stopped at the time limit. */
  timedOut: string[];
  /** Each program a command ran unseen, once per command. */
  mismatches: Mismatch[];
}

/** A literal command word, quoted for a rule pattern. */
function quoted(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A view of a part with its program reduced to the base name, `~` words unknown. */
function matchable(view: readonly ShellWord[]): MatchWord[] {
  return view.map((w, i) => {
    if (w.tilde) return { segs: [null], vanish: false };
    if (i === 0 && w.value?.includes("/")) return { segs: [basename(w.value)], vanish: false };
    return w;
  });
}

/** Why `exec` was not seen or allowed in `decision`, or undefined when it was. */
export function unseen(decision: Decision, exec: Exec): string | undefined {
  const words = [basename(exec.file), ...exec.argv.slice(1)];
  const pattern = compileCommandPattern(words.map(quoted).join(" "));
  let seenIn: string | undefined;
  for (const part of decision.parts ?? []) {
    for (const view of part.runs) {
      if (!matchCommand(pattern, commandSubject(matchable(view)), false)) continue;
      if (decision.effect !== "allow" || part.effect === "allow") return undefined;
      seenIn = `${part.command} (${part.effect}: ${part.why})`;
    }
  }
  return seenIn ? `seen in ${seenIn}, which the rules did not allow` : "no part runs it";
}

/** The directories of the PATH the sandbox's bash searches. */
export function sandboxPath(): string[] {
  return (bashEnv().PATH ?? "").split(":");
}

/** Decides `command` in a fresh workspace and, when it may run, runs it traced. */
async function one(command: string, counts: Counts): Promise<void> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-diff-" }));
  try {
    const workspace = join(root, "ws");
    const home = join(root, "home");
    Deno.mkdirSync(workspace);
    Deno.mkdirSync(home);
    const base = { project: workspace, home };
    const rules = DIFFERENTIAL_RULES.map(([text, effect]) =>
      parseRule(text, effect, { scope: "flag" }, base)
    );
    const ctx = { workspace, home, realPath: realPathOf, path: sandboxPath(), writable: [] };
    const decision = decide(rules, { tool: "bash", args: { command } }, ctx);
    counts.decided[decision.effect]++;
    if (decision.effect !== "allow" && decision.effect !== "default") return;
    const trace = await traceInSandbox(command, { workspace, home });
    if (!trace.traced) {
      throw new Error(`Cannot trace ${JSON.stringify(command)}: strace saw no call`);
    }
    counts.run++;
    counts.programs += trace.execs.length;
    if (trace.timedOut) counts.timedOut.push(command);
    const said = new Set<string>();
    for (const exec of trace.execs) {
      const why = unseen(decision, exec);
      const program = JSON.stringify([exec.file, ...exec.argv.slice(1)]);
      if (why && !said.has(program)) {
        said.add(program);
        counts.mismatches.push({
          command,
          effect: decision.effect,
          program: [exec.file, ...exec.argv.slice(1)],
          why,
        });
      }
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

/**
 * Runs the differential over `commands`, `concurrency` at a time. Throws when
 * the tracer saw nothing of a call (strace cannot trace here).
 */
export async function differential(commands: readonly string[], concurrency = 3): Promise<Counts> {
  const counts: Counts = {
    commands: commands.length,
    decided: { allow: 0, ask: 0, deny: 0, default: 0 },
    run: 0,
    programs: 0,
    timedOut: [],
    mismatches: [],
  };
  let next = 0;
  const worker = async () => {
    while (next < commands.length) await one(commands[next++], counts);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return counts;
}

/** A mismatch as a failure prints it: the command and the unseen program. */
export function showMismatch(m: Mismatch): string {
  return `${JSON.stringify(m.command)} (${m.effect}) ran ${JSON.stringify(m.program)}: ${m.why}`;
}
