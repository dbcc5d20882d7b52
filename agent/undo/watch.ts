/**
 * Which paths of a workspace changed since the last look, from one file watcher
 * per workspace per process (`Deno.watchFs`, recursive: on Linux one inotify
 * descriptor, whose events arrive in order).
 *
 * The watcher also watches a private directory of markers under the undo store.
 * {@link Subscription.flush} writes a fresh marker and waits for its event: once
 * it arrives, every change made before the marker was written has been
 * delivered. A subscription vouches for its set of changed paths only while
 * nothing was lost: a queue overflow (an event flagged `rescan`), a watcher
 * that failed or ended (the inotify watch limit on a huge tree), a flush that
 * timed out. Then {@link Subscription.take} says so, and the caller scans
 * everything.
 *
 * The watcher never keeps the process alive: its pending read is unref'd.
 *
 * @module
 */

/** How long a flush waits for its marker's event before giving up (the caller scans everything). */
export const FLUSH_TIMEOUT_MS = 200;

/** What `Deno.watchFs` returns, as far as this module uses it. */
export type Watcher = AsyncIterable<Deno.FsEvent> & { unref?(): void; close(): void };

/** Starts a watcher of `paths` (replaceable by tests: a failing or overflowing watcher). */
export type WatchFs = (paths: string[]) => Watcher;

const defaultWatchFs: WatchFs = (paths) => Deno.watchFs(paths, { recursive: true });

/** The changed paths one consumer has not taken yet. */
export interface Subscription {
  /**
   * Waits until every change made before now has been delivered. False when
   * that cannot be known: the watcher is dead, or its marker did not come back
   * within {@link FLUSH_TIMEOUT_MS}.
   */
  flush(): Promise<boolean>;
  /**
   * The absolute paths changed since the last take, and whether that set is
   * complete (nothing overflowed, the watcher is alive, every flush since the
   * last take succeeded). Empties the set.
   */
  take(): { paths: Set<string>; complete: boolean };
}

interface Sub {
  paths: Set<string>;
  complete: boolean;
}

/** One watcher of a workspace and its marker directory. */
class WorkspaceWatch {
  readonly workspace: string;
  markerDir: string;
  #watcher: Watcher | undefined;
  #dead = false;
  #subs = new Set<Sub>();
  #waiting = new Map<string, () => void>();
  #seq = 0;

  constructor(workspace: string, markerDir: string, watchFs: WatchFs) {
    this.workspace = workspace;
    this.markerDir = markerDir;
    try {
      Deno.mkdirSync(markerDir, { recursive: true, mode: 0o700 });
      // Events name real paths: the marker is waited for by its real path.
      this.markerDir = Deno.realPathSync(markerDir);
      this.#watcher = watchFs([workspace, markerDir]);
    } catch {
      this.#dead = true;
      return;
    }
    this.#pump(this.#watcher);
  }

  get dead(): boolean {
    return this.#dead;
  }

  subscribe(): Subscription {
    const sub: Sub = { paths: new Set(), complete: !this.#dead };
    this.#subs.add(sub);
    return {
      flush: async () => {
        const ok = await this.#flush();
        if (!ok) sub.complete = false;
        return ok;
      },
      take: () => {
        const out = { paths: sub.paths, complete: sub.complete && !this.#dead };
        sub.paths = new Set();
        sub.complete = !this.#dead;
        return out;
      },
    };
  }

  /** Reads events until the watcher ends or fails; then everyone scans everything. */
  async #pump(w: Watcher): Promise<void> {
    try {
      const it = w[Symbol.asyncIterator]();
      for (;;) {
        const next = it.next();
        // The read pending between events must not keep the process alive.
        w.unref?.();
        const r = await next;
        if (r.done) break;
        const e = r.value;
        if (e.flag === "rescan") {
          for (const s of this.#subs) s.complete = false;
        }
        for (const p of e.paths) {
          const wake = this.#waiting.get(p);
          if (wake) {
            wake();
            continue;
          }
          for (const s of this.#subs) s.paths.add(p);
        }
      }
    } catch {
      // A watcher that failed vouches for nothing more.
    }
    this.#die();
  }

  #die(): void {
    this.#dead = true;
    for (const s of this.#subs) s.complete = false;
    for (const wake of this.#waiting.values()) wake();
    try {
      this.#watcher?.close();
    } catch {
      // Already closed.
    }
  }

  async #flush(): Promise<boolean> {
    if (this.#dead) return false;
    const marker = `${this.markerDir}/${Deno.pid}-${++this.#seq}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let arrived = false;
    const seen = new Promise<void>((resolve) => {
      this.#waiting.set(marker, () => {
        arrived = true;
        resolve();
      });
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    });
    try {
      Deno.writeFileSync(marker, new Uint8Array());
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
    return arrived && !this.#dead;
  }

  close(): void {
    this.#die();
  }
}

const watches = new Map<string, WorkspaceWatch>();

/**
 * A consumer of the changes of `workspace`, from the process's one watcher of
 * it (started on first use, with its markers in `markerDir`). Start it before
 * the first full scan: changes before it are not reported.
 */
export function watchWorkspace(
  workspace: string,
  markerDir: string,
  watchFs: WatchFs = defaultWatchFs,
): Subscription {
  let w = watches.get(workspace);
  if (!w || (watchFs !== defaultWatchFs)) {
    w = new WorkspaceWatch(workspace, markerDir, watchFs);
    // A test's own watcher is not shared.
    if (watchFs === defaultWatchFs) watches.set(workspace, w);
  }
  return w.subscribe();
}

/** Stops the process's watcher of `workspace` (its consumers then scan everything). */
export function stopWatching(workspace: string): void {
  watches.get(workspace)?.close();
  watches.delete(workspace);
}
