/**
 * Undo's own store: file contents by sha256, one journal record per mutating
 * call that changed something (`calls/RUN-SEQ.json`), one record per undo
 * (`undos/`, for redo), and the stat cache of the last scan (`state.json`). It
 * lives under crab's data dir, keyed by the workspace's real path
 * (`undo/<sha256>/`), never in the workspace and never in its `.git`: the
 * user's repository, hooks and config are not involved.
 *
 * Contents below {@link LOOSE_BYTES} are packed: appended to a pack file
 * (`packs/N.pack`, a new one past {@link PACK_BYTES}) and found through an
 * index (`index.db`, SQLite: hash → pack, offset, size), so a tree of small
 * files takes about its own size on disk, not a file-system block per file.
 * Larger contents are files of their own (`objects/ab/cdef…`). Objects are
 * gathered in memory and written in batches: the pack's bytes first, then their
 * index rows in one transaction, so the index never names bytes that were not
 * written ({@link UndoStore.flush}, before the call a snapshot covers runs).
 * Nothing waits for the disk, as before packs: a packed object is checked
 * against its hash when read, so bytes a power loss kept from the disk are
 * never put back. Pruning drops index rows and rewrites a pack
 * once less than half of it is still needed.
 *
 * Records are written to a temporary name and renamed, so a crash leaves
 * either the old file or the new one. One crab at a time writes a workspace's
 * store: every writer holds the workspace lock (`tools/call/workspace_lock.ts`).
 *
 * @module
 */

import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { dataDir } from "../../tools/fs/data_dir.ts";
import { decodeHex, encodeHex } from "../../tools/fs/hex.ts";
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
  /**
   * Background jobs ran while the call did (`jobs`), so that what it changed
   * may be theirs too: the paths of `changes` undo leaves as conflicts
   * (`paths`; none for a write or edit, which changed only its own file).
   */
  beside?: { jobs: string[]; paths: string[] };
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

/** Contents at least this large are files of their own; smaller ones are packed. */
export const LOOSE_BYTES = 1024 * 1024;
/** A pack grows to about this size, then the next one starts. */
export const PACK_BYTES = 256 * 1024 * 1024;
/** Packed bytes gathered in memory before they are written out. */
const PENDING_BYTES = 8 * 1024 * 1024;

/** One stored object, as pruning sees it. */
export interface StoredObject {
  hash: string;
  size: number;
  /** Epoch ms when it was stored. */
  at: number;
}

interface Located {
  pack: number;
  off: number;
  size: number;
}

/** The content-addressed objects and journal of one workspace. */
export class UndoStore {
  readonly dir: string;
  #made = new Set<string>();
  #db: DatabaseSync | undefined;
  #find: StatementSync | undefined;
  #version: StatementSync | undefined;
  /** Every packed hash, once something asked for all of them (kept up to date since). */
  #known: Set<string> | undefined;
  /** SQLite's `data_version` when {@link #known} was read: it changes with another connection's commit. */
  #knownVersion = -1;
  #knownCheckedAt = -Infinity;
  /** Packed objects not yet written: hash → bytes, in order. */
  #pending = new Map<string, Uint8Array>();
  #pendingBytes = 0;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The store of `workspace` (a real path) under crab's data dir. */
  static of(workspace: string): UndoStore {
    return new UndoStore(undoDir(workspace));
  }

  /** Where a content of its own (at least {@link LOOSE_BYTES}) is kept. */
  objectPath(hash: string): string {
    return join(this.dir, "objects", hash.slice(0, 2), hash.slice(2));
  }

  /** The pack files' folder. */
  get packDir(): string {
    return join(this.dir, "packs");
  }

  /** The index, opened (and made) on first use. */
  get #index(): DatabaseSync {
    if (this.#db) return this.#db;
    this.#mkdir(this.dir);
    const db = new DatabaseSync(join(this.dir, "index.db"));
    db.exec("PRAGMA busy_timeout = 5000");
    // Commits wait for no disk (a crash loses at most the last ones, whole); the log is cut back
    // after each checkpoint, so the store stays about the size of what it holds.
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA journal_size_limit = 262144");
    db.exec("PRAGMA wal_autocheckpoint = 64");
    db.exec(
      "CREATE TABLE IF NOT EXISTS objects (hash BLOB PRIMARY KEY, pack INTEGER NOT NULL, " +
        "off INTEGER NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID",
    );
    this.#find = db.prepare("SELECT pack, off, size FROM objects WHERE hash = ?");
    this.#version = db.prepare("PRAGMA data_version");
    return this.#db = db;
  }

  #located(hash: string): Located | undefined {
    void this.#index;
    return this.#find!.get(decodeHex(hash)) as Located | undefined;
  }

  /** Keeps `bytes` under `hash` unless an object of that hash is there already. */
  putObject(hash: string, bytes: Uint8Array): void {
    if (bytes.byteLength >= LOOSE_BYTES) {
      const path = this.objectPath(hash);
      if (lstatOrNull(path)) return;
      this.#writeAtomic(path, bytes);
      return;
    }
    // A snapshot stores many: one query for every hash known, not one per object.
    if (this.#pending.has(hash) || this.#packed().has(hash)) return;
    this.#pending.set(hash, bytes);
    this.#pendingBytes += bytes.byteLength;
    if (this.#pendingBytes >= PENDING_BYTES) this.#write();
  }

  hasObject(hash: string): boolean {
    return this.#pending.has(hash) || this.#located(hash) !== undefined ||
      lstatOrNull(this.objectPath(hash)) !== null;
  }

  /** Every packed object's hash (one query: cheaper than asking for each of many). */
  packedHashes(): Set<string> {
    return new Set([...this.#packed(), ...this.#pending.keys()]);
  }

  /** The packed hashes written so far: read once, and again after another crab changed the index. */
  #packed(): Set<string> {
    void this.#index;
    // Another crab changes the index only between calls (each holds the workspace lock): looked
    // at once in a while, not for each of a snapshot's objects.
    const now = performance.now();
    if (this.#known && now - this.#knownCheckedAt < 100) return this.#known;
    this.#knownCheckedAt = now;
    const version = Number((this.#version!.get() as { data_version: number }).data_version);
    if (this.#known && version === this.#knownVersion) return this.#known;
    this.#knownVersion = version;
    const known = new Set<string>();
    // Hex in SQLite's C, not a loop in JavaScript per row: a big tree has many.
    for (const row of this.#index.prepare("SELECT lower(hex(hash)) AS h FROM objects").all()) {
      known.add(row.h as string);
    }
    return this.#known = known;
  }

  /** The bytes kept under `hash`, or undefined when they were pruned. */
  readObject(hash: string): Uint8Array | undefined {
    const pending = this.#pending.get(hash);
    if (pending) return pending;
    const at = this.#located(hash);
    if (at) {
      try {
        // Bytes a crash kept from the disk are not the content: checked, never handed out.
        const bytes = readAt(this.#packPath(at.pack), at.off, at.size);
        return sha256(bytes) === hash ? bytes : undefined;
      } catch {
        return undefined;
      }
    }
    try {
      return Deno.readFileSync(this.objectPath(hash));
    } catch {
      return undefined;
    }
  }

  /**
   * Writes the objects gathered so far: their bytes at the end of the current
   * pack, then their index rows. A snapshot calls this before the call it
   * covers runs; records and the stat cache call it before naming objects.
   */
  flush(): void {
    this.#write();
  }

  /** Writes the gathered objects out: the pack's bytes, then their rows in one transaction. */
  #write(): void {
    if (this.#pending.size === 0) return;
    const db = this.#index;
    this.#mkdir(this.packDir);
    let pack = this.#currentPack();
    let file = Deno.openSync(this.#packPath(pack), { write: true, create: true, mode: 0o600 });
    let off = file.seekSync(0, Deno.SeekMode.End);
    const rows: [Uint8Array, number, number, number][] = [];
    // The bytes go out in large writes, not one per object.
    const batch: Uint8Array[] = [];
    let batched = 0;
    const writeBatch = () => {
      const all = new Uint8Array(batched);
      let at = 0;
      for (const b of batch) {
        all.set(b, at);
        at += b.byteLength;
      }
      writeAll(file, all);
      batch.length = 0;
      batched = 0;
    };
    try {
      for (const [hash, bytes] of this.#pending) {
        if (off > 0 && off + bytes.byteLength > PACK_BYTES) {
          writeBatch();
          file.close();
          pack++;
          file = Deno.openSync(this.#packPath(pack), { write: true, create: true, mode: 0o600 });
          off = file.seekSync(0, Deno.SeekMode.End);
        }
        batch.push(bytes);
        batched += bytes.byteLength;
        rows.push([decodeHex(hash), pack, off, bytes.byteLength]);
        off += bytes.byteLength;
      }
      writeBatch();
    } finally {
      file.close();
    }
    const now = Date.now();
    const insert = db.prepare("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)");
    db.exec("BEGIN IMMEDIATE");
    try {
      // In key order: the index's B-tree takes them faster than in random order.
      rows.sort((a, b) => compareBytes(a[0], b[0]));
      for (const [hash, p, o, size] of rows) insert.run(hash, p, o, size, now);
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
    for (const hash of this.#pending.keys()) this.#known?.add(hash);
    this.#pending.clear();
    this.#pendingBytes = 0;
  }

  /** Every stored object: packed ones from the index, and files of their own. */
  objects(): StoredObject[] {
    this.flush();
    const out: StoredObject[] = [];
    for (const row of this.#index.prepare("SELECT hash, size, at FROM objects").all()) {
      out.push({
        hash: encodeHex(row.hash as Uint8Array),
        size: Number(row.size),
        at: Number(row.at),
      });
    }
    const root = join(this.dir, "objects");
    for (const fan of readDirOrEmpty(root)) {
      if (!fan.isDirectory) continue;
      for (const e of readDirOrEmpty(join(root, fan.name))) {
        if (!e.isFile || e.name.endsWith(".tmp")) continue;
        const st = lstatOrNull(join(root, fan.name, e.name));
        if (st) out.push({ hash: fan.name + e.name, size: st.size, at: st.mtime?.getTime() ?? 0 });
      }
    }
    return out;
  }

  /** The bytes of every stored object, counted cheaply: one sum of the index, the files of their own. */
  storedBytes(): number {
    const row = this.#index.prepare("SELECT COALESCE(SUM(size), 0) AS n FROM objects").get();
    let sum = Number(row?.n ?? 0);
    const root = join(this.dir, "objects");
    for (const fan of readDirOrEmpty(root)) {
      for (const e of readDirOrEmpty(join(root, fan.name))) {
        sum += lstatOrNull(join(root, fan.name, e.name))?.size ?? 0;
      }
    }
    return sum + this.#pendingBytes;
  }

  /**
   * Removes the objects `hashes` names; a pack that keeps less than half of
   * its bytes is then rewritten into the current one. Returns the bytes freed.
   */
  removeObjects(hashes: Iterable<string>): number {
    this.flush();
    const db = this.#index;
    const del = db.prepare("DELETE FROM objects WHERE hash = ?");
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const hash of hashes) {
        del.run(decodeHex(hash));
        this.#known?.delete(hash);
        try {
          Deno.removeSync(this.objectPath(hash));
        } catch {
          // Packed, or gone already.
        }
      }
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
    return this.#repack();
  }

  /** Rewrites the packs less than half needed; returns the bytes their files held beyond it. */
  #repack(): number {
    const live = new Map<number, number>();
    for (
      const row of this.#index.prepare("SELECT pack, SUM(size) AS n FROM objects GROUP BY pack")
        .all()
    ) {
      live.set(Number(row.pack), Number(row.n));
    }
    let freed = 0;
    const current = this.#currentPack();
    for (const e of readDirOrEmpty(this.packDir)) {
      const m = /^(\d+)\.pack$/.exec(e.name);
      if (!m) continue;
      const pack = Number(m[1]);
      const size = lstatOrNull(this.#packPath(pack))?.size ?? 0;
      const needed = live.get(pack) ?? 0;
      if (needed * 2 >= size) continue;
      // The pack in use is left for a new one, which its objects start.
      if (pack === current && needed > 0) {
        Deno.writeFileSync(this.#packPath(current + 1), new Uint8Array(), { mode: 0o600 });
      }
      // Its objects go to the end of the newest pack, then the old pack goes.
      const rows = this.#index.prepare("SELECT hash, off, size FROM objects WHERE pack = ?").all(
        pack,
      );
      for (const row of rows) {
        const hash = encodeHex(row.hash as Uint8Array);
        this.#pending.set(hash, readAt(this.#packPath(pack), Number(row.off), Number(row.size)));
      }
      // Their index rows move to the new place in one transaction; only then is the old pack removed.
      this.flush();
      Deno.removeSync(this.#packPath(pack));
      freed += size - needed;
    }
    return freed;
  }

  /** The number of the pack new objects go to: the highest there is, or 0. */
  #currentPack(): number {
    let n = 0;
    for (const e of readDirOrEmpty(this.packDir)) {
      const m = /^(\d+)\.pack$/.exec(e.name);
      if (m) n = Math.max(n, Number(m[1]));
    }
    return n;
  }

  #packPath(pack: number): string {
    return join(this.packDir, `${pack}.pack`);
  }

  /** Closes the index (a test or a command that is done with the store). */
  close(): void {
    this.flush();
    this.#db?.close();
    this.#db = undefined;
  }

  #mkdir(dir: string): void {
    if (this.#made.has(dir)) return;
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#made.add(dir);
  }

  writeCall(record: CallRecord): void {
    this.flush();
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
    this.flush();
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
    this.flush();
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
    this.#mkdir(join(path, ".."));
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

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

function readDirOrEmpty(dir: string): Deno.DirEntry[] {
  try {
    return [...Deno.readDirSync(dir)];
  } catch {
    return [];
  }
}

function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.byteLength;) done += file.writeSync(bytes.subarray(done));
}

/** `size` bytes of `path` from `off`. */
function readAt(path: string, off: number, size: number): Uint8Array {
  using file = Deno.openSync(path, { read: true });
  file.seekSync(off, Deno.SeekMode.Start);
  const out = new Uint8Array(size);
  for (let done = 0; done < size;) {
    const n = file.readSync(out.subarray(done));
    if (n === null) throw new Error(`the pack ${path} ends before its object does`);
    done += n;
  }
  return out;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
