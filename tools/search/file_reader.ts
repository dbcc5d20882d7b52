/**
 * Many files, or their stats, read in threads beside the calling one, for a
 * reader of a whole workspace. Undo's first snapshot of 100,000 files: about
 * 1.7 s alone, 1.1 s with one thread beside it on two cores, where the
 * calling thread hashes and keeps what the other reads; a scan of the folders
 * whose listings it knows takes half the stats from a thread ({@link StatsAhead}).
 * A thread is a web worker made from text (no file beside crab's bundle or
 * binary, no Node layer), so it starts in about 25 ms and lives as long as
 * its one task.
 *
 * @module
 */

import { DIR_FD_FROM, nativeLstat, type StatFields } from "../fs/exists.ts";

/**
 * A module of `code` (ASCII) by a `data:` URL: a worker's `blob:` URL fails
 * when it is revoked too soon (denoland/deno#26142), and in compiled binaries
 * until a recent fix (denoland/deno#29962); a `data:` URL needs no revoke,
 * and no `--allow-import`.
 */
function moduleUrl(code: string): string {
  return `data:text/javascript;base64,${btoa(code)}`;
}

/** One file read by {@link readFiles}: its bytes, or why not. */
export type FileRead =
  | { bytes: Uint8Array; stat?: ReadStat }
  | { bytes?: undefined; failed: "unreadable" | "too big" };

/**
 * A file's stat taken from the file opened, before its bytes were read (when
 * {@link ReadOptions.stats} asks): as `tools/fs/exists.ts`'s `lstatFields`
 * gives them.
 */
export type ReadStat = Pick<StatFields, "ino" | "size" | "mtime" | "ctime" | "mode" | "nlink">;

/** The fields of a {@link ReadStat} a reader sends back for each file, in this order. */
const STAT_SENT = 6;

/**
 * A file read by libc's `open`, `read` and `close` where this process may
 * call native code and read everything (Linux, the `full` build), else null:
 * no file object, and no operation of Deno's, per file. Reads the file
 * `path` into `buf` from `at`: its length; -1 when it cannot be opened or
 * read or is not a regular file, -2 when it has `max` bytes or more, -3 when
 * `buf` is too small (the caller grows it and asks again). Not a symlink
 * followed, nor a FIFO waited on. With `stat`, the open file's stat is put
 * there from `o` first ({@link ReadStat}'s fields in order, as `nativeLstat`
 * of `tools/fs/exists.ts` takes them). Self-contained: the reader thread runs
 * its source.
 */
export function nativeRead():
  | ((
    path: string,
    buf: Uint8Array,
    at: number,
    max: number,
    stat?: Float64Array,
    o?: number,
  ) => number)
  | null {
  if (Deno.build.os !== "linux") return null;
  let c;
  try {
    const granted = (name: "ffi" | "read") =>
      Deno.permissions.querySync({ name }).state === "granted";
    if (!granted("ffi") || !granted("read")) return null;
    c = Deno.dlopen("libc.so.6", {
      open: { parameters: ["buffer", "i32"], result: "i32" },
      read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
      close: { parameters: ["i32"], result: "i32" },
      statx: { parameters: ["i32", "buffer", "i32", "u32", "buffer"], result: "i32" },
    }).symbols;
  } catch {
    return null;
  }
  const enc = new TextEncoder();
  let name = new Uint8Array(4096);
  const empty = new Uint8Array(1);
  const out = new Uint8Array(256), view = new DataView(out.buffer);
  const u64 = (o: number) => view.getUint32(o, true) + view.getUint32(o + 4, true) * 2 ** 32;
  const i64 = (o: number) => view.getUint32(o, true) + view.getInt32(o + 4, true) * 2 ** 32;
  // O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC
  const FLAGS = 0o4000 | 0o400000 | 0o2000000;
  return (path, buf, at, max, stat, o = 0) => {
    if (path.includes("\0")) return -1;
    if (name.length < path.length * 3 + 1) name = new Uint8Array(path.length * 3 + 1);
    name[enc.encodeInto(path, name).written] = 0;
    const fd = c.open(name, FLAGS);
    if (fd < 0) return -1;
    let len = 0;
    try {
      if (stat) {
        // The open file's own: AT_EMPTY_PATH, STATX_BASIC_STATS; a regular file's only.
        if (c.statx(fd, empty, 0x1000, 0x7ff, out) !== 0) return -1;
        const mode = view.getUint16(28, true);
        if ((mode & 0o170000) !== 0o100000) return -1;
        stat[o] = u64(32);
        stat[o + 1] = u64(40);
        stat[o + 2] = i64(112) * 1000 + Math.floor(view.getUint32(120, true) / 1e6);
        stat[o + 3] = i64(96) * 1000;
        stat[o + 4] = mode;
        stat[o + 5] = view.getUint32(16, true);
      }
      for (;;) {
        const room = buf.length - at - len;
        if (room === 0) return len >= max ? -2 : -3;
        const got = Number(c.read(fd, buf.subarray(at + len), BigInt(room)));
        if (got < 0) return -1;
        if (got === 0) break;
        len += got;
        if (len >= max) return -2;
        // A regular file reads short only at its end.
        if (got < room) break;
      }
    } finally {
      c.close(fd);
    }
    return len;
  };
}

/**
 * The readers' code. Each batch is read into one buffer, handed over, not
 * copied, and given back for a later batch.
 */
const READER = `
const readNatively = (${nativeRead.toString()})();
self.onmessage = (e) => {
  const { id, prefix, paths, sizes, max, spare, native, withStats } = e.data;
  const nativeRead = native ? readNatively : null;
  const n = paths.length;
  const stats = withStats ? new Float64Array(n * ${STAT_SENT}) : undefined;
  let cap = 1024;
  for (const s of sizes) cap += Math.min(s, max) + 1;
  // The buffer of a batch given back, when it is big enough: no new memory per batch.
  let buf = spare && spare.length >= cap ? spare : new Uint8Array(cap);
  const starts = new Int32Array(n), lens = new Int32Array(n);
  let at = 0;
  for (let i = 0; i < n; i++) {
    starts[i] = at;
    let len = 0, file;
    if (nativeRead) {
      for (;;) {
        len = nativeRead(prefix + paths[i], buf, at, max, stats, i * ${STAT_SENT});
        if (len !== -3) break;
        const grown = new Uint8Array(buf.length * 2);
        grown.set(buf.subarray(0, at));
        buf = grown;
      }
      if (len < 0) {
        lens[i] = len;
        continue;
      }
      lens[i] = len;
      at += len;
      continue;
    }
    try {
      // With stats, a regular file's own: not one a symlink names (Deno's open follows it).
      const own = stats ? Deno.lstatSync(prefix + paths[i]) : undefined;
      if (own && !own.isFile) throw new Error("not a regular file");
      file = Deno.openSync(prefix + paths[i]);
      if (stats) {
        const st = file.statSync();
        if (!st.isFile || st.ino !== own.ino) throw new Error("not the file listed");
        const o = i * ${STAT_SENT};
        stats[o] = st.ino ?? -1;
        stats[o + 1] = st.size;
        stats[o + 2] = st.mtime ? st.mtime.getTime() : NaN;
        stats[o + 3] = st.ctime ? st.ctime.getTime() : NaN;
        stats[o + 4] = st.mode ?? 0o644;
        stats[o + 5] = st.nlink ?? 1;
      }
      for (;;) {
        if (at + len === buf.length) {
          if (len >= max) break;
          const grown = new Uint8Array(buf.length * 2);
          grown.set(buf.subarray(0, at + len));
          buf = grown;
        }
        const room = buf.subarray(at + len);
        const got = file.readSync(room);
        if (!got) break;
        len += got;
        // A regular file reads short only at its end.
        if (got < room.length) break;
      }
    } catch {
      lens[i] = -1;
      continue;
    } finally {
      file?.close();
    }
    if (len >= max) {
      lens[i] = -2;
      continue;
    }
    lens[i] = len;
    at += len;
  }
  self.postMessage({ id, buf, starts, lens, stats }, [buf.buffer]);
};
`;

/** How {@link readFiles} reads. */
export interface ReadOptions {
  /** Each file's stat too, taken from the file opened before it is read ({@link ReadStat}). */
  stats?: boolean;
  /** Whether the readers call libc ({@link nativeRead}) where they may (default); false: tests. */
  native?: boolean;
}

/** Files a batch holds at most, and bytes about (a buffer each, in flight and spare). */
const BATCH_FILES = 256, BATCH_BYTES = 256 * 1024;
/** Batches a reader holds at once. */
const IN_FLIGHT = 2;

/**
 * Reads the files `prefix + paths[i]` (about `sizes` bytes each; the prefix
 * spares this thread a string a path) in `workers` threads beside this one,
 * calling `got` with each, in order, on this thread as their batch comes back
 * (the bytes are valid during the call only: their buffer is used again); a
 * file of `max` bytes or more is not read (`too big`). Rejects when a reader
 * cannot start or fails: the files not yet given to `got` are then the
 * caller's to read.
 */
export async function readFiles(
  prefix: string,
  paths: readonly string[],
  sizes: readonly number[],
  max: number,
  got: (i: number, read: FileRead) => void,
  workers = 1,
  opts: ReadOptions = {},
): Promise<void> {
  const native = opts.native ?? true, withStats = opts.stats ?? false;
  if (paths.length === 0) return;
  const batches: [number, number][] = [];
  for (let i = 0; i < paths.length;) {
    let j = i, bytes = 0;
    while (j < paths.length && j - i < BATCH_FILES && bytes < BATCH_BYTES) bytes += sizes[j++];
    batches.push([i, j]);
    i = j;
  }
  const url = moduleUrl(READER);
  const pool: Worker[] = [];
  try {
    // Batches come back in any order; `got` hears them in order.
    const done = new Map<
      number,
      { buf: Uint8Array<ArrayBuffer>; starts: Int32Array; lens: Int32Array; stats?: Float64Array }
    >();
    // Buffers taken, given back to a reader for its next batch.
    const spares: Uint8Array<ArrayBuffer>[] = [];
    let next = 0, given = 0;
    await new Promise<void>((resolve, reject) => {
      const deliver = () => {
        for (let r = done.get(given); r; r = done.get(given)) {
          done.delete(given);
          const [from] = batches[given];
          for (let k = 0; k < r.lens.length; k++) {
            const len = r.lens[k];
            if (len < 0) {
              got(from + k, { failed: len === -1 ? "unreadable" : "too big" });
              continue;
            }
            const bytes = r.buf.subarray(r.starts[k], r.starts[k] + len);
            const st = r.stats, o = k * STAT_SENT;
            got(
              from + k,
              st
                ? {
                  bytes,
                  stat: {
                    ino: st[o],
                    size: st[o + 1],
                    mtime: st[o + 2],
                    ctime: st[o + 3],
                    mode: st[o + 4],
                    nlink: st[o + 5],
                  },
                }
                : { bytes },
            );
          }
          given++;
          spares.push(r.buf);
        }
        if (given === batches.length) resolve();
      };
      const send = (w: Worker) => {
        if (next >= batches.length) return;
        const id = next++;
        const [from, to] = batches[id];
        const spare = spares.pop();
        w.postMessage(
          {
            id,
            prefix,
            paths: paths.slice(from, to),
            sizes: sizes.slice(from, to),
            max,
            spare,
            native,
            withStats,
          },
          spare ? [spare.buffer] : [],
        );
      };
      for (let k = 0; k < workers; k++) {
        const w = new Worker(url, { type: "module" });
        pool.push(w);
        w.onmessage = (e) => {
          done.set(e.data.id, e.data);
          try {
            // The reader's next batch first: it reads while this thread takes what came.
            send(w);
            deliver();
          } catch (err) {
            reject(err);
          }
        };
        w.onerror = (e) => {
          e.preventDefault();
          reject(new Error(`a reader failed: ${e.message}`));
        };
        // A few batches each: the next ones are read while this thread takes one.
        for (let b = 0; b < IN_FLIGHT; b++) send(w);
      }
    });
  } finally {
    for (const w of pool) w.terminate();
  }
}

/** Fields a stat takes in the shared columns. */
const STAT_FIELDS = 7;
/** A row's state: not taken; absent; a file, directory, symlink, other; a thread's claim; ours. */
const S_NONE = 0, S_ABSENT = 2, S_FILE = 3, S_DIR = 4, S_LINK = 5, S_OTHER = 6;
const S_THEIRS = 8, S_OURS = 9;

/**
 * The stat-taker's code: from the last path back, each one not claimed yet is
 * claimed, stat'ed and published (fields first, then its state, atomically).
 * A folder's names come joined, and are cut apart when its turn comes.
 */
const STATTER = `
const nativeLstat = ${nativeLstat.toString()};
self.onmessage = (e) => {
  const { prefix, groups, stats, state } = e.data;
  const native = nativeLstat();
  let base = state.length;
  for (let g = groups.length - 1; g >= 0; g--) {
    const [dir, joined, kinds] = groups[g];
    const names = kinds.length === 0 ? [] : joined.split("\\0");
    base -= names.length;
    // A folder of many names is opened once: each stat then looks up its name alone.
    const fd = native && names.length >= ${DIR_FD_FROM} ? native.openDir(prefix + dir) : -1;
    for (let i = names.length - 1; i >= 0; i--) {
      const r = base + i;
      if (kinds[i] === "d" || Atomics.compareExchange(state, r, ${S_NONE}, ${S_THEIRS}) !== ${S_NONE}) continue;
      let st;
      try {
        st = fd >= 0
          ? native(names[i], fd)
          : native
          ? native(prefix + dir + names[i])
          : Deno.lstatSync(prefix + dir + names[i]);
      } catch {
        st = null;
      }
      if (!st) {
        Atomics.store(state, r, ${S_ABSENT});
        continue;
      }
      const o = r * ${STAT_FIELDS};
      stats[o] = st.ino ?? -1;
      stats[o + 1] = st.size;
      stats[o + 2] = typeof st.mtime === "number" ? st.mtime : st.mtime ? st.mtime.getTime() : NaN;
      stats[o + 3] = typeof st.ctime === "number" ? st.ctime : st.ctime ? st.ctime.getTime() : NaN;
      stats[o + 4] = st.mode ?? 0o644;
      stats[o + 5] = st.nlink ?? 1;
      stats[o + 6] = st.dev ?? 0;
      Atomics.store(state, r, st.isFile ? ${S_FILE} : st.isDirectory ? ${S_DIR} : st.isSymlink ? ${S_LINK} : ${S_OTHER});
    }
    if (fd >= 0) native.closeDir(fd);
  }
  self.postMessage("done");
  self.close();
};
`;

/** The names of one folder for {@link StatsAhead}: its path (`a/b/`), names, and their kinds (`d`: skipped). */
export type StatGroup = readonly [dir: string, names: readonly string[], kinds: string];

/**
 * Stats of known paths taken by a thread beside this one, from the last path
 * back, while this thread walks from the first: a scan that would `lstat`
 * each of 100,000 files does half, on two cores. Each path is taken once, by
 * whichever side claims it first; one the thread has not published is the
 * caller's to stat. A stat is as old as the moment the thread took it, after
 * {@link StatsAhead.start}.
 */
export class StatsAhead {
  #worker: Worker;
  #stats: Float64Array;
  #state: Int32Array;
  #reused: StatFields = {
    isFile: false,
    isDirectory: false,
    isSymlink: false,
    ino: 0,
    size: 0,
    mtime: 0,
    ctime: 0,
    mode: 0,
    nlink: 0,
    dev: 0,
  };
  #ended!: () => void;
  /** Settles when the thread has gone through every path, or was stopped. */
  readonly done: Promise<void> = new Promise((resolve) => this.#ended = resolve);

  private constructor(worker: Worker, stats: Float64Array, state: Int32Array) {
    this.#worker = worker;
    this.#stats = stats;
    this.#state = state;
    worker.onmessage = () => this.#ended();
    worker.onerror = (e) => {
      e.preventDefault();
      this.#ended();
    };
  }

  /**
   * Starts taking the stats of the groups' paths, `prefix + dir + name`, each
   * known by its index among all the groups' names (a directory's index is
   * skipped); undefined when no thread can start.
   */
  static start(prefix: string, groups: readonly StatGroup[]): StatsAhead | undefined {
    let n = 0;
    for (const [, names] of groups) n += names.length;
    const stats = new Float64Array(new SharedArrayBuffer(8 * STAT_FIELDS * n));
    const state = new Int32Array(new SharedArrayBuffer(4 * n));
    try {
      const worker = new Worker(moduleUrl(STATTER), { type: "module" });
      // Each folder's names as one string (NUL is the one byte no name holds), not a string each.
      const joined = groups.map(([dir, names, kinds]) => [dir, names.join("\0"), kinds]);
      worker.postMessage({ prefix, groups: joined, stats, state });
      return new StatsAhead(worker, stats, state);
    } catch {
      return undefined;
    }
  }

  /**
   * The stat of path `i` if the thread took it (null: it was absent);
   * undefined when it did not, and now will not: stat it yourself. Valid
   * until the next call: its object is reused.
   */
  take(i: number): StatFields | null | undefined {
    let s = Atomics.load(this.#state, i);
    if (s === S_NONE) {
      s = Atomics.compareExchange(this.#state, i, S_NONE, S_OURS);
      if (s === S_NONE) return undefined;
    }
    if (s === S_ABSENT) return null;
    if (s < S_FILE || s > S_OTHER) return undefined;
    const o = i * STAT_FIELDS, f = this.#stats, r = this.#reused;
    r.isFile = s === S_FILE;
    r.isDirectory = s === S_DIR;
    r.isSymlink = s === S_LINK;
    r.ino = f[o];
    r.size = f[o + 1];
    r.mtime = f[o + 2];
    r.ctime = f[o + 3];
    r.mode = f[o + 4];
    r.nlink = f[o + 5];
    r.dev = f[o + 6];
    return r;
  }

  /** Ends the thread, if it has not ended. */
  stop(): void {
    this.#worker.terminate();
    this.#ended();
  }
}
