/**
 * Commands that only read, and print: for each, an allow-list of the options
 * it accepts and what its operands are. A command of the table whose words
 * all pass needs no allow rule, as long as every file it reads is known and
 * inside the workspace (the caller checks, against the Read rules too); any
 * other option — one that writes (`--output`, `sort -o`, `tree -o`, `find
 * -fprint`), runs a program (`--ext-diff`, `rg --pre`, `find -exec`), pages
 * (`git -p`) or is simply not listed — and any word known only at run time
 * (`$X`, `*.ts`: either may turn into `--pre=sh`) make it an ordinary command,
 * which needs a rule. Allow-lists, not deny-lists: a new option of a new
 * version is not read-only until someone reads its manual.
 *
 * What is written or run is reported whatever the verdict, so that Edit and
 * Write rules see the files (`git … --output=F`, `sort -o F`, `uniq IN OUT`,
 * `find -fprint F`) and Bash rules the programs (`find -exec CMD ;`, `rg --pre
 * CMD`, `sort --compress-program=CMD`): a command an allow rule lets run still
 * writes only where Edit rules allow.
 *
 * Options are written getopt style in the table: short ones as letters, a `:`
 * after one that takes an argument (attached or the next word), `::` after one
 * whose argument can only be attached (`-M50%`); long ones as words, `name=`
 * for one that takes an argument (`--name=v` or `--name v`), `name=?` for an
 * optional one (`--name=v` only). Abbreviated long options (`--out` for
 * `--output`) are not in the lists, so they are not read-only either.
 *
 * @module
 */

import type { ShellWord } from "../shell.ts";

/** What a command of the table does with its words. */
export interface ReadOnlyUse {
  /** It only reads the files in {@link reads} and prints. */
  readOnly: boolean;
  /** Why it is not read-only, when a word says so (an option, a word known only at run time). */
  why?: string;
  /** Files and directories it reads, by operand or option; words known only at run time too. */
  reads: ShellWord[];
  /** Files its options or operands write. */
  writes: ShellWord[];
  /** Commands its options run, each as words (`{}` and the file it is given unknown). */
  commands: ShellWord[][];
}

/** What a command's operands are. */
type Operands =
  /** Files (or directories) it reads. */
  | "files"
  /** A pattern, unless an option gave one; then files. */
  | "pattern"
  /** Words that name no file (`basename`'s path, `id`'s user). */
  | "text"
  /** None at all. */
  | "none"
  /** `date`: only `+FORMAT` (a bare date sets the clock). */
  | "format"
  /** `git branch`: patterns, with `--list` only (else a name creates a branch). */
  | "list";

/** A command's entry, as written in the table. */
interface Entry {
  short?: string;
  long?: string;
  /** Options whose argument is a file it reads (short letters and long names). */
  reads?: string;
  /** Options whose argument is a file it writes: reported, and not read-only. */
  writes?: string;
  /** Options whose argument is a program it runs: reported, and not read-only. */
  runs?: string;
  /** Options that give the pattern, so the first operand is a file (`-e`, `--files`). */
  pattern?: string;
  /** `-5`, a count, is an option. */
  numeric?: boolean;
  operands: Operands;
}

/** An entry, compiled. */
interface Spec {
  /** Short option → `flag`, `arg` (attached or next) or `attached`. */
  short: Map<string, "flag" | "arg" | "attached">;
  /** Long option → `flag`, `arg` (`=v` or next) or `optional` (`=v` only). */
  long: Map<string, "flag" | "arg" | "optional">;
  reads: Set<string>;
  writes: Set<string>;
  runs: Set<string>;
  pattern: Set<string>;
  numeric: boolean;
  operands: Operands;
}

function compile(e: Entry): Spec {
  const short = new Map<string, "flag" | "arg" | "attached">();
  const letters = e.short?.replaceAll(" ", "") ?? "";
  for (let i = 0; i < letters.length; i++) {
    const c = letters[i];
    if (letters[i + 1] === ":" && letters[i + 2] === ":") {
      short.set(c, "attached");
      i += 2;
    } else if (letters[i + 1] === ":") {
      short.set(c, "arg");
      i++;
    } else short.set(c, "flag");
  }
  const long = new Map<string, "flag" | "arg" | "optional">();
  for (const word of words(e.long)) {
    if (word.endsWith("=?")) long.set(word.slice(0, -2), "optional");
    else if (word.endsWith("=")) long.set(word.slice(0, -1), "arg");
    else long.set(word, "flag");
  }
  return {
    short,
    long,
    reads: new Set(words(e.reads)),
    writes: new Set(words(e.writes)),
    runs: new Set(words(e.runs)),
    pattern: new Set(words(e.pattern)),
    numeric: e.numeric ?? false,
    operands: e.operands,
  };
}

function words(s: string | undefined): string[] {
  return s ? s.trim().split(/\s+/) : [];
}

const HELP = "help version";

const GREP: Entry = {
  short: "EFGPiywxzsvcLlbnHhoqaIrRTUZ e: f: m: d: D: A: B: C:",
  long: `extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case
    no-ignore-case word-regexp line-regexp null-data no-messages invert-match max-count=
    byte-offset line-number no-line-number line-buffered with-filename no-filename label=
    only-matching quiet silent binary-files= text devices= directories= exclude= exclude-from=
    exclude-dir= include= recursive dereference-recursive files-without-match
    files-with-matches count initial-tab null before-context= after-context= context=
    group-separator= no-group-separator color=? colour=? binary ${HELP}`,
  reads: "f file exclude-from",
  pattern: "e f regexp file",
  numeric: true,
  operands: "pattern",
};

/** The table, by program. */
const TABLE: Record<string, Entry> = {
  cat: {
    short: "AbeEnstTuv",
    long: `show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting
      ${HELP}`,
    operands: "files",
  },
  head: {
    short: "qvz c: n:",
    long: `bytes= lines= quiet silent verbose zero-terminated ${HELP}`,
    numeric: true,
    operands: "files",
  },
  tail: {
    short: "fFqvz c: n: s:",
    long: `bytes= lines= follow=? retry pid= quiet silent sleep-interval=
      max-unchanged-stats= verbose zero-terminated ${HELP}`,
    numeric: true,
    operands: "files",
  },
  wc: {
    short: "cmlLw",
    long: `bytes chars lines max-line-length words total= ${HELP}`,
    operands: "files",
  },
  nl: {
    short: "p b: d: f: h: i: l: n: s: v: w:",
    long: `body-numbering= section-delimiter= footer-numbering= header-numbering=
      line-increment= join-blank-lines= number-format= no-renumber number-separator=
      starting-line-number= number-width= ${HELP}`,
    operands: "files",
  },
  tac: { short: "br s:", long: `before regex separator= ${HELP}`, operands: "files" },
  rev: { long: HELP, operands: "files" },
  cut: {
    short: "nsz b: c: d: f:",
    long: `bytes= characters= delimiter= fields= complement only-delimited output-delimiter=
      zero-terminated ${HELP}`,
    operands: "files",
  },
  tr: {
    short: "cCdst",
    long: `complement delete squeeze-repeats truncate-set1 ${HELP}`,
    operands: "text",
  },
  sort: {
    short: "bdfghiMnRrVcCmsuz k: t: S: o:",
    long: `ignore-leading-blanks dictionary-order ignore-case general-numeric-sort
      human-numeric-sort ignore-nonprinting month-sort numeric-sort random-sort random-source=
      reverse version-sort sort= check=? merge stable unique zero-terminated key=
      field-separator= buffer-size= output= parallel= batch-size= debug compress-program=
      ${HELP}`,
    reads: "random-source",
    writes: "o output",
    runs: "compress-program",
    operands: "files",
  },
  uniq: {
    short: "cdDiuz f: s: w:",
    long: `count repeated all-repeated=? skip-fields= ignore-case skip-chars= unique
      check-chars= zero-terminated group=? ${HELP}`,
    operands: "files",
  },
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: {
    short: "iSswxvFnNlcoUPaIHhpbqL0V u e: f: g: t: T: E: j: m: M: d: r: A: B: C:",
    long: `regexp= file= glob= iglob= type= type-not= type-add= type-clear= type-list
      ignore-case smart-case case-sensitive word-regexp line-regexp invert-match fixed-strings
      no-fixed-strings line-number no-line-number files-with-matches files-without-match
      count count-matches only-matching multiline no-multiline multiline-dotall pcre2
      no-pcre2 engine= text no-text binary no-binary hidden no-hidden no-ignore ignore
      no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global no-ignore-exclude
      no-ignore-files no-ignore-messages no-messages no-require-git ignore-file=
      ignore-file-case-insensitive follow no-follow max-depth= maxdepth= max-filesize= files
      json no-json vimgrep heading no-heading with-filename no-filename pretty color= colors=
      max-columns= max-columns-preview column no-column null null-data replace= sort= sortr=
      stats trim no-trim quiet passthru passthrough context-separator= no-context-separator
      field-match-separator= field-context-separator= threads= mmap no-mmap no-config debug
      trace byte-offset block-buffered line-buffered crlf no-crlf dfa-size-limit=
      regex-size-limit= encoding= no-encoding unrestricted one-file-system
      no-one-file-system no-unicode path-separator= include-zero max-count= context=
      before-context= after-context= glob-case-insensitive auto-hybrid-regex pre= pre-glob=
      ${HELP}`,
    reads: "f file ignore-file",
    runs: "pre",
    pattern: "e f regexp file files type-list",
    operands: "pattern",
  },
  ls: {
    short: "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1 I: T: w:",
    long: `all almost-all author escape block-size= ignore-backups color=? colour=? directory
      dired classify=? file-type format= full-time group-directories-first no-group
      human-readable si dereference-command-line dereference-command-line-symlink-to-dir
      hide= hyperlink=? indicator-style= inode ignore= kibibytes dereference literal
      numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse
      recursive size sort= time= time-style= tabsize= width= context zero ${HELP}`,
    operands: "files",
  },
  diff: {
    short: "qscunyptTrNiEZbwBadH C: U: e W: F: x: X: S: I: D:",
    long: `brief report-identical-files context=? unified=? ed normal rcs side-by-side width=
      left-column suppress-common-lines show-c-function show-function-line= label=
      expand-tabs initial-tab tabsize= suppress-blank-empty recursive no-dereference new-file
      unidirectional-new-file ignore-file-name-case no-ignore-file-name-case exclude=
      exclude-from= starting-file= from-file= to-file= ignore-case ignore-tab-expansion
      ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines
      ignore-matching-lines= text strip-trailing-cr ifdef= old-group-format= new-group-format=
      unchanged-group-format= changed-group-format= line-format= old-line-format=
      new-line-format= unchanged-line-format= minimal horizon-lines= speed-large-files
      color=? palette= ${HELP}`,
    reads: "X exclude-from from-file to-file",
    operands: "files",
  },
  cmp: {
    short: "bls i: n:",
    long: `print-bytes ignore-initial= verbose bytes= quiet silent ${HELP}`,
    operands: "files",
  },
  comm: {
    short: "123z",
    long: `check-order nocheck-order output-delimiter= total zero-terminated ${HELP}`,
    operands: "files",
  },
  which: {
    short: "as",
    long: `all skip-alias skip-functions skip-dot skip-tilde show-dot show-tilde tty-only
      ${HELP}`,
    operands: "text",
  },
  file: {
    short: "bEhiklLNnrs0 e: F: m: P:",
    long: `brief exclude= exclude-quiet= extension mime mime-type mime-encoding keep-going
      no-dereference dereference no-pad no-buffer separator= special-files raw print0
      parameter= magic-file= apple ${HELP}`,
    reads: "m magic-file",
    operands: "files",
  },
  stat: {
    short: "Lft c:",
    long: `dereference file-system format= printf= terse cached= ${HELP}`,
    operands: "files",
  },
  du: {
    short: "0abcDhHklLmPsSx B: d: t: X:",
    long: `null all apparent-size block-size= bytes total max-depth= dereference-args
      human-readable inodes count-links dereference no-dereference separate-dirs si summarize
      threshold= time=? time-style= exclude-from= exclude= one-file-system ${HELP}`,
    reads: "X exclude-from",
    operands: "files",
  },
  df: {
    short: "ahHiklPTx B: t: x:",
    long: `all block-size= human-readable si inodes local no-sync portability print-type type=
      exclude-type= total ${HELP}`,
    operands: "files",
  },
  tree: {
    short: "adlfxqNQpugshDFvtcrUiASnCJX L: P: I: H: T: o:",
    long: `gitignore gitfile= ignore-case matchdirs metafirst prune info infofile= noreport
      charset= filelimit= timefmt= du si inodes device dirsfirst filesfirst sort= nolinks
      fflinks hyperlink ${HELP}`,
    reads: "gitfile infofile",
    writes: "o",
    operands: "files",
  },
  basename: { short: "az s:", long: `multiple suffix= zero ${HELP}`, operands: "text" },
  dirname: { short: "z", long: `zero ${HELP}`, operands: "text" },
  realpath: {
    short: "emLPqsz",
    long: `canonicalize-existing canonicalize-missing logical physical quiet relative-to=
      relative-base= strip no-symlinks zero ${HELP}`,
    reads: "relative-to relative-base",
    operands: "files",
  },
  readlink: {
    short: "femnqsvz",
    long: `canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent
      verbose zero ${HELP}`,
    operands: "files",
  },
  date: {
    short: "Ru d: f: r: I::",
    long: `date= file= iso-8601=? rfc-email rfc-3339= reference= utc universal debug
      resolution ${HELP}`,
    reads: "f file r reference",
    operands: "format",
  },
  whoami: { long: HELP, operands: "none" },
  id: {
    short: "aZgGnruz",
    long: `context group groups name real user zero ${HELP}`,
    operands: "text",
  },
  uname: {
    short: "asnrvmpio",
    long: `all kernel-name nodename kernel-release kernel-version machine processor
      hardware-platform operating-system ${HELP}`,
    operands: "none",
  },
  printenv: { short: "0", long: `null ${HELP}`, operands: "text" },
};

/** git's global options a read-only command may carry: none pages, moves or configures it. */
const GIT_GLOBAL = compile({
  short: "P",
  long: `no-pager no-optional-locks literal-pathspecs glob-pathspecs noglob-pathspecs
    icase-pathspecs no-advice no-replace-objects no-lazy-fetch`,
  operands: "none",
});

/** The options of git's diff machinery, shared by diff, log and show; never `--output`. */
const GIT_DIFF_SHORT = "pusz RabwWD t r m c B:: M:: C:: l:: S: G: O: U: X:: I:";
const GIT_DIFF_LONG = `patch no-patch unified= raw patch-with-raw patch-with-stat indent-heuristic
  no-indent-heuristic minimal patience histogram anchored= diff-algorithm= stat=? stat-width=
  stat-name-width= stat-graph-width= stat-count= compact-summary numstat shortstat dirstat=?
  cumulative dirstat-by-file=? summary name-only name-status submodule=? color=? no-color
  color-moved=? no-color-moved color-moved-ws= no-color-moved-ws word-diff=? word-diff-regex=
  color-words=? no-renames rename-empty no-rename-empty check ws-error-highlight= full-index
  binary abbrev=? no-abbrev break-rewrites=? find-renames=? find-copies=? find-copies-harder
  irreversible-delete diff-filter= find-object= pickaxe-all pickaxe-regex skip-to= rotate-to=
  relative=? no-relative text ignore-cr-at-eol ignore-space-at-eol ignore-space-change
  ignore-all-space ignore-blank-lines ignore-matching-lines= inter-hunk-context=
  function-context exit-code quiet no-ext-diff no-textconv ignore-submodules=? src-prefix=
  dst-prefix= no-prefix default-prefix line-prefix= ita-invisible-in-index
  ita-visible-in-index output-indicator-new= output-indicator-old= output-indicator-context=
  ${HELP}`;

/** What `git log` and `git show` take besides the diff options. */
const GIT_LOG_LONG = `oneline pretty=? format= abbrev-commit no-abbrev-commit encoding=
  expand-tabs=? no-expand-tabs notes=? no-notes show-notes=? show-notes-by-default
  standard-notes no-standard-notes relative-date date= parents children left-right graph
  show-linear-break=? decorate=? no-decorate decorate-refs= decorate-refs-exclude=
  clear-decorations source mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size
  max-count= skip= since= after= until= before= since-as-filter= author= committer=
  grep-reflog= grep= all-match invert-grep regexp-ignore-case basic-regexp extended-regexp
  fixed-strings perl-regexp remove-empty merges no-merges min-parents= max-parents=
  no-min-parents no-max-parents first-parent exclude-first-parent-only not all branches=?
  tags=? remotes=? glob= exclude= exclude-hidden= reflog alternate-refs single-worktree
  ignore-missing bisect cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge
  boundary simplify-by-decoration full-history dense sparse simplify-merges ancestry-path=?
  show-pulls date-order author-date-order topo-order reverse no-walk=? do-walk follow
  no-follow diff-merges= no-diff-merges combined-all-paths cc dd`;

/** git's read-only subcommands. */
const GIT: Record<string, Entry> = {
  status: {
    short: "sbzv u::",
    long: `short branch show-stash porcelain=? long verbose untracked-files=?
      ignore-submodules=? ignored=? column=? no-column ahead-behind no-ahead-behind renames
      no-renames find-renames=? null ${HELP}`,
    operands: "files",
  },
  diff: {
    short: GIT_DIFF_SHORT + " 0123",
    long: `${GIT_DIFF_LONG} cached staged merge-base no-index base ours theirs`,
    reads: "O",
    operands: "files",
  },
  log: {
    short: `${GIT_DIFF_SHORT} n: i E F P g L:`,
    long: `${GIT_DIFF_LONG} ${GIT_LOG_LONG}`,
    reads: "O",
    numeric: true,
    operands: "files",
  },
  show: {
    short: `${GIT_DIFF_SHORT} n: i E F P g`,
    long: `${GIT_DIFF_LONG} ${GIT_LOG_LONG}`,
    reads: "O",
    numeric: true,
    operands: "files",
  },
  blame: {
    short: "blt pMCsefnwc L: S:",
    long: `root show-stats show-name show-number show-email porcelain line-porcelain
      incremental encoding= contents= date= progress no-progress reverse= first-parent abbrev=?
      color-lines color-by-age minimal ignore-rev= ignore-revs-file= score-debug ${HELP}`,
    reads: "S contents ignore-revs-file",
    operands: "files",
  },
  branch: {
    short: "arvlq",
    long: `list all remotes verbose show-current contains= no-contains= merged= no-merged=
      points-at= sort= format= color=? no-color column=? no-column ignore-case omit-empty
      abbrev=? no-abbrev quiet ${HELP}`,
    operands: "list",
  },
  "rev-parse": {
    short: "q",
    long: `verify quiet sq sq-quote not abbrev-ref=? short=? symbolic symbolic-full-name all
      branches=? tags=? remotes=? glob= exclude= exclude-hidden= disambiguate= local-env-vars
      path-format= git-dir git-common-dir absolute-git-dir git-path= is-inside-git-dir
      is-inside-work-tree is-bare-repository is-shallow-repository resolve-git-dir=
      shared-index-path show-cdup show-prefix show-toplevel show-superproject-working-tree
      show-object-format=? show-ref-format since= after= until= before= revs-only no-revs
      flags no-flags default= prefix= end-of-options ${HELP}`,
    operands: "text",
  },
  "ls-files": {
    short: "cdmoisukztvf x: X:",
    long: `cached deleted modified others ignored stage unmerged killed directory
      no-empty-directory eol deduplicate exclude= exclude-from= exclude-per-directory=
      exclude-standard error-unmatch with-tree= full-name recurse-submodules abbrev=? debug
      format= sparse resolve-undo ${HELP}`,
    reads: "X exclude-from",
    operands: "files",
  },
  grep: {
    short: "aiIrvwhHEGPFnlLzocpWq f: e: A: B: C: m:",
    long: `cached no-index untracked no-exclude-standard exclude-standard recurse-submodules
      text no-textconv ignore-case max-depth= recursive no-recursive word-regexp invert-match
      full-name extended-regexp basic-regexp perl-regexp fixed-strings line-number column
      files-with-matches name-only files-without-match null only-matching count color=?
      no-color break heading show-function context= after-context= before-context=
      function-context max-count= threads= and or not all-match quiet ${HELP}`,
    reads: "f",
    pattern: "e f",
    numeric: true,
    operands: "pattern",
  },
};

/** Each command's spec, compiled at its first lookup: a run that reads no command line compiles none. */
class Specs {
  readonly #entries: Readonly<Record<string, Entry>>;
  readonly #compiled = new Map<string, Spec>();
  constructor(entries: Readonly<Record<string, Entry>>) {
    this.#entries = entries;
  }
  get(name: string): Spec | undefined {
    let spec = this.#compiled.get(name);
    if (spec === undefined && Object.hasOwn(this.#entries, name)) {
      this.#compiled.set(name, spec = compile(this.#entries[name]));
    }
    return spec;
  }
}

const SPECS = new Specs(TABLE);
const GIT_SPECS = new Specs(GIT);

/** The commands of the table, git's as `git SUBCOMMAND`; `find` and `env` with no command too. */
export const READ_ONLY_COMMANDS: readonly string[] = [
  ...Object.keys(TABLE),
  "find",
  "env",
  ...Object.keys(GIT).map((s) => `git ${s}`),
];

const UNKNOWN: ShellWord = { segs: [null], vanish: false, split: true, text: "…", tilde: false };

/**
 * What `args` make of the command `name` (a base name), or undefined when it is
 * not in the table (and is no `git` or `find`).
 *
 * @example
 * ```ts
 * readOnly("git", words("diff --stat"))!.readOnly; // true
 * readOnly("git", words("diff --ext-diff"))!.why; // "--ext-diff is not a read-only option of git diff"
 * ```
 */
export function readOnly(name: string, args: ShellWord[]): ReadOnlyUse | undefined {
  const use: ReadOnlyUse = { readOnly: true, reads: [], writes: [], commands: [] };
  if (name === "git") git(args, use);
  else if (name === "find") find(args, use);
  else {
    const spec = SPECS.get(name);
    if (!spec) return undefined;
    judge(name, spec, args, use);
  }
  return use;
}

function refuse(use: ReadOnlyUse, why: string): void {
  if (!use.readOnly) return;
  use.readOnly = false;
  use.why = why;
}

const attached = (w: ShellWord, value: string): ShellWord => ({ ...w, value, segs: [value] });

/** Reads `args` by `spec`, filling `use`; `who` names the command in reasons. */
function judge(who: string, spec: Spec, args: ShellWord[], use: ReadOnlyUse): void {
  const operands: ShellWord[] = [];
  let patternGiven = false;
  let listing = false;
  const option = (name: string, shown: string, value: ShellWord | undefined) => {
    if (spec.reads.has(name) && value) use.reads.push(value);
    if (spec.writes.has(name)) {
      if (value) use.writes.push(value);
      refuse(use, `${shown} writes a file`);
    }
    if (spec.runs.has(name)) {
      if (value) use.commands.push([value, UNKNOWN]);
      refuse(use, `${shown} runs a program`);
    }
    if (spec.pattern.has(name)) patternGiven = true;
    if (name === "list" || name === "l") listing = true;
  };
  const notListed = (shown: string) => refuse(use, `${shown} is not a read-only option of ${who}`);
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    const v = w.value;
    if (v === undefined) {
      // `$X` or `*.ts` may turn into any option, `--pre=sh` too, or into several files.
      use.reads.push(w);
      refuse(use, `${w.text} is known only at run time`);
      continue;
    }
    if (v === "--") {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (v === "-" || !v.startsWith("-")) {
      operands.push(w);
      continue;
    }
    if (spec.numeric && /^-[0-9]+$/.test(v)) continue;
    if (v.startsWith("--")) {
      const eq = v.indexOf("=");
      const name = v.slice(2, eq < 0 ? undefined : eq);
      const kind = spec.long.get(name);
      const shown = `--${name}`;
      if (kind === undefined || (kind === "flag" && eq >= 0)) {
        notListed(shown);
        continue;
      }
      let value: ShellWord | undefined;
      if (eq >= 0) value = attached(w, v.slice(eq + 1));
      else if (kind === "arg") value = args[++i];
      if (value && value.value === undefined) {
        use.reads.push(value);
        refuse(use, `${value.text} is known only at run time`);
      }
      option(name, shown, value);
      continue;
    }
    for (let k = 1; k < v.length; k++) {
      const c = v[k];
      const kind = spec.short.get(c);
      if (kind === undefined) {
        notListed(`-${c}`);
        break;
      }
      if (kind === "flag") {
        option(c, `-${c}`, undefined);
        continue;
      }
      const rest = v.slice(k + 1);
      let value: ShellWord | undefined;
      if (rest) value = attached(w, rest);
      else if (kind === "arg") value = args[++i];
      if (value && value.value === undefined) {
        use.reads.push(value);
        refuse(use, `${value.text} is known only at run time`);
      }
      option(c, `-${c}`, value);
      break;
    }
  }
  switch (spec.operands) {
    case "pattern":
      if (!patternGiven) operands.shift();
      use.reads.push(...operands.filter((w) => w.value !== "-"));
      break;
    case "files":
      if (who === "uniq" && operands.length > 1) {
        use.writes.push(operands.pop()!);
        refuse(use, "its second operand is a file it writes");
      }
      use.reads.push(...operands.filter((w) => w.value !== "-"));
      break;
    case "none":
      if (operands.length) refuse(use, `${who} takes no operand ${operands[0].text}`);
      break;
    case "format":
      if (operands.some((w) => !w.value?.startsWith("+"))) {
        refuse(use, `${who} sets the clock with an operand that is not +FORMAT`);
      }
      break;
    case "list":
      if (operands.length && !listing) {
        refuse(use, `${who} with a name makes a branch: only a listing is read-only`);
      }
      break;
    case "text":
      break;
  }
}

/** git: its global options, then a subcommand of {@link GIT}; writes of every subcommand. */
function git(args: ShellWord[], use: ReadOnlyUse): void {
  gitWrites(args, use);
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i].value;
    if (v === undefined) {
      use.reads.push(args[i]);
      return refuse(use, `${args[i].text} is known only at run time`);
    }
    if (!v.startsWith("-")) break;
    const long = v.startsWith("--") ? GIT_GLOBAL.long.get(v.slice(2)) : undefined;
    const short = !v.startsWith("--") && v.length === 2 ? GIT_GLOBAL.short.get(v[1]) : undefined;
    if (long !== "flag" && short !== "flag") {
      return refuse(use, `${v.split("=")[0]} is not a read-only global option of git`);
    }
  }
  const sub = args[i]?.value;
  const spec = sub === undefined ? undefined : GIT_SPECS.get(sub);
  if (!spec) {
    use.readOnly = false; // not in the table: an ordinary command, nothing to say
    return;
  }
  // git's own parser stops at `--` and takes the rest as paths, like the others here.
  judge(`git ${sub}`, spec, args.slice(i + 1), use);
}

/** Files git's options write: `--output=F` (diff, log, show, …), `format-patch -o DIR`. */
function gitWrites(args: ShellWord[], use: ReadOnlyUse): void {
  const patch = args.some((w) => w.value === "format-patch");
  for (let i = 0; i < args.length; i++) {
    const v = args[i].value;
    if (v === undefined) continue;
    if (v === "--") break;
    const eq = v.indexOf("=");
    const key = eq > 0 ? v.slice(0, eq) : v;
    const long = key.startsWith("--") ? key.slice(2) : undefined;
    const withArg = long === "output" ||
      (patch && (long === "output-directory" || key === "-o"));
    if (!withArg) continue;
    if (eq > 0) use.writes.push(attached(args[i], v.slice(eq + 1)));
    else if (args[i + 1]) use.writes.push(args[++i]);
  }
}

/** find's global options before the starting points. */
const FIND_GLOBAL = compile({ short: "HLP D: O::", operands: "none" });

/** find's primaries that take no argument, and those that take one. */
const FIND_FLAGS = new Set(
  words(`-depth -d -mount -xdev -noleaf -daystart -follow -ignore_readdir_race
    -noignore_readdir_race -empty -executable -false -true -nogroup -nouser -readable
    -writable -print -print0 -ls -prune -quit -not -a -and -o -or ! ( ) , -help --help
    -version --version`),
);
const FIND_WITH_ARG = new Set(
  words(`-maxdepth -mindepth -amin -atime -cmin -ctime -mmin -mtime -used -fstype -gid -uid
    -group -user -ilname -iname -inum -ipath -iregex -iwholename -links -lname -name -path
    -perm -regex -regextype -size -type -xtype -wholename -printf -context`),
);
/** Primaries whose argument is a file whose times or identity are read. */
const FIND_READS = /^-(?:newer|anewer|cnewer|samefile|newer[aBcm][aBcm])$/;
const FIND_EXEC = new Set(["-exec", "-execdir", "-ok", "-okdir"]);
/** Primaries that write a file, and how many arguments they take. */
const FIND_WRITES = new Map([["-fprint", 1], ["-fprint0", 1], ["-fls", 1], ["-fprintf", 2]]);

/** find: global options, starting points (read), then an expression of listed primaries. */
function find(args: ShellWord[], use: ReadOnlyUse): void {
  let i = 0;
  const unknown = (w: ShellWord) => {
    use.reads.push(w);
    refuse(use, `${w.text} is known only at run time`);
  };
  // Global options.
  for (; i < args.length; i++) {
    const v = args[i].value;
    if (v === undefined || !/^-[HLPDO]/.test(v)) break;
    const c = v[1];
    if (FIND_GLOBAL.short.get(c) === "arg" && v.length === 2) i++;
  }
  // Starting points: up to the first word that starts an expression.
  for (; i < args.length; i++) {
    const w = args[i];
    if (w.value === undefined) {
      unknown(w);
      continue;
    }
    if (/^[-(!),]/.test(w.value) && w.value !== "-") break;
    use.reads.push(w);
  }
  for (; i < args.length; i++) {
    const w = args[i];
    const v = w.value;
    if (v === undefined) {
      unknown(w);
      continue;
    }
    if (FIND_FLAGS.has(v)) continue;
    if (FIND_WITH_ARG.has(v)) {
      const arg = args[++i];
      if (arg?.value === undefined && arg) unknown(arg);
      continue;
    }
    if (FIND_READS.test(v) || /^-newer[aBcm]t$/.test(v)) {
      const arg = args[++i];
      if (arg?.value === undefined && arg) unknown(arg);
      else if (arg && !v.endsWith("t")) use.reads.push(arg);
      continue;
    }
    if (FIND_WRITES.has(v)) {
      if (args[i + 1]) use.writes.push(args[i + 1]);
      i += FIND_WRITES.get(v)!;
      refuse(use, `${v} is not a read-only primary of find`);
      continue;
    }
    if (FIND_EXEC.has(v)) {
      const cmd: ShellWord[] = [];
      let j = i + 1;
      for (; j < args.length; j++) {
        const a = args[j].value;
        if (a === ";" || (a === "+" && args[j - 1]?.value === "{}")) break;
        cmd.push(a?.includes("{}") ? { ...UNKNOWN, text: args[j].text } : args[j]);
      }
      if (cmd.length) use.commands.push(cmd);
      refuse(use, `${v} is not a read-only primary of find`);
      i = j;
      continue;
    }
    refuse(use, `${v} is not a read-only primary of find`);
  }
}
