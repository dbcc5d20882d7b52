/**
 * Ignore rules for the walker: gitignore patterns compiled once into matchers,
 * and the precedence of the files they come from.
 *
 * Patterns follow git (`gitignore(5)` and its `wildmatch`): `#` comments, trailing
 * spaces dropped unless escaped (`\ `), `!` negation, a trailing `/` for
 * directories only, a `/` at the start or in the middle anchors the pattern to
 * its file's directory, else it matches the name at any depth; `*` and `?` never
 * cross `/`, `**` does only as a whole segment, brackets take ranges, `!`/`^`
 * negation and `[:class:]`, `\` escapes. Matching is case-sensitive and the last
 * matching line of a file decides.
 *
 * Files combine as ripgrep combines them: every `.ignore` (deepest directory
 * first) beats every `.gitignore` (deepest first, and none above the repository
 * root), which beats `.git/info/exclude`, which beats the global excludes file
 * (`core.excludesFile`, default `$XDG_CONFIG_HOME/git/ignore`). Git-related files
 * apply only inside a git repository; `.ignore` applies everywhere.
 *
 * Where git and ripgrep disagree, git wins: braces are literal (`{a,b}`), tabs at
 * a line end are kept, and POSIX classes such as `[[:digit:]]` work.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { dirname, join, resolve } from "../fs/path.ts";
import { entryExists } from "../fs/exists.ts";

/** One compiled pattern line. */
interface Rule {
  negate: boolean;
  dirOnly: boolean;
  /** Matched against the path relative to the file's directory, else against the name. */
  anchored: boolean;
  test: (s: string) => boolean;
}

/** The verdict of a rule file for one path: 1 ignored, -1 re-included, 0 no rule matched. */
export type Verdict = 1 | -1 | 0;

let ruleFileSeq = 0;

/** The compiled rules of one ignore file, matched against paths below `base`. */
export class RuleFile {
  /** Identifies this compilation; a changed file gets a new one. */
  readonly id = ++ruleFileSeq;
  /** Absolute directory the patterns are relative to (no trailing slash, except `/`). */
  readonly base: string;
  readonly #rules: Rule[];
  readonly #anchored: boolean;
  readonly #cut: number;

  constructor(base: string, rules: Rule[]) {
    this.base = base;
    this.#rules = rules;
    this.#anchored = rules.some((r) => r.anchored);
    this.#cut = base === "/" ? 1 : base.length + 1;
  }

  /** Number of pattern lines that compiled. */
  get size(): number {
    return this.#rules.length;
  }

  /**
   * The verdict for `abs` (a path strictly below `base`) whose last segment is
   * `name`. The last matching rule decides.
   */
  match(abs: string, name: string, isDir: boolean): Verdict {
    const rel = this.#anchored ? abs.slice(this.#cut) : "";
    const rules = this.#rules;
    for (let i = rules.length - 1; i >= 0; i--) {
      const r = rules[i];
      if (r.dirOnly && !isDir) continue;
      if (r.test(r.anchored ? rel : name)) return r.negate ? -1 : 1;
    }
    return 0;
  }
}

/** git's `trim_trailing_spaces`: drops trailing spaces that are not escaped by `\`. */
function trimTrailingSpaces(line: string): string {
  let lastSpace = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === " ") {
      if (lastSpace === -1) lastSpace = i;
    } else if (c === "\\") {
      i++;
      if (i >= line.length) return line;
      lastSpace = -1;
    } else {
      lastSpace = -1;
    }
  }
  return lastSpace === -1 ? line : line.slice(0, lastSpace);
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: "a-zA-Z0-9",
  alpha: "a-zA-Z",
  blank: " \\t",
  cntrl: "\\x00-\\x1f\\x7f",
  digit: "0-9",
  graph: "\\x21-\\x7e",
  lower: "a-z",
  print: "\\x20-\\x7e",
  punct: "!-\\/:-@\\[-`{-~",
  space: " \\t\\n\\r\\f\\v",
  upper: "A-Z",
  xdigit: "0-9a-fA-F",
};

function classChar(c: string): string {
  return /[\\\]\[^-]/.test(c) ? "\\" + c : c;
}

/** The characters git calls glob-special (`is_glob_special`). */
const GLOB_META = /[*?[\\]/;

const REGEX_SPECIAL = /[.*+?^${}()|[\]\\/]/;

function literalChar(c: string): string {
  return REGEX_SPECIAL.test(c) ? "\\" + c : c;
}

/**
 * Translates a bracket expression starting at `p[start] === "["` the way
 * wildmatch reads it. Returns the regex source and the index after `]`, or
 * undefined when the bracket never closes (git then matches nothing).
 */
function bracket(p: string, start: number): { src: string; end: number } | undefined {
  let i = start + 1;
  let negated = false;
  if (p[i] === "!" || p[i] === "^") {
    negated = true;
    i++;
  }
  let body = "";
  let prev = ""; // previous single character, "" after a range or class (wildmatch's prev_ch = 0)
  let first = true;
  for (;;) {
    if (i >= p.length) return undefined;
    let c = p[i];
    if (c === "]" && !first) break;
    first = false;
    if (c === "\\") {
      i++;
      if (i >= p.length) return undefined;
      c = p[i];
      body += classChar(c);
      prev = c;
      i++;
    } else if (c === "-" && prev !== "" && i + 1 < p.length && p[i + 1] !== "]") {
      i++;
      let hi = p[i];
      if (hi === "\\") {
        i++;
        if (i >= p.length) return undefined;
        hi = p[i];
      }
      // The low end is already in `body` as a single character; widen it to the range.
      // A reversed range adds nothing (wildmatch compares bytes); the low end stays.
      if (hi >= prev) body += "-" + classChar(hi);
      prev = "";
      i++;
    } else if (c === "[" && p[i + 1] === ":") {
      const close = p.indexOf("]", i + 2);
      if (close === -1) return undefined;
      if (p[close - 1] !== ":" || close - 1 < i + 2) {
        // No ":]": an ordinary "[" in the set.
        body += classChar("[");
        prev = "[";
        i++;
        continue;
      }
      const name = p.slice(i + 2, close - 1);
      const cls = POSIX_CLASSES[name];
      if (cls === undefined) return undefined; // malformed class: git matches nothing
      body += cls;
      prev = "";
      i = close + 1;
    } else {
      body += classChar(c);
      prev = c;
      i++;
    }
  }
  const end = i + 1;
  if (negated) return { src: `[^/${body}]`, end };
  return { src: body === "" ? "(?!)" : `(?!/)[${body}]`, end };
}

/**
 * Translates a wildmatch pattern (WM_PATHNAME) to the source of an anchored
 * regex, or undefined for a pattern git can never match (unclosed bracket,
 * trailing `\`).
 *
 * Like git's `match_pathname`, the literal prefix (up to the first of `*?[\`)
 * is compared first and the rest matched as a pattern of its own, so a `**`
 * right after that prefix counts as leading: `x**` + `/y` matches `x/a/y`.
 */
export function wildmatchSource(pattern: string): string | undefined {
  let lit = 0;
  while (lit < pattern.length && !GLOB_META.test(pattern[lit])) lit++;
  const p = pattern.slice(lit);
  let out = "";
  for (const c of pattern.slice(0, lit)) out += literalChar(c);
  let i = 0;
  while (i < p.length) {
    const c = p[i];
    if (c === "*") {
      let j = i;
      while (p[j] === "*") j++;
      if (j - i >= 2 && (i === 0 || p[i - 1] === "/")) {
        if (j === p.length) {
          out += ".*";
          i = j;
          continue;
        }
        if (p[j] === "/") {
          // Zero or more whole directories.
          out += "(?:.*/)?";
          i = j + 1;
          continue;
        }
        if (p[j] === "\\" && p[j + 1] === "/") {
          out += ".*";
          i = j;
          continue;
        }
      }
      out += "[^/]*";
      i = j;
    } else if (c === "?") {
      out += "[^/]";
      i++;
    } else if (c === "[") {
      const b = bracket(p, i);
      if (!b) return undefined;
      out += b.src;
      i = b.end;
    } else if (c === "\\") {
      if (i + 1 >= p.length) return undefined;
      out += literalChar(p[i + 1]);
      i += 2;
    } else {
      out += literalChar(c);
      i++;
    }
  }
  return `^${out}$`;
}

/** Fast tests for the common shapes; a regex for everything else. */
function tester(pattern: string): ((s: string) => boolean) | undefined {
  if (!GLOB_META.test(pattern)) return (s) => s === pattern;
  if (pattern[0] === "*" && pattern.length > 1 && !GLOB_META.test(pattern.slice(1))) {
    const suffix = pattern.slice(1);
    // `*` matches no `/`; names have none, and anchored paths are checked for it.
    return (s) => s.endsWith(suffix) && s.lastIndexOf("/", s.length - suffix.length - 1) === -1;
  }
  const src = wildmatchSource(pattern);
  if (src === undefined) return undefined;
  const re = new RegExp(src, "s");
  const lit = requiredLiteral(pattern);
  // A substring search rejects most paths before the regex runs (`**/esm5/**` needs `esm5/`).
  return lit.length >= 2 ? (s) => s.includes(lit) && re.test(s) : (s) => re.test(s);
}

/**
 * The longest run of literal characters every match of a wildmatch pattern
 * contains. The `/` after a `**` is not counted: `**` + `/x` also matches `x`.
 */
export function requiredLiteral(pattern: string): string {
  let best = "";
  let run = "";
  const end = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      if (i + 1 < pattern.length) run += pattern[++i];
    } else if (c === "*") {
      end();
      let j = i;
      while (pattern[j] === "*") j++;
      if (j - i >= 2 && pattern[j] === "/") j++; // the optional slash of `**/`
      i = j - 1;
    } else if (c === "?") {
      end();
    } else if (c === "[") {
      end();
      const b = bracket(pattern, i);
      if (!b) return "";
      i = b.end - 1;
    } else {
      run += c;
    }
  }
  end();
  return best;
}

/** Compiles one line of an ignore file; undefined for blanks, comments and dead patterns. */
export function compileLine(raw: string): Rule | undefined {
  if (raw === "" || raw[0] === "#") return undefined;
  let line = trimTrailingSpaces(raw);
  if (line === "") return undefined;
  let negate = false;
  if (line[0] === "!") {
    negate = true;
    line = line.slice(1);
  }
  let dirOnly = false;
  if (line.endsWith("/")) {
    dirOnly = true;
    line = line.slice(0, -1);
  }
  if (line === "") return undefined;
  const anchored = line.includes("/");
  if (anchored && line[0] === "/") line = line.slice(1);
  const test = tester(line);
  if (!test) return undefined;
  return { negate, dirOnly, anchored, test };
}

/** Compiles the text of an ignore file whose patterns are relative to `base`. */
export function compileRules(base: string, text: string): RuleFile | undefined {
  const rules: Rule[] = [];
  // git drops one CR before each LF (files written on Windows).
  for (const line of text.split("\n")) {
    const rule = compileLine(line.endsWith("\r") ? line.slice(0, -1) : line);
    if (rule) rules.push(rule);
  }
  return rules.length ? new RuleFile(base, rules) : undefined;
}

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

interface CachedRules {
  ino: number | null;
  mtime: number;
  ctime: number;
  size: number;
  rules: RuleFile | undefined;
}

/** Compiled ignore files by path and base, reused while the file is unchanged. */
const rulesCache = new Map<string, CachedRules>();

/** Files changed more recently than this are compiled again on each use. */
const STABLE_AFTER_MS = 2000;

/**
 * Loads and compiles one ignore file; undefined when missing, unreadable or
 * empty. A file unchanged since the last load (inode, size, mtime, ctime) is not
 * read again.
 */
export function loadRules(base: string, file: string): RuleFile | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(file);
  } catch {
    return undefined;
  }
  if (!info.isFile) return undefined;
  const key = file + "\0" + base;
  const mtime = info.mtime?.getTime() ?? NaN;
  const ctime = info.ctime?.getTime() ?? NaN;
  const hit = rulesCache.get(key);
  if (
    hit && hit.ino === info.ino && hit.size === info.size && hit.mtime === mtime &&
    hit.ctime === ctime
  ) {
    return hit.rules;
  }
  const text = readText(file);
  const rules = text === undefined ? undefined : compileRules(base, text);
  const stableBefore = Date.now() - STABLE_AFTER_MS;
  if (mtime < stableBefore && ctime < stableBefore) {
    rulesCache.set(key, { ino: info.ino, mtime, ctime, size: info.size, rules });
  } else {
    rulesCache.delete(key);
  }
  return rules;
}

/**
 * The ignore files in force in one directory, in precedence order. A directory
 * that adds no file shares its parent's set.
 */
export class IgnoreSet {
  /** `.ignore` files, deepest first. */
  readonly ignore: readonly RuleFile[];
  /** `.gitignore` files of the current repository, deepest first. */
  readonly git: readonly RuleFile[];
  /** `.git/info/exclude` then the global excludes file, of the current repository. */
  readonly repo: readonly RuleFile[];
  /** All of the above flattened in precedence order. */
  readonly order: readonly RuleFile[];
  /** True inside a git repository (gitignore files are read). */
  readonly inRepo: boolean;
  /** Equal for sets of the same compiled files: a cache key. */
  readonly key: string;

  constructor(
    ignore: readonly RuleFile[],
    git: readonly RuleFile[],
    repo: readonly RuleFile[],
    inRepo: boolean,
  ) {
    this.ignore = ignore;
    this.git = git;
    this.repo = repo;
    this.inRepo = inRepo;
    this.order = [...ignore, ...git, ...repo];
    const ids = (files: readonly RuleFile[]) => files.map((r) => r.id).join(",");
    this.key = `${inRepo ? "g" : "n"}${ids(ignore)}|${ids(git)}|${ids(repo)}`;
  }

  /** True when `abs` (named `name`, a directory when `isDir`) is ignored. */
  ignores(abs: string, name: string, isDir: boolean): boolean {
    const order = this.order;
    for (let i = 0; i < order.length; i++) {
      const v = order[i].match(abs, name, isDir);
      if (v !== 0) return v === 1;
    }
    return false;
  }
}

function makeSet(
  ignore: readonly RuleFile[],
  git: readonly RuleFile[],
  repo: readonly RuleFile[],
  inRepo: boolean,
): IgnoreSet {
  return new IgnoreSet(ignore, git, repo, inRepo);
}

/** The empty set outside any repository. */
export const NO_RULES: IgnoreSet = makeSet([], [], [], false);

/** Minimal reader of `core.excludesFile` from git's global config files. */
function excludesFileSetting(
  home: string | undefined,
  xdg: string | undefined,
): string | undefined {
  const files = [xdg ? join(xdg, "git", "config") : undefined, home && join(home, ".gitconfig")];
  let value: string | undefined;
  for (const f of files) {
    if (!f) continue;
    const text = readText(f);
    if (text === undefined) continue;
    let inCore = false;
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      const section = /^\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]/.exec(line);
      if (section) {
        inCore = section[1].toLowerCase() === "core";
        continue;
      }
      if (!inCore) continue;
      const kv = /^excludesfile\s*=\s*(.*)$/i.exec(line);
      if (kv) value = kv[1].replace(/\s+[#;].*$/, "").replace(/^"(.*)"$/, "$1"); // later files win
    }
  }
  if (value === undefined) return undefined;
  if (value.startsWith("~/") && home) return join(home, value.slice(2));
  return value;
}

/** An environment variable, or undefined when unset or not readable in this build. */
function env(name: string): string | undefined {
  try {
    return runEnv.get(name);
  } catch {
    return undefined;
  }
}

/** Path of the global excludes file git would read, if any. */
export function globalExcludesPath(): string | undefined {
  const home = env("HOME");
  const xdgEnv = env("XDG_CONFIG_HOME");
  const xdg = xdgEnv ? xdgEnv : home ? join(home, ".config") : undefined;
  return excludesFileSetting(home, xdg) ?? (xdg ? join(xdg, "git", "ignore") : undefined);
}

/**
 * The directory holding `info/exclude` for a repository: `.git` itself, or for a
 * linked worktree or submodule (`.git` is a file saying `gitdir: …`) the common
 * git directory it points to.
 */
function commonGitDir(repoRoot: string): string {
  const dotGit = join(repoRoot, ".git");
  const text = readText(dotGit);
  if (text === undefined) return dotGit; // a directory (or unreadable)
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (!m) return dotGit;
  const gitDir = resolve(repoRoot, m[1]);
  const common = readText(join(gitDir, "commondir"));
  return common === undefined ? gitDir : resolve(gitDir, common.trim());
}

/** The rules a repository root adds for the whole repository: info/exclude, then global. */
function repoRules(repoRoot: string): RuleFile[] {
  const out: RuleFile[] = [];
  const exclude = loadRules(repoRoot, join(commonGitDir(repoRoot), "info", "exclude"));
  if (exclude) out.push(exclude);
  const globalPath = globalExcludesPath();
  if (globalPath) {
    const global = loadRules(repoRoot, globalPath);
    if (global) out.push(global);
  }
  return out;
}

/** What a directory's listing says about ignore files in it. */
export interface DirIgnoreFiles {
  ignore: boolean;
  gitignore: boolean;
  /** The directory holds `.git`: it is a repository root. */
  git: boolean;
}

/**
 * The set in force inside `dir`, given the set of its parent and which ignore
 * files its listing holds. Returns `parent` itself when nothing changes.
 */
export function enterDir(parent: IgnoreSet, dir: string, files: DirIgnoreFiles): IgnoreSet {
  if (!files.ignore && !files.gitignore && !files.git) return parent;
  let { ignore, git, repo, inRepo } = parent;
  if (files.git) {
    // A repository root: gitignore files above it stop applying (ripgrep's rule).
    inRepo = true;
    git = [];
    repo = repoRules(dir);
  }
  if (files.ignore) {
    const r = loadRules(dir, join(dir, ".ignore"));
    if (r) ignore = [r, ...ignore];
  }
  if (files.gitignore && inRepo) {
    const r = loadRules(dir, join(dir, ".gitignore"));
    if (r) git = [r, ...git];
  }
  if (ignore === parent.ignore && git === parent.git && repo === parent.repo) {
    return inRepo === parent.inRepo ? parent : makeSet(ignore, git, repo, inRepo);
  }
  return makeSet(ignore, git, repo, inRepo);
}

/** Finds the git repository root at or above `dir`: a directory holding `.git` (dir or file). */
export function findRepoRoot(dir: string): string | undefined {
  let current = dir;
  for (;;) {
    if (entryExists(join(current, ".git"))) return current;
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/**
 * The set in force at `root` before its own listing is read: every ancestor's
 * `.ignore` up to the filesystem root, and inside a repository the `.gitignore`
 * of every ancestor from the repository root down, plus the repository's
 * exclude files.
 */
export function initialSet(root: string): IgnoreSet {
  const repoRoot = findRepoRoot(root);
  const ancestors: string[] = [];
  for (let current = root;;) {
    const parent = dirname(current);
    if (parent === current) break;
    ancestors.push(parent);
    current = parent;
  }
  let set = NO_RULES;
  for (const dir of ancestors.reverse()) {
    const isRoot = dir === repoRoot;
    set = enterDir(set, dir, {
      ignore: entryExists(join(dir, ".ignore")),
      gitignore: (isRoot || set.inRepo) && entryExists(join(dir, ".gitignore")),
      git: isRoot,
    });
  }
  return set;
}
