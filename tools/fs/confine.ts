/**
 * Opening and replacing files so that what is touched is what the workspace
 * check (`workspace.ts`) decided on, even while another process renames
 * directories on the way, e.g. swaps a workspace directory with a symlink to an
 * outside one in a tight `renameat2(RENAME_EXCHANGE)` loop.
 *
 * What Deno 2.9 allows, measured: every file system call takes a path that the
 * kernel resolves again from `/` (relative paths are made absolute with
 * `getcwd()`, `..` is removed as text). There is no `openat()`, `FsFile` has no
 * descriptor, and the kernel's name of an open file (`/proc/self/fd/N`, which
 * `node:fs` descriptors would allow) is refused without `--allow-all`. So no check
 * can be bound to the directory a path was checked in; each check is one more
 * path lookup that a swap can redirect. What is done instead:
 *
 * - **Writes are anchored.** A write creates a fresh directory `.crab-tmp-p<pid>-<random>`
 *   next to the target, then a symlink `root` → `../..…` in it (as many levels as
 *   the directory lies below the workspace root). Deno's `stat`, `rename`, `mkdir`
 *   and `symlink` hand such paths to the kernel as they are, so `stat(tmp/root)` is
 *   the workspace root only if the directory created really lies inside the
 *   workspace (`..` follows the directory itself, not names). Only once that is
 *   proven does anything else go in: a symlink `up` → `..`, then the temp file,
 *   created with `node:fs` (whose open, unlike Deno's, also passes the path as it
 *   is) and written through its descriptor; `rename(tmp/n, tmp/up/NAME)` puts it
 *   in the parent of that very directory. A swap on the way can only make a step
 *   fail with "not found" (the random name exists nowhere else), never move it
 *   outside. This holds.
 * - **A temp directory is removed wherever it landed.** A swap during the `mkdir`
 *   puts the directory (and then its `root` link, never content) outside. Removal
 *   retries, bounded: through the path (which a swap loop sends back there); by
 *   moving the directory in one step to the workspace root, which no swap below
 *   the root redirects, and removing it there; and, when it sits outside on
 *   another file system, through where the path leads once it finds it (a path no
 *   process in the workspace can redirect). The random name means no other
 *   directory is touched. One that still cannot be reached is tried again at the
 *   next writes.
 * - **Reads are checked until a swap would have to win many coin tosses.** After
 *   the open, the path is checked 20 times for one of two opposite things, picked
 *   at random each time: that it resolves to itself through real directories
 *   (fails while a directory on the way is a symlink), and that the name holds the
 *   opened file, same device and inode (fails unless a swap is in effect, when the
 *   open went astray). A file opened outside passes only if the swap state matches
 *   each random pick: about 1 in a million for an attacker that cannot see the
 *   picks (lookups raise no inotify events). The order must be random: a swap loop
 *   whose period matched a fixed alternation passed 5 of 1,000 trials in a test.
 *   This narrows the race; only a descriptor-relative open would close it.
 *
 * What the anchor does not cover: a process that learns the random name and puts
 * its own look-alike directory (with a hostile `up`) in its place between the
 * checks and the rename. That is detected after the rename (the name does not
 * hold the temp file) and reported, but cannot be undone. Writes approved outside
 * the workspace are not anchored to it (they are not confined to begin with).
 *
 * A killed write leaves its temp directory behind; the next write into the same
 * directory removes those of processes that are gone (or that are older than an hour).
 * A process that swaps a directory once, during the `mkdir`, and back for good
 * before the removal can leave an empty directory (and its `root` link) outside
 * where no path leads any more; never the content. (No sandboxed command runs
 * during a write at all: the workspace lock, `call/workspace_lock.ts`.)
 *
 * @module
 */

import {
  closeSync,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsync,
  openSync,
  renameSync,
  rmdirSync,
  unlinkSync,
  write,
} from "node:fs";
import process from "node:process";
import { basename, dirname, join, relative, sep } from "./path.ts";
import { ToolError } from "../tool.ts";
import type { ResolvedPath } from "./workspace.ts";
import { type Identity, pathChanged, sameFile } from "./open_checked.ts";

export { openChecked, type Opened } from "./open_checked.ts";

/** Prefix of the temp directories an atomic write renames out of. */
export const TEMP_PREFIX = ".crab-tmp-";

/** A temp directory older than this is stale whoever made it (pid reuse). */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/** The OS error codes of a full disk or quota: the write cannot succeed as is. */
const NO_SPACE = new Set(["ENOSPC", "EDQUOT"]);

/** What a replaced file keeps: mode and owner. */
export interface Keep {
  mode: number | null;
  uid: number | null;
  gid: number | null;
}

/** Where and what {@link replaceFile} writes. */
export interface Replacement {
  /** The target, resolved and approved. */
  target: ResolvedPath;
  /** Real path of the workspace root. */
  workspace: string;
  data: Uint8Array;
  /** The file being replaced, whose mode and owner the new one keeps; null for a new file. */
  existing: Keep | null;
}

/** Bytes handed to one write call. */
const WRITE_CHUNK = 1 << 20;

function writeAsync(fd: number, data: Uint8Array, off: number, len: number): Promise<number> {
  return new Promise((resolve, reject) =>
    write(fd, data, off, len, null, (e, n) => e ? reject(e) : resolve(n))
  );
}

function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (e) => e ? reject(e) : resolve()));
}

/** Mode of a new file under this process's umask, learned at the first write. */
let newFileMode: number | undefined;

/**
 * Writes `data` to the target atomically: a temp file, created 0600 (narrower if
 * the target is) in an anchored temp directory next to the target, written,
 * given the final mode and owner, fsynced, then renamed over the target (and the
 * directory synced). A reader or a crash sees the old file or the new one, never
 * a mix. On failure the temp directory is removed and the target is untouched; a
 * full disk is a `no_space` error. Returns what the new file is, as `lstat` sees it.
 */
export async function replaceFile(r: Replacement): Promise<Deno.FileInfo> {
  const { target, data } = r;
  const dir = dirname(target.real);
  const name = basename(target.real);
  retryStrays();
  removeStaleTemps(dir);
  const tmp = join(dir, `${TEMP_PREFIX}p${Deno.pid}-${crypto.randomUUID().slice(0, 13)}`);
  let made = false;
  let now: Deno.FileInfo;
  try {
    // Metadata steps are synchronous (microseconds each); only the data and fsync wait.
    Deno.mkdirSync(tmp, { mode: 0o700 });
    made = true;
    const anchored = anchor(tmp, dir, r.workspace, target.inside);
    if (anchored === "astray") throw pathChanged(target.display, "write");
    // Proven inside (or approved outside): only now does anything else go in.
    const mode = r.existing?.mode != null ? r.existing.mode & 0o7777 : defaultMode(tmp);
    const temp = join(tmp, "n");
    // Never wider than the target while the content goes in (the umask may narrow it more).
    const fd = openSync(temp, "wx", 0o600 & mode);
    let id: Identity;
    try {
      let off = 0;
      while (off < data.byteLength) {
        off += await writeAsync(fd, data, off, Math.min(data.byteLength - off, WRITE_CHUNK));
      }
      if (r.existing?.uid != null && r.existing.gid != null) {
        try {
          // Best effort: only root (or the owner, for the group) may hand a file back.
          fchownSync(fd, r.existing.uid, r.existing.gid);
        } catch {
          // Kept as ours.
        }
      }
      // After chown, which clears set-id bits; the final mode is in place before the rename.
      fchmodSync(fd, mode);
      await fsyncAsync(fd);
      const st = fstatSync(fd);
      id = { dev: st.dev, ino: st.ino };
    } finally {
      closeSync(fd);
    }
    Deno.renameSync(temp, anchored ? join(tmp, "up", name) : target.real);
    now = Deno.lstatSync(target.real);
    if (!sameFile(now, id)) {
      throw new ToolError(
        "path_changed",
        `Cannot confirm the write of "${target.display}": another process changed the path during the write`,
        "Read the file to see what it holds now; other processes are renaming files here.",
      );
    }
  } catch (e) {
    // After the temp directory exists, "not found" means a step was sent elsewhere by a swap.
    if (made && isNotFound(e)) throw pathChanged(target.display, "write");
    throw spaceError(e, target.display) ?? e;
  } finally {
    // Parked at the workspace root, no swap below it can hide or move the directory.
    const park = target.inside ? join(r.workspace, `${basename(tmp)}-gone`) : undefined;
    if (made && !(await removeTempAnywhere(tmp, park))) {
      strays.set(tmp, { park, left: STRAY_TRIES });
    }
  }
  await syncDir(dir);
  return now;
}

/** Tries of the proof that the temp directory is inside: a swap may hide it from one lookup. */
const PROOF_TRIES = 3;

/**
 * Anchors the temp directory: for a target inside the workspace, puts `root` → the
 * workspace root (by `..` steps) into it and proves with it that the directory lies
 * inside ("astray" when it does not, or a swap hides it); then `up` → `..`. True
 * when anchored; false when the file system has no symlinks (the rename then goes
 * by name, unanchored).
 */
function anchor(tmp: string, dir: string, workspace: string, inside: boolean): boolean | "astray" {
  const link = (target: string, at: string): boolean => {
    try {
      Deno.symlinkSync(target, join(tmp, at));
      return true;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw e;
      return false;
    }
  };
  if (inside) {
    const depth = relative(workspace, dir).split(sep).filter((s) => s !== "").length + 1;
    if (!link(Array(depth).fill("..").join("/"), "root")) return false;
    let proven = false;
    for (let i = 0; i < PROOF_TRIES && !proven; i++) proven = rootIs(join(tmp, "root"), workspace);
    if (!proven) return "astray";
  }
  return link("..", "up");
}

function rootIs(link: string, workspace: string): boolean {
  try {
    return sameFile(Deno.statSync(link), Deno.statSync(workspace));
  } catch {
    return false;
  }
}

/** The mode a new file gets here (0666 minus the umask), learned once in a temp directory. */
function defaultMode(tmp: string): number {
  if (newFileMode === undefined) {
    const probe = join(tmp, "m");
    Deno.mkdirSync(probe, { mode: 0o777 });
    const dirMode = (Deno.lstatSync(probe).mode ?? 0o755) & 0o777;
    Deno.removeSync(probe);
    newFileMode = 0o666 & dirMode;
  }
  return newFileMode;
}

/** Entries a temp directory may hold. */
const TEMP_ENTRIES = ["n", "up", "root", "m"];

/**
 * Removals of one temp directory a call tries (each a handful of system calls), at
 * once and in all, and for how long.
 */
const QUICK_TRIES = 16;
const REMOVE_TRIES = 400;
const REMOVE_MS = 200;
/** Later writes that try again to remove a temp directory its own write could not. */
const STRAY_TRIES = 16;

/** Temp directories of this process that could not be removed yet, with the tries left. */
const strays = new Map<string, { park: string | undefined; left: number }>();

function isNotFound(e: unknown): boolean {
  return e instanceof Deno.errors.NotFound || (e as { code?: unknown }).code === "ENOENT";
}

/**
 * Removes a temp directory that a swap may have put outside the workspace, or
 * hides from one lookup (see {@link removeOnce}), trying again while a swap sends
 * the tries elsewhere. Bounded; true once it is removed.
 */
async function removeTempAnywhere(tmp: string, park: string | undefined): Promise<boolean> {
  const t0 = performance.now();
  for (let i = 0; i < REMOVE_TRIES; i++) {
    if (removeOnce(tmp, park)) return true;
    if (performance.now() - t0 > REMOVE_MS) break;
    // A swapper can sit in one state for a time slice: past the first tries, let time pass.
    if (i >= QUICK_TRIES) await new Promise((r) => setTimeout(r, 1));
  }
  return false;
}

/**
 * One try at removing a temp directory: through `tmp`; else moved in one step to
 * `park` (a path in the workspace root, which no swap below the root redirects)
 * and removed there; else through where `tmp` leads when it finds the directory
 * outside the workspace on another file system (a path no process in the
 * workspace can move).
 */
function removeOnce(tmp: string, park: string | undefined): boolean {
  if (removeTemp(tmp)) return true;
  if (park !== undefined) {
    try {
      renameSync(tmp, park);
    } catch {
      // Not where the path leads now (or on another file system).
    }
    // Also when an earlier try parked it and could not remove it there.
    if (removeTemp(park)) return true;
  }
  let at: string;
  try {
    at = Deno.realPathSync(tmp);
  } catch {
    return false; // not where the path leads now
  }
  // The random name is the directory's: any other last name is not crab's to remove.
  return at !== tmp && basename(at) === basename(tmp) && removeTemp(at);
}

/** Tries once more to remove the temp directories earlier writes could not. */
function retryStrays(): void {
  for (const [tmp, stray] of strays) {
    if (removeOnce(tmp, stray.park) || stray.left <= 1) strays.delete(tmp);
    else stray.left--;
  }
}

/**
 * Removes a temp directory made by {@link replaceFile} (or an older single temp
 * file); true when it is gone from where the path leads now.
 */
function removeTemp(path: string): boolean {
  // node:fs, because its unlink and rmdir are one system call each (Deno's remove
  // looks the path up twice, which a swap can split).
  try {
    unlinkSync(path); // an older single temp file
    return true;
  } catch {
    // A directory, as expected.
  }
  for (const entry of TEMP_ENTRIES) {
    try {
      if (entry === "m") rmdirSync(join(path, entry));
      else unlinkSync(join(path, entry));
    } catch {
      // Not there.
    }
  }
  try {
    // Not recursive: a directory holding anything else was not made by crab.
    rmdirSync(path);
    return true;
  } catch {
    // Gone already (or moved by a swap), or not ours.
    return false;
  }
}

/** Whether process `pid` exists; undefined when this process may not ask. */
function isAlive(pid: number): boolean | undefined {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === "ESRCH") return false;
    if (code === "EPERM") return true;
    return undefined;
  }
}

/**
 * Removes temp directories (and older temp files) in `dir` left by writes that
 * were killed: those of processes that no longer exist, and any older than an
 * hour. Never throws.
 */
export function removeStaleTemps(dir: string, now = Date.now()): number {
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
  } catch {
    return 0;
  }
  let removed = 0;
  for (const n of names) {
    const pid = /^\.crab-tmp-p(\d+)-/.exec(n)?.[1];
    if (pid !== undefined && Number(pid) === Deno.pid) continue;
    const path = join(dir, n);
    let mtime: number;
    try {
      mtime = Deno.lstatSync(path).mtime?.getTime() ?? now;
    } catch {
      continue;
    }
    const old = now - mtime > STALE_TEMP_MS;
    if (!old && (pid === undefined || isAlive(Number(pid)) !== false)) continue;
    removeTemp(path);
    removed++;
  }
  return removed;
}

function spaceError(e: unknown, display: string): ToolError | undefined {
  const code = (e as { code?: unknown }).code;
  if (typeof code === "string" && NO_SPACE.has(code)) {
    return new ToolError(
      "no_space",
      `Cannot write "${display}": no space left on the device (${code})`,
      "The file was left as it was. Ask the user to free disk space, then retry.",
    );
  }
  if (code === "EACCES" || code === "EPERM") {
    return new ToolError(
      "os_permission_denied",
      `Cannot write "${display}": the operating system refused access (${code})`,
      "Check file permissions, or choose another path.",
    );
  }
  return undefined;
}

/** Makes a rename durable; not every file system can sync a directory, so best effort. */
async function syncDir(dir: string): Promise<void> {
  try {
    using d = Deno.openSync(dir, { read: true });
    await d.sync();
  } catch {
    // The rename happened; only its durability across a power loss is at stake.
  }
}
