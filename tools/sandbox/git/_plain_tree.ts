/**
 * The directories of a git directory that the sandbox binds writable in place
 * (`objects/`, `refs/`, `logs/`, `lfs/`, `rr-cache/`) hold only plain files and
 * directories after a call: git appends to `logs/HEAD` through a symlink a
 * command left there, and reads a ref through one, outside the sandbox. After
 * each call crab reads the directories whose entries changed during it and
 * removes any symlink, FIFO, socket or device in them (an allow-list: what is
 * not a file or a directory goes), and hands each file there to a check of its
 * own (refs must hold a ref).
 *
 * Reading every directory would cost tens of milliseconds in a repository of
 * 100,000 loose objects, so the tree of directories is learnt once per process
 * and each call stats the directories it knows: one whose change time falls in
 * the call is read again, and so is one whose subdirectories may have changed
 * since crab last read it (the user's git made a branch folder between calls:
 * its link count moved, or where the file system does not count subdirectories
 * in it, its modification time); a directory crab did not know is read to the
 * bottom. The change time is the witness: a
 * command can set a directory's modification time back (`touch -d`), never its
 * change time. Deno gives the change time in whole seconds, and the kernel's
 * file clock may lag the process clock by a tick, so a change in the second
 * the call started in, or just before, counts as the call's: a directory
 * changed just before the call is read too, which costs a read and misses
 * nothing.
 *
 * @module
 */

import { join } from "../../fs/path.ts";

/** What a check found wrong with one entry, and removed. */
export interface Removed {
  /** The entry's path relative to the tree's root. */
  rel: string;
  /** Why it went: `a symlink`, `a FIFO`, or what the file check said. */
  why: string;
}

/**
 * A check of a plain file in a directory the call changed (`rel` relative to
 * the root, `path` absolute): why it may not stay, or undefined when it may.
 */
export type FileCheck = (rel: string, path: string) => string | undefined;

/** A directory as crab last read it. */
interface Known {
  rel: string;
  path: string;
  ino: number | null;
  /** Its link count then: two more than its subdirectories, where the file system counts them. */
  nlink: number | null;
  /** Its modification time then; NaN to read it again at the next check. */
  mtime: number;
  /** Removed from the tree (it is gone, or another directory stands there). */
  gone: boolean;
}

/** How far the kernel's file clock may lag the process clock (a tick is 1 to 10 ms). */
const CLOCK_LAG_MS = 100;

/** What an entry that is not a plain file or directory is, in words: `a symlink`, `a FIFO`, … */
export function whatIs(info: Deno.FileInfo | null): string {
  if (!info) return "gone";
  if (info.isSymlink) return "a symlink";
  if (info.isFifo) return "a FIFO";
  if (info.isSocket) return "a socket";
  if (info.isCharDevice || info.isBlockDevice) return "a device";
  return "not a file or a directory";
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

function statOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.statSync(path);
  } catch {
    return null;
  }
}

/** One tree bound writable in place, and the directories crab knows in it. */
export class PlainTree {
  readonly root: string;
  #byRel = new Map<string, Known>();
  /** The known directories, parents before children. */
  #list: Known[] = [];
  #learnt = false;
  /** The file system counts subdirectories in a directory's link count (btrfs does not). */
  #counted = false;

  constructor(root: string) {
    this.root = root;
  }

  /**
   * Before a call: learns the tree's directories, the first time. A directory
   * whose link count says it has no subdirectories is not read, where the
   * file system counts them (the root's count matches what it holds).
   */
  prepare(): void {
    if (this.#learnt) return;
    this.#learnt = true;
    const root = statOrNull(this.root);
    if (!root?.isDirectory) return;
    let subdirs = 0;
    try {
      for (const e of Deno.readDirSync(this.root)) if (e.isDirectory) subdirs++;
    } catch {
      return;
    }
    const counted = this.#counted = root.nlink === subdirs + 2;
    const stack = [""];
    while (stack.length) {
      const rel = stack.pop()!;
      const path = rel ? join(this.root, rel) : this.root;
      const info = rel ? lstatOrNull(path) : root;
      if (!info?.isDirectory) continue;
      this.#remember(rel, info);
      if (counted && info.nlink === 2) continue;
      try {
        for (const e of Deno.readDirSync(path)) {
          if (e.isDirectory) stack.push(rel ? `${rel}/${e.name}` : e.name);
        }
      } catch {
        // Unreadable: nothing below it is known, and a change to it is read then.
      }
    }
  }

  /**
   * After a call that started at `since` (ms since the epoch): removes what
   * is not a plain file or directory from every directory changed during the
   * call, and each file there that `checkFile` refuses. Returns what it removed.
   */
  check(since: number, checkFile?: FileCheck): Removed[] {
    const threshold = Math.floor((since - CLOCK_LAG_MS) / 1000) * 1000;
    const removed: Removed[] = [];
    // Directories crab did not know: everything in them is checked, down to the bottom.
    const fresh: string[] = [];
    const known = this.#list.length;
    for (let i = 0; i < known; i++) {
      const k = this.#list[i];
      if (k.gone) continue;
      const info = k.rel ? lstatOrNull(k.path) : statOrNull(k.path);
      if (!info?.isDirectory || info.ino !== k.ino) {
        this.#forget(k.rel);
        // Another directory now stands there: all of it is new.
        if (info?.isDirectory) fresh.push(k.rel);
        continue;
      }
      const ctime = info.ctime?.getTime() ?? Infinity;
      // Changed since crab last read it, by the user: read for new subdirectories.
      const moved = this.#counted ? info.nlink !== k.nlink : info.mtime?.getTime() !== k.mtime;
      if (ctime < threshold && !moved) continue;
      this.#read(k.rel, info, ctime >= threshold, fresh, removed, checkFile);
    }
    while (fresh.length) {
      const rel = fresh.pop()!;
      const info = lstatOrNull(join(this.root, rel));
      if (info?.isDirectory) this.#read(rel, info, true, fresh, removed, checkFile);
    }
    if (this.#list.length > 2 * this.#byRel.size) this.#list = this.#list.filter((k) => !k.gone);
    return removed;
  }

  #remember(rel: string, info: Deno.FileInfo): Known {
    let mtime = info.mtime?.getTime() ?? NaN;
    // Where the link count cannot tell, a directory changed a moment ago may change again
    // within the same tick, unseen: read it again next time.
    if (!this.#counted && Date.now() - mtime <= CLOCK_LAG_MS) mtime = NaN;
    const was = this.#byRel.get(rel);
    if (was) {
      was.ino = info.ino;
      was.nlink = info.nlink;
      was.mtime = mtime;
      return was;
    }
    const k: Known = {
      rel,
      path: rel ? join(this.root, rel) : this.root,
      ino: info.ino,
      nlink: info.nlink,
      mtime,
      gone: false,
    };
    this.#byRel.set(rel, k);
    this.#list.push(k);
    return k;
  }

  #forget(rel: string): void {
    for (const [r, k] of this.#byRel) {
      if (r === rel || r.startsWith(`${rel}/`)) {
        k.gone = true;
        this.#byRel.delete(r);
      }
    }
  }

  /**
   * Reads one directory: removes what does not belong when `during`, and
   * queues subdirectories crab did not know in `fresh`.
   */
  #read(
    rel: string,
    info: Deno.FileInfo,
    during: boolean,
    fresh: string[],
    removed: Removed[],
    checkFile?: FileCheck,
  ): void {
    const { path } = this.#remember(rel, info);
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(path)];
    } catch {
      return;
    }
    for (const e of entries) {
      const erel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) {
        if (!this.#byRel.has(erel)) fresh.push(erel);
        continue;
      }
      if (!during) continue;
      const epath = join(path, e.name);
      const why = e.isFile ? checkFile?.(erel, epath) : whatIs(lstatOrNull(epath));
      if (why === undefined) continue;
      try {
        Deno.removeSync(epath);
        removed.push({ rel: erel, why });
      } catch (err) {
        removed.push({ rel: erel, why: `${why}, which crab could not remove (${err})` });
      }
    }
  }
}
