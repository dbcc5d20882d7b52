/**
 * A watcher of directories made from Linux's inotify through libc, where the
 * process may call native code (`--allow-ffi`, the `full` build): the
 * `Deno.watchFs` that `watch.ts` uses elsewhere hands each directory to a
 * thread of its own and waits for it to come back, about 65 µs a directory
 * (0.13 s for 2,000 when a session starts) and as long again to close; here
 * each is one `inotify_add_watch` of a few µs, and closing is one `close`.
 *
 * Nothing blocks and nothing waits on another thread: the descriptor is
 * non-blocking, and its queue is read when asked ({@link InotifyWatcher.drain},
 * which a flush calls right after it wrote its marker: the kernel queued the
 * marker's event before the write returned) and every {@link DRAIN_MS} by a
 * timer that never keeps the process alive, so a long command cannot fill
 * the kernel's queue unread. An overflowed queue is reported as a `rescan`
 * event, as `Deno.watchFs` does; the caller then scans everything.
 *
 * @module
 */

import { mayCallLibc } from "../../tools/fs/exists.ts";

/** How often the queue is read while nobody asks (the kernel keeps 16,384 events by default). */
export const DRAIN_MS = 50;

const IN_NONBLOCK = 0o4000;
const IN_CLOEXEC = 0o2000000;
/** What `Deno.watchFs` watches on Linux, on the directory itself, not followed if a link. */
const MASK = 0x2 /* MODIFY */ | 0x4 /* ATTRIB */ | 0x8 /* CLOSE_WRITE */ |
  0x40 /* MOVED_FROM */ | 0x80 /* MOVED_TO */ | 0x100 /* CREATE */ | 0x200 /* DELETE */ |
  0x400 /* DELETE_SELF */ | 0x800 /* MOVE_SELF */ | 0x1000000 /* ONLYDIR */ |
  0x2000000 /* DONT_FOLLOW */;
const IN_Q_OVERFLOW = 0x4000;
const IN_IGNORED = 0x8000;
/** `struct inotify_event` before its name. */
const EVENT_HEAD = 16;

const SYMBOLS = {
  inotify_init1: { parameters: ["i32"], result: "i32" },
  inotify_add_watch: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let libc: Libc | null | undefined;

/** libc's inotify calls, or null where they cannot be had (not Linux, no `--allow-ffi`). */
function inotifyCalls(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (!mayCallLibc(false)) return null;
  try {
    libc = Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  } catch {
    // No glibc here: Deno's watcher does.
  }
  return libc;
}

/** Whether {@link watchWithInotify} can be used in this process. */
export function inotifyAvailable(): boolean {
  return inotifyCalls() !== null;
}

/** What `watch.ts` needs of a watcher, and a way to read what is queued now. */
export interface InotifyWatcher extends AsyncIterable<Deno.FsEvent> {
  /** Reads every event queued now and hands it to the iterator. */
  drain(): void;
  /** Its events name every entry that came, went or changed, links too (`watch.ts`'s `exact`). */
  readonly exact: true;
  unref(): void;
  close(): void;
}

/**
 * Watches the directories `paths` (absolute, real), not recursively. Throws
 * when one cannot be watched (gone since, or past the watch limit), watching
 * nothing then.
 */
export function watchWithInotify(paths: readonly string[]): InotifyWatcher {
  const c = inotifyCalls();
  if (!c) throw new Error("inotify cannot be used in this process");
  const fd = c.inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw new Error("inotify_init1 failed");
  const enc = new TextEncoder();
  const byWatch = new Map<number, string>();
  let path = new Uint8Array(4096);
  for (const p of paths) {
    if (p.includes("\0")) {
      c.close(fd);
      throw new Error(`cannot watch a path with a NUL in it: ${JSON.stringify(p)}`);
    }
    const need = p.length * 3 + 1;
    if (path.length < need) path = new Uint8Array(need);
    const { written } = enc.encodeInto(p, path);
    path[written] = 0;
    const wd = c.inotify_add_watch(fd, path, MASK);
    if (wd < 0) {
      c.close(fd);
      throw new Error(`cannot watch ${p}`);
    }
    if (!byWatch.has(wd)) byWatch.set(wd, p);
  }
  const dec = new TextDecoder();
  const buf = new Uint8Array(64 * 1024);
  const view = new DataView(buf.buffer);
  let queue: Deno.FsEvent[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const drain = () => {
    if (closed) return;
    for (;;) {
      const n = Number(c.read(fd, buf, BigInt(buf.length)));
      if (n <= 0) break;
      for (let at = 0; at + EVENT_HEAD <= n;) {
        const wd = view.getInt32(at, true), mask = view.getUint32(at + 4, true);
        const len = view.getUint32(at + 12, true);
        const dir = byWatch.get(wd);
        if (mask & IN_Q_OVERFLOW) {
          queue.push({ kind: "other", paths: [], flag: "rescan" });
        } else if (dir !== undefined && !(mask & IN_IGNORED)) {
          let end = at + EVENT_HEAD;
          while (end < at + EVENT_HEAD + len && buf[end] !== 0) end++;
          const name = dec.decode(buf.subarray(at + EVENT_HEAD, end));
          queue.push({ kind: "any", paths: [name ? `${dir}/${name}` : dir] });
        }
        at += EVENT_HEAD + len;
      }
    }
    if (queue.length && wake) {
      const w = wake;
      wake = undefined;
      w();
    }
  };
  const timer = setInterval(drain, DRAIN_MS);
  Deno.unrefTimer(timer);
  return {
    exact: true,
    drain,
    // The timer never holds the process; a pending read is a promise, nothing more.
    unref() {},
    close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      c.close(fd);
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const got = queue;
        queue = [];
        for (const e of got) yield e;
        if (queue.length) continue;
        if (closed) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}
