/**
 * The sandbox's view of a git directory, built so that only what git writes to
 * commit can come back out. Git creates lock files in a git directory's top
 * level (`index.lock`, `HEAD.lock`) and renames them over the real files, so
 * the top level must be writable for `git add` to work, and a writable top level
 * lets a command create `commondir` or `config.worktree`, which git then obeys
 * outside the sandbox.
 *
 * So a command never sees the real top level. Each git directory is covered by
 * a private directory of crab's own, holding copies of the files git replaces
 * (the index, `HEAD`, `*_HEAD`, packed-refs, commit messages) and of an
 * operation in progress (`rebase-merge/`); `objects/`, `refs/`, `logs/`, `lfs/`,
 * `rr-cache/` are the real ones, bound writable; everything else (`config`, `hooks/`, `info/`,
 * `worktrees/`, `modules/`, …) is the real one, bound read-only. After the call,
 * crab gives back only the allow-listed files the command changed, each
 * replaced atomically; anything else the command made there is dropped and
 * named in the result. A rename outside the sandbox (the user's `git config`)
 * cannot lift this protection: the command's copy lives in crab's directory,
 * which nothing else touches.
 *
 * Given back with checks: a rebase todo that gained `exec` lines gets them
 * commented out (they would run at the user's `git rebase --continue`), and new
 * `skip-worktree` or `assume-unchanged` bits in the index (which hide changes
 * from `git status` and `git diff`) are reported.
 *
 * A tracked file the sandbox hides (a Read deny rule) looks changed to git:
 * an unreadable file stands where it was, and `git diff` fails to read it. So
 * the private copy of the index gets the assume-unchanged bit on each tracked
 * path below a hidden one before the call, and the index given back has
 * exactly those bits cleared again: a bit the user set stays, and crab's own
 * are not reported as the command's. Only a call that hides a tracked path
 * pays for it (the index read, and rewritten with its checksum). `HEAD`, the other `*_HEAD`
 * files and packed-refs come back only when they parse as git writes them
 * (`_ref_format.ts`); a copy the command turned into a symlink never does. A
 * file the user changed outside during the call is left as the user made it,
 * and reported.
 *
 * What is bound in place is checked in place: any symlink, FIFO, socket or
 * device left in a directory the call changed is removed, and so is a file
 * under `refs/` that holds no ref (`_plain_tree.ts`); `objects/info/alternates`
 * and `http-alternates` are put back as they were (git would read objects from
 * where they point).
 *
 * @module
 */

import { basename, join, relative } from "../../fs/path.ts";
import { ensureDataDir } from "../../fs/data_dir.ts";
import { isEmptyEntry, lstatOrNull, readTextOrNull } from "../../fs/exists.ts";
import { isWithin } from "../../fs/workspace.ts";
import { gitEntryKind, STATE_DIRS } from "../../fs/git_dirs.ts";
import { configValues } from "../../fs/protected.ts";
import { sha256 } from "../../fs/sha256.ts";
import { assumeUnchangedFlips, type Digest, flipAssumeUnchanged, hiddenPaths } from "./_index.ts";
import { PlainTree, type Removed, whatIs } from "./_plain_tree.ts";
import { isFetchHead, isIdList, isPackedRefs, isRefName, isRefValue } from "./_ref_format.ts";

/** What undo reads of a repository's index: each tracked file's stat and blob id. */
export { IndexEntries, indexEntries, type IndexStat } from "./_index.ts";

/** One bind mount, in the order bwrap applies them. */
export interface Mount {
  /** `rw` binds the real path writable, `ro` read-only. */
  kind: "rw" | "ro";
  src: string;
  dest: string;
}

/** A git directory's working tree: its index's paths are relative to `topLevel`. */
export interface Worktree {
  gitDir: string;
  topLevel: string;
}

/** What the sandbox hides from a call, for the index copies: the paths, and whose trees. */
export interface Hiding {
  /** Real paths a call cannot read (files or directories). */
  hidden: readonly string[];
  worktrees: readonly Worktree[];
}

/** The private views of a call's git directories. */
export interface GitViews {
  mounts: Mount[];
  /** Entries of the git directories a command meets read-only (`config`, `hooks/`, …). */
  readOnly: string[];
  /** Gives back what git wrote; returns notes for the command's result. Once. */
  giveBack(): string[];
  /** Removes the private directories. */
  discard(): void;
}

/** A file's identity as far as a change goes. */
interface Stamp {
  ino: number | null;
  size: number;
  mtime: number;
}

function stampOf(path: string): Stamp | null {
  const i = lstatOrNull(path);
  return i?.isFile ? { ino: i.ino, size: i.size, mtime: i.mtime?.getTime() ?? 0 } : null;
}

function sameStamp(a: Stamp | null, b: Stamp | null): boolean {
  return a === b || (a !== null && b !== null && a.ino === b.ino && a.size === b.size &&
    a.mtime === b.mtime);
}

/** Files and bytes of a state directory copied at most. */
const STATE_MAX_FILES = 10_000;
const STATE_MAX_BYTES = 64 * 1024 * 1024;

/** The one file of `info/` git writes (gc's list of refs for dumb servers). */
const INFO_GIVEN_BACK = "refs";

/** Todo lists whose `exec` lines run commands at the next `--continue`. */
const TODO_FILES = new Set(["git-rebase-todo", "todo"]);
const EXEC_LINE = /^\s*(exec|x)\s/;

/** A tree's files, relative paths with their stamps; symlinks and others left out. */
function treeStamps(root: string): Map<string, Stamp> | null {
  const out = new Map<string, Stamp>();
  if (!lstatOrNull(root)?.isDirectory) return null;
  const walk = (dir: string, rel: string) => {
    for (const e of Deno.readDirSync(dir)) {
      if (out.size >= STATE_MAX_FILES) return;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) walk(join(dir, e.name), r);
      else if (e.isFile) out.set(r, stampOf(join(dir, e.name))!);
    }
  };
  walk(root, "");
  return out;
}

function sameTree(a: Map<string, Stamp> | null, b: Map<string, Stamp> | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (!sameStamp(v, b.get(k) ?? null)) return false;
  return true;
}

/** Copies a directory tree (files and directories only), within the bounds. */
function copyTree(from: string, to: string, filter?: (rel: string, text: string) => string) {
  let files = 0, bytes = 0;
  const walk = (src: string, dst: string, rel: string) => {
    Deno.mkdirSync(dst, { mode: 0o700 });
    for (const e of Deno.readDirSync(src)) {
      const s = join(src, e.name), d = join(dst, e.name), r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) walk(s, d, r);
      else if (e.isFile) {
        const size = Deno.lstatSync(s).size;
        if (++files > STATE_MAX_FILES || (bytes += size) > STATE_MAX_BYTES) {
          throw new Error(`more than ${STATE_MAX_FILES} files or ${STATE_MAX_BYTES} bytes`);
        }
        if (filter && TODO_FILES.has(e.name)) {
          Deno.writeTextFileSync(d, filter(r, Deno.readTextFileSync(s)));
        } else Deno.copyFileSync(s, d);
      }
    }
  };
  walk(from, to, "");
}

function execLines(text: string | null): string[] {
  return (text ?? "").split("\n").filter((l) => EXEC_LINE.test(l));
}

function tempName(dir: string, name: string): string {
  return join(dir, `.${name}.crab-${crypto.randomUUID().slice(0, 8)}`);
}

/** Puts `src`'s content at `dest` atomically (a temp file beside it, renamed over). */
function replaceWith(src: string, dest: string): void {
  const tmp = tempName(join(dest, ".."), basename(dest));
  try {
    Deno.copyFileSync(src, tmp);
    Deno.renameSync(tmp, dest);
  } catch (e) {
    try {
      Deno.removeSync(tmp);
    } catch {
      // Never made.
    }
    throw e;
  }
}

/** The object id size of a repository: SHA-256 repositories say so in their config. */
function idBytes(gitDir: string, commonDir: string): number {
  for (const dir of [gitDir, commonDir]) {
    const config = readTextOrNull(join(dir, "config")) ?? "";
    if (configValues(config, "extensions", "objectformat").at(-1)?.toLowerCase() === "sha256") {
      return 32;
    }
  }
  return 20;
}

/** One git directory's private view, as set up. */
interface View {
  real: string;
  priv: string;
  /** Entries of the real top level when the call started. */
  names: Set<string>;
  /** Copied files: the copy's stamp right after copying, and the real one's. */
  files: Map<string, { copy: Stamp | null; real: Stamp | null }>;
  /** State directories: stamps of the copy and of the real one, and their exec lines. */
  states: Map<string, { copy: Map<string, Stamp> | null; real: Map<string, Stamp> | null }>;
  display: string;
  /** The copy of `info/`, when it was copied. */
  info?: Map<string, Stamp> | null;
  /** Names shown as links into the read-only real directory, and their targets. */
  links: Map<string, string>;
  /** Directories bound writable in place, by name (`objects`, `refs`, …). */
  bound: Map<string, PlainTree>;
  /** `objects/info/alternates` and `http-alternates` as they were, when `objects/` is bound. */
  alternates?: Map<string, Held>;
  /** Paths of the index copy crab marked assume-unchanged (hidden from the call). */
  assumed?: Set<string>;
}

/**
 * The trees bound writable in place, by real path, kept for the process: each
 * learns its directories once (see `_plain_tree.ts`).
 */
const trees = new Map<string, PlainTree>();

function treeAt(path: string): PlainTree {
  let tree = trees.get(path);
  if (!tree) trees.set(path, tree = new PlainTree(path));
  tree.prepare();
  return tree;
}

/** Files in `objects/info/` that make git read objects from elsewhere: never kept. */
const ALTERNATES = ["alternates", "http-alternates"];
/** Bytes of an alternates file crab holds on to; a larger one is left as it is. */
const ALTERNATES_MAX = 1024 * 1024;

/** An entry as it was before a call, to put back. */
type Held =
  | { kind: "none" }
  | { kind: "file"; bytes: Uint8Array }
  | { kind: "link"; target: string }
  | { kind: "other" };

function hold(path: string): Held {
  const info = lstatOrNull(path);
  try {
    if (!info) return { kind: "none" };
    if (info.isFile && info.size <= ALTERNATES_MAX) {
      return { kind: "file", bytes: Deno.readFileSync(path) };
    }
    if (info.isSymlink) return { kind: "link", target: Deno.readLinkSync(path) };
  } catch {
    // Changed under crab: left as it is.
  }
  return { kind: "other" };
}

function sameHeld(a: Held, b: Held): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "file" && b.kind === "file") {
    return a.bytes.length === b.bytes.length && a.bytes.every((x, i) => x === b.bytes[i]);
  }
  return a.kind !== "link" || a.target === (b as { target: string }).target;
}

/** Puts back what `path` was; false when it cannot (it was something crab does not hold). */
function putBack(path: string, was: Held): boolean {
  if (was.kind === "other") return false;
  const info = lstatOrNull(path);
  if (info) Deno.removeSync(path, { recursive: info.isDirectory });
  if (was.kind === "file") {
    const tmp = tempName(join(path, ".."), basename(path));
    Deno.writeFileSync(tmp, was.bytes, { createNew: true });
    Deno.renameSync(tmp, path);
  } else if (was.kind === "link") Deno.symlinkSync(was.target, path);
  return true;
}

/** Refs hold a ref: a file under `refs/` must be named and written as git would. */
function refCheck(rel: string, path: string): string | undefined {
  // A lock of a git that was killed mid-write: git says so at the next write.
  if (rel.endsWith(".lock")) return undefined;
  if (!isRefName(`refs/${rel}`)) return "not a ref name";
  const info = lstatOrNull(path);
  if (!info?.isFile || info.size > 4096) return "not a ref";
  return isRefValue(readTextOrNull(path) ?? "") ? undefined : "not a ref";
}

/** Top-level files git reads as refs, and how each must read. */
const REF_FILES = new Map<string, [(text: string) => boolean, string]>([
  ...["HEAD", "ORIG_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "AUTO_MERGE"].map((
    n,
  ): [string, [(text: string) => boolean, string]] => [
    n,
    [isRefValue, "not a hash or a ref under refs/"],
  ]),
  ["MERGE_HEAD", [isIdList, "not a list of hashes"]],
  ["FETCH_HEAD", [isFetchHead, "not a list of fetched hashes"]],
  ["packed-refs", [isPackedRefs, "does not parse as packed-refs"]],
]);

/** Why a copied file git reads as refs may not be given back, or undefined. */
function refFileProblem(name: string, path: string): string | undefined {
  const rule = REF_FILES.get(name);
  if (!rule) return undefined;
  const text = readTextOrNull(path);
  return text !== null && rule[0](text) ? undefined : rule[1];
}

/** This process's directory of views, held by a lock for as long as the process lives. */
let own: { dir: string; lock: Deno.FsFile } | undefined;

/**
 * The directory this process keeps its views in. Made once per process; views
 * that crabs killed mid-call left behind are removed on the way.
 */
function processDir(): string {
  if (own) return own.dir;
  const base = ensureDataDir(join("sandbox", "git"));
  for (const e of Deno.readDirSync(base)) {
    const dir = join(base, e.name);
    let lock: Deno.FsFile | undefined;
    try {
      lock = Deno.openSync(join(dir, "lock"), { read: true, write: true });
      if (!lock.tryLockSync(true)) continue;
    } catch {
      // No lock file: a directory whose set-up never finished.
    } finally {
      lock?.close();
    }
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // Another crab swept it first.
    }
  }
  const dir = join(base, crypto.randomUUID());
  Deno.mkdirSync(dir, { mode: 0o700 });
  const lock = Deno.openSync(join(dir, "lock"), { write: true, createNew: true, mode: 0o600 });
  lock.lockSync(true);
  own = { dir, lock };
  return dir;
}

/**
 * What a name of the real top level is in a view: a stub a mount covers, a
 * copy, or (an absolute path) a link into the read-only real directory.
 */
type Plan = "stub-dir" | "stub-file" | "copy" | string;

/** Where each real git directory is shown read-only inside the sandbox, for the views' links. */
const SHOWN = "/tmp/.crab-git";

/**
 * Views kept for reuse, by real git directory. Making and removing a directory
 * costs milliseconds on some file systems (freeing its block), so a view and
 * the mount stubs bwrap made in it live as long as the process; each call
 * refreshes the copies and clears what the last command left.
 */
const pool = new Map<string, string[]>();
let made = 0;

function takeView(root: string, real: string): string {
  const free = pool.get(real)?.pop();
  if (free) return free;
  const priv = join(root, String(++made));
  Deno.mkdirSync(priv, { mode: 0o700 });
  return priv;
}

function returnView(real: string, priv: string): void {
  const free = pool.get(real) ?? [];
  free.push(priv);
  pool.set(real, free);
}

/**
 * Clears a reused view for `plan`: empty mount stubs of the right kind stay;
 * copies, and anything the last command made, go.
 */
function cleanView(priv: string, plan: ReadonlyMap<string, Plan>): Set<string> {
  const kept = new Set<string>();
  for (const e of Deno.readDirSync(priv)) {
    const path = join(priv, e.name);
    const want = plan.get(e.name);
    const info = Deno.lstatSync(path);
    if (want?.startsWith("/") && info.isSymlink && Deno.readLinkSync(path) === want) {
      kept.add(e.name);
      continue;
    }
    const keep = (want === "stub-dir" && info.isDirectory && isEmptyEntry(path, info)) ||
      (want === "stub-file" && info.isFile && info.size === 0) ||
      (want === "copy" && e.name === "info" && info.isDirectory);
    if (keep) {
      kept.add(e.name);
      continue;
    }
    Deno.removeSync(path, { recursive: info.isDirectory });
  }
  return kept;
}

/** Makes `to` hold copies of the files in `from` (one level), and nothing else. */
function syncFlat(from: string, to: string, exists: boolean): void {
  if (!exists) Deno.mkdirSync(to, { mode: 0o700 });
  const want = new Set<string>();
  for (const e of Deno.readDirSync(from)) {
    if (!e.isFile) continue;
    if (want.size >= STATE_MAX_FILES) throw new Error("too many files");
    want.add(e.name);
    Deno.copyFileSync(join(from, e.name), join(to, e.name));
  }
  for (const e of Deno.readDirSync(to)) {
    if (!want.has(e.name)) Deno.removeSync(join(to, e.name), { recursive: e.isDirectory });
  }
}

/**
 * Sets up private views of `gitDirs` (outermost first) for one call. `display`
 * names a git directory in notes (e.g. relative to the workspace); `hiding`,
 * what the call cannot read, marks tracked paths there unchanged in the copies
 * of the index.
 */
export async function prepareGitViews(
  gitDirs: readonly string[],
  display: (real: string) => string,
  mayGiveBack: GiveBackQuestion = () => true,
  hiding?: Hiding,
): Promise<GitViews> {
  const root = processDir();
  // Changes in the trees bound in place count from here.
  const since = Date.now();
  const mounts: Mount[] = [];
  const views: View[] = [];
  for (const real of gitDirs) {
    const priv = takeView(root, real);
    const view: View = {
      real,
      priv,
      names: new Set(),
      files: new Map(),
      states: new Map(),
      links: new Map(),
      bound: new Map(),
      display: display(real),
    };
    mounts.push({ kind: "rw", src: priv, dest: real });
    // The real directory, read-only, where the view's links to what it protects point.
    const shown = join(SHOWN, sha256(real).slice(0, 16));
    mounts.push({ kind: "ro", src: real, dest: shown });
    const entries = [...Deno.readDirSync(real)];
    // What each name will be in the view; a mount stub or link left by an earlier call is reused.
    const plan = new Map<string, Plan>();
    for (const e of entries) {
      const kind = gitEntryKind(e.name);
      const copied = (kind === "file" && e.isFile) ||
        ((kind === "state" || e.name === "info") && e.isDirectory);
      // A link cannot hold the mount of a nested view (`worktrees/NAME`, `modules/x`).
      const nested = gitDirs.some((d) => d !== real && isWithin(join(real, e.name), d));
      const mounted = kind === "dir" || e.isSymlink || nested;
      plan.set(
        e.name,
        copied ? "copy" : !mounted ? join(shown, e.name) : e.isFile ? "stub-file" : "stub-dir",
      );
    }
    const kept = cleanView(priv, plan);
    view.links = new Map([...plan].filter(([, p]) => p.startsWith("/")) as [string, string][]);
    for (const e of entries) {
      view.names.add(e.name);
      const from = join(real, e.name), to = join(priv, e.name);
      const kind = gitEntryKind(e.name);
      if (kind === "file" && e.isFile) {
        Deno.copyFileSync(from, to);
        if (e.name === "index" && hiding) {
          view.assumed = await markHidden(to, real, gitDirs[0], hiding);
        }
        view.files.set(e.name, { copy: stampOf(to), real: stampOf(from) });
      } else if (kind === "dir" && !e.isFile) {
        mounts.push({ kind: "rw", src: from, dest: from });
        view.bound.set(e.name, treeAt(from));
        if (e.name === "objects") {
          view.alternates = new Map(ALTERNATES.map((a) => [a, hold(join(from, "info", a))]));
        }
      } else if (e.name === "info" && e.isDirectory) {
        // git gc rewrites info/refs; exclude and attributes stay as they are.
        try {
          syncFlat(from, to, kept.has(e.name));
          view.info = treeStamps(to);
        } catch {
          Deno.removeSync(to, { recursive: true });
          mounts.push({ kind: "ro", src: from, dest: from });
        }
      } else if (kind === "state" && e.isDirectory) {
        try {
          copyTree(from, to);
          view.states.set(e.name, { copy: treeStamps(to), real: treeStamps(from) });
        } catch {
          // Too large to carry: the command sees it read-only.
          Deno.removeSync(to, { recursive: true });
          mounts.push({ kind: "ro", src: from, dest: from });
        }
      } else if (view.links.has(e.name)) {
        // A link costs nothing to mount; git reading or writing through it meets a read-only file.
        if (!kept.has(e.name)) Deno.symlinkSync(view.links.get(e.name)!, to);
      } else {
        mounts.push({ kind: "ro", src: from, dest: from });
      }
    }
    views.push(view);
  }

  let given = false;
  const readOnly = [
    ...views.flatMap((v) => [...v.links.keys()].map((name) => join(v.real, name))),
    ...mounts.filter((m) => m.kind === "ro" && m.src === m.dest).map((m) => m.dest),
  ];
  return {
    mounts,
    readOnly,
    giveBack() {
      if (given) return [];
      given = true;
      const notes: string[] = [];
      for (const v of views) {
        try {
          giveBackView(v, gitDirs, notes, mayGiveBack, since);
        } catch (e) {
          notes.push(
            `crab could not give back what git wrote in ${v.display}: ${(e as Error).message}`,
          );
        }
      }
      return notes;
    },
    discard() {
      for (const v of views) returnView(v.real, v.priv);
    },
  };
}

/** node:crypto's hashes, loaded the first time an index copy is marked. */
let digest: Digest | undefined;

async function loadDigest(): Promise<Digest> {
  if (!digest) {
    const { createHash } = await import("node:crypto");
    digest = (algorithm, data) => new Uint8Array(createHash(algorithm).update(data).digest());
  }
  return digest;
}

/**
 * Sets the assume-unchanged bit in the index copy `copy` (of git directory
 * `real`) on each tracked path `hiding` hides; returns the paths it marked.
 */
async function markHidden(
  copy: string,
  real: string,
  commonDir: string,
  hiding: Hiding,
): Promise<Set<string> | undefined> {
  const top = hiding.worktrees.find((w) => w.gitDir === real)?.topLevel;
  if (!top) return undefined;
  const below: string[] = [];
  for (const h of hiding.hidden) {
    if (isWithin(h, top)) below.push("");
    else if (isWithin(top, h)) below.push(relative(top, h));
  }
  if (below.length === 0) return undefined;
  const pick = (path: string) =>
    below.some((b) => b === "" || path === b || path.startsWith(b + "/"));
  const bytes = Deno.readFileSync(copy);
  const ids = idBytes(real, commonDir);
  const flips = assumeUnchangedFlips(bytes, ids, pick, true);
  if (!flips?.paths.length) return undefined;
  Deno.writeFileSync(copy, flipAssumeUnchanged(bytes, flips, ids, await loadDigest()));
  return new Set(flips.paths);
}

/**
 * The index copy `copy` without the assume-unchanged bits crab set on `assumed`;
 * false when it cannot be read as an index (it must not be given back then).
 */
function clearMarked(copy: string, assumed: ReadonlySet<string>, ids: number): boolean {
  const bytes = Deno.readFileSync(copy);
  const flips = assumeUnchangedFlips(bytes, ids, (p) => assumed.has(p), false);
  if (!flips || !digest) return false;
  if (flips.paths.length) Deno.writeFileSync(copy, flipAssumeUnchanged(bytes, flips, ids, digest));
  return true;
}

/**
 * The policy's question about one entry of a git directory (a file, or a state
 * directory with a trailing `/`) that git changed inside the sandbox: may it
 * replace the real one?
 */
export type GiveBackQuestion = (gitDir: string, entry: string) => boolean;

function giveBackView(
  v: View,
  gitDirs: readonly string[],
  notes: string[],
  mayGiveBack: GiveBackQuestion,
  since: number,
): void {
  const hidden: string[] = [];
  const dropped: string[] = [];
  const kept: string[] = [];
  /** Entries not kept for what they were, with why. */
  const refused: string[] = [];
  const removed: Removed[] = [];
  for (const [name, tree] of v.bound) {
    const found = tree.check(since, name === "refs" ? refCheck : undefined);
    removed.push(...found.map((r) => ({ rel: `${name}/${r.rel}`, why: r.why })));
  }
  for (const [a, was] of v.alternates ?? []) {
    const path = join(v.real, "objects", "info", a);
    if (sameHeld(was, hold(path))) continue;
    refused.push(
      `objects/info/${a} (git would read objects from where it points${
        putBack(path, was) ? "" : "; crab could not put back what was there"
      })`,
    );
  }
  const now = new Set<string>();
  for (const e of Deno.readDirSync(v.priv)) now.add(e.name);
  for (const name of new Set([...now, ...v.files.keys()])) {
    const kind = gitEntryKind(name);
    if (kind !== "file") continue;
    if (v.names.has(name) && !v.files.has(name)) continue; // Shown read-only (a symlink).
    const before = v.files.get(name);
    const copy = join(v.priv, name), real = join(v.real, name);
    const info = lstatOrNull(copy);
    if (info && !info.isFile) {
      refused.push(`${name} (${whatIs(info)})`);
      continue;
    }
    const after = stampOf(copy);
    if (before && sameStamp(before.copy, after)) continue;
    if (!before && !after) continue;
    const problem = after ? refFileProblem(name, copy) : undefined;
    if (problem) {
      refused.push(`${name} (${problem})`);
      continue;
    }
    if (!sameStamp(before?.real ?? null, stampOf(real))) {
      kept.push(name);
      continue;
    }
    if (!mayGiveBack(v.real, name)) {
      dropped.push(name);
      continue;
    }
    if (!after) {
      Deno.removeSync(real);
      continue;
    }
    if (name === "index") {
      const bytes = idBytes(v.real, gitDirs[0]);
      if (v.assumed && !clearMarked(copy, v.assumed, bytes)) {
        refused.push(`${name} (crab could not clear the assume-unchanged bits it set)`);
        continue;
      }
      const was = before ? hiddenPaths(Deno.readFileSync(real), bytes) : new Set<string>();
      const is = hiddenPaths(Deno.readFileSync(copy), bytes);
      for (const p of is ?? []) if (!was?.has(p)) hidden.push(p);
    }
    replaceWith(copy, real);
  }
  for (const name of STATE_DIRS) {
    if (!now.has(name) && !v.states.has(name)) continue;
    const before = v.states.get(name);
    const copy = join(v.priv, name), real = join(v.real, name);
    const after = treeStamps(copy);
    if (before ? sameTree(before.copy, after) : after === null) continue;
    if (!sameTree(before?.real ?? null, treeStamps(real))) {
      kept.push(`${name}/`);
      continue;
    }
    if (!mayGiveBack(v.real, `${name}/`)) {
      dropped.push(`${name}/`);
      continue;
    }
    const old = tempName(v.real, name);
    if (after) {
      const fresh = tempName(v.real, name);
      const removed: string[] = [];
      copyTree(copy, fresh, (rel, text) => {
        const allowed = execLines(readTextOrNull(join(real, rel)));
        return text.split("\n").map((line) => {
          if (!EXEC_LINE.test(line)) return line;
          const i = allowed.indexOf(line);
          if (i >= 0) {
            allowed.splice(i, 1);
            return line;
          }
          removed.push(line.trim());
          return `# ${line} (made inside the sandbox; not kept by crab)`;
        }).join("\n");
      });
      if (lstatOrNull(real)) Deno.renameSync(real, old);
      Deno.renameSync(fresh, real);
      if (removed.length > 0) {
        notes.push(
          `The command left a ${name} todo with exec lines that would run at the user's ` +
            `next \`git rebase --continue\`; crab commented them out: ${
              removed.slice(0, 5).join("; ")
            }${removed.length > 5 ? `; and ${removed.length - 5} more` : ""}.`,
        );
      }
    } else if (lstatOrNull(real)) {
      Deno.renameSync(real, old);
    }
    if (lstatOrNull(old)) Deno.removeSync(old, { recursive: true });
  }
  if (v.info) {
    const after = treeStamps(join(v.priv, "info")) ?? new Map<string, Stamp>();
    for (const rel of new Set([...v.info.keys(), ...after.keys()])) {
      if (sameStamp(v.info.get(rel) ?? null, after.get(rel) ?? null)) continue;
      if (rel === INFO_GIVEN_BACK && after.get(rel)) {
        replaceWith(join(v.priv, "info", rel), join(v.real, "info", rel));
      } else if (after.get(rel)) dropped.push(`info/${rel}`);
    }
  }
  for (const [name, target] of v.links) {
    const path = join(v.priv, name);
    if (!(lstatOrNull(path)?.isSymlink && Deno.readLinkSync(path) === target)) dropped.push(name);
  }
  for (const name of now) {
    if (v.names.has(name) || gitEntryKind(name) !== "protected") continue;
    if (name.endsWith(".lock")) continue;
    dropped.push(name);
  }
  if (dropped.length > 0) {
    notes.push(
      `Not kept: ${dropped.slice(0, 10).map((n) => `${v.display}/${n}`).join(", ")}${
        dropped.length > 10 ? ` and ${dropped.length - 10} more` : ""
      } — in a git directory only what git writes to commit is kept (git would run commands ` +
        "that config, hooks or commondir name, outside the sandbox).",
    );
  }
  if (removed.length > 0) {
    notes.push(
      `Removed from the git directory what git never writes there: ${
        removed.slice(0, 10).map((r) => `${v.display}/${r.rel} (${r.why})`).join(", ")
      }${removed.length > 10 ? ` and ${removed.length - 10} more` : ""} — git would write ` +
        "through a link, or take a broken ref, outside the sandbox.",
    );
  }
  if (refused.length > 0) {
    notes.push(
      `Not kept: ${refused.map((n) => `${v.display}/${n}`).join(", ")} — the git directory ` +
        "keeps what it had before the call.",
    );
  }
  if (kept.length > 0) {
    notes.push(
      `${kept.map((n) => `${v.display}/${n}`).join(", ")} changed outside the sandbox during ` +
        "the call; the version from outside was kept and the command's was dropped.",
    );
  }
  if (hidden.length > 0) {
    notes.push(
      `The command marked ${hidden.length} path${
        hidden.length === 1 ? "" : "s"
      } skip-worktree or assume-unchanged, so \`git status\` and \`git diff\` will not show ` +
        `changes to them: ${hidden.slice(0, 10).join(", ")}${
          hidden.length > 10 ? ` and ${hidden.length - 10} more` : ""
        }. Undo with \`git update-index --no-skip-worktree --no-assume-unchanged PATH\`.`,
    );
  }
}
