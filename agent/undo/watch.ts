/**
 * Which paths of a workspace changed since the last look, from one file watcher
 * per workspace per process (`Deno.watchFs`; on Linux one inotify descriptor,
 * whose events arrive in order).
 *
 * The watcher watches each directory the last snapshot walked, one by one (not
 * recursively: a recursive watch follows symlinks to directories, such as the
 * `root` link of a confined write's temp directory, and then reports the
 * workspace's events under the link's path and drops the workspace's watches
 * when the link's directory goes). When the snapshot's directories change, a new
 * watcher replaces the old, and the directories it did not watch before are
 * reported as changed, so that the next snapshot walks them again.
 *
 * It also watches a private directory of markers under the undo store.
 * {@link Subscription.flush} writes a fresh marker and waits for its event: once
 * it arrives, every change made before the marker was written has been
 * delivered. A subscription vouches for its set of changed paths only while
 * nothing was lost: a queue overflow (an event flagged `rescan`), a watcher
 * that failed or ended (the inotify watch limit), a flush that timed out, a
 * watcher that could not be started. Then {@link Subscription.take} says so,
 * and the caller scans everything.
 *
 * The watcher never keeps the process alive: its pending read is unref'd.
 *
 * @module
 */

import type { Snapshotter, Tree } from "./snapshot.ts";
import { join } from "../../tools/fs/path.ts";
import { lstatOrNull } from "../../tools/fs/exists.ts";
import { debug } from "../../tools/fs/debug_log.ts";
import { inotifyAvailable, watchWithInotify } from "./inotify.ts";

/** How long a flush waits for its marker's event before giving up (the caller scans everything). */
export const FLUSH_TIMEOUT_MS = 200;

/** What `Deno.watchFs` returns, as far as this module uses it. */
export type Watcher = AsyncIterable<Deno.FsEvent> & {
  unref?(): void;
  close(): void;
  /** Delivers what is queued now (a watcher read when asked, not by a thread of its own). */
  drain?(): void;
  /**
   * Whether its events name every entry that came, went or changed in a
   * watched directory, whatever its kind (a symlink too), and the directory
   * itself when its own stat changed: then only the directories it named need
   * their listings compared. `Deno.watchFs` drops the creation of a link it
   * cannot follow.
   */
  readonly exact?: boolean;
};

/** Starts a watcher of the directories `paths`, not recursively (tests: one that fails or overflows). */
export type WatchFs = (paths: string[]) => Watcher;

/** inotify through libc where this process may call it (the `full` build on Linux), else Deno's. */
const defaultWatchFs: WatchFs = (paths) =>
  inotifyAvailable() ? watchWithInotify(paths) : Deno.watchFs(paths, { recursive: false });

/** The changed paths one consumer has not taken yet. */
export interface Subscription {
  /** Whether a watcher runs (once {@link target} succeeded). */
  readonly watching: boolean;
  /** Whether watching was given up for this process: no watcher could start, or one failed. */
  readonly gaveUp: boolean;
  /** Whether the watcher running now is exact ({@link Watcher.exact}). */
  readonly exact: boolean;
  /**
   * Waits until every change made before now has been delivered. False when
   * that cannot be known: no watcher runs, or its marker did not come back
   * within {@link FLUSH_TIMEOUT_MS}.
   */
  flush(): Promise<boolean>;
  /**
   * The absolute paths changed since the last take, and whether that set is
   * complete (nothing overflowed, the watcher is alive, every flush since the
   * last take succeeded) and exact (every watcher since the last take was:
   * {@link Watcher.exact}). Empties the set.
   */
  take(): { paths: Set<string>; complete: boolean; exact: boolean };
  /** Watches these directories (absolute, real) from now on; those not watched before count as changed. */
  target(dirs: readonly string[]): Promise<void>;
  /** Stops collecting changes for this consumer. */
  close(): void;
}

interface Sub {
  paths: Set<string>;
  complete: boolean;
  /** Whether every watcher since the last take was exact. */
  exact: boolean;
  /**
   * Wants what changes from now on, not a snapshot's worth: a new watcher
   * (the old one flushed first, the new directories given as changed) loses
   * it nothing.
   */
  fromNow?: boolean;
}

interface Running {
  watcher: Watcher;
  dirs: Set<string>;
  closed: boolean;
}

/** One watcher of a workspace's directories and of its marker directory. */
class WorkspaceWatch {
  readonly markerDir: string;
  readonly #watchFs: WatchFs;
  #current: Running | undefined;
  #gaveUp = false;
  #subs = new Set<Sub>();
  #waiting = new Map<string, { on: Running; wake: () => void }>();
  #seq = 0;

  constructor(markerDir: string, watchFs: WatchFs) {
    this.markerDir = markerDir;
    this.#watchFs = watchFs;
  }

  /**
   * A new consumer. `fromNow`: its set starts complete while a watcher runs
   * (it wants what changes from now on, not since a snapshot of its own).
   */
  subscribe(fromNow = false): Subscription {
    const sub: Sub = {
      paths: new Set(),
      complete: fromNow && this.#current !== undefined,
      exact: this.#current?.watcher.exact === true,
      ...(fromNow ? { fromNow } : {}),
    };
    this.#subs.add(sub);
    // deno-lint-ignore no-this-alias
    const self = this;
    return {
      get watching() {
        return self.#current !== undefined;
      },
      get gaveUp() {
        return self.#gaveUp;
      },
      get exact() {
        return self.#current?.watcher.exact === true;
      },
      flush: async () => {
        const ok = this.#current ? await this.#flush(this.#current) : false;
        if (!ok) sub.complete = false;
        return ok;
      },
      take: () => {
        const now = this.#current;
        const out = {
          paths: sub.paths,
          complete: sub.complete && now !== undefined,
          exact: sub.exact,
        };
        sub.paths = new Set();
        sub.complete = now !== undefined;
        sub.exact = now?.watcher.exact === true;
        return out;
      },
      target: (dirs) => this.#target(dirs, sub),
      close: () => {
        this.#subs.delete(sub);
        // The last one out stops the watcher.
        if (this.#subs.size === 0) this.close();
      },
    };
  }

  async #target(dirs: readonly string[], by: Sub): Promise<void> {
    const old = this.#current;
    if (old && old.dirs.size === dirs.length && dirs.every((d) => old.dirs.has(d))) return;
    let markerDir: string;
    try {
      Deno.mkdirSync(this.markerDir, { recursive: true, mode: 0o700 });
      markerDir = Deno.realPathSync(this.markerDir);
    } catch {
      by.complete = false;
      return;
    }
    let watcher: Watcher | undefined;
    let watched = [...dirs];
    for (let attempt = 0; attempt < 2 && !watcher; attempt++) {
      try {
        watcher = this.#watchFs([markerDir, ...watched]);
      } catch {
        // A directory gone since the walk: watch those still there (the next snapshot sees it gone).
        watched = watched.filter((d) => lstatOrNull(d)?.isDirectory);
      }
    }
    if (!watcher) {
      // The old watcher, if any, still covers what it did; the next snapshot scans whole.
      by.complete = false;
      if (!old) this.#gaveUp = true;
      return;
    }
    const next: Running = { watcher, dirs: new Set(dirs), closed: false };
    this.#current = next;
    this.#pump(next);
    for (const s of this.#subs) {
      if (s !== by && !s.fromNow) s.complete = false;
      if (!watcher.exact) s.exact = false;
      // What the old watcher did not watch may have changed before the new one started.
      for (const d of dirs) if (!old?.dirs.has(d)) s.paths.add(d);
    }
    if (old) {
      // Events the old watcher holds are delivered before it goes.
      if (!(await this.#flush(old))) { for (const s of this.#subs) s.complete = false; }
      old.closed = true;
      closeQuietly(old.watcher);
    }
  }

  /** Reads events until the watcher ends or fails; if it is still the current one, everyone scans. */
  async #pump(r: Running): Promise<void> {
    try {
      const it = r.watcher[Symbol.asyncIterator]();
      for (;;) {
        const next = it.next();
        // The read pending between events must not keep the process alive.
        r.watcher.unref?.();
        const got = await next;
        if (got.done) break;
        const e = got.value;
        if (e.flag === "rescan") {
          for (const s of this.#subs) s.complete = false;
        }
        for (const p of e.paths) {
          const w = this.#waiting.get(p);
          if (w) {
            if (w.on === r) w.wake();
            continue;
          }
          for (const s of this.#subs) s.paths.add(p);
        }
      }
    } catch {
      // A watcher that failed vouches for nothing more.
    }
    if (r.closed) return;
    r.closed = true;
    closeQuietly(r.watcher);
    if (this.#current === r) {
      this.#current = undefined;
      this.#gaveUp = true;
    }
    for (const s of this.#subs) s.complete = false;
    for (const w of this.#waiting.values()) if (w.on === r) w.wake();
  }

  async #flush(on: Running): Promise<boolean> {
    if (on.closed) return false;
    const marker = `${Deno.realPathSync(this.markerDir)}/${OWN_MARKER}${++this.#seq}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let arrived = false;
    const seen = new Promise<void>((resolve) => {
      this.#waiting.set(marker, {
        on,
        wake: () => {
          arrived = !on.closed;
          resolve();
        },
      });
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    });
    try {
      Deno.writeFileSync(marker, new Uint8Array());
      on.watcher.drain?.();
    } catch {
      this.#waiting.delete(marker);
      clearTimeout(timer);
      return false;
    }
    await seen;
    clearTimeout(timer);
    this.#waiting.delete(marker);
    try {
      Deno.removeSync(marker);
    } catch {
      // Gone already: nothing to tidy.
    }
    return arrived && !on.closed;
  }

  close(): void {
    const r = this.#current;
    this.#current = undefined;
    if (r) {
      r.closed = true;
      closeQuietly(r.watcher);
    }
    for (const s of this.#subs) s.complete = false;
  }
}

function closeQuietly(w: Watcher): void {
  try {
    w.close();
  } catch {
    // Already closed.
  }
}

/** How this process's markers are named, before their sequence number. */
const OWN_MARKER = `${Deno.pid}-`;

/**
 * Removes this process's markers from `markerDir` (a flush cut short by the
 * process's end leaves one); another process's are left alone.
 */
export function removeOwnMarkers(markerDir: string): void {
  for (const e of Deno.readDirSync(markerDir)) {
    if (e.name.startsWith(OWN_MARKER)) Deno.removeSync(join(markerDir, e.name));
  }
}

const watches = new Map<string, WorkspaceWatch>();

/**
 * A consumer of the changes of `workspace`, from the process's one watcher of
 * it (its markers in `markerDir`). Nothing is watched before the first
 * {@link Subscription.target}.
 */
export function watchWorkspace(
  workspace: string,
  markerDir: string,
  watchFs?: WatchFs,
): Subscription {
  // A test's own watcher is not shared.
  if (watchFs) return new WorkspaceWatch(markerDir, watchFs).subscribe();
  let w = watches.get(workspace);
  if (!w) watches.set(workspace, w = new WorkspaceWatch(markerDir, defaultWatchFs));
  return w.subscribe();
}

/**
 * The paths of `workspace` that change from now on, as the process's watcher
 * of it sees them (undo's, started by the first snapshot of a mutating call):
 * what changed while a background job ran. Undefined when no watcher runs.
 */
export function watchFromNow(workspace: string): Subscription | undefined {
  const w = watches.get(workspace);
  if (!w) return undefined;
  const sub = w.subscribe(true);
  if (!sub.watching) {
    sub.close();
    return undefined;
  }
  return sub;
}

/** Stops the process's watcher of `workspace` (its consumers then scan everything). */
export function stopWatching(workspace: string): void {
  watches.get(workspace)?.close();
  watches.delete(workspace);
}

/**
 * How long after the process settled (its first request on its way, its
 * prompt drawn: `undoFor`'s `settled` in `agent/run/workbench.ts`), or else
 * after undo's stage is made (`UndoStageOptions.warm`), a process looks ahead
 * of its first call.
 */
export const LOOK_AHEAD_AFTER_MS = 50;

/**
 * Before a scan that will take many files afresh (a first one of many files,
 * or one whose links to git's packs went stale): git's index for what it
 * tracks, else native hashing (loaded before the reads anyway, but here it
 * may overlap a model's thinking). The listings must be known (`knownDirs`).
 */
async function prepareScan(snap: Snapshotter): Promise<void> {
  if (!((snap.cachedCount() === 0 && snap.manyListed()) || snap.gitStale)) return;
  await snap.useGit();
  if (!snap.usingGit) await snap.hashNatively();
}

/**
 * A scan; with no stat cache (a first snapshot) one that hashes natively when
 * it will read many files, as the listings of its directories say.
 */
async function scanFirst(snap: Snapshotter): Promise<Tree> {
  if (snap.cachedCount() === 0) snap.knownDirs();
  await prepareScan(snap);
  return await snap.scanWhole();
}

/**
 * A look ahead of a session's first call: the directories the stat cache
 * knows (a first session: a walk of them) are watched, then the workspace is
 * scanned in slices between other work ({@link Snapshotter.scanAhead}:
 * nothing is read into the store, which needs the workspace lock), then the
 * new directories are watched too, and, while no call waits, the paths'
 * index made ({@link Snapshotter.indexSoon}). The next {@link snapshotWith} is an
 * update, which reads what changed since the last session (in a first one,
 * everything).
 */
export async function lookAhead(
  sub: Subscription,
  snap: Snapshotter,
  hurry: () => boolean,
  stop: () => boolean = () => false,
): Promise<void> {
  if (sub.watching || sub.gaveUp || stop()) return;
  const t = [performance.now()];
  const dirs = snap.knownDirs();
  t.push(performance.now());
  await sub.target(dirs);
  if (!sub.watching || !(await sub.flush()) || stop()) return;
  sub.take();
  t.push(performance.now());
  await prepareScan(snap);
  t.push(performance.now());
  if (!(await snap.scanAhead(hurry, 8, stop)) || stop()) return;
  t.push(performance.now());
  await sub.target(snap.dirs());
  t.push(performance.now());
  debug("undo", () => {
    const [walk, watch, prepare, scan, more] = t.slice(1).map((x, i) => Math.round(x - t[i]));
    return `look ahead: ${dirs.length} folders walked ${walk} ms, watched ${watch} ms; ` +
      `native hashing and git ${prepare} ms; scan ${scan} ms${hurry() ? " (hurried)" : ""}; ` +
      `new folders watched ${more} ms`;
  });
  // Ahead of the call still: what the call's update would make first (the paths' index) is
  // made now, and memory given back.
  if (!hurry() && !stop()) snap.indexSoon();
}

/**
 * The workspace now: updated from the paths the watcher saw change when it
 * vouches for them, else scanned whole; then the watcher follows the
 * snapshot's directories. The first time, the watcher starts on the
 * directories the stat cache knows (a first snapshot walks them first), before
 * one scan; what changed during it is looked at again after. `how` says which
 * it was.
 */
export async function snapshotWith(
  sub: Subscription | undefined,
  snap: Snapshotter,
  how?: (how: "scan" | "update") => void,
): Promise<Tree> {
  if (!sub || sub.gaveUp) {
    how?.("scan");
    return await scanFirst(snap);
  }
  if (sub.watching) {
    // The directories are stat'ed while the watcher's marker travels, unless its events name
    // every directory whose listing changed.
    const flushing = sub.flush();
    if (!sub.exact) snap.sweep();
    const flushed = await flushing;
    const { paths, complete, exact } = sub.take();
    const tree = flushed && complete ? await snap.update(paths, exact) : undefined;
    if (tree) {
      how?.("update");
      await sub.target(snap.dirs());
      return tree;
    }
  } else {
    // The directories are watched before the first scan, so what changes during it is seen:
    // one scan, then a look at those paths and at directories it found new.
    await sub.target(snap.knownDirs());
    if (sub.watching && await sub.flush()) {
      sub.take();
      await scanFirst(snap);
      await sub.target(snap.dirs());
      const flushed = await sub.flush();
      const { paths, complete, exact } = sub.take();
      const tree = flushed && complete ? await snap.update(paths, exact) : undefined;
      if (tree) {
        how?.("scan");
        await sub.target(snap.dirs());
        return tree;
      }
    }
  }
  how?.("scan");
  const tree = await snap.scanWhole();
  await sub.target(snap.dirs());
  return tree;
}
