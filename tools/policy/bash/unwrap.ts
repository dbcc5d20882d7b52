/**
 * What a simple command runs, beyond its own name: the wrappers that only run
 * another command, the shells and builtins that run a script given as text,
 * and the few commands whose arguments name files they write.
 *
 * - **Wrappers** (`env`, `command`, `builtin`, `exec`, `nohup`, `time`,
 *   `timeout`, `nice`, `stdbuf`, `xargs`) are seen through: allow rules are
 *   matched against the command inside (`timeout 5 npm test` is `npm test`),
 *   deny and ask rules against every layer. `xargs` adds the words it reads as
 *   an unknown tail (`xargs rm` is `rm *`). `sudo` and `doas` are seen through by
 *   deny and ask rules only: an allow must name them (`Bash(sudo apt update)`).
 *   A wrapper is recognised by its bare name or under `/bin`, `/usr/bin`,
 *   `/usr/local/bin` (named by another path, deny and ask rules still see
 *   through it); an option it does not know, or an option or duration that
 *   is not literal (it could split into several words), makes the command
 *   uncertain.
 * - **Spellings of a program**: deny and ask rules also see a program named by
 *   a path as its base name (`/bin/rm`, `./rm` are `rm`), what `busybox` and
 *   `toybox` run, and a multi-level command without its global options
 *   (`git --no-pager -C . push` is `git push`; `_global_options.ts`). Allow
 *   rules see the command as written, and without global options that change
 *   nothing; never one with an option that runs code or moves the repository
 *   (`noAllow`). The programs a PATH lookup finds are listed (`programs`) for
 *   the caller to check where PATH leads.
 * - **Scripts as text**: `sh -c`, `bash -c`, `dash -c`, `eval`, `trap` and
 *   `mapfile -C` with literal text are parsed in turn and each command in them
 *   decided; with text known only at run time they are uncertain, and so are
 *   `zsh`, `ksh`, `mksh` and `fish -c` (another language), a shell that first
 *   runs startup files (`bash -l`, `-i`, `--rcfile`), `source`/`.` (a file's
 *   commands are known only when it runs), alias definitions, `hash -p`,
 *   `enable -f`, `compgen -C`/`-F`.
 * - **Names**: `declare`, `typeset`, `local`, `export`, `readonly`, `read`,
 *   `mapfile`, `unset` and `printf -v` assign the variables their arguments
 *   name (listed in `sets`). A name known only at run time, or with a
 *   subscript bash evaluates (`a[i]`, which may be `a[$(cmd)]`), a name
 *   reference (`-n`: its value becomes a name) or the integer attribute
 *   (`-i`: assignments become arithmetic) makes them uncertain; so does `let`
 *   on anything but numbers.
 * - **Commands run by commands**: `find … -exec CMD … ;` (and `-execdir`,
 *   `-ok`, `-okdir`), `rg --pre CMD`, `sort --compress-program=CMD` run CMD,
 *   decided as a command of its own (`{}` unknown).
 * - **Files named by arguments**: written by `tee FILE`, `time -o FILE`, `sort -o
 *   FILE`, `uniq IN OUT`, `find -fprint FILE`, `tree -o FILE`, `git … --output=FILE`,
 *   `git format-patch -o DIR`; read by `xargs -a FILE` and by the read-only
 *   commands below.
 * - **Runs nothing**: `cd`, `pushd`, `popd`, `true`, `false`, `:`, `echo`,
 *   `printf`, `test` and `[` (without `-v`), `pwd`, `command -v`, `env` with no
 *   command, the builtins above that assign plain names, `trap` and `exec`
 *   without a command need no allow rule; deny and ask rules still apply to
 *   them, and so do the checks of their redirections.
 * - **Read-only commands** (`_read_only.ts`): `cat`, `grep`, `ls`, `find`,
 *   `git diff`, `git log`, … with only the options their allow-lists accept
 *   read the files their arguments name (listed in `reads`) and print: like the
 *   no-ops they need no allow rule as long as every file they read is known and
 *   inside the workspace (the caller checks).
 *
 * @module
 */

import type { ShellWord } from "../shell.ts";
import { globalOptions } from "./_global_options.ts";
import { readOnly } from "./_read_only.ts";

/** What one simple command amounts to. */
export interface Unwrapped {
  /** Every layer, outermost first: deny and ask rules are matched against each. */
  views: ShellWord[][];
  /** The layer allow rules are matched against. */
  allowView: ShellWord[];
  /** The same without global options that change nothing (`git --no-pager diff`), for allow rules too. */
  allowAlso?: ShellWord[];
  /** An option that runs code or moves the repository (`git -c`): no allow rule matches. */
  noAllow?: string;
  /**
   * The programs run up to the allow layer that bash or a wrapper looks up in
   * PATH, or that are named by a path: an allow rule holds only where each is
   * the program its name says (the caller checks PATH).
   */
  programs: ShellWord[];
  /** Directories options move the command to (`git -C DIR`). */
  dirs: ShellWord[];
  /** Variables set for the inner command (`env X=1 cmd`). */
  env: string[];
  /** Variables a builtin assigns (`declare X=1`, `read X`, `printf -v X`). */
  sets: string[];
  /** Literal scripts it runs (`sh -c '…'`, `eval …`, `trap '…' EXIT`). */
  scripts: string[];
  /** Further commands it runs (`find -exec`). */
  commands: ShellWord[][];
  /** Files its arguments write, and read. */
  writes: ShellWord[];
  reads: ShellWord[];
  /** `cd`'s target; `home` for `cd` alone; `unknown` when it cannot be told. */
  cd?: ShellWord | "home" | "unknown";
  /** Why what it runs cannot be told before the run. */
  uncertain?: string;
  /** It runs nothing by itself and needs no allow rule. */
  neutral: boolean;
  /** It is a reader: neutral only while every file in `reads` is known and inside the workspace. */
  reader?: boolean;
  /** Why a command of the read-only table (`_read_only.ts`) is not read-only here. */
  notReadOnly?: string;
}

/** How a wrapper's options are read. */
interface OptionSpec {
  /** Short flags without an argument. */
  flags?: string;
  /** Short options that take an argument (attached or the next word). */
  withArg?: string;
  /** Short options whose argument, if any, is attached (`-i{}`). */
  optionalArg?: string;
  long?: readonly string[];
  longWithArg?: readonly string[];
  longOptionalArg?: readonly string[];
  /** `nice -10`. */
  numeric?: boolean;
  /** `env -`: a lone dash is an option. */
  dash?: boolean;
}

interface Wrapper extends OptionSpec {
  /** Takes `NAME=value` words before the command (env, sudo). */
  assigns?: boolean;
  /** Words between the options and the command (timeout's duration). */
  operands?: number;
  /** Only deny and ask rules see through it. */
  denyOnly?: boolean;
}

const WRAPPERS: Record<string, Wrapper> = {
  env: {
    flags: "i0v",
    withArg: "uCS",
    long: ["ignore-environment", "null", "debug"],
    longWithArg: ["unset", "chdir", "split-string"],
    dash: true,
    assigns: true,
  },
  command: { flags: "p" },
  builtin: {},
  exec: { flags: "cl", withArg: "a" },
  nohup: {},
  time: {
    flags: "pvaq",
    withArg: "fo",
    long: ["portability", "verbose", "append", "quiet"],
    longWithArg: ["format", "output"],
  },
  timeout: {
    flags: "v",
    withArg: "sk",
    long: ["preserve-status", "foreground", "verbose"],
    longWithArg: ["signal", "kill-after"],
    operands: 1,
  },
  nice: { withArg: "n", longWithArg: ["adjustment"], numeric: true },
  stdbuf: { withArg: "ioe", longWithArg: ["input", "output", "error"] },
  xargs: {
    flags: "0oprtx",
    withArg: "adEILnPs",
    optionalArg: "eil",
    long: ["null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits"],
    longWithArg: [
      "arg-file",
      "delimiter",
      "eof",
      "max-lines",
      "max-args",
      "max-procs",
      "max-chars",
      "process-slot-var",
    ],
    longOptionalArg: ["replace"],
  },
  sudo: {
    flags: "AbEHKklnPSsVie",
    withArg: "CDghpRrTUu",
    long: [
      "askpass",
      "background",
      "preserve-env",
      "edit",
      "set-home",
      "login",
      "remove-timestamp",
      "reset-timestamp",
      "non-interactive",
      "preserve-groups",
      "stdin",
      "shell",
    ],
    longWithArg: [
      "close-from",
      "chdir",
      "group",
      "host",
      "prompt",
      "chroot",
      "role",
      "type",
      "command-timeout",
      "other-user",
      "user",
    ],
    assigns: true,
    denyOnly: true,
  },
  doas: { flags: "ns", withArg: "Cu", denyOnly: true },
};

/** Shells whose `-c` script is bash syntax, parsed in turn. */
const SHELLS = new Set(["sh", "bash", "dash"]);
/** Shells of another language: a `-c` script is not read. */
const OTHER_SHELLS = new Set(["zsh", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox"]);
const NEUTRAL = new Set(["true", "false", ":", "echo", "pwd", "popd"]);

/** How a builtin that assigns variables reads its arguments. */
interface NameBuiltin {
  /** Short flags. */
  flags: string;
  /** Short options whose argument is not a name (`read -p PROMPT`). */
  withArg?: string;
  /** Short options whose argument is a name (`read -a NAME`, `printf -v NAME`). */
  nameArg?: string;
  /** Flags that make later uses of the names evaluate their values (`-n`, `-i`). */
  evaluating?: string;
  /** Flags that make the operands function names (`-f`). */
  functions?: string;
  /** Options whose argument is a command as text (`mapfile -C`). */
  script?: string;
  /** What the operands are: names (`NAME` or `NAME=value`), or anything but names (printf). */
  operands: "names" | "other";
}

/**
 * Builtins that assign the variables their arguments name. A name given at
 * run time, or with a subscript bash evaluates (`a[i]`), may be `a[$(cmd)]`:
 * the command is then known only at run time.
 */
const NAME_BUILTINS: Record<string, NameBuiltin> = {
  declare: { flags: "aAfFgiIlnprtux", evaluating: "in", functions: "fF", operands: "names" },
  typeset: { flags: "aAfFgiIlnprtux", evaluating: "in", functions: "fF", operands: "names" },
  local: { flags: "aAiIlnrtux", evaluating: "in", operands: "names" },
  export: { flags: "fnp", functions: "f", operands: "names" },
  readonly: { flags: "aAfp", functions: "f", operands: "names" },
  read: { flags: "ers", withArg: "dinNptu", nameArg: "a", operands: "names" },
  mapfile: { flags: "t", withArg: "dnOsuc", script: "C", operands: "names" },
  readarray: { flags: "t", withArg: "dnOsuc", script: "C", operands: "names" },
  unset: { flags: "fvn", functions: "f", operands: "names" },
  printf: { flags: "", nameArg: "v", operands: "other" },
};

/** A variable's name as bash assigns it without evaluating anything: `x` or `x[0]`. */
const PLAIN_NAME = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[0-9]+\])?$/;

/**
 * The variables a {@link NAME_BUILTINS} command assigns, or why what it runs is
 * known only at run time. It runs nothing otherwise.
 */
function assigns(name: string, spec: NameBuiltin, args: ShellWord[], out: Unwrapped): void {
  const unsure = (why: string) => {
    out.uncertain = `${name} ${why}`;
  };
  const named = (w: ShellWord, withValue: boolean): boolean => {
    // `x=$(…)` is known in its name; `$x`, `"$x"=1`, `a[i]` are not.
    const head = w.value ?? (typeof w.segs[0] === "string" && w.segs.length > 1 ? w.segs[0] : "");
    const eq = withValue ? head.search(/\+?=/) : -1;
    if (w.value === undefined && eq < 0) return false;
    const m = PLAIN_NAME.exec(eq < 0 ? head : head.slice(0, eq));
    if (!m) return false;
    out.sets.push(m[1]);
    return true;
  };
  let functions = false;
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i];
    if (w.value === undefined) {
      if (spec.operands === "names") break; // an operand, checked below
      return unsure(`takes ${w.text}, known only at run time, as an option or a name`);
    }
    const v = w.value;
    if (v === "--") {
      i++;
      break;
    }
    if (!/^[-+]./.test(v) || (name === "printf" && v[0] === "+")) break;
    for (let k = 1; k < v.length; k++) {
      const c = v[k];
      if (v[0] === "-" && spec.evaluating?.includes(c)) {
        return unsure(
          c === "n"
            ? `-n makes a name reference: its value is used as a name, which may run commands`
            : `-i makes assignments evaluate arithmetic, which may run commands`,
        );
      }
      if (spec.functions?.includes(c)) functions = true;
      if (spec.flags.includes(c)) continue;
      const rest = v.slice(k + 1);
      const arg = rest ? { ...w, value: rest, segs: [rest] } : args[++i];
      if (!arg) return;
      if (spec.nameArg?.includes(c)) {
        if (!named(arg, false)) return unsure(`-${c} assigns ${arg.text}, which may run commands`);
      } else if (spec.script?.includes(c)) {
        if (arg.value === undefined) return unsure(`-${c} runs text known only at run time`);
        // bash appends the index and the line read to the callback's text.
        out.scripts.push(`${arg.value} "$_" "$_"`);
      } else if (!spec.withArg?.includes(c)) return unsure(`has an unknown option -${c}`);
      break;
    }
  }
  if (spec.operands === "names" && !functions) {
    for (const w of args.slice(i)) {
      if (!named(w, name !== "read" && name !== "mapfile" && name !== "readarray")) {
        return unsure(
          `${name === "unset" ? "unsets" : "assigns"} ${w.text}, which may run commands`,
        );
      }
    }
  }
  out.neutral = true;
}

const SYSTEM_BIN = /^\/(?:usr\/(?:local\/)?)?bin\/[^/]+$/;

/** A command word's program by base name (`/bin/rm` is `rm`); undefined when known only at run time. */
function baseName(w: ShellWord | undefined): string | undefined {
  const v = w?.value;
  if (v === undefined) return undefined;
  return v.includes("/") ? v.slice(v.lastIndexOf("/") + 1) : v;
}

/** A program crab recognises by its name: a bare name, or a system binary's path. */
function isTrusted(w: ShellWord | undefined): boolean {
  const v = w?.value;
  return v !== undefined && (!v.includes("/") || SYSTEM_BIN.test(v));
}

/** The name a command is recognised by: a bare name, or a system binary's. */
function nameOf(w: ShellWord | undefined): string | undefined {
  return isTrusted(w) ? baseName(w) : undefined;
}

/** bash's builtins and keywords: bash runs them itself, whatever PATH holds. */
const BASH_BUILTINS = new Set([
  ".",
  ":",
  "[",
  "alias",
  "bg",
  "bind",
  "break",
  "builtin",
  "caller",
  "cd",
  "command",
  "compgen",
  "complete",
  "compopt",
  "continue",
  "declare",
  "dirs",
  "disown",
  "echo",
  "enable",
  "eval",
  "exec",
  "exit",
  "export",
  "false",
  "fc",
  "fg",
  "getopts",
  "hash",
  "help",
  "history",
  "jobs",
  "kill",
  "let",
  "local",
  "logout",
  "mapfile",
  "popd",
  "printf",
  "pushd",
  "pwd",
  "read",
  "readarray",
  "readonly",
  "return",
  "set",
  "shift",
  "shopt",
  "source",
  "suspend",
  "test",
  "times",
  "trap",
  "true",
  "type",
  "typeset",
  "ulimit",
  "umask",
  "unalias",
  "unset",
  "wait",
]);

const ASSIGN = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** Where a wrapper's options end. */
interface OptionsEnd {
  /** Index of the first word after the options. */
  next: number;
  /** Option name (without dashes) → its argument (`""` for a flag). */
  seen: Map<string, ShellWord | undefined>;
  uncertain?: string;
}

/** Reads options from `words[from]` on, GNU style; stops at the first operand or `--`. */
function readOptions(words: ShellWord[], from: number, spec: OptionSpec, who: string): OptionsEnd {
  const seen = new Map<string, ShellWord | undefined>();
  let i = from;
  const unsure = (why: string): OptionsEnd => ({ next: i, seen, uncertain: `${who}: ${why}` });
  while (i < words.length) {
    const w = words[i];
    // Known only at run time: an option, its argument or the command, nobody can tell.
    if (w.value === undefined) return unsure(`${w.text} is known only at run time`);
    const v = w.value;
    if (v === "--") return { next: i + 1, seen };
    if (v === "-" && spec.dash) {
      seen.set("i", undefined);
      i++;
      continue;
    }
    if (!v.startsWith("-") || v === "-") break;
    if (spec.numeric && /^-[0-9]+$/.test(v)) {
      i++;
      continue;
    }
    if (v.startsWith("--")) {
      const eq = v.indexOf("=");
      const name = v.slice(2, eq < 0 ? undefined : eq);
      if (spec.long?.includes(name) || spec.longOptionalArg?.includes(name)) {
        seen.set(
          name,
          eq < 0 ? undefined : { ...w, value: v.slice(eq + 1), segs: [v.slice(eq + 1)] },
        );
        i++;
      } else if (spec.longWithArg?.includes(name)) {
        if (eq >= 0) {
          seen.set(name, { ...w, value: v.slice(eq + 1), segs: [v.slice(eq + 1)] });
          i++;
        } else {
          const arg = words[i + 1];
          if (!arg) return unsure(`option ${v} lacks its argument`);
          if (arg.split) return unsure(`${arg.text} is known only at run time`);
          seen.set(name, arg);
          i += 2;
        }
      } else return unsure(`unknown option ${v}`);
      continue;
    }
    // A cluster of short options: -0r, -n1, -I {}.
    let k = 1;
    let took = false;
    while (k < v.length) {
      const c = v[k];
      if (spec.flags?.includes(c)) {
        seen.set(c, undefined);
        k++;
      } else if (spec.withArg?.includes(c)) {
        if (k + 1 < v.length) {
          seen.set(c, { ...w, value: v.slice(k + 1), segs: [v.slice(k + 1)] });
        } else {
          const arg = words[i + 1];
          if (!arg) return unsure(`option -${c} lacks its argument`);
          if (arg.split) return unsure(`${arg.text} is known only at run time`);
          seen.set(c, arg);
          took = true;
        }
        break;
      } else if (spec.optionalArg?.includes(c)) {
        const rest = v.slice(k + 1);
        seen.set(c, rest ? { ...w, value: rest, segs: [rest] } : undefined);
        break;
      } else return unsure(`unknown option -${c}`);
    }
    i += took ? 2 : 1;
  }
  return { next: i, seen };
}

const MAX_LAYERS = 16;

/** What an empty command runs: nothing, with no effect (fresh lists each time). */
export function nothingRun(): Unwrapped {
  return {
    views: [],
    allowView: [],
    programs: [],
    dirs: [],
    env: [],
    sets: [],
    scripts: [],
    commands: [],
    writes: [],
    reads: [],
    neutral: true,
  };
}

/** What `words` (a simple command's name and arguments) runs. */
export function unwrap(words: ShellWord[]): Unwrapped {
  const out: Unwrapped = { ...nothingRun(), views: [words], allowView: words, neutral: false };
  let cur = words;
  let allowStopped = false;
  // bash itself runs the first word, and what `command` and `builtin` give it; a builtin's
  // name then needs no program. What other wrappers run, they look up in PATH.
  let byBash = true;
  for (let layer = 0; layer < MAX_LAYERS; layer++) {
    const name = baseName(cur[0]);
    if (
      !allowStopped && !(byBash && name !== undefined && !cur[0].value!.includes("/") &&
        BASH_BUILTINS.has(name))
    ) out.programs.push(cur[0]);
    const spec = name === undefined ? undefined : WRAPPERS[name];
    if (!spec || (name === "command" && isCommandLookup(cur))) break;
    // A wrapper named by a path of its own (`./env rm x`) may be anything: deny rules see
    // through it, allow rules do not.
    const trusted = isTrusted(cur[0]);
    const opts = readOptions(cur, 1, spec, name!);
    if (opts.uncertain) {
      if (trusted) out.uncertain = opts.uncertain;
      return finish(out);
    }
    let i = opts.next;
    if (name === "env" && (opts.seen.has("S") || opts.seen.has("split-string"))) {
      out.uncertain = "env -S splits a string into a command";
      return finish(out);
    }
    if (name === "env" && (opts.seen.has("C") || opts.seen.has("chdir"))) {
      out.uncertain = "env -C runs the command in another directory";
      return finish(out);
    }
    if (spec.assigns) {
      // env takes every word holding `=` for an assignment (`BASH_FUNC_f%%=…` too).
      const assign = name === "env" ? /^[^=]+=/ : ASSIGN;
      while (i < cur.length && cur[i].value !== undefined && assign.test(cur[i].value!)) {
        out.env.push(cur[i].value!.slice(0, cur[i].value!.indexOf("=")));
        i++;
      }
      if (i < cur.length && cur[i].split && cur[i].segs[0] !== null) {
        // `env $X cmd`: $X may be an assignment or the command.
        out.uncertain = `${name}: ${cur[i].text} is known only at run time`;
        return finish(out);
      }
    }
    for (let k = 0; k < (spec.operands ?? 0); k++) {
      if (i >= cur.length) break;
      if (cur[i].split) {
        out.uncertain = `${name}: ${cur[i].text} is known only at run time`;
        return finish(out);
      }
      i++;
    }
    if (name === "time") {
      const file = opts.seen.get("o") ?? opts.seen.get("output");
      if (file) out.writes.push(file);
    }
    let inner = cur.slice(i);
    if (name === "xargs") {
      const file = opts.seen.get("a") ?? opts.seen.get("arg-file");
      if (file) out.reads.push(file);
      inner = xargsCommand(inner, opts.seen);
    }
    if (inner.length === 0) {
      // `exec >log`, `env`, `nice`: the wrapper itself is the command. `env` prints the
      // environment.
      if (name === "exec" || name === "env") out.neutral = true;
      break;
    }
    out.views.push(inner);
    if (spec.denyOnly || !trusted) allowStopped = true;
    if (!allowStopped) out.allowView = inner;
    byBash &&= name === "command" || name === "builtin";
    cur = inner;
  }
  // What the innermost command does counts only when allow rules see it: `sudo cat f` is sudo's.
  if (isTrusted(cur[0])) inspect(cur, out);
  if (cur !== out.allowView) {
    out.neutral = false;
    out.reader = false;
  }
  return finish(out);
}

/**
 * Adds the forms deny and ask rules also match: a program named by a path as
 * its base name (`/bin/rm` is `rm`), what `busybox` and `toybox` run, and a
 * multi-level command without its global options (`git --no-pager push` is
 * `git push`); and what those options mean for allow rules.
 */
function finish(out: Unwrapped): Unwrapped {
  for (const view of [...out.views]) {
    let v = view;
    for (let round = 0; round < 3 && v.length; round++) {
      const name = baseName(v[0]);
      if (name === undefined) break;
      if (v[0].value!.includes("/")) {
        v = [{ ...v[0], value: name, segs: [name], text: name }, ...v.slice(1)];
        out.views.push(v);
      }
      if ((name === "busybox" || name === "toybox") && v.length > 1) {
        v = v.slice(1);
        out.views.push(v);
        continue;
      }
      const global = globalOptions(name, v);
      if (global) {
        out.views.push(...global.deny);
        if (view === out.allowView) {
          if (global.code) out.noAllow = global.code;
          else if (global.allow && !view[0].value!.includes("/")) out.allowAlso = global.allow;
          out.dirs.push(...global.dirs);
        }
      }
      break;
    }
  }
  return out;
}

/** `command -v x`, `command -V x`: a lookup that runs nothing. */
function isCommandLookup(words: ShellWord[]): boolean {
  for (const w of words.slice(1)) {
    if (w.value === undefined || !/^-[pvV]+$/.test(w.value)) return false;
    if (/[vV]/.test(w.value)) return true;
  }
  return false;
}

const UNKNOWN: ShellWord = { segs: [null], vanish: false, split: true, text: "…", tilde: false };

/** The command xargs runs: its words, `{}` (or `-I`'s string) unknown, or the read words appended. */
function xargsCommand(inner: ShellWord[], seen: Map<string, ShellWord | undefined>): ShellWord[] {
  const replace = seen.get("I")?.value ??
    (seen.has("i") || seen.has("replace")
      ? (seen.get("i")?.value ?? seen.get("replace")?.value ?? "{}")
      : undefined);
  const words = inner.length
    ? inner
    : [{ ...UNKNOWN, segs: ["echo"], value: "echo", split: false, text: "echo" }];
  if (replace === undefined) return [...words, { ...UNKNOWN, vanish: true }];
  return words.map((w) => w.value?.includes(replace) ? { ...UNKNOWN, text: w.text } : w);
}

/** Looks at the innermost command: scripts it runs, files it writes, whether it runs anything. */
function inspect(words: ShellWord[], out: Unwrapped): void {
  const name = nameOf(words[0]);
  if (name === undefined) return;
  const args = words.slice(1);
  if (NEUTRAL.has(name)) out.neutral = true;
  else if (name === "test" || name === "[") {
    // `-v` evaluates an array subscript; an unquoted expansion may turn into `-v`.
    const risky = args.some((w) => w.value === "-v" || w.split);
    out.neutral = !risky;
    if (risky) out.uncertain = `${name} -v evaluates an array subscript, which may run commands`;
  } else if (name === "command") out.neutral = true; // `command -v`: a lookup
  else if (name === "cd" || name === "pushd") {
    out.neutral = true;
    const dirs = args.filter((w) => !(w.value !== undefined && /^-[LPe@n]+$/.test(w.value)));
    const dir = dirs[0];
    if (dirs.length === 0) out.cd = name === "cd" ? "home" : undefined;
    else if (dir.value === "-" || dir.value === undefined || /^[+-][0-9]+$/.test(dir.value)) {
      out.cd = "unknown";
    } else out.cd = dir;
  } else if (SHELLS.has(name) || OTHER_SHELLS.has(name)) shellScript(name, args, out);
  else if (Object.hasOwn(NAME_BUILTINS, name)) assigns(name, NAME_BUILTINS[name], args, out);
  else if (name === "let") {
    // Every argument is arithmetic: a variable in it is evaluated, subscripts and all.
    if (
      !args.every((w) => w.value !== undefined && /^[-+*\/%()<>=!&|^~?:,\s0-9]*$/.test(w.value))
    ) {
      out.uncertain = "let evaluates variables' contents as arithmetic, which may run commands";
    } else out.neutral = true;
  } else if (name === "alias") {
    if (args.some((w) => w.value === undefined || w.value.includes("="))) {
      out.uncertain = "an alias changes what later command names run";
    } else out.neutral = true;
  } else if (name === "hash" && args.some((w) => w.value === undefined || /^-\w*p/.test(w.value))) {
    out.uncertain = "hash -p chooses the program a name runs";
  } else if (
    name === "enable" && args.some((w) => w.value === undefined || /^-\w*f/.test(w.value))
  ) {
    out.uncertain = "enable -f loads code into the shell";
  } else if (
    (name === "compgen" || name === "complete") &&
    args.some((w) => w.value === undefined || /^-\w*[CF]/.test(w.value))
  ) {
    out.uncertain = `${name} -C and -F run commands given as text`;
  } else if (name === "eval") {
    if (args.length === 0) out.neutral = true;
    else if (args.every((w) => w.value !== undefined)) {
      out.scripts.push(args.map((w) => w.value).join(" "));
      out.neutral = true; // what it runs is decided as commands of their own
    } else out.uncertain = "eval runs text known only at run time";
  } else if (name === "trap") trapScript(args, out);
  else if (name === "source" || name === ".") {
    out.uncertain = args[0]?.value === undefined
      ? `${name} runs a file named only at run time`
      : `${name} runs the commands of ${args[0].text}, which are known only at run time`;
  } else if (name === "tee") {
    for (const w of args) if (!(w.value?.startsWith("-") && w.value !== "-")) out.writes.push(w);
  } else {
    const use = readOnly(name, args);
    if (!use) return;
    out.reads.push(...use.reads);
    out.writes.push(...use.writes);
    out.commands.push(...use.commands);
    out.reader = true;
    out.neutral = use.readOnly;
    if (use.why) out.notReadOnly = use.why;
  }
}

/** A shell's long options that make it run startup files before the script. */
const STARTUP = new Set(["rcfile", "init-file", "login", "interactive"]);

function shellScript(name: string, args: ShellWord[], out: Unwrapped): void {
  let script = false;
  let startup: string | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const v = args[i].value;
    if (v === undefined) {
      if (script) break;
      out.uncertain = `${name}: ${args[i].text} is known only at run time`;
      return;
    }
    if (v === "--" || v === "-") {
      i++;
      break;
    }
    if (/^[-+][oO]$/.test(v)) {
      i++;
      continue;
    }
    if (v.startsWith("--") && STARTUP.has(v.slice(2))) {
      startup = v;
      if (v.endsWith("file")) i++; // --rcfile FILE, --init-file FILE
      continue;
    }
    if (v.startsWith("--")) continue;
    if (/^[-+][A-Za-z]+$/.test(v)) {
      if (v[0] === "-" && v.includes("c")) script = true;
      if (v[0] === "-" && /[il]/.test(v)) startup = v;
      continue;
    }
    break;
  }
  if (!script) return; // `bash file.sh`, `sh` reading stdin: the command itself
  if (startup) {
    // The script is still decided (a denied command in it is denied); the startup files are not.
    out.uncertain = `${name} ${startup} first runs startup files, which are known only at run time`;
  }
  if (OTHER_SHELLS.has(name)) {
    out.uncertain = `${name} -c runs a script in a language crab does not parse`;
    return;
  }
  const text = args[i];
  if (text?.value === undefined) out.uncertain = `${name} -c runs text known only at run time`;
  else {
    out.scripts.push(text.value);
    out.neutral = true; // what it runs is decided as commands of their own
  }
}

function trapScript(args: ShellWord[], out: Unwrapped): void {
  out.neutral = true;
  let i = 0;
  if (args[i]?.value === "--") i++;
  const rest = args.slice(i);
  if (rest.length < 2 || /^-[lp]+$/.test(rest[0].value ?? "")) return;
  const action = rest[0];
  if (action.value === undefined) out.uncertain = "trap runs text known only at run time";
  else if (action.value !== "-" && action.value !== "") out.scripts.push(action.value);
}
