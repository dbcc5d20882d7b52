/**
 * Undo's own store: file contents by sha256 (`objects/ab/cdef…`), one journal
 * record per mutating call that changed something (`calls/RUN-SEQ.json`), one
 * record per undo (`undos/`, for redo), and the stat cache of the last scan
 * (`state.json`). It lives under crab's data dir, keyed by the workspace's real
 * path (`undo/<sha256>/`), never in the workspace and never in its `.git`: the
 * user's repository, hooks and config are not involved.
 *
 * Every file is written to a temporary name and renamed, so a crash leaves
 * either the old file or the new one, never half an object.
 *
 * @module
 */

import { join } from "node:path";
import { dataDir } from "../../tools/fs/data_dir.ts";
import { sha256 } from "../../tools/fs/sha256.ts";

/** One path as a snapshot has it. */
export type Entry =
  | { t: "f"; mode: number; size: number; hash: string }
  | { t: "l"; target: string }
  /** A directory, by its mode (what is in it has entries of its own). */
  | { t: "d"; mode: number }
  /** A file over its size limit: known by size and mtime, content not kept. */
  | {
    t: "big";
    size: number;
    mtime: number; /** Kept out by the policy, not by its size. */
    out?: true;
  }
  /** An ignored heavy directory: known by its own mtime, nothing inside kept. */
  | { t: "heavy"; mtime: number };

/** One path a call changed: what it was before (`b`) and after (`a`); null when absent. */
export interface Change {
  p: string;
  b: Entry | null;
  a: Entry | null;
}

/** What the journal keeps of one mutating call that changed files. */
export interface CallRecord {
  run: string;
  seq: number;
  session: string;
  tool: string;
  /** Epoch ms when the call ended. */
  at: number;
  changes: Change[];
  /** Set while the call stands undone (cleared by redo). */
  undone?: number;
}

/** One path an undo put back: from what the call left (`from`) to what was before it (`to`). */
export interface Applied {
  p: string;
  from: Entry | null;
  to: Entry | null;
}

/** What the journal keeps of one undo, so that it can be redone. */
export interface UndoRecord {
  id: string;
  at: number;
  /** `RUN:SEQ` of the calls undone, newest first. */
  calls: string[];
  applied: Applied[];
  redone?: number;
}

/** The directory of `workspace`'s undo store (not created). */
export function undoDir(workspace: string, root = dataDir()): string {
  const key = sha256(workspace).slice(0, 32);
  return join(root, "undo", key);
}

/** sha256 of `bytes`, hex. */
export function hashBytes(bytes: Uint8Array): string {
  return sha256(bytes);
}

/** `RUN:SEQ`, as the command line names a call. */
export function callId(r: { run: string; seq: number }): string {
  return `${r.run}:${r.seq}`;
}

/** The content-addressed objects and journal of one workspace. */
export class UndoStore {
  readonly dir: string;
  #made = new Set<string>();

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The store of `workspace` (a real path) under crab's data dir. */
  static of(workspace: string): UndoStore {
    return new UndoStore(undoDir(workspace));
  }

  objectPath(hash: string): string {
    return join(this.dir, "objects", hash.slice(0, 2), hash.slice(2));
  }

  /** Keeps `bytes` under `hash` unless an object of that hash is there already. */
  putObject(hash: string, bytes: Uint8Array): void {
    const path = this.objectPath(hash);
    try {
      Deno.lstatSync(path);
      return;
    } catch {
      // Not there yet.
    }
    this.#writeAtomic(path, bytes);
  }

  hasObject(hash: string): boolean {
    try {
      Deno.lstatSync(this.objectPath(hash));
      return true;
    } catch {
      return false;
    }
  }

  /** The bytes kept under `hash`, or undefined when they were pruned. */
  readObject(hash: string): Uint8Array | undefined {
    try {
      return Deno.readFileSync(this.objectPath(hash));
    } catch {
      return undefined;
    }
  }

  writeCall(record: CallRecord): void {
    this.#writeAtomic(this.#callPath(record), JSON.stringify(record));
  }

  removeCall(record: CallRecord): void {
    removeIfThere(this.#callPath(record));
  }

  #callPath(record: { run: string; seq: number }): string {
    return join(this.dir, "calls", `${record.run}-${String(record.seq).padStart(6, "0")}.json`);
  }

  /** Every call record, oldest first (run ids sort by time). */
  calls(): CallRecord[] {
    return this.#readAll<CallRecord>("calls").sort((x, y) =>
      x.run < y.run ? -1 : x.run > y.run ? 1 : x.seq - y.seq
    );
  }

  writeUndo(record: UndoRecord): void {
    this.#writeAtomic(join(this.dir, "undos", `${record.id}.json`), JSON.stringify(record));
  }

  removeUndo(record: UndoRecord): void {
    removeIfThere(join(this.dir, "undos", `${record.id}.json`));
  }

  /** Every undo record, oldest first. */
  undos(): UndoRecord[] {
    return this.#readAll<UndoRecord>("undos").sort((x, y) => x.at - y.at || (x.id < y.id ? -1 : 1));
  }

  /** The stat cache of the last scan, as {@link saveState} wrote it. */
  loadState(): string | undefined {
    try {
      return Deno.readTextFileSync(join(this.dir, "state.json"));
    } catch {
      return undefined;
    }
  }

  saveState(text: string): void {
    this.#writeAtomic(join(this.dir, "state.json"), text);
  }

  #readAll<T>(sub: string): T[] {
    const dir = join(this.dir, sub);
    const out: T[] = [];
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith(".json"))
        .map((e) => e.name);
    } catch {
      return out;
    }
    for (const name of names) {
      try {
        out.push(JSON.parse(Deno.readTextFileSync(join(dir, name))) as T);
      } catch {
        // A record that cannot be read is skipped: it cannot be undone.
      }
    }
    return out;
  }

  #writeAtomic(path: string, data: Uint8Array | string): void {
    const dir = join(path, "..");
    if (!this.#made.has(dir)) {
      Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.#made.add(dir);
    }
    const tmp = `${path}.${Deno.pid}.tmp`;
    if (typeof data === "string") Deno.writeTextFileSync(tmp, data, { mode: 0o600 });
    else Deno.writeFileSync(tmp, data, { mode: 0o600 });
    Deno.renameSync(tmp, path);
  }
}

function removeIfThere(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}
