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

/** Options by spelling; a long option with an argument is also accepted as `--name=value`. */
type Table = Readonly<Record<string, Kind>>;

const GIT: Table = {
  "-v": "flag",
  "--version": "flag",
  "-h": "flag",
  "--help": "flag",
  "-p": "flag",
  "--paginate": "flag",
  "-P": "flag",
  "--no-pager": "flag",
  "--no-replace-objects": "flag",
  "--no-lazy-fetch": "flag",
  "--no-optional-locks": "flag",
  "--no-advice": "flag",
  "--literal-pathspecs": "flag",
  "--glob-pathspecs": "flag",
  "--noglob-pathspecs": "flag",
  "--icase-pathspecs": "flag",
  "--html-path": "flag",
  "--man-path": "flag",
  "--info-path": "flag",
  // Without a value it prints the directory; with one it runs programs from there.
  "--exec-path": "flag",
  "--exec-path=": "code",
  "--namespace": "arg",
  "--list-cmds": "arg",
  "--attr-source": "arg",
  "-C": "dir",
  "-c": "code",
  "--config-env": "code",
  "--git-dir": "code",
  "--work-tree": "code",
  "--super-prefix": "code",
  "--bare": "code-flag",
};

const NPM: Table = {
  "-g": "flag",
  "--global": "flag",
  "-s": "flag",
  "--silent": "flag",
  "-q": "flag",
  "--quiet": "flag",
  "-d": "flag",
  "--verbose": "flag",
  "-y": "flag",
  "--yes": "flag",
  "--json": "flag",
  "--offline": "flag",
  "--prefer-offline": "flag",
  "--prefer-online": "flag",
  "--no-audit": "flag",
  "--no-fund": "flag",
  "--no-color": "flag",
  "--no-progress": "flag",
  "-ws": "flag",
  "--workspaces": "flag",
  "--include-workspace-root": "flag",
  "--if-present": "flag",
  "--ignore-scripts": "flag",
  "--loglevel": "arg",
  "--color": "arg",
  "-w": "arg",
  "--workspace": "arg",
  "--registry": "code",
  "--prefix": "dir",
  "-C": "dir",
  "--userconfig": "code",
  "--globalconfig": "code",
  "--script-shell": "code",
  "--node-options": "code",
  "--cache": "code",
};

const PNPM: Table = {
  "-r": "flag",
  "--recursive": "flag",
  "-s": "flag",
  "--silent": "flag",
  "--stream": "flag",
  "--parallel": "flag",
  "--aggregate-output": "flag",
  "--no-color": "flag",
  "--color": "flag",
  "-w": "flag",
  "--workspace-root": "flag",
  "--reporter": "arg",
  "--loglevel": "arg",
  "--workspace-concurrency": "arg",
  "-F": "arg",
  "--filter": "arg",
  "-C": "dir",
  "--dir": "dir",
};

const YARN: Table = {
  "-s": "flag",
  "--silent": "flag",
  "--verbose": "flag",
  "--offline": "flag",
  "--frozen-lockfile": "flag",
  "--no-progress": "flag",
  "--json": "flag",
  "--non-interactive": "flag",
  "--cwd": "dir",
  "--use-yarnrc": "code",
};

const CARGO: Table = {
  "-v": "flag",
  "-vv": "flag",
  "--verbose": "flag",
  "-q": "flag",
  "--quiet": "flag",
  "--locked": "flag",
  "--offline": "flag",
  "--frozen": "flag",
  "-V": "flag",
  "--version": "flag",
  "--list": "flag",
  "-h": "flag",
  "--help": "flag",
  "--color": "arg",
  "--explain": "arg",
  "-C": "dir",
  "--config": "code",
  "-Z": "code",
};

const DOCKER: Table = {
  "-D": "flag",
  "--debug": "flag",
  "--tls": "flag",
  "--tlsverify": "flag",
  "-v": "flag",
  "--version": "flag",
  "-h": "flag",
  "--help": "flag",
  "-l": "arg",
  "--log-level": "arg",
  "-c": "arg",
  "--context": "arg",
  "--tlscacert": "arg",
  "--tlscert": "arg",
  "--tlskey": "arg",
  // Another daemon, or credential helpers run from another config.
  "-H": "code",
  "--host": "code",
  "--config": "code",
};

const PODMAN: Table = {
  "--log-level": "arg",
  "--syslog": "flag",
  "-v": "flag",
  "--version": "flag",
  "-h": "flag",
  "--help": "flag",
  "-r": "code-flag",
  "--remote": "code-flag",
  "-c": "code",
  "--connection": "code",
  "--url": "code",
  "--root": "code",
  "--runroot": "code",
  "--storage-driver": "code",
  "--cgroup-manager": "code",
  "--events-backend": "code",
  "--runtime": "code",
  "--conmon": "code",
  "--network-cmd-path": "code",
  "--hooks-dir": "code",
  "--module": "code",
};

const KUBECTL: Table = {
  "-n": "arg",
  "--namespace": "arg",
  "--context": "arg",
  "--cluster": "arg",
  "--user": "arg",
  "--as": "arg",
  "--as-group": "arg",
  "--request-timeout": "arg",
  "-v": "arg",
  "--v": "arg",
  "--cache-dir": "arg",
  "--insecure-skip-tls-verify": "flag",
  "--warnings-as-errors": "flag",
  // Exec credential plugins, or another cluster altogether.
  "--kubeconfig": "code",
  "-s": "code",
  "--server": "code",
  "--token": "code",
};

const GH: Table = {
  "-R": "arg",
  "--repo": "arg",
  "-h": "flag",
  "--help": "flag",
  "--version": "flag",
};

const GO: Table = {};

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
    const key = eq > 0 ? v.slice(0, eq) : v;
    const kind = eq > 0 ? (table[key + "="] ?? table[key]) : table[key];
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
