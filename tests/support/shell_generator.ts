/**
 * A seeded generator of bash command lines over the constructs the policy
 * parser must see through or refuse: expansions that evaluate a value as code
 * or a name, wrappers, redirections, subshells, functions, `eval`, `sh -c`,
 * `xargs`, `find -exec`, programs named by path, git's global options, aliases,
 * `source`, prompt strings. The same seed gives the same commands.
 *
 * @module
 */

import { prng } from "./prng.ts";

export { prng };

/** Commands that run a program: denied ones, allowed ones, and ones no rule names. */
const PROGRAMS = [
  "rm -f v",
  "/bin/rm -f v",
  "/usr/bin/rm -f v",
  "git push",
  "git --no-pager push",
  "git -C . push",
  "git -c a.b=c push",
  "git --git-dir=.git push",
  "git -P push origin",
  "git diff",
  "git --no-pager diff",
  "git diff --stat",
  "echo hi",
  "/bin/echo hi",
  "/usr/bin/echo hi",
  "touch t",
  "date",
  "id -u",
  "ls",
  "cat /dev/null",
  "true",
  "printf x",
  "busybox rm v",
];

/** A wrapper in front of a program. */
const WRAPPERS = [
  "",
  "",
  "",
  "env ",
  "env -i A=1 ",
  "/usr/bin/env ",
  "command ",
  "nohup ",
  "time ",
  "timeout 1 ",
  "nice ",
  "nice -n 5 ",
  "stdbuf -oL ",
  "exec ",
];

const REDIRECTS = [
  "",
  "",
  "",
  " > out.txt",
  " >> notes.txt",
  " 2>&1",
  " &> all.txt",
  " > /dev/null",
  " 2>/dev/null",
  " >| clobber.txt",
  " 3> fd3.txt",
  " | tee t.txt",
];

/**
 * Ordinary shapes a command runs its payload in: `%P%` is a program's command
 * line, `%Q%` the same text escaped for single quotes.
 */
const STRUCTURES = [
  "%P%",
  "%P%",
  "%P%",
  "trap '%Q%' EXIT",
  "eval '%Q%'",
  'eval "%P%"',
  "sh -c '%Q%'",
  "bash -c '%Q%'",
  "f() { %P%; }; f",
  "( %P% )",
  "{ %P%; }",
  "echo $(%P%)",
  "echo `%P%`",
  "cat <(%P%)",
  "if true; then %P%; fi",
  "for i in 1; do %P%; done",
  "case x in x) %P%;; esac",
  "true && %P%",
  "false || %P%",
  "echo a | %P%",
  "echo v | xargs %P%",
  "find . -maxdepth 0 -exec %P% \\;",
  "find . -maxdepth 0 -exec sh -c '%Q%' \\;",
  "timeout 1 sh -c '%Q%'",
  "cd .. && %P%",
];

/** Shapes that hide a payload in a value bash runs as code, a name, a file or a path. */
const ATTACKS = [
  "x='$(%Q%)'; echo \"${x@P}\"",
  "x='$(%Q%)'; echo \"${x@E}\"",
  "x='$(%Q%)'; echo \"${x@A}\"",
  "x='$(%Q%)'; echo \"${x@Q}\"",
  "x='a[$(%Q%)]'; echo ${!x}",
  "x='a[$(%Q%)]'; echo \"${!x:-}\"",
  "x='a[$(%Q%)]'; echo $((x))",
  "x='a[$(%Q%)]'; echo $(( x + 1 ))",
  "x='a[$(%Q%)]'; let x",
  "x='a[$(%Q%)]'; (( x ))",
  "x='a[$(%Q%)]'; [[ $x -eq 1 ]]",
  "a=(1 2); x='a[$(%Q%)]'; echo ${a[x]}",
  "a=(1 2); x='a[$(%Q%)]'; echo ${a[$x]}",
  "s=abc; x='a[$(%Q%)]'; echo ${s:x}",
  "x='a[$(%Q%)]'; declare -n r=$x; echo $r",
  "x='a[$(%Q%)]'; typeset -n r; r=$x; echo $r",
  "x='a[$(%Q%)]'; printf -v \"$x\" hi",
  "printf -v 'a[$(%Q%)]' hi",
  "x='a[$(%Q%)]'; read \"$x\" <<< hi",
  "x='a[$(%Q%)]'; declare -i y; y=$x",
  "x='a[$(%Q%)]'; declare -i y=x",
  "a=(1); x='a[$(%Q%)]'; unset \"$x\"",
  "a=(1); x='a[$(%Q%)]'; test -v \"$x\"",
  "x='a[$(%Q%)]'; [[ -v $x ]]",
  "x='a[$(%Q%)]'; declare \"$x\"=1",
  "x='a[$(%Q%)]'; B=([x]=1)",
  "x='a[$(%Q%)]'; for ((i=x;0;)); do :; done",
  "x='a[$(%Q%)]'; exec {a[x]}>/dev/null",
  "mapfile -C '%Q%' -c 1 arr <<< hi",
  "compgen -C '%Q%' x",
  "PS4='$(%Q%)'; set -x; :",
  "export PS4='$(%Q%)'; set -x; :",
  "shopt -s expand_aliases\nalias e='%Q%'\ne",
  "echo '%Q%' > s.sh; . ./s.sh",
  "echo '%Q%' > s.sh; source s.sh",
  "echo '%Q%' > s.sh; BASH_ENV=./s.sh bash -c :",
  "env 'BASH_FUNC_e%%=() { %Q%; }' bash -c e",
  "bash -lc '%Q%'",
  "cp /bin/rm ./rm; ./rm v",
  "ln -s /usr/bin/git g; ./g push",
  "hash -p /usr/bin/touch e; e t",
  "PATH=.:$PATH; %P%",
  "x='%Q%'; $x",
  "p='%Q%'; eval \"$p\"",
];

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)];
}

/** One program line: a wrapper, a program, a redirection. */
function program(next: () => number): string {
  const p = pick(next, PROGRAMS);
  const w = pick(next, WRAPPERS);
  return w + p + pick(next, REDIRECTS);
}

/** One generated command line. */
function generate(next: () => number): string {
  const count = 1 + Math.floor(next() * 2);
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const p = program(next);
    const q = p.replaceAll("'", `'\\''`);
    const t = pick(next, next() < 0.5 ? STRUCTURES : ATTACKS);
    parts.push(t.replaceAll("%Q%", q).replaceAll("%P%", p));
  }
  return parts.join(pick(next, ["; ", " && ", " || ", "\n", " | "]));
}

/**
 * `count` distinct command lines from `seed`, in a fixed order.
 *
 * @example
 * ```ts
 * generateCommands(1, 3000).length; // 3000
 * ```
 */
export function generateCommands(seed: number, count: number): string[] {
  const next = prng(seed);
  const seen = new Set<string>();
  const out: string[] = [];
  for (let tries = 0; out.length < count && tries < count * 20; tries++) {
    const c = generate(next);
    if (seen.has(c)) continue;
    seen.add(c);
    out.push(c);
  }
  return out;
}

/** `n` items of `list` picked by a seeded shuffle, in the list's order. */
export function sampleOf<T>(list: readonly T[], n: number, seed: number): T[] {
  const next = prng(seed);
  const index = list.map((_, i) => i);
  for (let i = index.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [index[i], index[j]] = [index[j], index[i]];
  }
  return index.slice(0, n).sort((a, b) => a - b).map((i) => list[i]);
}
