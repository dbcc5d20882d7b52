/**
 * What a workspace holds, file by file, as undo records it: every regular file's
 * content (kept in the {@link UndoStore}) and mode, every symlink's target,
 * every directory's mode, and by name and size only what is too big or too
 * heavy to keep.
 *
 * Coverage follows the ignore rules (`tools/search/ignore.ts`, the walker's):
 * files the rules do not ignore are kept up to {@link Limits.fileMax}; ignored
 * files are kept too when small (so `rm .env` can be undone), except under an
 * ignored directory of a heavy kind (`node_modules`, `target`, …), which is
 * recorded by its name and mtime alone. `.git` is never read.
 *
 * Incremental: a file whose inode, size, mtime and ctime are those of the last
 * scan costs one `lstat`, not a read; a directory whose own stat did not change
 * is not listed again. A file or listing changed within {@link RACY_MS} of the
 * scan that saw it (a second more for ctime, which Deno gives in whole seconds)
 * is not trusted at the next one, so a same-size rewrite or a chmod within a
 * clock tick cannot be missed.
 *
 * Cheaper still, {@link Snapshotter.update} starts from the last snapshot and
 * looks again only at the paths a file watcher (`watch.ts`) saw change, at
 * each directory's own stat (a changed listing is compared), at files with
 * more than one name and at heavy directories; whatever it cannot vouch for
 * (an ignore file, a `.git`) makes it decline, and the caller scans.
 *
 * @module
 */

import {
  enterDir,
  globalExcludesPath,
  type IgnoreSet,
  initialSet,
} from "../../tools/search/ignore.ts";
import { type Entry, hashBytes, type UndoStore } from "./store.ts";

export type { Entry } from "./store.ts";

/** Path (workspace-relative, `/`-separated) → entry. */
export type Tree = Map<string, Entry>;

/** Size limits of what is kept. */
export interface Limits {
  /** Largest file kept (default 50 MB). */
  fileMax: number;
  /** Largest ignored file kept (default 1 MB). */
  ignoredMax: number;
  /** More entries than this, and the workspace is not snapshotted at all (default 200,000). */
  maxEntries: number;
}

export const DEFAULT_LIMITS: Limits = {
  fileMax: 50 * 1024 * 1024,
  ignoredMax: 1024 * 1024,
  maxEntries: 200_000,
};

/** A workspace with more entries than {@link Limits.maxEntries}: a home directory, a disk. */
export class TooLarge extends Error {
  override name = "TooLarge";
}

/** Ignored directories of these names are recorded by name, not walked. */
export const HEAVY_DIRS: ReadonlySet<string> = new Set([
  "node_modules",
  "target",
  ".venv",
  "venv",
  "dist",
  "build",
  "out",
  "coverage",
  "vendor",
  "__pycache__",
  ".cache",
  ".next",
  ".nuxt",
  ".gradle",
  ".tox",
  ".mypy_cache",
  ".pytest_cache",
  ".turbo",
  ".parcel-cache",
  ".terraform",
]);

/** A stat within this many ms of the scan that saw it is not trusted at the next. */
export const RACY_MS = 100;
/** Deno reports ctime in whole seconds: a ctime is trusted a second later than an mtime. */
const CTIME_RACY_MS = 1000 + RACY_MS;

/** Whether a stat seen at `now` may still change without its times showing it. */
function isRacy(now: number, mtime: number, ctime: number): boolean {
  return !(now - mtime > RACY_MS && now - ctime > CTIME_RACY_MS);
}

interface Cached {
  entry: Entry;
  ino: number | null;
  size: number;
  mtime: number;
  ctime: number;
  /** Ignored by the rules (the smaller size limit applies). */
  ig: boolean;
  /** The stat may still change without changing these fields. */
  racy: boolean;
}

interface Listing {
  ino: number | null;
  mtime: number;
  ctime: number;
  /** The directory's own mode. */
  mode: number;
  /** Names with a kind: `f`ile, `d`irectory, `l`ink. */
  names: [string, "f" | "d" | "l"][];
  ignore: boolean;
  gitignore: boolean;
  git: boolean;
  /** Ignore verdicts of `names` under the rule set of that key. */
  verdicts?: { key: string; ignored: boolean[] };
}

const ms = (d: Date | null) => d?.getTime() ?? NaN;

/** The ignore rules in force inside a directory, and whether the directory itself is ignored. */
interface DirSet {
  set: IgnoreSet;
  ig: boolean;
  /** The directory's listing as that snapshot saw it. */
  l: Listing;
}

/** More changed paths than this, and an update is no cheaper than a scan. */
const MAX_REGIONS = 2000;

/**
 * What an update looks at again for a changed path `rel` (`abs` in full): the path itself,
 * or its first ancestor the last snapshot did not have as a directory (a new
 * directory, a heavy one). Undefined for a path of no concern (inside `.git`);
 * null when everything must be scanned (an ignore file, a `.git`, its
 * `info/exclude`).
 */
function regionOf(abs: string, rel: string, last: Tree): string | undefined | null {
  const parts = rel.split("/");
  let at = "";
  for (let i = 0; i < parts.length; i++) {
    const name = parts[i];
    if (name === ".git") {
      const rest = parts.slice(i + 1).join("/");
      if (rest === "info" || rest === "info/exclude") return null;
      // A `.git` that came or went changes its directory's listing, which is compared;
      // a `.git` file (a worktree's) names where the exclude rules are.
      if (rest === "") return lstatOrNull(abs)?.isFile ? null : undefined;
      return undefined;
    }
    at = at === "" ? name : at + "/" + name;
    if (name === ".gitignore" || name === ".ignore") return null;
    if (i < parts.length - 1 && last.get(at)?.t !== "d") return at;
  }
  return at;
}

/** Whether a proper ancestor of `rel` is in `set`. */
function hasAncestorIn(rel: string, set: ReadonlySet<string>): boolean {
  for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) {
    if (set.has(rel.slice(0, i))) return true;
  }
  return false;
}

/**
 * What the ignore rules of a scan depend on outside the workspace's own files:
 * the ancestors' ignore files and the repository's exclude files.
 */
function rulesKey(workspace: string): string {
  const global = globalExcludesPath();
  const st = global === undefined ? null : lstatOrNull(global);
  const stamp = st ? `${st.ino}:${st.size}:${ms(st.mtime)}:${ms(st.ctime)}` : "-";
  return `${initialSet(workspace).key}|${global}|${stamp}`;
}

/** Whether two entries (or absences) are the same state of a path. */
export function sameEntry(x: Entry | null, y: Entry | null): boolean {
  if (x === null || y === null) return x === y;
  switch (x.t) {
    case "f":
      return y.t === "f" && x.hash === y.hash && x.mode === y.mode;
    case "l":
      return y.t === "l" && x.target === y.target;
    case "d":
      return y.t === "d" && x.mode === y.mode;
    case "big":
      return y.t === "big" && x.size === y.size && x.mtime === y.mtime;
    case "heavy":
      return y.t === "heavy" && x.mtime === y.mtime;
  }
}

/** Scans one workspace again and again, keeping the stat cache between scans. */
/**
 * A tree that, while its journal is open, notes what each path held before
 * it first changed: an update changes the last tree in place (no copy of a
 * big tree per call) and knows its changes without comparing it whole.
 */
class JournaledTree extends Map<string, Entry> {
  journal: Map<string, Entry | undefined> | undefined;

  override set(path: string, entry: Entry): this {
    if (this.journal && !this.journal.has(path)) this.journal.set(path, super.get(path));
    return super.set(path, entry);
  }

  override delete(path: string): boolean {
    if (this.journal && !this.journal.has(path)) this.journal.set(path, super.get(path));
    return super.delete(path);
  }
}

/** One path a snapshot found changed since the one before: what it was (`b`), what it is (`a`). */
export type TreeChange = { p: string; b: Entry | null; a: Entry | null };

export class Snapshotter {
  readonly workspace: string;
  readonly store: UndoStore;
  readonly limits: Limits;
  #cache = new Map<string, Cached>();
  #dirs = new Map<string, Listing>();
  #loaded = false;
  #dirty = false;
  /** Files with more than one name: a change through another name is not seen by a watcher. */
  #linked = new Set<string>();
  /** What the last scan or update saw, for the next update. */
  #last: { tree: Tree; sets: Map<string, DirSet>; rules: string } | undefined;
  /** Files read and hashed by the last scan (for benchmarks and tests). */
  hashed = 0;

  /** The policy's question before a file's content is kept (`Policy.mayStore`); all are without it. */
  readonly #mayStore: ((path: string) => boolean) | undefined;

  constructor(
    workspace: string,
    store: UndoStore,
    limits: Partial<Limits> = {},
    mayStore?: (path: string) => boolean,
  ) {
    this.workspace = workspace;
    this.store = store;
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.#mayStore = mayStore;
  }

  /** The whole workspace now; new contents are kept in the store. */
  scan(): Tree {
    this.#load();
    this.#last = undefined;
    this.#linked.clear();
    this.hashed = 0;
    this.delta = undefined;
    const now = Date.now();
    const tree: Tree = new JournaledTree();
    const next = new Map<string, Cached>();
    const sets = new Map<string, DirSet>();
    const rules = rulesKey(this.workspace);
    this.#walk([{ abs: this.workspace, rel: "", set: initialSet(this.workspace), ig: false }], {
      tree,
      next,
      sets,
      now,
    });
    if (next.size !== this.#cache.size) this.#dirty = true;
    this.#cache = next;
    this.#last = { tree, sets, rules };
    return tree;
  }

  /**
   * The workspace now, from the last {@link scan} or update and the paths
   * changed since (absolute; others are not looked at): what {@link scan} would
   * return. A changed path is looked at again; one whose parent directory was
   * not seen, or a directory, with everything under it. Undefined when that
   * cannot be vouched for: no earlier snapshot, an ignore file or a `.git`
   * changed, too many paths: then scan everything.
   */
  update(changed: Iterable<string>): Tree | undefined {
    const last = this.#last;
    this.delta = undefined;
    if (!last) return undefined;
    this.#last = undefined;
    const tree = last.tree instanceof JournaledTree ? last.tree : new JournaledTree(last.tree);
    tree.journal = new Map();
    let out: Tree | undefined;
    try {
      out = this.#updateIn(tree, { ...last, tree }, changed);
    } finally {
      const journal = tree.journal;
      tree.journal = undefined;
      if (out) {
        const delta: TreeChange[] = [];
        for (const [p, was] of journal) {
          const now = tree.get(p) ?? null;
          if (!sameEntry(was ?? null, now)) delta.push({ p, b: was ?? null, a: now });
        }
        this.delta = delta.sort((x, y) => (x.p < y.p ? -1 : x.p > y.p ? 1 : 0));
      } else {
        // Declined (or too large): the tree is put back as it was, for whoever holds it.
        for (const [p, was] of journal) {
          if (was === undefined) Map.prototype.delete.call(tree, p);
          else Map.prototype.set.call(tree, p, was);
        }
      }
    }
    return out;
  }

  /**
   * What {@link update} last found changed against the tree before it (that
   * tree is updated in place: it is the one returned); undefined after a scan
   * or a declined update.
   */
  delta: TreeChange[] | undefined;

  #updateIn(
    tree: JournaledTree,
    last: { tree: Tree; sets: Map<string, DirSet>; rules: string },
    changed: Iterable<string>,
  ): Tree | undefined {
    this.hashed = 0;
    const now = Date.now();
    const ws = this.workspace, prefix = ws + "/";
    const regions = new Set<string>();
    for (const abs of changed) {
      if (abs === ws) return undefined;
      if (!abs.startsWith(prefix)) continue;
      const region = regionOf(abs, abs.slice(prefix.length), last.tree);
      if (region === null) return undefined;
      if (region === undefined) continue;
      regions.add(region);
      if (regions.size > MAX_REGIONS) return undefined;
    }
    // A watcher can miss an entry it could not stat when it came (a symlink loop): every
    // directory seen is stat'ed, and one that changed is listed again and compared.
    for (const [rel, d] of last.sets) {
      const l = this.#listing(rel === "" ? ws : prefix + rel, now);
      if (l === d.l) continue;
      if (!l) {
        if (rel === "") return undefined;
        regions.add(rel);
        continue;
      }
      if (l.git !== d.l.git || l.ignore !== d.l.ignore || l.gitignore !== d.l.gitignore) {
        return undefined;
      }
      if (l.mode !== d.l.mode && rel !== "") regions.add(rel);
      const was = new Map(d.l.names);
      d.l = l;
      for (const [name, kind] of l.names) {
        if (was.get(name) !== kind) regions.add(rel === "" ? name : rel + "/" + name);
        was.delete(name);
      }
      for (const name of was.keys()) regions.add(rel === "" ? name : rel + "/" + name);
    }
    for (const rel of this.#linked) regions.add(rel);
    this.#linked.clear();
    if (regions.size > MAX_REGIONS) return undefined;
    if (rulesKey(ws) !== last.rules) return undefined;
    // Heavy directories are looked at every time: by their own stat, as a scan does.
    const whole: string[] = [];
    for (const [rel, e] of tree) if (e.t === "heavy") regions.add(rel);
    for (const r of regions) if (last.tree.get(r)?.t === "d") whole.push(r);
    // Only the outermost of nested regions.
    const roots = [...regions].filter((r) => !hasAncestorIn(r, regions));
    if (whole.length) {
      const under = (k: string) =>
        whole.length <= 8 ? whole.some((w) => k.startsWith(w + "/")) : hasAncestorIn(k, regions);
      for (const k of tree.keys()) if (under(k)) tree.delete(k);
      for (const k of this.#cache.keys()) if (under(k)) this.#cache.delete(k);
      for (const k of last.sets.keys()) if (under(k) || regions.has(k)) last.sets.delete(k);
      this.#dirty = true;
    }
    const ctx = { tree, next: this.#cache, sets: last.sets, now };
    for (const r of roots) {
      tree.delete(r);
      if (this.#cache.delete(r)) this.#dirty = true;
      const slash = r.lastIndexOf("/");
      const parentRel = slash < 0 ? "" : r.slice(0, slash);
      const name = r.slice(slash + 1);
      const parent = last.sets.get(parentRel);
      if (!parent) return undefined;
      const abs = prefix + r;
      const st = lstatOrNull(abs);
      if (!st) continue;
      const isDir = st.isDirectory;
      if (!isDir && !st.isFile && !st.isSymlink) continue;
      const ig = parent.ig ||
        (parent.set.order.length !== 0 && parent.set.ignores(abs, name, isDir));
      if (isDir) {
        if (ig && HEAVY_DIRS.has(name)) tree.set(r, { t: "heavy", mtime: ms(st.mtime) });
        else this.#walk([{ abs, rel: r, set: parent.set, ig }], ctx);
        continue;
      }
      const c = this.#entry(abs, r, ig, now);
      if (!c) continue;
      this.#cache.set(r, c);
      tree.set(r, c.entry);
    }
    if (this.#cache.size > this.limits.maxEntries) {
      throw new TooLarge(
        `the workspace has more than ${this.limits.maxEntries} files undo would keep`,
      );
    }
    this.#last = { tree, sets: last.sets, rules: last.rules };
    return tree;
  }

  /** How many files the stat cache another process left knows. */
  cachedCount(): number {
    this.#load();
    return this.#cache.size;
  }

  /**
   * The directories the stat cache another process left has files in
   * (absolute, the workspace first), before any scan: for a watcher to follow
   * from the start of the first one.
   */
  cachedDirs(): string[] {
    this.#load();
    const prefix = this.workspace + "/";
    const out = new Set<string>([this.workspace]);
    for (const rel of this.#cache.keys()) {
      for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) {
        const dir = prefix + rel.slice(0, i);
        if (out.has(dir)) break;
        out.add(dir);
      }
    }
    return [...out];
  }

  /** The directories the last scan or update walked (absolute), for a watcher to follow. */
  dirs(): string[] {
    const sets = this.#last?.sets;
    if (!sets) return [];
    const prefix = this.workspace + "/";
    return [...sets.keys()].map((rel) => (rel === "" ? this.workspace : prefix + rel));
  }

  /** Walks the directories of `stack` and everything under them into `ctx`. */
  #walk(
    stack: { abs: string; rel: string; set: IgnoreSet; ig: boolean }[],
    ctx: { tree: Tree; next: Map<string, Cached>; sets: Map<string, DirSet>; now: number },
  ): void {
    const { tree, next, sets, now } = ctx;
    while (stack.length) {
      const { abs: dir, rel: dirRel, set: parentSet, ig: dirIg } = stack.pop()!;
      const l = this.#listing(dir, now);
      if (!l) continue;
      if (dirRel !== "") tree.set(dirRel, { t: "d", mode: l.mode });
      const set = dirIg ? parentSet : enterDir(parentSet, dir, l);
      sets.set(dirRel, { set, ig: dirIg, l });
      const verdicts = dirIg ? undefined : verdictsOf(dir, l, set);
      const names = l.names;
      for (let i = 0; i < names.length; i++) {
        const [name, kind] = names[i];
        const abs = dir === "/" ? "/" + name : dir + "/" + name;
        const rel = dirRel === "" ? name : dirRel + "/" + name;
        const ig = dirIg || verdicts![i];
        if (kind === "d") {
          if (ig && HEAVY_DIRS.has(name)) {
            const st = lstatOrNull(abs);
            if (st?.isDirectory) tree.set(rel, { t: "heavy", mtime: ms(st.mtime) });
          } else stack.push({ abs, rel, set, ig });
          continue;
        }
        const c = this.#entry(abs, rel, ig, now);
        if (!c) continue;
        if (next.size >= this.limits.maxEntries && !next.has(rel)) {
          throw new TooLarge(
            `the workspace has more than ${this.limits.maxEntries} files undo would keep`,
          );
        }
        next.set(rel, c);
        tree.set(rel, c.entry);
      }
    }
  }

  /**
   * Only the files `rels`, for a call that can change nothing else (write,
   * edit): each a regular file within the size limit, or absent, reached
   * without a symlink and outside `.git`. Undefined when one is anything else:
   * then scan everything. The stat cache is only read: a full scan later sees
   * any change by its stat.
   */
  paths(rels: readonly string[]): Tree | undefined {
    this.#load();
    const now = Date.now();
    const tree: Tree = new Map();
    for (const rel of rels) {
      const parts = rel.split("/");
      if (parts.some((p) => p === "" || p === "." || p === ".." || p === ".git")) return undefined;
      let dir = this.workspace;
      for (let i = 0; i < parts.length - 1; i++) {
        dir += "/" + parts[i];
        const st = lstatOrNull(dir);
        if (st === null) break;
        if (!st.isDirectory) return undefined;
        // Directories the call makes for the file are its changes too.
        tree.set(parts.slice(0, i + 1).join("/"), { t: "d", mode: (st.mode ?? 0o755) & 0o7777 });
      }
      const abs = this.workspace + "/" + rel;
      const st = lstatOrNull(abs);
      if (st === null) continue;
      if (!st.isFile) return undefined;
      const c = this.#entry(abs, rel, this.#cache.get(rel)?.ig ?? false, now);
      if (c?.entry.t !== "f") return undefined;
      tree.set(rel, c.entry);
    }
    return tree;
  }

  /** Writes the stat cache for the next process, when it changed since it was last written. */
  saveState(): void {
    if (!this.#dirty) return;
    const rows: unknown[] = [];
    for (const [rel, c] of this.#cache) {
      if (c.racy) continue;
      rows.push([rel, c.entry, c.ino, c.size, c.mtime, c.ctime, c.ig ? 1 : 0]);
    }
    this.store.saveState(JSON.stringify({ v: 1, rows }));
    this.#dirty = false;
  }

  /** The cache another process left, each row trusted only while its object is kept. */
  #load(): void {
    if (this.#loaded) return;
    this.#loaded = true;
    const text = this.store.loadState();
    if (!text) return;
    try {
      const state = JSON.parse(text) as { v: number; rows: unknown[][] };
      if (state.v !== 1) return;
      // One query for the packed objects, not one per row; a file of its own is looked at.
      const packed = this.store.packedHashes();
      const kept = (hash: string) => packed.has(hash) || this.store.hasObject(hash);
      for (const r of state.rows) {
        const [rel, entry, ino, size, mtime, ctime, ig] = r as [
          string,
          Entry,
          number | null,
          number,
          number,
          number,
          number,
        ];
        if (entry.t === "f" && !kept(entry.hash)) continue;
        this.#cache.set(rel, { entry, ino, size, mtime, ctime, ig: ig === 1, racy: false });
      }
    } catch {
      // A damaged cache is only a slower scan.
    }
  }

  /** The cached or fresh state of one non-directory path; undefined when it is none of ours. */
  #entry(abs: string, rel: string, ig: boolean, now: number): Cached | undefined {
    const st = lstatOrNull(abs);
    if (!st || st.isDirectory) return undefined;
    if ((st.nlink ?? 1) > 1) this.#linked.add(rel);
    const mtime = ms(st.mtime), ctime = ms(st.ctime);
    const old = this.#cache.get(rel);
    if (
      old && !old.racy && old.ino === st.ino && old.size === st.size && old.mtime === mtime &&
      old.ctime === ctime && old.ig === ig
    ) {
      return old;
    }
    this.#dirty = true;
    const racy = isRacy(now, mtime, ctime);
    const base = { ino: st.ino, size: st.size, mtime, ctime, ig, racy };
    if (st.isSymlink) {
      let target: string;
      try {
        target = Deno.readLinkSync(abs);
      } catch {
        return undefined;
      }
      return { ...base, entry: { t: "l", target } };
    }
    if (!st.isFile) return undefined;
    const mode = (st.mode ?? 0o644) & 0o7777;
    if (st.size > (ig ? this.limits.ignoredMax : this.limits.fileMax)) {
      return { ...base, entry: { t: "big", size: st.size, mtime } };
    }
    // Known by size and mtime, like a file over the limit, when the policy keeps it out.
    if (this.#mayStore && !this.#mayStore(abs)) {
      return { ...base, entry: { t: "big", size: st.size, mtime, out: true } };
    }
    // The content may already be known: a mode change, or a touch.
    if (
      old && old.entry.t === "f" && old.ino === st.ino && old.size === st.size &&
      old.mtime === mtime && !old.racy
    ) {
      return { ...base, entry: { ...old.entry, mode } };
    }
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(abs);
    } catch {
      return undefined;
    }
    this.hashed++;
    const hash = hashBytes(bytes);
    this.store.putObject(hash, bytes);
    return {
      ...base,
      size: bytes.byteLength,
      entry: { t: "f", mode, size: bytes.byteLength, hash },
    };
  }

  /** The names in `dir`, from the cache while its stat is unchanged. */
  #listing(dir: string, now: number): Listing | undefined {
    const st = lstatOrNull(dir);
    if (!st?.isDirectory) {
      this.#dirs.delete(dir);
      return undefined;
    }
    const mtime = ms(st.mtime), ctime = ms(st.ctime);
    const hit = this.#dirs.get(dir);
    if (hit && hit.ino === st.ino && hit.mtime === mtime && hit.ctime === ctime) return hit;
    const names: Listing["names"] = [];
    let ignore = false, gitignore = false, git = false;
    try {
      for (const e of Deno.readDirSync(dir)) {
        const name = e.name;
        // The user's repository is theirs: never read, never restored.
        if (name === ".git") {
          git = true;
          continue;
        }
        if (name === ".ignore") ignore = true;
        else if (name === ".gitignore") gitignore = true;
        if (e.isDirectory) names.push([name, "d"]);
        else if (e.isSymlink) names.push([name, "l"]);
        else if (e.isFile) names.push([name, "f"]);
      }
    } catch {
      this.#dirs.delete(dir);
      return undefined;
    }
    const mode = (st.mode ?? 0o755) & 0o7777;
    const l: Listing = { ino: st.ino, mtime, ctime, mode, names, ignore, gitignore, git };
    if (!isRacy(now, mtime, ctime)) this.#dirs.set(dir, l);
    else this.#dirs.delete(dir);
    return l;
  }
}

/** Which names of a listing the rules ignore, kept with the listing while the rules are the same. */
function verdictsOf(dir: string, l: Listing, set: IgnoreSet): boolean[] {
  if (l.verdicts?.key === set.key) return l.verdicts.ignored;
  const prefix = dir === "/" ? "/" : dir + "/";
  const ignored = set.order.length === 0
    ? l.names.map(() => false)
    : l.names.map(([name, kind]) => set.ignores(prefix + name, name, kind === "d"));
  l.verdicts = { key: set.key, ignored };
  return ignored;
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/** What changed from `before` to `after`, in path order. */
export function diffTrees(
  before: Tree,
  after: Tree,
): { p: string; b: Entry | null; a: Entry | null }[] {
  const out: { p: string; b: Entry | null; a: Entry | null }[] = [];
  for (const [p, b] of before) {
    const a = after.get(p) ?? null;
    if (!sameEntry(b, a)) out.push({ p, b, a });
  }
  for (const [p, a] of after) if (!before.has(p)) out.push({ p, b: null, a });
  return out.sort((x, y) => (x.p < y.p ? -1 : x.p > y.p ? 1 : 0));
}
