/**
 * Undo as a dispatch stage: before each mutating call (the workspace lock's
 * definition, and inside that lock) the workspace is scanned into the undo
 * store; after it, scanned again, and what changed is journaled for `crab undo`
 * and told to the model as `files changed: +2 ~1 -0: …`. write and edit can
 * only change their own file, so for them only that file is looked at, before
 * and after: their cost does not grow with the workspace.
 *
 * For other calls a file watcher (`watch.ts`) says which paths changed since
 * the last snapshot, and only those are looked at again; whenever it cannot
 * vouch that it saw everything (the first call, an overflow, a watcher that
 * failed, a changed ignore file) the whole workspace is scanned.
 *
 * The change list is also a check: a path the call changed that an Edit or
 * Write deny rule names (`Policy.changeRefusal`: rules the sandbox cannot hold
 * as mounts, like `Edit(*.lock)`, or tools outside the sandbox) is put back
 * from the snapshot before the call at once, removed if it is new, and named in
 * the result; the call's journal keeps only what stayed.
 *
 * A snapshot that fails (a full disk) does not stop the call: its result says
 * the call cannot be undone.
 *
 * @module
 */

import { isAbsolute, join, relative, resolve } from "../../tools/fs/path.ts";
import { isMutating } from "../../tools/call/workspace_lock.ts";
import type { CheckedCall, DispatchStage, ToolCall } from "../../tools/call/stages.ts";
import type { Observation } from "../../tools/call/observation.ts";
import { printable } from "../../tools/fs/printable.ts";
import { diffTrees, type Limits, Snapshotter, TooLarge, type Tree } from "./snapshot.ts";
import { type Change, type Entry, UndoStore } from "./store.ts";
import { protectedPaths } from "../../tools/fs/protected.ts";
import { restore } from "./restore.ts";
import { pruneIfDue, type Retention } from "./retention.ts";
import {
  LOOK_AHEAD_AFTER_MS,
  lookAhead,
  removeOwnMarkers,
  snapshotWith,
  type Subscription,
  type WatchFs,
  watchWorkspace,
} from "./watch.ts";
import { jobsBeside } from "../../tools/jobs/table.ts";
import { BUILTIN_CLASSES } from "../../tools/table.ts";
import { lstatOrNull } from "../../tools/fs/exists.ts";
import { debug } from "../../tools/fs/debug_log.ts";

const isDir = (path: string) => lstatOrNull(path)?.isDirectory === true;

/** Paths named in one result line at most. */
export const SHOWN_PATHS = 12;

/** Options of {@link undoStage}. */
export interface UndoStageOptions {
  /** Real path of the workspace. */
  workspace: string;
  /** The transcript the calls of run `runId` belong to (changes on `/clear`). */
  sessionId: (runId: string) => string;
  /** Defaults to the workspace's store under crab's data dir. */
  store?: UndoStore;
  limits?: Partial<Limits>;
  retention?: Partial<Retention>;
  /** The file watcher (tests: one that fails or overflows); false: always scan everything. */
  watchFs?: WatchFs | false;
  /**
   * Watch only a workspace whose stat cache holds at least this many files: a
   * one-shot call in a small tree scans again sooner than a watcher starts.
   */
  watchFrom?: number;
  /**
   * Look at the workspace before the first call (a process that makes many:
   * the REPL, print mode, an MCP server): under the watcher, while the model
   * thinks, a later session checks the stat cache the last one left against
   * the disk, a first one stats every file, neither reading anything into the
   * store (that needs the workspace lock); the first call is then an update
   * that reads what changed (in a first session, every file). It begins
   * {@link LOOK_AHEAD_AFTER_MS} after the stage is made. A number: after that
   * many ms; 0: at once (a stage made when it is due: `undoFor` makes it once
   * the process has settled, a first request on its way or a REPL at its
   * prompt, so a run that is over sooner never pays for it, nor waits for it to
   * send its request).
   */
  warm?: boolean | number;
  /**
   * Write the stat cache when the process ends (it leaves the call's time
   * alone): inside a call only when there was none, much changed, or a
   * minute passed.
   */
  saveOnExit?: boolean;
  /** Told how each snapshot was taken: a whole scan, an update from the watcher, the call's file. */
  onSnapshot?(how: "scan" | "update" | "paths"): void;
  /** Told of each call's summary once its observation is recorded. */
  onChanges?(runId: string, callSeq: number, summary: string): void;
  /** The policy's question before a file's content is kept (`Policy.mayStore`, a real path). */
  mayStore?(path: string): boolean;
  /**
   * The policy's question on each path a call changed (`Policy.changeRefusal`,
   * a real path): why the change must be put back, or undefined.
   */
  changeRefusal?(path: string, isDir: boolean): string | undefined;
}

/** `+2 ~1 -0`: files added, modified and removed. */
export function countLine(changes: readonly Change[]): string {
  let add = 0, mod = 0, del = 0;
  for (const c of changes) {
    if (c.b === null) add++;
    else if (c.a === null) del++;
    else mod++;
  }
  return `+${add} ~${mod} -${del}`;
}

/** One path with its sign, escaped for the model and the terminal. */
function signed(c: Change): string {
  const sign = c.b === null ? "+" : c.a === null ? "-" : "~";
  const dir = (c.a ?? c.b)?.t === "d" ? "/" : "";
  return sign + printable(c.p, "strict", 200) + dir;
}

/** What a result says of a call's changes: the counts, the paths (bounded), what undo cannot restore. */
export function changeReport(changes: readonly Change[], limits: Limits): string {
  const shown = changes.slice(0, SHOWN_PATHS).map(signed).join(" ");
  const more = changes.length > SHOWN_PATHS ? ` … and ${changes.length - SHOWN_PATHS} more` : "";
  let text = `files changed: ${countLine(changes)}: ${shown}${more}`;
  const uncovered = changes.filter((c) =>
    c.b?.t === "big" || c.a?.t === "big" || c.b?.t === "heavy" || c.a?.t === "heavy"
  );
  if (uncovered.length) {
    const why = (c: Change) => {
      const e = c.a ?? c.b!;
      const what = e.t === "heavy"
        ? "ignored directory, recorded by name only"
        : e.t === "big" && e.out
        ? "kept out of undo's store by the policy"
        : e.t === "big"
        ? `${mb(e.size)}, over the size limit`
        : "not kept";
      return `${printable(c.p, "strict", 200)} (${what})`;
    };
    const list = uncovered.slice(0, SHOWN_PATHS).map(why).join(", ");
    text += `\nnot covered by undo: ${list}` +
      (uncovered.length > SHOWN_PATHS ? ` … and ${uncovered.length - SHOWN_PATHS} more` : "") +
      ` (files up to ${mb(limits.fileMax)} are kept, ignored ones up to ${mb(limits.ignoredMax)})`;
  }
  return text;
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}

/** The workspace-relative path a write or edit names, when it lies inside the workspace. */
function targetOf(call: CheckedCall, workspace: string): string | undefined {
  if (call.tool.name !== "write" && call.tool.name !== "edit") return undefined;
  const path = call.input.path;
  if (typeof path !== "string" || path === "") return undefined;
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const rel = relative(workspace, abs);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return rel.split("\\").join("/");
}

/**
 * Puts back the `changes` the policy refuses (`opts.changeRefusal`), from the
 * snapshot before the call: what the call made is removed (deepest first),
 * what it changed or removed is written back. Returns the changes that stay
 * and the result's line on what was put back; undefined when nothing was refused.
 */
function refuseChanges(
  store: UndoStore,
  opts: Pick<UndoStageOptions, "workspace" | "changeRefusal">,
  changes: readonly Change[],
): { kept: Change[]; report: string } | undefined {
  const why = new Map<string, string>();
  for (const c of changes) {
    const reason = opts.changeRefusal!(join(opts.workspace, c.p), (c.a ?? c.b)?.t === "d");
    if (reason) why.set(c.p, reason);
  }
  if (why.size === 0) return undefined;
  const back = changes.filter((c) => why.has(c.p)).map((c) => ({ p: c.p, from: c.a, to: c.b }));
  const done = restore(store, opts.workspace, [
    ...back.filter((b) => b.to === null).reverse(),
    ...back.filter((b) => b.to !== null),
  ]);
  const undone = new Set(done.applied.map((a) => a.p));
  // Paths by the rule that refused them: `a.lock, b.lock (an edit denied by …)`.
  const named = (paths: string[]) => {
    const byWhy = new Map<string, string[]>();
    for (const p of paths.slice(0, SHOWN_PATHS)) {
      const w = why.get(p)!;
      byWhy.set(w, [...byWhy.get(w) ?? [], printable(p, "strict", 200)]);
    }
    return [...byWhy].map(([w, ps]) => `${ps.join(", ")} (${w})`).join("; ") +
      (paths.length > SHOWN_PATHS ? ` … and ${paths.length - SHOWN_PATHS} more` : "");
  };
  const lines: string[] = [];
  if (undone.size) {
    lines.push(`crab put back what the call changed where edits are denied: ${named([...undone])}`);
  }
  const left = [...done.conflicts, ...done.uncovered].filter((x) => why.has(x.p));
  if (left.length) {
    lines.push(
      `crab could not put back what the call changed where edits are denied: ${
        named(left.map((x) => x.p))
      }; check these paths`,
    );
  }
  return { kept: changes.filter((c) => !undone.has(c.p)), report: lines.join("\n") };
}

/**
 * `changes` without a sandbox's placeholder coming or going: an empty
 * directory at a protected path (`tools/sandbox/placeholders.ts`). A call's
 * own placeholders come and go within it; a background job's stay while it
 * runs, and go when it ends, maybe during another call.
 */
export function withoutPlaceholders(
  changes: Change[],
  workspace: string,
  before: Tree | undefined,
  after: Tree,
): Change[] {
  const dirOrNone = (e: Entry | null) => e === null || e.t === "d";
  const candidates = changes.filter((c) => dirOrNone(c.a) && dirOrNone(c.b) && (c.a ?? c.b));
  if (candidates.length === 0) return changes;
  const guarded = new Set(protectedPaths(workspace).map((p) => relative(workspace, p.path)));
  const empty = (tree: Tree | undefined, p: string) => {
    if (!tree) return true;
    for (const k of tree.keys()) if (k.startsWith(`${p}/`)) return false;
    return true;
  };
  const below = (p: string) => changes.some((c) => c.p.startsWith(`${p}/`));
  const drop = new Set(
    candidates.filter((c) =>
      guarded.has(c.p) && !below(c.p) && empty(before, c.p) && empty(after, c.p)
    ),
  );
  return drop.size ? changes.filter((c) => !drop.has(c)) : changes;
}

/** The undo stage for one dispatcher's workspace. */
export function undoStage(opts: UndoStageOptions): DispatchStage {
  return new UndoStage(opts);
}

/** What {@link undoStage} makes: the snapshot before each mutating call, the change list after. */
class UndoStage implements DispatchStage {
  readonly name = "undo";
  readonly #opts: UndoStageOptions;
  #snap: Snapshotter | undefined;
  #watch: Subscription | undefined;
  readonly #before = new WeakMap<CheckedCall, Tree | Error>();
  /** Calls whose snapshot is of their one file (write, edit): its path. */
  readonly #partial = new WeakMap<CheckedCall, string>();
  #tooLarge: TooLarge | undefined;
  #pruned = false;
  /** The look ahead of the first call while it runs, and whether a call waits for it. */
  #warming: Promise<void> | undefined;
  #hurry = false;
  #called = false;
  /** The run is over: no look ahead goes on, and what the process's end would do is done. */
  #closed = false;
  #cut = false;
  #leave: (() => void) | undefined;
  readonly #summaries = new WeakMap<CheckedCall, string>();
  /** When each call's snapshot began: the background jobs alive since ran beside it. */
  readonly #began = new WeakMap<CheckedCall, number>();

  constructor(opts: UndoStageOptions) {
    this.#opts = opts;
    if (opts.warm === 0) this.#lookFirst();
    else if (opts.warm) {
      const after = opts.warm === true ? LOOK_AHEAD_AFTER_MS : opts.warm;
      Deno.unrefTimer(setTimeout(() => this.#lookFirst(), after));
    }
  }

  /** The workspace's snapshotter, made at first need with its watcher and its exit. */
  #snapshotter(): Snapshotter {
    if (this.#snap) return this.#snap;
    const opts = this.#opts;
    const store = opts.store ?? UndoStore.of(opts.workspace);
    const s = this.#snap = new Snapshotter(opts.workspace, store, opts.limits, opts.mayStore);
    if (
      opts.watchFs !== false &&
      (opts.watchFrom === undefined || s.cachedCount() >= opts.watchFrom)
    ) {
      this.#watch = watchWorkspace(
        opts.workspace,
        join(store.dir, "watch"),
        opts.watchFs || undefined,
      );
    }
    if (opts.saveOnExit) {
      this.#leave = this.#leaving(s, isDir(store.dir));
      globalThis.addEventListener("unload", this.#leave);
    }
    return s;
  }

  /**
   * What the process's end does, or the run's end (close) where the process
   * goes on: the stat cache written, or a first session's empty store taken away.
   */
  #leaving(s: Snapshotter, hadStore: boolean): () => void {
    const store = s.store;
    return () => {
      // Not while a call is half done, nor into a store removed meanwhile.
      if (store.pendingObjects > 0 || !isDir(store.dir)) return;
      try {
        if (this.#called || hadStore) {
          // Nor a stat cache a look ahead has half made (or left half made when the run ended).
          if (!this.#warming && !this.#cut && s.saveWorthIt()) s.saveState();
          return;
        }
        // A first session that changed nothing leaves no store behind, though it looked
        // ahead: it made only the watcher's markers, and a look ahead cut short leaves this
        // process's one; the folders go when empty (another crab's store is never emptied).
        const marks = join(store.dir, "watch");
        removeOwnMarkers(marks);
        Deno.removeSync(marks);
        Deno.removeSync(store.dir);
        Deno.removeSync(join(store.dir, ".."));
      } catch {
        // The next process reads what changed; a folder not empty stays.
      }
    };
  }

  /** Prunes the store at the first call, inside the workspace lock. */
  #pruneOnce(s: Snapshotter): void {
    if (this.#pruned) return;
    this.#pruned = true;
    try {
      pruneIfDue(s.store, this.#opts.retention);
    } catch (e) {
      console.error(`crab: could not prune undo snapshots: ${e instanceof Error ? e.message : e}`);
    }
  }

  /** The whole workspace now: the watcher's update, or a scan. */
  async #whole(s: Snapshotter): Promise<Tree> {
    let how = "", t = performance.now();
    const tree = await snapshotWith(this.#watch, s, (h) => (how = h, this.#opts.onSnapshot?.(h)));
    t = Math.round(performance.now() - t);
    debug(
      "undo",
      () =>
        `${how}: ${tree.size} entries, ${t} ms; ${s.hashed} files read, ${s.hashedBeside} by a thread beside; ${s.statsBeside} stats taken by a thread; ${s.fromGit} files left to git's packs`,
    );
    return tree;
  }

  /** After what starts the process, before the first call: the look ahead. */
  #lookFirst(): void {
    if (this.#called || this.#closed) return;
    this.#warming = (async () => {
      try {
        const s = this.#snapshotter();
        if (this.#watch) await lookAhead(this.#watch, s, () => this.#hurry, () => this.#closed);
      } catch {
        // The first call scans.
      } finally {
        this.#warming = undefined;
      }
    })();
  }

  async around(call: ToolCall, next: () => Promise<void>): Promise<void> {
    // A call that may change files will wait for the look ahead: it ends at once, not in
    // slices between the steps the call takes before undo's turn (the sandbox's start).
    const cls = BUILTIN_CLASSES[call.name];
    if (this.#warming && !(cls && isMutating({ class: cls }) === false)) this.#hurry = true;
    await next();
  }

  async preRun(call: CheckedCall): Promise<void> {
    if (!isMutating(call.tool)) return;
    this.#called = true;
    if (this.#warming) {
      this.#hurry = true;
      await this.#warming;
    }
    this.#began.set(call, Date.now());
    try {
      const s = this.#snapshotter();
      const rel = targetOf(call, this.#opts.workspace);
      // The reader of git's packs is needed once an entry of a file git holds is made: a write's
      // or an edit's own file now; for a command, after it ran, and only when what it changed
      // includes such a file (postRun).
      if (rel !== undefined) await s.prepareGit();
      this.#pruneOnce(s);
      const only = rel === undefined ? undefined : s.paths([rel]);
      if (only) this.#partial.set(call, rel!);
      // Too large once is too large for the rest of the process: no scan of it again.
      if (!only && this.#tooLarge) throw this.#tooLarge;
      if (only) this.#opts.onSnapshot?.("paths");
      this.#before.set(call, only ?? await this.#whole(s));
      // What the call may destroy is on disk before it runs.
      s.store.flush();
      s.indexSoon();
    } catch (e) {
      if (e instanceof TooLarge) this.#tooLarge = e;
      this.#before.set(call, e instanceof Error ? e : new Error(String(e)));
    }
  }

  async postRun(call: CheckedCall): Promise<string | undefined> {
    const was = this.#before.get(call);
    if (was === undefined) return undefined;
    this.#before.delete(call);
    if (was instanceof Error) {
      return `undo: no snapshot was taken (${printable(was.message, "strict", 200)}); ` +
        "this call cannot be undone";
    }
    const s = this.#snap!;
    const rel = this.#partial.get(call);
    this.#partial.delete(call);
    const found = await this.#changesSince(s, was, rel);
    if (typeof found === "string") return found;
    const putBack = this.#opts.changeRefusal
      ? refuseChanges(s.store, this.#opts, found)
      : undefined;
    const changes = putBack ? putBack.kept : found;
    // Every object the snapshot names is in the store: a stat cache written later says so.
    s.store.flush();
    s.noteStamp();
    if (rel === undefined && (!this.#opts.saveOnExit || s.saveDue())) s.saveState();
    if (changes.length === 0) return putBack?.report;
    const report = this.#journal(call, s, changes, rel === undefined);
    return putBack?.report ? `${report}\n${putBack.report}` : report;
  }

  /**
   * What the call changed since `was` (its own file `rel` for a write or an
   * edit); a result line instead when that cannot be known.
   */
  async #changesSince(
    s: Snapshotter,
    was: Tree,
    rel: string | undefined,
  ): Promise<Change[] | string> {
    // A write or edit that became something else (a symlink, too big) is looked at whole.
    let after: Tree | undefined;
    let base: Tree = was;
    try {
      after = rel === undefined ? await this.#whole(s) : s.paths([rel]);
      if (after === undefined) {
        after = await this.#whole(s);
        const copy = new Map(after);
        if (was.has(rel!)) copy.set(rel!, was.get(rel!)!);
        else copy.delete(rel!);
        base = copy;
      }
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      this.#tooLarge = e;
      return `undo: what this call changed is not known (${e.message}); it cannot be undone`;
    }
    // An update changes the tree in place and knows its changes (the reader of git's packs
    // loaded for them if they need it); a scan is compared whole, which may need it.
    if (!(after === base && s.delta)) await s.prepareGit();
    const diff = after === base && s.delta ? s.delta : diffTrees(base, after);
    // A background job's sandbox holds its placeholders across calls: never a call's change.
    const prior = after === base ? undefined : base;
    return withoutPlaceholders(diff, this.#opts.workspace, prior, after);
  }

  /** Journals the call's `changes` for `crab undo`; returns the result's line about them. */
  #journal(call: CheckedCall, s: Snapshotter, changes: Change[], whole: boolean): string {
    const opts = this.#opts;
    // What background jobs may have changed meanwhile is theirs as much as the call's.
    const jobs = jobsBeside(opts.workspace, this.#began.get(call) ?? Date.now());
    const shared = whole ? changes.map((c) => c.p) : [];
    s.store.writeCall({
      run: call.runId,
      seq: call.callSeq,
      session: opts.sessionId(call.runId),
      tool: call.name,
      at: Date.now(),
      changes,
      ...(jobs.length ? { beside: { jobs, paths: shared } } : {}),
    });
    let report = changeReport(changes, s.limits);
    if (jobs.length && shared.length) {
      report += `\nundo: background job ${jobs.join(", ")} ran meanwhile, so these may be its ` +
        "changes too: undoing this call leaves them as they are";
    }
    this.#summaries.set(call, countLine(changes));
    return report;
  }

  observe(observation: Observation, call: ToolCall): void {
    const summary = this.#summaries.get(call as CheckedCall);
    if (summary !== undefined) {
      this.#opts.onChanges?.(observation.runId, observation.callSeq, summary);
    }
  }

  async close(): Promise<void> {
    // In a process that goes on (the SDK's), a look ahead stops at its next step, the stat
    // cache is written now, and neither the watcher nor the snapshot is kept for later.
    this.#closed = true;
    if (this.#warming) this.#cut = true;
    await this.#warming;
    this.#watch?.close();
    const leave = this.#leave;
    if (leave) globalThis.removeEventListener("unload", leave);
    this.#leave = undefined;
    leave?.();
  }
}
