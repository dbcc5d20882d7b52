/**
 * Matching a `Bash(…)` rule against one simple command, on words rather than
 * on the text the model typed.
 *
 * Both sides are brought to one canonical form: the words, quotes removed,
 * joined by single spaces, a word holding whitespace (or an empty word) written
 * in single quotes. So `'npm' test`, `n\pm test` and `npm  test` are all
 * `npm test`, and a rule written with quotes (`Bash(git commit -m "wip")`)
 * means what the same words typed at a shell mean.
 *
 * In a rule, an unquoted `*` matches any run of characters, spaces included
 * (`Bash(git * main)`, `Bash(ls*)` matches `lsof`); a trailing ` *` also matches
 * nothing, so `Bash(npm test *)` matches `npm test` and `npm test --x` but not
 * `npm tests`; the legacy `Bash(npm test:*)` means the same. A quoted or
 * escaped star is a literal `*`.
 *
 * In a command, what is not known before it runs is a wildcard of its own: an
 * expansion (`$X`, `$(…)`), an unquoted glob (`*.ts`, which the shell expands to
 * file names), a brace expansion. A whole word made only of expansions may also
 * vanish (`$EMPTY` expands to no word at all). Two answers follow:
 * - **certain**: every way the command could expand matches the rule (each
 *   unknown lies inside a `*` of the rule). Allow rules need this, and a deny
 *   rule that matches this way denies.
 * - **possible**: some expansion matches. A deny rule that matches only this way
 *   makes the call ask: `git $SUB origin` under a deny for `git push *`.
 *
 * @module
 */

import { RuleError } from "./rule_error.ts";

/** A piece of a command word: literal text, or `null` for text unknown before the run. */
export type Seg = string | null;

/** A word of a simple command, as the matcher sees it. */
export interface MatchWord {
  segs: readonly Seg[];
  /** Made only of unquoted expansions: it may expand to no word at all. */
  vanish: boolean;
}

// Units: UTF-16 code units, or one of these wildcards.
const STAR = -1; // rule: any run of characters
const TAIL = -2; // rule, last unit only: nothing, or a space and anything
const ANY = -3; // command: unknown text inside a word
const VANISH = -4; // command: a separator and an unknown word, or nothing
const SPACE = 32;

/** A compiled `Bash(…)` specifier. */
export interface CommandPattern {
  /** The canonical form, `*` for wildcards: what the rule is shown as. */
  readonly canonical: string;
  readonly units: Int32Array;
  /** For commands without unknowns. */
  readonly regex: RegExp;
}

/** A simple command in matchable form. */
export interface CommandSubject {
  /** The canonical form; unknown text shown as written in the command. */
  readonly display: string;
  readonly units: Int32Array;
  /** The canonical text, when the command holds no unknown. */
  readonly literal: string | undefined;
}

/** The DP table is never larger than this; past it a match is refused (allow) or assumed (deny). */
const MAX_CELLS = 4_000_000;

/** A literal run as it appears in the canonical form. */
function renderLiteral(s: string): string {
  return s === "" || /\s/.test(s) ? `'${s.replaceAll("'", `'\\''`)}'` : s;
}

/**
 * Compiles the inside of a `Bash(…)` rule. Throws {@link RuleError} for an
 * unclosed quote or an empty command.
 *
 * @example
 * ```ts
 * const p = compileCommandPattern("npm test:*");
 * p.canonical; // "npm test *"
 * ```
 */
export function compileCommandPattern(spec: string): CommandPattern {
  let body = spec.trim();
  let tail = false;
  if (body.endsWith(":*")) {
    tail = true;
    body = body.slice(0, -2).trimEnd();
  }
  const words = tokenize(body, spec);
  const last = words.at(-1);
  if (words.length > 1 && last!.length === 1 && last![0] === null) {
    tail = true;
    words.pop();
  }
  if (words.length === 0) {
    throw new RuleError(
      `Cannot use command pattern "${spec}": it names no command`,
      "Write the command, e.g. Bash(npm test) or Bash(npm test *); Bash alone matches every command.",
    );
  }
  const units: number[] = [];
  let canonical = "";
  let regex = "^";
  words.forEach((word, i) => {
    if (i > 0) {
      units.push(SPACE);
      canonical += " ";
      regex += " ";
    }
    for (const seg of word) {
      if (seg === null) {
        units.push(STAR);
        canonical += "*";
        regex += ".*";
      } else {
        const text = renderLiteral(seg);
        for (let k = 0; k < text.length; k++) units.push(text.charCodeAt(k));
        canonical += text;
        regex += escapeRegex(text);
      }
    }
  });
  if (tail) {
    units.push(TAIL);
    canonical += " *";
    regex += "(?: .*)?";
  }
  return { canonical, units: Int32Array.from(units), regex: new RegExp(regex + "$", "s") };
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** Splits a rule's command into words of literal runs and stars (`null`), as a shell would quote. */
function tokenize(body: string, spec: string): Seg[][] {
  const words: Seg[][] = [];
  let word: Seg[] | undefined;
  let lit = "";
  const flush = () => {
    if (lit !== "") word!.push(lit);
    lit = "";
  };
  const start = () => {
    word ??= [];
  };
  let i = 0;
  while (i < body.length) {
    const c = body[i];
    if (/\s/.test(c)) {
      if (word) {
        flush();
        words.push(word);
        word = undefined;
      }
      i++;
    } else if (c === "'" || c === '"') {
      start();
      const close = findClose(body, i, c);
      if (close < 0) {
        throw new RuleError(
          `Cannot use command pattern "${spec}": a ${c} quote is not closed`,
          "Close the quote, or escape it with a backslash.",
        );
      }
      const inner = body.slice(i + 1, close);
      lit += c === "'" ? inner : inner.replace(/\\([\\"$`])/g, "$1");
      if (inner === "" && lit === "") word!.push(""); // an empty quoted word
      i = close + 1;
    } else if (c === "\\" && i + 1 < body.length) {
      start();
      lit += body[i + 1];
      i += 2;
    } else if (c === "*") {
      start();
      flush();
      if (word!.at(-1) !== null) word!.push(null);
      i++;
    } else {
      start();
      lit += c;
      i++;
    }
  }
  if (word) {
    flush();
    words.push(word);
  }
  // An empty quoted word next to other text is just that text.
  return words.map((w) => w.length > 1 ? w.filter((s) => s !== "") : w);
}

function findClose(s: string, open: number, quote: string): number {
  for (let i = open + 1; i < s.length; i++) {
    if (quote === '"' && s[i] === "\\") i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}

/**
 * A simple command's words (after unwrapping) in matchable form.
 *
 * @example
 * ```ts
 * commandSubject([{ segs: ["npm"], vanish: false }, { segs: ["test"], vanish: false }]).literal;
 * // "npm test"
 * ```
 */
export function commandSubject(words: readonly MatchWord[]): CommandSubject {
  const units: number[] = [];
  let display = "";
  let literal = true;
  words.forEach((word, i) => {
    if (word.vanish && i > 0) {
      units.push(VANISH);
      display += " *";
      literal = false;
      return;
    }
    if (i > 0) {
      units.push(SPACE);
      display += " ";
    }
    for (const seg of word.segs) {
      if (seg === null) {
        if (units.at(-1) !== ANY) units.push(ANY);
        display += "*";
        literal = false;
      } else {
        const text = renderLiteral(seg);
        for (let k = 0; k < text.length; k++) units.push(text.charCodeAt(k));
        display += text;
      }
    }
  });
  return { display, units: Int32Array.from(units), literal: literal ? display : undefined };
}

/**
 * Whether `subject` matches `pattern`: for `certain`, every expansion of the
 * command matches; otherwise, some expansion does.
 */
export function matchCommand(
  pattern: CommandPattern,
  subject: CommandSubject,
  certain: boolean,
): boolean {
  if (subject.literal !== undefined) return pattern.regex.test(subject.literal);
  const p = pattern.units;
  const s = subject.units;
  if ((p.length + 1) * (s.length + 1) > MAX_CELLS) return !certain;
  return align(p, s, certain);
}

/**
 * The alignment of rule units `p` with command units `s`, one row of the table
 * at a time. A star eats any unit of the command; an unknown of the command eats
 * any rule unit only when `certain` is false (then it stands for some text).
 */
function align(p: Int32Array, s: Int32Array, certain: boolean): boolean {
  const n = p.length;
  const m = s.length;
  let cur = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  cur[0] = 1;
  for (let i = 0; i <= n; i++) {
    next.fill(0);
    const pc = i < n ? p[i] : 0;
    for (let j = 0; j <= m; j++) {
      if (!cur[j]) continue;
      if (i === n && j === m) return true;
      const sc = j < m ? s[j] : 0;
      if (i < n && pc === STAR) {
        next[j] = 1;
        if (j < m) cur[j + 1] = 1;
      } else if (i < n && pc === TAIL) {
        if (j === m || sc === SPACE || sc === VANISH || (!certain && sc === ANY)) return true;
      } else if (j < m && (sc === ANY || sc === VANISH)) {
        if (!certain) {
          cur[j + 1] = 1;
          if (i < n) next[j] = 1;
        }
      } else if (i < n && j < m && pc === sc) {
        next[j + 1] = 1;
      }
    }
    [cur, next] = [next, cur];
  }
  return false;
}
