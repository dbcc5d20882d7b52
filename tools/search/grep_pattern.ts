/**
 * What grep learns from a pattern's source before searching with it: whether
 * the Latin-1 view of the bytes gives the same answer ({@link asciiOnly}), which
 * literal text every match must contain ({@link requiredLiteral}), and whether a
 * backtracking engine's work per text position is bounded ({@link boundedWork}),
 * which decides if the calling thread may search with it. Each answer is
 * conservative: unsure means the slow, safe path.
 *
 * @module
 */

/**
 * True when every match of `source` (a RegExp source without the `u` or `v`
 * flag) can only consist of ASCII characters and its assertions look only at
 * ASCII: no `.`, no negated class, no `\W \D \S \s \u`, no non-ASCII literal.
 * Such a pattern finds the same lines in the Latin-1 view of UTF-8 bytes as in
 * the decoded text. Conservative: anything unsure answers false.
 */
export function asciiOnly(source: string): boolean {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c >= 0x80) return false;
    const ch = source[i];
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined) return false;
      if ("WDSsuUpP".includes(next)) return false;
      if (next === "x") {
        const hex = parseInt(source.slice(i + 2, i + 4), 16);
        if (!(hex < 0x80)) return false;
        i += 3;
        continue;
      }
      i++;
      continue;
    }
    if (inClass) {
      if (ch === "]") inClass = false;
      continue;
    }
    if (ch === ".") return false;
    if (ch === "[") {
      if (source[i + 1] === "^") return false;
      inClass = true;
    }
  }
  return !inClass;
}

/** The top-level alternatives of a RegExp source (`a|b(c|d)` gives `a` and `b(c|d)`). */
export function alternatives(source: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (ch === "\\") i++;
    else if (inClass) inClass = ch !== "]";
    else if (ch === "[") inClass = true;
    else if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "|" && depth === 0) {
      out.push(source.slice(start, i));
      start = i + 1;
    }
  }
  out.push(source.slice(start));
  return out;
}

/**
 * The longest run of ASCII characters every match of `source` (a RegExp source)
 * contains, or "" when unsure: a top-level `|`, or nothing literal. Optional
 * characters (`x?`, `x*`, `x{0,}`) and everything inside groups and classes are
 * left out, which only makes the answer shorter, never wrong.
 */
export function requiredLiteral(source: string): string {
  let best = "";
  let run = "";
  const end = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  /** Index after a group or class starting at `i`, or -1 when unbalanced. */
  const skip = (i: number): number => {
    let depth = 0;
    let inClass = false;
    for (; i < source.length; i++) {
      const ch = source[i];
      if (ch === "\\") i++;
      else if (inClass) inClass = ch !== "]";
      else if (ch === "[") inClass = true;
      else if (ch === "(") depth++;
      else if (ch === ")" && --depth === 0) return i + 1;
    }
    return -1;
  };
  for (let i = 0; i < source.length;) {
    const ch = source[i];
    if (ch === "|") return "";
    if (ch === "*" || ch === "?" || ch === "{") {
      // The previous character is optional (or repeated a counted number of times).
      run = run.slice(0, -1);
      end();
      if (ch === "{") {
        const close = source.indexOf("}", i);
        if (close === -1) return "";
        i = close + 1;
      } else i++;
      if (source[i] === "?") i++;
      continue;
    }
    if (ch === "+") {
      end(); // the character is there at least once; what follows need not touch it
      i++;
      if (source[i] === "?") i++;
      continue;
    }
    if (ch === "\\") {
      const next = source[i + 1];
      if (next !== undefined && /[^\w\s]/.test(next) && next.charCodeAt(0) < 0x80) {
        run += next; // an escaped punctuation character stands for itself
        i += 2;
        continue;
      }
      end();
      if (next === "b" || next === "B") {
        i += 2; // a word boundary consumes nothing
        continue;
      }
      return best; // another escape (\d, \x41, \1...): stop here, what was seen holds
    }
    if (ch === "(") {
      end();
      const j = skip(i);
      if (j === -1) return "";
      i = j;
      continue;
    }
    if (ch === "[") {
      end();
      let j = i + 1;
      if (source[j] === "^") j++;
      if (source[j] === "]") j++;
      for (; j < source.length && source[j] !== "]"; j++) if (source[j] === "\\") j++;
      i = j + 1;
      continue;
    }
    if (ch === "." || ch === "^" || ch === "$" || ch.charCodeAt(0) >= 0x80) {
      end();
      i++;
      continue;
    }
    run += ch;
    i++;
  }
  end();
  return best;
}

/** Most paths through a pattern's alternations that {@link boundedWork} accepts. */
export const MAX_PATHS = 64;

/**
 * True when a backtracking engine spends at most a small constant per text
 * position on `source`: no quantifier (`* + ? {n}`), backreference, lookaround
 * or named group outside a class, and at most {@link MAX_PATHS} ways through
 * its alternations (alternatives add up, groups in sequence multiply). Such a
 * pattern may run on the agent's own thread, where nothing could stop it:
 * `function`, `TODO|FIXME`, `export (const|function) `. A run of quantifier-free
 * groups is not: `(?:a|a)` 29 times over tries 2^29 ways at every `a`.
 * Conservative: anything unsure answers false.
 */
export function boundedWork(source: string): boolean {
  let i = 0;
  // Ways through alternatives up to `)` or the end; -1 once over the bound.
  const alternation = (): number => {
    let sum = 0;
    for (;;) {
      const ways = sequence();
      if (ways < 0 || (sum += ways) > MAX_PATHS) return -1;
      if (source[i] !== "|") return sum;
      i++;
    }
  };
  const sequence = (): number => {
    let product = 1;
    while (i < source.length && source[i] !== "|" && source[i] !== ")") {
      const ch = source[i];
      if (ch === "\\") {
        const next = source[i + 1];
        if (next === undefined || /[1-9k]/.test(next)) return -1;
        i += 2;
      } else if (ch === "[") {
        // In a JavaScript class a `]` right after `[` or `[^` closes it.
        for (i++; i < source.length && source[i] !== "]"; i++) if (source[i] === "\\") i++;
        if (i >= source.length) return -1;
        i++;
      } else if (ch === "(") {
        i++;
        if (source[i] === "?") {
          // Only `(?:` is allowed; `(?=`, `(?!`, `(?<=`, `(?<!` and `(?<name>` are not.
          if (source[i + 1] !== ":") return -1;
          i += 2;
        }
        const ways = alternation();
        if (ways < 0 || source[i] !== ")") return -1;
        i++;
        if ((product *= ways) > MAX_PATHS) return -1;
      } else if (ch === "*" || ch === "+" || ch === "?" || ch === "{") {
        return -1;
      } else i++;
    }
    return product;
  };
  return alternation() >= 0 && i === source.length;
}

/** Escapes after `\` that mean the same with and without the `i` flag (no letter of their own). */
const CASELESS_ESCAPES = "dDsSwWbBtnrfv";
/** In a class: escapes that stand for a set closed under case (kept as they are). */
const CLASS_SETS = "dDsSwW";
/** In a class: escapes that stand for one control character. */
const CLASS_CONTROLS: Record<string, number> = { b: 8, t: 9, n: 10, v: 11, f: 12, r: 13 };

/**
 * `source` rewritten to match without the `i` flag what it matches with it
 * (flags `gm` against `gmi`, no `u` or `v`): each ASCII letter `x` becomes
 * `[xX]`, and a class takes the other case of each letter it holds (`[a-f]`
 * becomes `[A-Fa-f]`, `[^x]` becomes `[^Xx]`). V8's linear-time engine, which a
 * pattern that backtracks too much goes over to, takes no `i` flag:
 * rewritten, `(a+)+$` searched case-insensitively ends as it does
 * case-sensitively. Without `u`, the `i` flag pairs an ASCII letter with its
 * other case and nothing else (a character whose upper case is ASCII only
 * from outside ASCII, `ſ` or `ı`, stays apart), and `\w \d \s` and their
 * negations hold both cases of every letter already, so the rewrite matches
 * the same text. Undefined, and the search keeps its `i` flag, for what the
 * rewrite would have to understand: a named group or lookbehind (`(?<`), an
 * escape that names a character by number or property (`\x41`, `\u0041`,
 * `\cA`, `\p{…}`, `\0`), a backreference, a range with a `\d`-like end, or a
 * character outside ASCII.
 */
export function caseFolded(source: string): string | undefined {
  if (/[\u0080-\uffff]/.test(source) || source.includes("(?<")) return undefined;
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (ch === "[") {
      const folded = foldedClass(source, i);
      if (!folded) return undefined;
      out += folded.text;
      i = folded.end;
      continue;
    }
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined || (/[A-Za-z0-9]/.test(next) && !CASELESS_ESCAPES.includes(next))) {
        return undefined;
      }
      out += ch + next;
      i++;
      continue;
    }
    const lower = ch.toLowerCase(), upper = ch.toUpperCase();
    out += lower === upper ? ch : `[${lower}${upper}]`;
  }
  return out;
}

/**
 * The class opening at `start` with both cases of each letter it holds, and
 * the index of its `]`; undefined for what {@link caseFolded} leaves alone.
 */
function foldedClass(source: string, start: number): { text: string; end: number } | undefined {
  let i = start + 1;
  const negated = source[i] === "^";
  if (negated) i++;
  const chars = new Array<boolean>(128).fill(false);
  let sets = "";
  /** The character at `i` as one code point (moving past it), a set escape, or undefined. */
  const atom = (): number | string | undefined => {
    const ch = source[i];
    if (ch !== "\\") {
      i++;
      return ch.charCodeAt(0);
    }
    const next = source[i + 1];
    if (next === undefined) return undefined;
    i += 2;
    if (CLASS_SETS.includes(next)) return "\\" + next;
    if (next in CLASS_CONTROLS) return CLASS_CONTROLS[next];
    return /[A-Za-z0-9]/.test(next) ? undefined : next.charCodeAt(0);
  };
  // In a JavaScript class a `]` right after `[` or `[^` closes it: `[]` and `[^]`.
  while (source[i] !== "]") {
    if (i >= source.length) return undefined;
    const lo = atom();
    if (lo === undefined) return undefined;
    if (typeof lo === "string") {
      if (source[i] === "-" && source[i + 1] !== "]") return undefined;
      sets += lo;
      continue;
    }
    if (source[i] === "-" && i + 1 < source.length && source[i + 1] !== "]") {
      i++;
      const hi = atom();
      if (typeof hi !== "number" || hi < lo) return undefined;
      for (let c = lo; c <= hi; c++) chars[c] = true;
    } else chars[lo] = true;
  }
  for (let c = 65; c <= 90; c++) chars[c] = chars[c + 32] = chars[c] || chars[c + 32];
  let text = "[" + (negated ? "^" : "") + sets;
  const char = (c: number) =>
    /[A-Za-z0-9]/.test(String.fromCharCode(c))
      ? String.fromCharCode(c)
      : "\\x" + c.toString(16).padStart(2, "0");
  for (let c = 0; c < 128; c++) {
    if (!chars[c]) continue;
    let last = c;
    while (last + 1 < 128 && chars[last + 1]) last++;
    text += last === c
      ? char(c)
      : last === c + 1
      ? char(c) + char(last)
      : `${char(c)}-${char(last)}`;
    c = last;
  }
  return { text: text + "]", end: i };
}
