/**
 * The questions the REPL asks: the y/n/a approval of a call (with `f` to refuse
 * and tell the model what to do instead, and `v` to page through the whole
 * change before answering).
 *
 * What the prompt shows is what runs: a call's summary is in `printable`'s
 * strict mode, so a newline or tab in a path is shown as `\n` / `\t` and a name
 * cannot draw a second line that looks like crab's; a command keeps its own
 * lines, each shown strictly. The change under it is printable as prose.
 *
 * @module
 */

import type { AskAnswer } from "../../tools/policy/policy.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { printable } from "../../tools/fs/printable.ts";
import { colorDiff, type Colors } from "../terminal.ts";
import { type KeyReader, setMode } from "./keys.ts";
import { LineBuffer, Renderer } from "./line_editor.ts";
import { page } from "./pager.ts";
import type { Screen } from "./screen.ts";

/** Lines of a change shown in the prompt before `… N more lines`. */
export const DETAIL_LINES = 20;

/** The summary line of a call, on one line: newlines and tabs in it shown escaped. */
export function summaryLine(request: ApprovalRequest): string {
  // A command's own lines stay lines, marked as continuations; anything else stays on one line.
  if (request.tool === "bash") {
    return request.summary.split("\n").map((l) => printable(l, "strict")).join("\n  │ ");
  }
  return printable(request.summary, "strict");
}

/**
 * A change folded to {@link DETAIL_LINES} lines, with a count of the rest and of
 * the changed lines (`+`, `-`) among them.
 */
export function foldDetail(
  detail: string,
  c: Colors,
): { text: string; more: number; changed: number } {
  const lines = printable(detail, "prose").split("\n");
  const shown = lines.slice(0, DETAIL_LINES + 1);
  let changed = 0;
  for (let i = shown.length; i < lines.length; i++) {
    const first = lines[i].charCodeAt(0);
    if (first === 0x2b || first === 0x2d) changed++;
  }
  return { text: colorDiff(shown.join("\n"), c), more: lines.length - shown.length, changed };
}

/** Reads one line of text at a prompt of its own (feedback, a number); null when cancelled. */
export async function readText(
  screen: Screen,
  keys: KeyReader,
  prompt: string,
): Promise<string | null> {
  const buffer = new LineBuffer();
  const renderer = new Renderer(
    prompt,
    prompt.length,
    (s) => screen.raw(s),
    () => screen.columns(),
  );
  setMode("raw");
  renderer.draw(buffer);
  try {
    while (true) {
      const key = await keys.next();
      if (key === null || key.name === "ctrl-c" || key.name === "escape") {
        renderer.finish(buffer);
        return null;
      }
      const r = buffer.apply(key.name === "newline" ? { name: "text", text: " " } : key);
      if (r === "submit") {
        renderer.finish(buffer);
        return buffer.text;
      }
      renderer.draw(buffer);
    }
  } finally {
    screen.atLineStart = true;
  }
}

/** What the approval prompt needs from the REPL. */
export interface PromptDeps {
  screen: Screen;
  keys: KeyReader;
  /** Stops the turn's own key handling while the prompt reads keys; returns its restart. */
  pauseTurnKeys(): Promise<() => void>;
  /** Called when the user interrupts at the prompt (Ctrl-C, Esc). */
  interrupt(): void;
  /** Remembered approvals of shell commands (`p`); without it, `p` is not offered. */
  remember?: RuleKeeper;
}

/** Where a remembered rule may be saved. */
export type RuleScope = "local" | "user";

/** Offers and keeps the rules the `p` answer saves. */
export interface RuleKeeper {
  /** The rule to offer for a shell command, e.g. `Bash(npm test *)`, or none. */
  suggest(command: string): Promise<string | undefined>;
  /** The file a rule of `scope` goes to, as the prompt names it. */
  fileOf(scope: RuleScope): string;
  /** Saves `rule` as an allow rule in `scope`'s file, and applies it at once. */
  save(rule: string, scope: RuleScope): void;
}

/** The command of a bash request (its summary is `run: COMMAND`). */
function commandOf(request: ApprovalRequest): string | undefined {
  if (request.tool !== "bash" || !request.summary.startsWith("run: ")) return undefined;
  return request.summary.slice("run: ".length);
}

/** The interactive approval: one question at a time, even for calls that run concurrently. */
export function approvalAsker(deps: PromptDeps) {
  const { screen, keys } = deps;
  const c = screen.c;
  let asking = Promise.resolve();
  return (request: ApprovalRequest, signal: AbortSignal): Promise<AskAnswer> => {
    const answer = asking.then(async (): Promise<AskAnswer> => {
      if (signal.aborted) return "no";
      screen.hold();
      const resume = await deps.pauseTurnKeys();
      try {
        return await ask(request, signal);
      } finally {
        screen.atLineStart = true;
        screen.release();
        resume();
      }
    });
    asking = answer.then(() => {}, () => {});
    return answer;
  };

  async function ask(request: ApprovalRequest, signal: AbortSignal): Promise<AskAnswer> {
    // A subagent's question says which subagent asks.
    const who = request.scope ? `subagent ${printable(request.scope.agent, "strict")}: ` : "";
    let head = c.yellow(`⚠ ${who}${request.tool} — ${summaryLine(request)}`) + "\n";
    // An ask rule asks whatever was approved: say which rule, and where it is written.
    if (request.decided?.effect === "ask") {
      const label = request.decided.byRule ? "rule" : "why";
      head += c.dim(`${label}: ${printable(request.decided.why, "strict", 300)}`) + "\n";
    }
    const folded = request.detail ? foldDetail(request.detail, c) : undefined;
    if (folded) {
      head += folded.text + "\n";
      const { more, changed } = folded;
      if (more > 0) {
        // The rest is one key away: say how many of its lines are changes, and which key.
        const count = changed < more ? ` (${changed} changed)` : "";
        head += c.dim(`… ${more} more line${more === 1 ? "" : "s"}${count} · v: view them`) + "\n";
      }
    }
    // A command an ask rule names asks every time: no rule saved here would change that.
    const command = request.decided?.effect === "ask" ? undefined : commandOf(request);
    const rule = request.rememberAs !== undefined && deps.remember
      ? request.rememberAs
      : command !== undefined && deps.remember
      ? await deps.remember.suggest(command).catch(() => undefined)
      : undefined;
    const keysHelp = `f: no, and tell the model what to do instead${
      folded ? " · v: view the whole change" : ""
    }${rule ? ` · p: yes, and don't ask again for ${printable(rule, "strict")}` : ""}`;
    // One write: the question never shows without its prompt.
    let lead = head + c.dim(keysHelp) + "\n";
    // A protected path, or a call asked every time, has no "all" to give.
    const all = request.class !== "protected" && !request.decided?.always;
    const answers = (all ? "ynafv" : "ynfv") + (rule ? "p" : "");
    const allWhat = request.allOf ?? (request.class === "exec" ? "bash" : request.class);
    const question = "allow? [y]es/[n]o" + (all ? `/[a]ll ${allWhat} this session` : "") +
      (rule ? "/[p]ermanently" : "") + ": ";
    while (true) {
      screen.raw(lead + question);
      lead = "";
      setMode("raw");
      let choice: string | null = null;
      while (choice === null) {
        const key = await keys.next(signal);
        if (key === null || key.name === "ctrl-c" || key.name === "escape") break;
        if (key.name !== "text") continue;
        // Keys typed quickly arrive together: the first one that answers counts.
        for (const ch of key.text.toLowerCase()) {
          if (answers.includes(ch) && (ch !== "v" || folded)) {
            choice = ch;
            break;
          }
        }
      }
      if (choice === null) {
        screen.raw(c.red("no (interrupted)") + "\n");
        deps.interrupt();
        return "no";
      }
      if (choice === "v") {
        await page(
          screen,
          keys,
          `${request.tool} — the whole change`,
          colorDiff(printable(request.detail!, "prose"), c),
        );
        screen.raw("\n");
        continue;
      }
      if (choice === "p") {
        const scope = await askScope(rule!, signal);
        if (scope === null) {
          screen.raw("\n");
          continue;
        }
        try {
          deps.remember!.save(rule!, scope);
        } catch (e) {
          const why = e instanceof Error ? e.message : String(e);
          screen.raw(c.red(`cannot save the rule: ${printable(why, "prose")}`) + "\n");
          continue;
        }
        const where = printable(deps.remember!.fileOf(scope), "strict");
        screen.raw(
          c.green("yes") + c.dim(` · ${printable(rule!, "strict")} saved to ${where}`) + "\n",
        );
        return "yes";
      }
      if (choice === "f") {
        screen.raw(c.red("no") + "\n");
        const text = await readText(screen, keys, "tell the model: ");
        if (text && text.trim()) return { feedback: text.trim() };
        return "no";
      }
      const word = choice === "y" ? "yes" : choice === "a" ? "all" : "no";
      screen.raw((choice === "n" ? c.red(word) : c.green(word)) + "\n");
      return word;
    }
  }

  /** Where to save a remembered rule; null when the user backs out. */
  async function askScope(rule: string, signal: AbortSignal): Promise<RuleScope | null> {
    const keeper = deps.remember!;
    const name = (scope: RuleScope) => printable(keeper.fileOf(scope), "strict");
    screen.raw(
      c.green("p") + "\n" +
        c.dim(`save ${printable(rule, "strict")} to:`) + "\n" +
        `  [l]ocal  this project, not committed (${name("local")})\n` +
        `  [u]ser   every project (${name("user")})\n` +
        "save to? [l]ocal/[u]ser (Esc goes back): ",
    );
    while (true) {
      const key = await keys.next(signal);
      if (key === null || key.name === "ctrl-c" || key.name === "escape") return null;
      if (key.name !== "text") continue;
      for (const ch of key.text.toLowerCase()) {
        if (ch === "l") return "local";
        if (ch === "u") return "user";
      }
    }
  }
}
