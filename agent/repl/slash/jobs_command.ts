/**
 * The session's background jobs in the REPL: `/bashes` (also `/jobs`) lists
 * them — id, age, state, command, last line of output — and stops one, picked
 * with the arrow keys or its number and `k`, or named (`/bashes kill b2`); the
 * line a job that ended on its own gets; and the question when the rules or
 * the mode become stricter while jobs run, since a job keeps the grant it
 * started with.
 *
 * @module
 */

import { printable } from "../../../tools/fs/printable.ts";
import {
  changedLine,
  type JobInfo,
  type JobTable,
  seconds,
  short,
  stateWords,
} from "../../../tools/jobs/table.ts";
import type { Mode, Rule } from "../../../tools/policy/mod.ts";
import { ToolError } from "../../../tools/tool.ts";
import { type Colors, countOf } from "../../terminal.ts";
import { type KeyReader, setMode } from "../keys.ts";
import { fitWidth, type Screen } from "../screen.ts";

/** What the job commands use of the REPL. */
export interface JobsContext {
  jobs: JobTable;
  screen: Screen;
  keys: KeyReader;
}

/** Jobs `/bashes` lists at most: every running one, then the newest that ended. */
const SHOWN = 20;

const USAGE = "usage: /bashes [kill ID]";

/** Writes `text` as whole lines whatever the terminal's mode (raw needs the carriage return). */
function say(screen: Screen, text: string): void {
  screen.raw(text.replaceAll("\n", "\r\n") + "\r\n");
  screen.atLineStart = true;
}

/** The footer's count of running jobs, or "" when none runs. */
export function jobCount(jobs: JobTable): string {
  const n = jobs.running().length;
  return n ? countOf(n, "job") : "";
}

/** The line of a job that ended on its own: `● job b1 exited with code 0: make watch`. */
export function endedLine(job: JobInfo, c: Colors): string {
  const text = `● job ${job.id} ${stateWords(job)}: ${short(job.command)}`;
  return job.state === "exited" && job.exitCode === 0 ? c.dim(text) : c.yellow(text);
}

/** `/bashes [kill ID]`. */
export async function jobsCommand(args: string, ctx: JobsContext): Promise<void> {
  const { jobs, screen } = ctx;
  const c = screen.c;
  const words = args.split(/\s+/).filter((w) => w !== "");
  if (words[0] === "kill" && words.length === 2) return await kill(ctx, words[1]);
  if (words.length) return say(screen, c.red(USAGE));
  const all = jobs.list();
  if (all.length === 0) {
    return say(
      screen,
      "No background jobs in this session. The model starts one with bash's " +
        "run_in_background; Ctrl-B moves a running command to the background.",
    );
  }
  const shown = [
    ...all.filter((j) => j.state === "running"),
    ...all.filter((j) => j.state !== "running").slice(-SHOWN),
  ].slice(0, SHOWN);
  if (!screen.tty || !shown.some((j) => j.state === "running")) {
    return say(screen, listing(shown, -1, c, screen.columns()).join("\n"));
  }
  await pick(ctx, shown.map((j) => j.id));
}

/** The list: a head, two rows a job (the picked one marked), each cut to the terminal's width. */
function listing(shown: JobInfo[], picked: number, c: Colors, columns: number): string[] {
  const running = shown.filter((j) => j.state === "running").length;
  const rows = [
    `Background jobs: ${running} running, ${shown.length - running} ended`,
  ];
  const idw = Math.max(...shown.map((j) => j.id.length));
  shown.forEach((j, i) => {
    const state = j.state === "running"
      ? c.green("running")
      : j.state === "exited" && j.exitCode === 0
      ? stateWords(j)
      : c.yellow(stateWords(j));
    const mark = i === picked ? c.cyan("›") : " ";
    rows.push(
      `${mark} ${String(i + 1).padStart(2)}. ${j.id.padEnd(idw)}  ${
        seconds(j.ageMs).padStart(6)
      }  ` +
        `${state}  ${short(j.command, 200)}`,
    );
    rows.push(c.dim(`       ⎿ ${j.lastLine || "(no output yet)"}`));
  });
  return rows.map((r) => fitWidth(r, Math.max(20, columns - 1)));
}

/**
 * The interactive list: Up/Down or a number picks a job, `k` stops it, Esc,
 * Enter or `q` leaves. It is drawn again as the jobs change.
 */
async function pick(ctx: JobsContext, ids: string[]): Promise<void> {
  const { jobs, screen, keys } = ctx;
  const c = screen.c;
  const current = () => {
    const byId = new Map(jobs.list().map((j) => [j.id, j]));
    return ids.map((id) => byId.get(id)!);
  };
  let picked = Math.max(0, current().findIndex((j) => j.state === "running"));
  let drawn = 0;
  const help = c.dim(
    `↑/↓ or 1-${ids.length} picks a job · k stops the picked one · Esc leaves`,
  );
  const draw = () => {
    const rows = [...listing(current(), picked, c, screen.columns()), help];
    screen.raw((drawn > 1 ? `\x1b[${drawn - 1}A` : "") + "\r\x1b[J" + rows.join("\r\n"));
    drawn = rows.length;
  };
  setMode("raw");
  screen.raw("\x1b[?25l");
  draw();
  const unsubscribe = jobs.subscribe((e) => {
    if (e.kind !== "read" && ids.includes(e.job.id)) draw();
  });
  let chosen: string | undefined;
  try {
    while (true) {
      const key = await keys.next();
      if (key === null || key.name === "escape" || key.name === "ctrl-c") break;
      if (key.name === "enter") break;
      if (key.name === "up") picked = (picked + ids.length - 1) % ids.length;
      else if (key.name === "down") picked = (picked + 1) % ids.length;
      else if (key.name === "text") {
        const ch = key.text.toLowerCase().at(-1)!;
        if (ch === "q") break;
        if (ch === "k") {
          chosen = ids[picked];
          break;
        }
        const n = Number(ch);
        if (Number.isInteger(n) && n >= 1 && n <= ids.length) picked = n - 1;
      }
      draw();
    }
  } finally {
    unsubscribe();
    screen.raw("\r\n\x1b[?25h");
    screen.atLineStart = true;
    setMode("cooked");
  }
  if (chosen) await kill(ctx, chosen);
}

/** Stops job `id` and says how it ended and which files changed while it ran. */
async function kill(ctx: JobsContext, id: string): Promise<void> {
  const { jobs, screen } = ctx;
  const c = screen.c;
  let info: JobInfo;
  try {
    info = jobs.info(id);
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    return say(screen, c.red(printable(`${e.message}. ${e.hint}`, "prose")));
  }
  if (info.state === "running") say(screen, c.dim(`stopping ${info.id}…`));
  const r = await jobs.kill(info.id);
  const what = `${r.info.id} (${short(r.info.command)})`;
  say(
    screen,
    r.wasRunning
      ? `Stopped job ${what} after ${seconds(r.info.ageMs)}.`
      : `Job ${what} had ended already: ${stateWords(r.info)}.`,
  );
  const changed = changedLine(r.changed);
  if (changed) say(screen, c.dim(changed));
}

/** How much a mode lets run without asking: a move down is stricter. */
const LENIENCE: Record<Mode, number> = {
  plan: 0,
  dontAsk: 1,
  default: 2,
  acceptEdits: 3,
  bypassPermissions: 4,
};

/** Whether going from mode `before` to `after` lets less run. */
export function stricterMode(before: Mode, after: Mode): boolean {
  return LENIENCE[after] < LENIENCE[before];
}

/** Whether the rules went from `before` to `after` by losing an allow rule or gaining an ask or deny rule. */
export function stricterRules(before: readonly Rule[], after: readonly Rule[]): boolean {
  const now = new Set(after);
  const then = new Set(before);
  return before.some((r) => r.effect === "allow" && !now.has(r)) ||
    after.some((r) => r.effect !== "allow" && !then.has(r));
}

/**
 * When jobs run: says that they keep the permissions they started with (the
 * change just made, `what`, does not reach them) and offers to stop them.
 * Leaves the terminal in `mode`.
 */
export async function offerToStop(
  ctx: JobsContext,
  what: string,
  mode: "raw" | "cooked" = "cooked",
): Promise<void> {
  const { jobs, screen, keys } = ctx;
  const c = screen.c;
  const running = jobs.running();
  if (running.length === 0) return;
  const they = running.length === 1 ? "it keeps" : "they keep";
  say(
    screen,
    c.yellow(
      `${countOf(running.length, "background job")} still running: ${they} the permissions ` +
        `${running.length === 1 ? "it" : "they"} started with, not ${what}.`,
    ),
  );
  for (const j of running) {
    say(
      screen,
      fitWidth(`  ${j.id}  ${seconds(j.ageMs)}  ${short(j.command)}`, screen.columns() - 1),
    );
  }
  screen.raw(`stop ${running.length === 1 ? "it" : "them"}? [y]es/[n]o: `);
  setMode("raw");
  let yes = false;
  try {
    while (true) {
      const key = await keys.next();
      if (key === null || key.name === "ctrl-c" || key.name === "escape") break;
      if (key.name !== "text") continue;
      const ch = [...key.text.toLowerCase()].find((ch) => ch === "y" || ch === "n");
      if (ch) {
        yes = ch === "y";
        break;
      }
    }
  } finally {
    setMode(mode);
  }
  if (!yes) {
    const rest = running.length === 1 ? "it runs on" : "they run on";
    say(screen, c.dim(`no (${rest}: /bashes lists the jobs and stops one)`));
    return;
  }
  say(screen, c.green("yes"));
  const stopped = await Promise.all(running.map((j) => jobs.kill(j.id)));
  for (const r of stopped) {
    const changed = changedLine(r.changed);
    say(
      screen,
      `Stopped job ${r.info.id} (${short(r.info.command)})` +
        (r.wasRunning ? "" : `: it had ended already, ${stateWords(r.info)}`) +
        (changed ? c.dim(`; ${changed}`) : ""),
    );
  }
}
