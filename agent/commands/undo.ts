/**
 * `crab undo`: puts the workspace's files back as they were before crab's calls
 * (write, edit, bash and MCP tools alike), from undo's own store; never over a
 * change the user made since (see `agent/undo/restore.ts`).
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import { holdWorkspace } from "../../tools/call/workspace_lock.ts";
import { ToolError } from "../../tools/tool.ts";
import { UsageError } from "../settings/usage_error.ts";
import { unifiedDiff } from "../../tools/call/diff.ts";
import { realOrSelf } from "../settings/trust.ts";
import { callId, type CallRecord, UndoStore } from "../undo/store.ts";
import { lastUndo, redo, type Restored, undoCalls } from "../undo/restore.ts";
import { countLine } from "../undo/stage.ts";
import type { Entry } from "../undo/snapshot.ts";

/** Options of `crab undo`. */
export interface UndoOptions {
  cwd: string;
  /** `RUN:N`: that call. */
  call?: string;
  /** `RUN:N`: every call after it. */
  to?: string;
  /** Every call of a run (a unique prefix of its id). */
  run?: string;
  dryRun?: boolean;
  yes?: boolean;
  list?: boolean;
  redo?: boolean;
  json?: boolean;
}

const show = (p: string) => printable(p, "strict", 300);

/** How long `crab undo` waits for a call of a running crab to finish. */
const LOCK_WAIT_MS = 30_000;

/** Runs `crab undo`; resolves to the exit code. */
export async function undoCommand(opts: UndoOptions): Promise<number> {
  const workspace = realOrSelf(opts.cwd);
  if (opts.list || opts.dryRun) return undoLocked(opts, workspace);
  // Files go back while no crab call changes the workspace (the calls' own lock).
  let hold;
  try {
    hold = await holdWorkspace(workspace, {
      tool: "undo",
      waitMs: LOCK_WAIT_MS,
      signal: new AbortController().signal,
      onWait: (pid) =>
        console.error(
          `crab undo: waiting for ${pid ? `crab process ${pid}` : "another crab process"} ` +
            "to finish changing the workspace",
        ),
    });
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    console.error(`crab undo: ${e.message}\nhint: try again when that call has finished`);
    return 1;
  }
  try {
    return undoLocked(opts, workspace);
  } finally {
    hold.release();
  }
}

function undoLocked(opts: UndoOptions, workspace: string): number {
  const store = UndoStore.of(workspace);
  if (opts.list) return list(store, workspace, opts.json);
  if (opts.redo) return redoLast(store, workspace, opts);
  const chosen = choose(store.calls(), opts, workspace);
  if (chosen.length === 0) {
    console.log(`Nothing to undo in ${show(workspace)}.`);
    return 0;
  }
  const names = chosen.map((r) => `${callId(r)} (${r.tool})`).join(", ");
  if (opts.dryRun) {
    const plan = undoCalls(store, workspace, chosen, { dryRun: true });
    console.log(`Would undo ${names}:`);
    printDiff(store, plan);
    return report(plan, opts.json, true);
  }
  if (!opts.yes && !confirm(store, workspace, chosen, names)) return 1;
  const done = undoCalls(store, workspace, chosen);
  if (!opts.json) console.log(`Undid ${names}.`);
  return report(done, opts.json, false);
}

/** The calls to undo, newest first. */
function choose(all: CallRecord[], opts: UndoOptions, workspace: string): CallRecord[] {
  const live = all.filter((r) => r.undone === undefined);
  const given = [opts.call, opts.to, opts.run].filter((x) => x !== undefined).length;
  if (given > 1) {
    throw new UsageError("Cannot combine --call, --to and --run", "give one of them");
  }
  if (opts.call !== undefined || opts.to !== undefined) {
    const ref = (opts.call ?? opts.to)!;
    const [runPart, seqPart] = ref.split(":");
    const run = runOf(all, runPart, workspace);
    const seq = Number(seqPart);
    if (opts.call !== undefined) {
      const r = all.find((x) => x.run === run && x.seq === seq);
      if (!r) {
        throw new UsageError(
          `Cannot undo call "${ref}": it changed no file, or it is not kept`,
          "crab undo --list shows the calls that can be undone",
        );
      }
      if (r.undone !== undefined) {
        throw new UsageError(`Cannot undo call "${ref}": it is undone already`, "crab undo --redo");
      }
      return [r];
    }
    const from = all.findIndex((x) => x.run > run || (x.run === run && x.seq > seq));
    if (from < 0) return [];
    return all.slice(from).filter((r) => r.undone === undefined).reverse();
  }
  if (opts.run !== undefined) {
    const run = runOf(all, opts.run, workspace);
    return live.filter((r) => r.run === run).reverse();
  }
  const last = all.at(-1);
  if (!last) return [];
  const inSession = live.filter((r) => r.session === last.session);
  return inSession.length ? [inSession.at(-1)!] : [];
}

/** The run a prefix names among the journaled calls. */
function runOf(all: CallRecord[], prefix: string, workspace: string): string {
  const runs = [...new Set(all.map((r) => r.run).filter((r) => r.startsWith(prefix)))];
  if (runs.length === 1) return runs[0];
  if (runs.length === 0) {
    throw new UsageError(
      `Cannot find run "${printable(prefix, "strict", 60)}" among the calls kept for ${
        show(workspace)
      }`,
      "crab undo --list shows the runs and calls that can be undone",
    );
  }
  throw new UsageError(
    `Run prefix "${printable(prefix, "strict", 60)}" names ${runs.length} runs`,
    "give more of the run id",
  );
}

function confirm(
  store: UndoStore,
  workspace: string,
  chosen: CallRecord[],
  names: string,
): boolean {
  if (!Deno.stdin.isTerminal()) {
    console.error(
      "crab undo: not asking without a terminal\nhint: pass --yes, or --dry-run to see what it does",
    );
    return false;
  }
  const plan = undoCalls(store, workspace, chosen, { dryRun: true });
  console.log(`Undo ${names}?`);
  printSummary(plan);
  const answer = prompt("Restore these files? [y/N]");
  return answer?.trim().toLowerCase() === "y";
}

function redoLast(store: UndoStore, workspace: string, opts: UndoOptions): number {
  const u = lastUndo(store);
  if (!u) {
    console.log(`Nothing to redo in ${show(workspace)}.`);
    return 0;
  }
  const done = redo(store, workspace, u, { dryRun: opts.dryRun });
  if (opts.dryRun) {
    console.log(`Would redo ${u.calls.join(", ")}:`);
    printDiff(store, done);
  } else if (!opts.json) console.log(`Redid ${u.calls.join(", ")}.`);
  return report(done, opts.json, opts.dryRun ?? false);
}

function sign(a: { from: Entry | null; to: Entry | null }): string {
  return a.to === null ? "-" : a.from === null ? "+" : "~";
}

/** A directory's path ends in `/`. */
function slash(a: { from: Entry | null; to: Entry | null }): string {
  return (a.to ?? a.from)?.t === "d" ? "/" : "";
}

function printSummary(r: Restored): void {
  for (const a of r.applied) console.log(`  ${sign(a)}${show(a.p)}${slash(a)}`);
  for (const c of r.conflicts) console.log(`  conflict ${show(c.p)}: ${c.why}`);
  for (const c of r.uncovered) console.log(`  not restorable ${show(c.p)}: ${c.why}`);
}

/** Prints the result; exit 1 when some path was kept (a conflict or not restorable). */
function report(r: Restored, json: boolean | undefined, dry: boolean): number {
  const kept = r.conflicts.length + r.uncovered.length;
  if (json) {
    console.log(JSON.stringify({
      dry_run: dry,
      restored: r.applied.map((a) => ({ path: a.p, change: sign(a) })),
      conflicts: r.conflicts.map((c) => ({ path: c.p, why: c.why })),
      not_restorable: r.uncovered.map((c) => ({ path: c.p, why: c.why })),
    }));
    return kept ? 1 : 0;
  }
  if (!dry) printSummary(r);
  else {
    for (const c of r.conflicts) console.log(`  conflict ${show(c.p)}: ${c.why}`);
    for (const c of r.uncovered) console.log(`  not restorable ${show(c.p)}: ${c.why}`);
  }
  if (r.applied.length === 0 && kept === 0) console.log("  (the files are already so)");
  if (r.conflicts.length) {
    console.log(
      `${r.conflicts.length} path(s) changed since crab's call were kept as they are.`,
    );
  }
  return kept ? 1 : 0;
}

function text(store: UndoStore, e: Entry | null): string | undefined {
  if (e === null) return "";
  if (e.t !== "f") return undefined;
  const bytes = store.readObject(e.hash);
  if (!bytes) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** What a dry run would change, as a diff per path. */
function printDiff(store: UndoStore, r: Restored): void {
  for (const a of r.applied) {
    const what = a.to === null ? "remove" : a.from === null ? "create" : "restore";
    console.log(`${what} ${show(a.p)}`);
    if (a.from?.t === "f" && a.to?.t === "f" && a.from.mode !== a.to.mode) {
      console.log(`  mode ${a.from.mode.toString(8)} → ${a.to.mode.toString(8)}`);
    }
    if (a.to?.t === "l") console.log(`  symlink → ${show(a.to.target)}`);
    if (a.from?.t === "f" && a.to?.t === "f" && a.from.hash === a.to.hash) continue;
    const before = text(store, a.from), after = text(store, a.to);
    if (before === undefined || after === undefined) {
      if (a.from?.t === "f" || a.to?.t === "f") console.log("  (binary content)");
      continue;
    }
    const diff = unifiedDiff(before, after, a.p);
    if (diff) console.log(printable(diff, "prose"));
  }
}

/** `--list`: the calls kept, newest first. */
function list(store: UndoStore, workspace: string, json: boolean | undefined): number {
  const all = store.calls().reverse();
  if (json) {
    console.log(JSON.stringify({
      calls: all.map((r) => ({
        call: callId(r),
        session: r.session,
        tool: r.tool,
        at: new Date(r.at).toISOString(),
        undone: r.undone !== undefined,
        changes: r.changes.map((c) => ({
          path: c.p,
          change: c.b === null ? "+" : c.a === null ? "-" : "~",
        })),
      })),
    }));
    return 0;
  }
  if (all.length === 0) {
    console.log(`Nothing to undo in ${show(workspace)}.`);
    return 0;
  }
  for (const r of all) {
    const when = new Date(r.at).toISOString().replace("T", " ").slice(0, 19);
    const paths = r.changes.slice(0, 6).map((c) =>
      (c.b === null ? "+" : c.a === null ? "-" : "~") + show(c.p)
    ).join(" ") + (r.changes.length > 6 ? ` … ${r.changes.length - 6} more` : "");
    const state = r.undone !== undefined ? "  (undone)" : "";
    console.log(
      `${callId(r)}  ${when}  ${show(r.tool)}  ${countLine(r.changes)}  ${paths}${state}`,
    );
  }
  return 0;
}
