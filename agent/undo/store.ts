/**
 * Undo's own store: file contents by sha256, one journal record per mutating
 * call that changed something (`calls/RUN-SEQ.json`), one record per undo
 * (`undos/`, for redo), and the stat cache of the last scan (`state.bin`). It
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
 * A first snapshot's tracked, unchanged files are git's blobs, not objects of
 * this store: the repository's pack files are hard-linked into `git/`
 * (`git/defer.ts`), and a blob becomes an object here when a call changed its
 * file.
 *
 * Records are written to a temporary name and renamed, so a crash leaves
 * either the old file or the new one. One crab at a time writes a workspace's
 * store: every writer holds the workspace lock (`tools/call/workspace_lock.ts`).
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { dataDir } from "../../tools/fs/data_dir.ts";
import { decodeHex, encodeHex, hexInto, hexNumber } from "../../tools/fs/hex.ts";
import { sha256 } from "../../tools/fs/sha256.ts";
import { lstatOrNull } from "../../tools/fs/exists.ts";
import { Gathered, prefixOf } from "./tables/hash_tables.ts";

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
/** Objects a process looks up one query each before it reads every packed hash at once. */
const ASK_EACH = 512;
/** Packed bytes gathered in memory before they are written out (a write each: few, still). */
const PENDING_BYTES = 512 * 1024;

/** Which index a store has ({@link UndoStore.stamp}), and how many removals it has seen. */
export interface StoreStamp {
  epoch: number;
  removed: number;
}

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

/**
 * Rows written and not yet in the index at most: a first snapshot of 100,000
 * files adds its rows in four transactions, their hashes and places 2 MB in
 * memory meanwhile, not 8 (at most about 30 ms more than one transaction).
 * Below 2^21 with a batch's rows beyond it: their order key holds a row number.
 */
const MAX_UNINDEXED = 30_000;
/** Rows one insert statement takes. */
const INSERT_ROWS = 128;

/** The content-addressed objects and journal of one workspace. */
export class UndoStore {
  readonly dir: string;
  #made = new Set<string>();
  #db: DatabaseSync | undefined;
  #find: StatementSync | undefined;
  #version: StatementSync | undefined;
  #stamp: StatementSync | undefined;
  /**
   * The first 30 bits of every packed hash, once many were asked for (kept up
   * to date since): a number each, not a string of 64.
   */
  #known: Set<number> | undefined;
  /** SQLite's `data_version` when {@link #known} was read: it changes with another connection's commit. */
  #knownVersion = -1;
  #knownCheckedAt = -Infinity;
  /**
   * Packed objects gathered since the last {@link flush}, by raw hash: those
   * whose bytes are still in {@link #batch} (pack -1, from row
   * {@link #unwritten} on), then written to a pack, their index rows waiting.
   */
  #gathered = new Gathered();
  #unwritten = 0;
  /** The bytes not yet written, one object after the other, as they will be. */
  #batch = new Uint8Array(0);
  #batchLen = 0;
  /** Hashes looked up one by one so far. */
  #asked = 0;

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

  /** Where git's packs are linked (`git/defer.ts`): the contents of a first snapshot's rows of `F_GIT`. */
  get gitDir(): string {
    return join(this.dir, "git");
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
    db.exec("PRAGMA wal_autocheckpoint = 1000");
    db.exec(
      "CREATE TABLE IF NOT EXISTS objects (hash BLOB PRIMARY KEY, pack INTEGER NOT NULL, " +
        "off INTEGER NOT NULL, size INTEGER NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID",
    );
    // What a stat cache's rows need is still kept while no object was removed since it was
    // saved: a count of removals, and a random epoch for an index made again from nothing.
    db.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    db.prepare("INSERT OR IGNORE INTO meta VALUES ('epoch', ?)").run(
      Math.floor(Math.random() * 2 ** 52),
    );
    db.exec("INSERT OR IGNORE INTO meta VALUES ('removed', 0)");
    this.#find = db.prepare("SELECT pack, off, size FROM objects WHERE hash = ?");
    this.#version = db.prepare("PRAGMA data_version");
    this.#stamp = db.prepare(
      "SELECT (SELECT v FROM meta WHERE k = 'epoch') AS epoch, " +
        "(SELECT v FROM meta WHERE k = 'removed') AS removed",
    );
    return this.#db = db;
  }

  #located(raw: Uint8Array): Located | undefined {
    void this.#index;
    return this.#find!.get(raw) as Located | undefined;
  }

  /** Where a gathered object lies: its pack (-1: the batch) and offset, and its size. */
  #gatheredAt(raw: Uint8Array): Located | undefined {
    const g = this.#gathered;
    const r = g.find(raw);
    return r < 0
      ? undefined
      : { pack: g.loc[3 * r], off: g.loc[3 * r + 1], size: g.loc[3 * r + 2] };
  }

  /** Keeps `bytes` under `hash` (hex) unless an object of that hash is there already. */
  putObject(hash: string, bytes: Uint8Array): void {
    this.putRead(rawOf(hash), bytes);
  }

  /** Keeps `bytes` under `raw` (their sha256) unless an object of that hash is there already. */
  putRead(raw: Uint8Array, bytes: Uint8Array): void {
    if (bytes.byteLength >= LOOSE_BYTES) {
      const path = this.objectPath(encodeHex(raw));
      if (!lstatOrNull(path)) this.#writeAtomic(path, bytes);
    } else if (this.#gathered.find(raw) < 0 && !this.#isIndexed(raw)) {
      this.#room(bytes.byteLength).set(bytes);
      this.#gather(raw, bytes.byteLength);
    }
  }

  /**
   * Reads the file at `path`, about `size` bytes, straight into the pack being
   * gathered (no buffer of its own to collect later), and keeps it under its
   * hash (`digest`, raw) unless that is kept already. Its hash and length;
   * undefined when it cannot be read. A file that grew to {@link LOOSE_BYTES}
   * meanwhile is kept as a file of its own.
   */
  putFile(
    path: string,
    size: number,
    digest: (bytes: Uint8Array) => Uint8Array,
  ): { hash: Uint8Array; size: number } | undefined {
    if (size >= LOOSE_BYTES) return this.#putWhole(path, digest);
    let room = this.#room(Math.min(size + 1, LOOSE_BYTES));
    let len = 0;
    try {
      using file = Deno.openSync(path, { read: true });
      for (;;) {
        if (len === room.byteLength) {
          if (len >= LOOSE_BYTES) return this.#putWhole(path, digest);
          room = this.#room(Math.min(len * 2, LOOSE_BYTES), len);
        }
        const want = room.byteLength - len;
        const n = file.readSync(room.subarray(len));
        if (n === null || n === 0) break;
        len += n;
        // A regular file reads short only at its end: no second read to find it.
        if (n < want) break;
      }
    } catch {
      return undefined;
    }
    const raw = digest(room.subarray(0, len));
    if (this.#gathered.find(raw) < 0 && !this.#isIndexed(raw)) this.#gather(raw, len);
    return { hash: raw, size: len };
  }

  /** A file kept whole: read, hashed, stored by {@link putObject}. */
  #putWhole(
    path: string,
    digest: (bytes: Uint8Array) => Uint8Array,
  ): { hash: Uint8Array; size: number } | undefined {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(path);
    } catch {
      return undefined;
    }
    const raw = digest(bytes);
    this.putRead(raw, bytes);
    return { hash: raw, size: bytes.byteLength };
  }

  /**
   * Free space for `size` bytes at the end of the batch (its first `keep`
   * bytes as they were): written into, then kept by {@link #gather}.
   */
  #room(size: number, keep = 0): Uint8Array {
    const need = this.#batchLen + size;
    if (need > this.#batch.byteLength) {
      // Doubling, up to what a batch can hold: written out at PENDING_BYTES, each object smaller.
      const cap = Math.min(
        Math.max(64 * 1024, this.#batch.byteLength * 2),
        PENDING_BYTES + LOOSE_BYTES,
      );
      const grown = new Uint8Array(Math.max(need, cap));
      grown.set(this.#batch.subarray(0, this.#batchLen + keep));
      this.#batch = grown;
    }
    return this.#batch.subarray(this.#batchLen, need);
  }

  /** The `len` bytes written at the end of the batch are the object of hash `raw`. */
  #gather(raw: Uint8Array, len: number): void {
    this.#gathered.add(raw, -1, this.#batchLen, len);
    this.#batchLen += len;
    if (this.#batchLen >= PENDING_BYTES) this.#write();
  }

  /**
   * Whether the index names the object of hash `raw`: one query each for the
   * first few a process stores (a later session's changes); past those (a
   * first snapshot stores many, most of them new) a miss among the first bits
   * of every packed hash answers at once, and only a hit is asked of the index.
   */
  #isIndexed(raw: Uint8Array): boolean {
    if (this.#known || ++this.#asked > ASK_EACH) {
      if (!this.#prefixes().has(prefixOf(raw))) return false;
    }
    return this.#located(raw) !== undefined;
  }

  /** Objects gathered and not yet in the index ({@link flush}). */
  get pendingObjects(): number {
    return this.#gathered.count;
  }

  hasObject(hash: string): boolean {
    const raw = rawOf(hash);
    return this.#gathered.find(raw) >= 0 || this.#located(raw) !== undefined ||
      lstatOrNull(this.objectPath(hash)) !== null;
  }

  /** The first bits of the packed hashes: read once, and again after another crab changed the index. */
  #prefixes(): Set<number> {
    void this.#index;
    // Another crab changes the index only between calls (each holds the workspace lock): looked
    // at once in a while, not for each of a snapshot's objects.
    const now = performance.now();
    if (this.#known && now - this.#knownCheckedAt < 100) return this.#known;
    this.#knownCheckedAt = now;
    const version = Number((this.#version!.get() as { data_version: number }).data_version);
    if (this.#known && version === this.#knownVersion) return this.#known;
    this.#knownVersion = version;
    const known = new Set<number>();
    // Each hash's first four bytes as 8 hex digits of one string, no row object each; its first
    // 30 bits as prefixOf() takes them.
    const hex = String(
      this.#index.prepare(
        "SELECT group_concat(hex(substr(hash, 1, 4)), '') AS h FROM objects WHERE length(hash) = 32",
      ).get()?.h ?? "",
    );
    for (let i = 0; i + 8 <= hex.length; i += 8) known.add(Math.floor(hexNumber(hex, i, 8) / 4));
    return this.#known = known;
  }

  /** The bytes kept under `hash`, or undefined when they were pruned. */
  readObject(hash: string): Uint8Array | undefined {
    const raw = rawOf(hash);
    const at = this.#gatheredAt(raw) ?? this.#located(raw);
    if (at?.pack === -1) return this.#batch.slice(at.off, at.off + at.size);
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
    this.#commit();
  }

  /**
   * Writes the gathered objects' bytes at the end of the current pack; their
   * index rows wait for {@link #commit}: a first snapshot adds them to the
   * index in one pass, not one pass over its pages per batch.
   */
  #write(): void {
    const rows = this.#gathered;
    if (this.#unwritten === rows.count) return;
    void this.#index;
    this.#mkdir(this.packDir);
    let pack = this.#currentPack();
    let file = Deno.openSync(this.#packPath(pack), { write: true, create: true, mode: 0o600 });
    const loc = rows.loc;
    try {
      // The batch goes out in one write per pack: the part of it that starts at `from`
      // lies at `at` in the current pack.
      let at = file.seekSync(0, Deno.SeekMode.End);
      let from = 0;
      for (let r = this.#unwritten; r < rows.count; r++) {
        const off = loc[3 * r + 1], len = loc[3 * r + 2];
        if (at + off + len - from > PACK_BYTES && at + off - from > 0) {
          writeAll(file, this.#batch.subarray(from, off));
          file.close();
          pack++;
          file = Deno.openSync(this.#packPath(pack), { write: true, create: true, mode: 0o600 });
          at = file.seekSync(0, Deno.SeekMode.End);
          from = off;
        }
        loc[3 * r] = pack;
        loc[3 * r + 1] = at + off - from;
      }
      writeAll(file, this.#batch.subarray(from, this.#batchLen));
    } finally {
      file.close();
    }
    if (this.#known) {
      for (let r = this.#unwritten; r < rows.count; r++) {
        this.#known.add(prefixOf(rows.raw.subarray(32 * r)));
      }
    }
    this.#unwritten = rows.count;
    this.#batchLen = 0;
    if (rows.count >= MAX_UNINDEXED) this.#commit();
  }

  /** Adds the rows of the objects written since the last time to the index, in one transaction. */
  #commit(): void {
    const rows = this.#gathered;
    if (rows.count === 0) return;
    const db = this.#index;
    const now = Date.now();
    // In key order (by their first 32 bits): the index's B-tree takes them faster so.
    const order = new Float64Array(rows.count);
    for (let r = 0; r < rows.count; r++) {
      const i = 32 * r, b = rows.raw;
      order[r] = ((b[i] << 24 | b[i + 1] << 16 | b[i + 2] << 8 | b[i + 3]) >>> 0) * 2 ** 21 + r;
    }
    order.sort();
    // One array of parameters, filled again for each statement: no array per row.
    const params: (Uint8Array | number)[] = new Array(5 * INSERT_ROWS);
    const fill = (k: number, r: number) => {
      params[5 * k] = rows.raw.subarray(32 * r, 32 * r + 32);
      params[5 * k + 1] = rows.loc[3 * r];
      params[5 * k + 2] = rows.loc[3 * r + 1];
      params[5 * k + 3] = rows.loc[3 * r + 2];
      params[5 * k + 4] = now;
    };
    db.exec("BEGIN IMMEDIATE");
    try {
      let i = 0;
      if (rows.count >= INSERT_ROWS) {
        const many = db.prepare(
          "INSERT OR REPLACE INTO objects VALUES " +
            Array(INSERT_ROWS).fill("(?, ?, ?, ?, ?)").join(", "),
        );
        for (; i + INSERT_ROWS <= rows.count; i += INSERT_ROWS) {
          for (let k = 0; k < INSERT_ROWS; k++) fill(k, order[i + k] % 2 ** 21);
          many.run(...params);
        }
      }
      const one = db.prepare("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)");
      for (; i < rows.count; i++) {
        fill(0, order[i] % 2 ** 21);
        one.run(...params.slice(0, 5));
      }
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
    rows.clear();
    this.#unwritten = 0;
  }

  /** Every stored object: packed ones from the index, and files of their own. */
  objects(): StoredObject[] {
    const out: StoredObject[] = [];
    this.eachObject((raw, size, at) => out.push({ hash: encodeHex(raw), size, at }));
    return out;
  }

  /**
   * Each stored object's raw hash (valid during the call only), size and when
   * it was stored, row by row: no object nor string each.
   */
  eachObject(visit: (raw: Uint8Array, size: number, at: number) => void): void {
    this.flush();
    // A 128th of the index at a time (by the hash's first 7 bits), each row as 88 hex digits of
    // one string (hash, size, time): two to three times faster than a row object each, and each
    // string small enough to be young garbage (100,000 objects: 69 KB a string, where a
    // sixteenth made strings of 550 KB that only a full collection takes).
    const row = "hex(hash) || printf('%012x%012x', size, at)";
    const part = this.#index.prepare(
      // (A row whose hash is not 32 bytes would shift every row after it: none is read.)
      `SELECT group_concat(${row}, '') AS s FROM objects ` +
        "WHERE hash >= ? AND hash < ? AND length(hash) = 32",
    );
    const raw = new Uint8Array(32);
    // Past every hash: 33 bytes of 0xff.
    const end = new Uint8Array(33).fill(0xff);
    for (let c = 0; c < 128; c++) {
      const to = c < 127 ? Uint8Array.of((c + 1) << 1) : end;
      const s = String(part.get(Uint8Array.of(c << 1), to)?.s ?? "");
      for (let i = 0; i + 88 <= s.length; i += 88) {
        hexInto(s, i, raw);
        visit(raw, hexNumber(s, i + 64, 12), hexNumber(s, i + 76, 12));
      }
    }
    const root = join(this.dir, "objects");
    for (const fan of readDirOrEmpty(root)) {
      if (!fan.isDirectory) continue;
      for (const e of readDirOrEmpty(join(root, fan.name))) {
        if (!e.isFile || e.name.endsWith(".tmp")) continue;
        const st = lstatOrNull(join(root, fan.name, e.name));
        if (st) visit(rawOf(fan.name + e.name), st.size, st.mtime?.getTime() ?? 0);
      }
    }
  }

  /**
   * At least {@link storedBytes}, from the sizes of the files alone (packs hold
   * removed objects' bytes until rewritten): a handful of stats, where the sum
   * reads the whole index (12 ms on 100,000 objects, at a session's first change).
   */
  storedAtMost(): number {
    let sum = this.#looseBytes() + this.#gathered.bytes;
    for (const e of readDirOrEmpty(this.packDir)) {
      sum += lstatOrNull(join(this.packDir, e.name))?.size ?? 0;
    }
    return sum;
  }

  /** The bytes of the objects kept as files of their own. */
  #looseBytes(): number {
    let sum = 0;
    const root = join(this.dir, "objects");
    for (const fan of readDirOrEmpty(root)) {
      for (const e of readDirOrEmpty(join(root, fan.name))) {
        sum += lstatOrNull(join(root, fan.name, e.name))?.size ?? 0;
      }
    }
    return sum;
  }

  /** The bytes of every stored object, counted cheaply: one sum of the index, the files of their own. */
  storedBytes(): number {
    const row = this.#index.prepare("SELECT COALESCE(SUM(size), 0) AS n FROM objects").get();
    return Number(row?.n ?? 0) + this.#looseBytes() + this.#gathered.bytes;
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
      db.exec("UPDATE meta SET v = v + 1 WHERE k = 'removed'");
      for (const hash of hashes) {
        del.run(decodeHex(hash));
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
        const bytes = readAt(this.#packPath(pack), Number(row.off), Number(row.size));
        this.#room(bytes.byteLength).set(bytes);
        this.#gather(row.hash as Uint8Array, bytes.byteLength);
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

  /**
   * Changes whenever an object may have been removed: saved with a stat
   * cache, it says whether every object the cache names is still kept.
   */
  stamp(): StoreStamp {
    void this.#index;
    const row = this.#stamp!.get() as { epoch: number; removed: number };
    return { epoch: Number(row.epoch), removed: Number(row.removed) };
  }

  /** The stat cache of the last scan, as {@link saveState} wrote it. */
  loadState(): Uint8Array | undefined {
    try {
      // Into one buffer of its size: the cache's columns are views of it.
      using file = Deno.openSync(join(this.dir, "state.bin"), { read: true });
      const out = new Uint8Array(file.statSync().size);
      for (let done = 0; done < out.byteLength;) {
        const n = file.readSync(out.subarray(done));
        if (n === null) return out.subarray(0, done);
        done += n;
      }
      return out;
    } catch {
      return undefined;
    }
  }

  saveState(bytes: Uint8Array): void {
    this.saveStateWith((put) => put(bytes, 0));
  }

  /** Writes the stat cache a piece at a time: `write` hands each piece to `put` with its offset. */
  saveStateWith(write: (put: (bytes: Uint8Array, at: number) => void) => void): void {
    this.flush();
    const path = join(this.dir, "state.bin");
    this.#mkdir(this.dir);
    const tmp = `${path}.${Deno.pid}.tmp`;
    {
      using file = Deno.openSync(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
      let pos = 0;
      write((bytes, at) => {
        if (at !== pos) file.seekSync(at, Deno.SeekMode.Start);
        writeAll(file, bytes);
        pos = at + bytes.byteLength;
      });
    }
    Deno.renameSync(tmp, path);
    // The cache of an older crab, read by none.
    removeIfThere(join(this.dir, "state.json"));
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

/** The bytes hex digits spell (a hash: even length). */
export function rawOf(hex: string): Uint8Array {
  return hexInto(hex, 0, new Uint8Array(hex.length >> 1));
}
