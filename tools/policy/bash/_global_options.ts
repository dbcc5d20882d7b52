/**
 * The global options of multi-level commands (`git --no-pager push`, `npm
 * --prefix x publish`, `docker --context c rm`): what stands between the
 * program and its subcommand, so that deny and ask rules can match the
 * command as `git push` whatever options precede the subcommand.
 *
 * Each option is one of:
 * - `flag`: no argument, changes nothing a rule cares about (`--no-pager`);
 * - `arg`: takes an argument, likewise harmless (`--namespace NS`);
 * - `dir`: takes a directory the command then works in (`git -C DIR`);
 *   allowed only when it lies in the workspace (the caller checks);
 * - `code`, `code-flag`: runs code or moves the repository (`git -c`,
 *   `--exec-path=`, `--git-dir`, `--work-tree`, `--bare`, `--kubeconfig`):
 *   no allow rule matches such a command, and a deny or ask rule on any
 *   subcommand may match it (`git -c alias.p=push p` is a push).
 *
 * An option not in the table, or one known only at run time, is treated as
 * code: the subcommand may be anything.
 *
 * @module
 */

import type { ShellWord } from "../shell.ts";

type Kind = "flag" | "arg" | "dir" | "code" | "code-flag";

/**
 * Options by name: short ones as what follows their dash (`C` for `-C`,
 * `ws` for npm's `-ws`), long ones without their two dashes; a long option
 * with an argument is also accepted as `--name=value` (`name=` when that
 * form means something else).
 */
interface Table {
  readonly short: Readonly<Record<string, Kind>>;
  readonly long: Readonly<Record<string, Kind>>;
}

const GIT: Table = {
  short: {
    v: "flag",
    h: "flag",
    p: "flag",
    P: "flag",
    C: "dir",
    c: "code",
  },
  long: {
    version: "flag",
    help: "flag",
    paginate: "flag",
    "no-pager": "flag",
    "no-replace-objects": "flag",
    "no-lazy-fetch": "flag",
    "no-optional-locks": "flag",
    "no-advice": "flag",
    "literal-pathspecs": "flag",
    "glob-pathspecs": "flag",
    "noglob-pathspecs": "flag",
    "icase-pathspecs": "flag",
    "html-path": "flag",
    "man-path": "flag",
    "info-path": "flag",
    // Without a value it prints the directory; with one it runs programs from there.
    "exec-path": "flag",
    "exec-path=": "code",
    namespace: "arg",
    "list-cmds": "arg",
    "attr-source": "arg",
    "config-env": "code",
    "git-dir": "code",
    "work-tree": "code",
    "super-prefix": "code",
    bare: "code-flag",
  },
};

const NPM: Table = {
  short: {
    g: "flag",
    s: "flag",
    q: "flag",
    d: "flag",
    y: "flag",
    ws: "flag",
    w: "arg",
    C: "dir",
  },
  long: {
    global: "flag",
    silent: "flag",
    quiet: "flag",
    verbose: "flag",
    yes: "flag",
    json: "flag",
    offline: "flag",
    "prefer-offline": "flag",
    "prefer-online": "flag",
    "no-audit": "flag",
    "no-fund": "flag",
    "no-color": "flag",
    "no-progress": "flag",
    workspaces: "flag",
    "include-workspace-root": "flag",
    "if-present": "flag",
    "ignore-scripts": "flag",
    loglevel: "arg",
    color: "arg",
    workspace: "arg",
    registry: "code",
    prefix: "dir",
    userconfig: "code",
    globalconfig: "code",
    "script-shell": "code",
    "node-options": "code",
    cache: "code",
  },
};

const PNPM: Table = {
  short: {
    r: "flag",
    s: "flag",
    w: "flag",
    F: "arg",
    C: "dir",
  },
  long: {
    recursive: "flag",
    silent: "flag",
    stream: "flag",
    parallel: "flag",
    "aggregate-output": "flag",
    "no-color": "flag",
    color: "flag",
    "workspace-root": "flag",
    reporter: "arg",
    loglevel: "arg",
    "workspace-concurrency": "arg",
    filter: "arg",
    dir: "dir",
  },
};

const YARN: Table = {
  short: {
    s: "flag",
  },
  long: {
    silent: "flag",
    verbose: "flag",
    offline: "flag",
    "frozen-lockfile": "flag",
    "no-progress": "flag",
    json: "flag",
    "non-interactive": "flag",
    cwd: "dir",
    "use-yarnrc": "code",
  },
};

const CARGO: Table = {
  short: {
    v: "flag",
    vv: "flag",
    q: "flag",
    V: "flag",
    h: "flag",
    C: "dir",
    Z: "code",
  },
  long: {
    verbose: "flag",
    quiet: "flag",
    locked: "flag",
    offline: "flag",
    frozen: "flag",
    version: "flag",
    list: "flag",
    help: "flag",
    color: "arg",
    explain: "arg",
    config: "code",
  },
};

const DOCKER: Table = {
  short: {
    D: "flag",
    v: "flag",
    h: "flag",
    l: "arg",
    c: "arg",
    // Another daemon, or credential helpers run from another config.
    H: "code",
  },
  long: {
    debug: "flag",
    tls: "flag",
    tlsverify: "flag",
    version: "flag",
    help: "flag",
    "log-level": "arg",
    context: "arg",
    tlscacert: "arg",
    tlscert: "arg",
    tlskey: "arg",
    host: "code",
    config: "code",
  },
};

const PODMAN: Table = {
  short: {
    v: "flag",
    h: "flag",
    r: "code-flag",
    c: "code",
  },
  long: {
    "log-level": "arg",
    syslog: "flag",
    version: "flag",
    help: "flag",
    remote: "code-flag",
    connection: "code",
    url: "code",
    root: "code",
    runroot: "code",
    "storage-driver": "code",
    "cgroup-manager": "code",
    "events-backend": "code",
    runtime: "code",
    conmon: "code",
    "network-cmd-path": "code",
    "hooks-dir": "code",
    module: "code",
  },
};

const KUBECTL: Table = {
  short: {
    n: "arg",
    v: "arg",
    s: "code",
  },
  long: {
    namespace: "arg",
    context: "arg",
    cluster: "arg",
    user: "arg",
    as: "arg",
    "as-group": "arg",
    "request-timeout": "arg",
    v: "arg",
    "cache-dir": "arg",
    "insecure-skip-tls-verify": "flag",
    "warnings-as-errors": "flag",
    // Exec credential plugins, or another cluster altogether.
    kubeconfig: "code",
    server: "code",
    token: "code",
  },
};

const GH: Table = {
  short: {
    R: "arg",
    h: "flag",
  },
  long: {
    repo: "arg",
    help: "flag",
    version: "flag",
  },
};

const GO: Table = { short: {}, long: {} };

const PROGRAMS: Readonly<Record<string, Table>> = {
  git: GIT,
  npm: NPM,
  pnpm: PNPM,
  yarn: YARN,
  cargo: CARGO,
  go: GO,
  docker: DOCKER,
  podman: PODMAN,
  kubectl: KUBECTL,
  gh: GH,
};

/** A command with its global options read. */
export interface GlobalOptions {
  /**
   * The forms deny and ask rules are matched against: the program and what
   * follows its global options (`git push origin`); when an option may change
   * what the subcommand does (code, or not known), also the program followed
   * by anything.
   */
  deny: ShellWord[][];
  /** The form allow rules may match (harmless options dropped); none after a code option. */
  allow?: ShellWord[];
  /** Directories the options move the command to (`git -C DIR`). */
  dirs: ShellWord[];
  /** The first option that runs code, moves the repository or is not known, as written. */
  code?: string;
}

/** A word standing for any words, or none. */
const ANYTHING: ShellWord = { segs: [null], vanish: true, split: true, text: "…", tilde: false };

/**
 * The global options of `words` when its program (`name`, a base name) is a
 * multi-level command and options precede the subcommand; undefined otherwise.
 *
 * @example
 * ```ts
 * globalOptions("git", words("git --no-pager -C src push"))!.deny[0]; // git push
 * ```
 */
export function globalOptions(name: string, words: ShellWord[]): GlobalOptions | undefined {
  const table = Object.hasOwn(PROGRAMS, name) ? PROGRAMS[name] : undefined;
  if (!table) return undefined;
  const dirs: ShellWord[] = [];
  let code: string | undefined;
  const unknown = (i: number, why: string): GlobalOptions => ({
    deny: [[words[0], ANYTHING, ...words.slice(i + 1)]],
    dirs,
    code: code ?? why,
  });
  const arg = (w: ShellWord, value: string): ShellWord => ({ ...w, value, segs: [value] });
  let i = 1;
  for (; i < words.length; i++) {
    const w = words[i];
    const v = w.value;
    if (name === "cargo" && i === 1 && v?.startsWith("+")) continue; // cargo +nightly
    if (v === undefined) {
      // `git $OPT push`: an option, or the subcommand; nobody can tell.
      if (w.segs[0] === null || (w.segs[0] as string).startsWith("-")) return unknown(i, w.text);
      break;
    }
    if (!v.startsWith("-") || v === "-") break;
    if (v === "--") {
      i++;
      break;
    }
    const eq = v.indexOf("=");
    const long = v.startsWith("--");
    const names = long ? table.long : table.short;
    const key = (eq > 0 ? v.slice(0, eq) : v).slice(long ? 2 : 1);
    const found = (k: string) => Object.hasOwn(names, k) ? names[k] : undefined;
    const kind = eq > 0 ? (found(key + "=") ?? found(key)) : found(key);
    if (kind === undefined || (eq > 0 && (kind === "flag" || kind === "code-flag"))) {
      return unknown(i, v);
    }
    if (kind === "code-flag") code ??= v;
    if (kind === "flag" || kind === "code-flag") continue;
    const value = eq > 0 ? arg(w, v.slice(eq + 1)) : words[++i];
    if (!value) break;
    if (kind === "dir") dirs.push(value);
    if (kind === "code") code ??= v;
  }
  if (i === 1) return undefined;
  const stripped = [words[0], ...words.slice(i)];
  if (code) return { deny: [stripped, [words[0], ANYTHING, ...words.slice(i)]], dirs, code };
  return { deny: [stripped], allow: stripped, dirs };
}
