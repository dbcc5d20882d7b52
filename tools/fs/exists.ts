/**
 * Whether a path names something, without following symlinks: a dangling link
 * exists (a file cannot be created in its place, and git sees it), and a link
 * to a directory is not that directory. Any error, a missing parent or a
 * refused permission as much as a missing name, counts as absent.
 *
 * @module
 */

/** The path's own file info (a symlink's, not its target's), or null. */
export function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/** `lstat`'s fields that scans look at, as Deno's `FileInfo` gives them (times in epoch ms). */
export interface StatFields {
  isFile: boolean;
  isDirectory: boolean;
  isSymlink: boolean;
  ino: number;
  size: number;
  mtime: number;
  /** Deno gives it in whole seconds. */
  ctime: number;
  mode: number;
  nlink: number;
  dev: number;
}

/**
 * Folders with at least this many names are opened once for the stats of
 * their files ({@link NativeLstat.openDir}): below it, opening and closing one
 * costs more than the walks to it that it spares.
 */
export const DIR_FD_FROM = 8;

/**
 * A native `lstat` (see {@link nativeLstat}): of `path`, or of the name `path`
 * in the folder open as `at` ({@link NativeLstat.openDir}), which spares the
 * system call the walk from `/` to the folder for each of its files. A stat in
 * a folder is for a walk of many files: its object is the same each time,
 * valid until the next such stat.
 */
export interface NativeLstat {
  (path: string, at?: number): StatFields | null;
  /** Opens folder `path` for stats of its names (not through a symlink); -1 when it cannot be. */
  openDir(path: string): number;
  closeDir(fd: number): void;
}

/**
 * An `lstat` by libc's `statx`, where this process may call native code and
 * read everything (the `full` build on Linux), else null: Deno's own costs
 * about as much again as the system call (a `FileInfo`, its dates), and an
 * absent path as much again (an error thrown and caught). It fills
 * {@link StatFields} as Deno would, so a stat cache written by either is
 * trusted by the other. Self-contained: a thread made from text (the stat
 * thread of `tools/search/file_reader.ts`) runs its source as well.
 */
export function nativeLstat(): NativeLstat | null {
  if (Deno.build.os !== "linux") return null;
  let libc;
  try {
    const granted = (name: "ffi" | "read") =>
      Deno.permissions.querySync({ name }).state === "granted";
    if (!granted("ffi") || !granted("read")) return null;
    libc = Deno.dlopen("libc.so.6", {
      statx: { parameters: ["i32", "buffer", "i32", "u32", "buffer"], result: "i32" },
      open: { parameters: ["buffer", "i32"], result: "i32" },
      close: { parameters: ["i32"], result: "i32" },
    }).symbols;
  } catch {
    return null;
  }
  // The fields are read in the machine's order, below: little-endian only (all Deno runs on).
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) return null;
  const { statx, open, close } = libc;
  // struct statx read through typed views, which even code not yet optimized reads without a
  // call (a DataView's getter is one, each field, each file).
  const out = new Uint8Array(256), enc = new TextEncoder();
  const u16 = new Uint16Array(out.buffer), u32 = new Uint32Array(out.buffer);
  const i32 = new Int32Array(out.buffer);
  let path = new Uint8Array(4096);
  // 64-bit fields as two 32-bit halves: no BigInt made for each (`o`: the field's byte offset).
  const u64 = (o: number) => u32[o >> 2] + u32[(o >> 2) + 1] * 2 ** 32;
  const i64 = (o: number) => u32[o >> 2] + i32[(o >> 2) + 1] * 2 ** 32;
  /** `p` as a C string in `path`; false when it holds a NUL (it would end early, at another file). */
  const cString = (p: string) => {
    const n = p.length;
    if (path.length < n * 3 + 1) path = new Uint8Array(n * 3 + 1);
    // ASCII (most names) byte by byte: cheaper than a call out to the encoder for a short name.
    let i = 0;
    for (; i < n; i++) {
      const c = p.charCodeAt(i);
      if (c === 0) return false;
      if (c >= 0x80) break;
      path[i] = c;
    }
    if (i < n) {
      if (p.includes("\0")) return false;
      path[enc.encodeInto(p, path).written] = 0;
    } else path[n] = 0;
    return true;
  };
  const blank = (): StatFields => ({
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
  });
  // A walk's stats in a folder share one object: nothing is made, and nothing left, per file.
  const reused = blank();
  // AT_FDCWD unless a folder is given: then `p` is a name in it, never a path through it.
  const stat = ((p: string, at = -100) => {
    const oneName = p !== "" && p !== "." && p !== ".." && !p.includes("/");
    if ((at !== -100 && !oneName) || !cString(p)) return null;
    // AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS; struct statx's fields at their offsets.
    if (statx(at, path, 0x100, 0x7ff, out) !== 0) return null;
    const mode = u16[28 >> 1], type = mode & 0o170000;
    const major = u32[136 >> 2], minor = u32[140 >> 2];
    const r = at === -100 ? blank() : reused;
    r.isFile = type === 0o100000;
    r.isDirectory = type === 0o40000;
    r.isSymlink = type === 0o120000;
    r.ino = u64(32);
    r.size = u64(40);
    r.mtime = i64(112) * 1000 + Math.floor(u32[120 >> 2] / 1e6);
    r.ctime = i64(96) * 1000;
    r.mode = mode;
    r.nlink = u32[16 >> 2];
    r.dev = (major & 0xfff) * 256 + (minor & 0xff) + ((minor & 0xffffff00) >>> 0) * 4096 +
      ((major & 0xfffff000) >>> 0) * 2 ** 32;
    return r;
  }) as NativeLstat;
  // O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC: a handle on the folder itself, not a symlink's
  // target (a trailing slash would follow one: it goes).
  stat.openDir = (p) => {
    while (p.length > 1 && p.endsWith("/")) p = p.slice(0, -1);
    return cString(p) ? open(path, 0o10000000 | 0o200000 | 0o400000 | 0o2000000) : -1;
  };
  stat.closeDir = (fd) => void close(fd);
  return stat;
}

let native: NativeLstat | null | undefined;

/** Whether {@link lstatFields} calls `statx` itself in this process. */
export function statsNatively(): boolean {
  if (native === undefined) native = nativeLstat();
  return native !== null;
}

/**
 * Folder `path` open for {@link lstatFieldsAt} of its names, when stats are
 * native ({@link statsNatively}) and it is a folder (not a symlink); else -1.
 * Close it with {@link closeDirFd}.
 */
export function openDirFd(path: string): number {
  return statsNatively() ? native!.openDir(path) : -1;
}

export function closeDirFd(fd: number): void {
  if (fd >= 0) native?.closeDir(fd);
}

/**
 * The {@link StatFields} of the name `name` in the folder open as `fd`
 * ({@link openDirFd}), valid until the next call: its object is reused.
 */
export function lstatFieldsAt(fd: number, name: string): StatFields | null {
  return native!(name, fd);
}

/** The path's own {@link StatFields} (a symlink's), or null when absent, as {@link lstatOrNull}. */
export function lstatFields(path: string): StatFields | null {
  if (statsNatively()) return native!(path);
  const st = lstatOrNull(path);
  if (!st) return null;
  return {
    isFile: st.isFile,
    isDirectory: st.isDirectory,
    isSymlink: st.isSymlink,
    ino: st.ino ?? -1,
    size: st.size,
    mtime: st.mtime?.getTime() ?? NaN,
    ctime: st.ctime?.getTime() ?? NaN,
    mode: st.mode ?? 0o644,
    nlink: st.nlink ?? 1,
    dev: st.dev,
  };
}

/**
 * True when `path` names something, a dangling symlink included.
 *
 * @example
 * ```ts
 * Deno.symlinkSync("/nonexistent", "/tmp/dangling");
 * entryExists("/tmp/dangling"); // true
 * ```
 */
export function entryExists(path: string): boolean {
  return lstatOrNull(path) !== null;
}

/**
 * True when `path` is an empty regular file or an empty directory (what a
 * sandbox placeholder or mount stub looks like); `info` spares the lookup.
 */
export function isEmptyEntry(path: string, info = lstatOrNull(path)): boolean {
  if (!info) return false;
  if (info.isFile) return info.size === 0;
  if (!info.isDirectory) return false;
  try {
    for (const _ of Deno.readDirSync(path)) return false;
    return true;
  } catch {
    return false;
  }
}

/** The text of `path`, or null when it cannot be read. */
export function readTextOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** The real path of `path` (symlinks resolved), or null when it does not resolve. */
export function realPathOrNull(path: string): string | null {
  try {
    return Deno.realPathSync(path);
  } catch {
    return null;
  }
}

/**
 * Whether this process may call libc (Linux, `--allow-ffi`), and read
 * everything when `andRead`: what the native paths below, inotify and the
 * memory trim ask first. `nativeLstat` and `nativeRead` ask it themselves:
 * their source runs alone in worker threads.
 */
export function mayCallLibc(andRead = true): boolean {
  if (Deno.build.os !== "linux") return false;
  const granted = (name: "ffi" | "read") =>
    Deno.permissions.querySync({ name }).state === "granted";
  return granted("ffi") && (!andRead || granted("read"));
}

/** A folder's entries ({@link listDir}): each name, and its kind at the same index. */
export interface DirList {
  names: string[];
  /** `d` a folder, `f` a regular file, `l` a symlink, `o` anything else (a FIFO, a socket). */
  kinds: string;
}

/** The character codes of a folder's and a regular file's kind in {@link DirList.kinds}. */
export const KIND_DIR = 100, KIND_FILE = 102;

/** An entry's kind in a {@link DirList}, from its stat (null: gone since, "other"). */
function kindOf(st: { isDirectory: boolean; isFile: boolean; isSymlink: boolean } | null): string {
  return !st ? "o" : st.isDirectory ? "d" : st.isFile ? "f" : st.isSymlink ? "l" : "o";
}

/** getdents64's number where libc's `syscall` can be asked for it. */
const GETDENTS64: Partial<Record<typeof Deno.build.arch, bigint>> = { x86_64: 217n, aarch64: 61n };

let nativeList: ((dir: string) => DirList) | null | undefined;

/**
 * A listing by `getdents64`, where this process may call native code and read
 * everything (the `full` build on Linux), else null: Deno's `readDirSync`
 * makes an object of each entry, 2.5 µs each; this reads a folder's entries
 * into one buffer with a call or two and cuts the names out of it (2,000
 * folders of 100,000 files: 100 ms, where Deno's took 250 ms).
 */
function makeNativeList(): ((dir: string) => DirList) | null {
  const nr = GETDENTS64[Deno.build.arch];
  if (nr === undefined || !mayCallLibc()) return null;
  let c;
  try {
    c = Deno.dlopen("libc.so.6", {
      open: { parameters: ["buffer", "i32"], result: "i32" },
      close: { parameters: ["i32"], result: "i32" },
      syscall: { parameters: ["i64", "i32", "buffer", "usize"], result: "i64" },
    }).symbols;
  } catch {
    return null;
  }
  const enc = new TextEncoder(), dec = new TextDecoder();
  // One character per byte (windows-1252 gives each byte one UTF-16 unit): a batch of entries is
  // decoded once, and an ASCII name is cut out of it, where a call to decode each name costs more
  // than the rest of its listing in code not yet optimized.
  const bytewise = new TextDecoder("windows-1252");
  const buf = new Uint8Array(32 * 1024);
  const u16 = new Uint16Array(buf.buffer);
  let kindBytes = new Uint8Array(1024);
  let path = new Uint8Array(4096);
  // O_RDONLY | O_DIRECTORY | O_CLOEXEC: a symlink to a folder is followed, as Deno's is.
  const FLAGS = 0o200000 | 0o2000000;
  return (dir) => {
    if (dir.includes("\0")) throw new Deno.errors.InvalidData(`a path with a NUL: ${dir}`);
    if (path.length < dir.length * 3 + 1) path = new Uint8Array(dir.length * 3 + 1);
    path[enc.encodeInto(dir, path).written] = 0;
    const fd = c.open(path, FLAGS);
    if (fd < 0) throw new Deno.errors.NotFound(`cannot list ${dir}`);
    const names: string[] = [];
    let k = 0;
    try {
      for (;;) {
        const n = Number(c.syscall(nr, fd, buf, BigInt(buf.length)));
        if (n === 0) break;
        if (n < 0) throw new Error(`cannot list ${dir}`);
        const all = bytewise.decode(buf.subarray(0, n));
        // struct linux_dirent64: inode (8), offset (8), record length (2), type (1), name. Records
        // are 8-byte aligned, so the length is read through a view of 16-bit words.
        for (let at = 0; at < n;) {
          const reclen = u16[(at + 16) >> 1], type = buf[at + 18];
          const from = at + 19;
          let end = from, high = 0;
          for (let b = buf[end]; b !== 0; b = buf[++end]) high |= b;
          at += reclen;
          const name = high < 0x80 ? all.slice(from, end) : dec.decode(buf.subarray(from, end));
          if (name === "." || name === "..") continue;
          names.push(name);
          if (k === kindBytes.length) {
            const more = new Uint8Array(k * 2);
            more.set(kindBytes);
            kindBytes = more;
          }
          kindBytes[k++] = type === 4
            ? 0x64 // d
            : type === 8
            ? 0x66 // f
            : type === 10
            ? 0x6c // l
            : type !== 0
            ? 0x6f // o
            // A file system that does not say: the entry's own stat does.
            : kindOf(lstatOrNull(`${dir}/${name}`)).charCodeAt(0);
        }
      }
    } finally {
      c.close(fd);
    }
    return { names, kinds: bytewise.decode(kindBytes.subarray(0, k)) };
  };
}

/**
 * Entries a process lists through Deno before it loads libc for listings:
 * loading it costs 1.6–1.9 ms, what Deno's listing of about 700 entries costs
 * more (2.5 µs each), so a small walk (a one-shot search that stops in its
 * first folder) never pays for it and a large one hardly notices.
 */
const NATIVE_FROM_ENTRIES = 700;
let listedByDeno = 0;

/**
 * The entries of the folder `dir` (a symlink to one followed), in the file
 * system's order; throws as `Deno.readDirSync` does when it cannot be listed.
 * By `getdents64` where the process may call native code, once it has listed
 * {@link NATIVE_FROM_ENTRIES} entries, else by Deno's; `natively` true or
 * false (tests) chooses at once.
 */
export function listDir(dir: string, natively?: boolean): DirList {
  if (nativeList === undefined && (natively ?? listedByDeno >= NATIVE_FROM_ENTRIES)) {
    nativeList = makeNativeList();
  }
  if (natively !== false && nativeList) return nativeList(dir);
  const names: string[] = [];
  let kinds = "";
  for (const e of Deno.readDirSync(dir)) {
    names.push(e.name);
    kinds += kindOf(e);
  }
  listedByDeno += names.length;
  return { names, kinds };
}
