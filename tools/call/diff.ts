/**
 * Line diffs for the approval prompt, for files of any size: what the user
 * approves is the change, down to the one line changed in a 10 MB file.
 *
 * The search stays near linear on big files. The common head and tail go first,
 * compared as strings. The lines between become integer ids, and patience
 * anchors — lines that occur once on each side, kept in their longest common
 * order — cut that middle into small gaps; a gap without such lines gets Myers'
 * shortest edit script. One budget of work bounds the whole search: past it, a
 * region still to compare is shown as replaced, and the diff says so.
 *
 * What is shown is bounded too: at most {@link DIFF_MAX_LINES} lines, each of at
 * most {@link LINE_MAX_CHARS} characters (a longer line is shown around its first
 * difference), hunks kept whole but for a first one larger than the bound; a
 * last line counts the changed lines not shown and says where they are.
 *
 * @module
 */

import { formatBytes } from "../tool.ts";
import { utf8Length } from "../fs/text.ts";

/** Lines of a diff at most, the headers and the count of what is not shown included. */
export const DIFF_MAX_LINES = 5000;
/** Characters of one line shown at most; a longer one is shown around its first difference. */
export const LINE_MAX_CHARS = 500;
/** Lines of context around each change. */
const CONTEXT = 3;
/**
 * Steps the search may take (lines counted, diagonals followed), about 0.1 s of
 * work: a 10 MB file with thousands of scattered changes needs a tenth of it.
 */
const WORK_BUDGET = 40_000_000;
/** Edits one Myers search may find; its trace grows with their square. */
const MYERS_MAX_EDITS = 1000;
/** A region this small (old lines × new lines) is searched whatever the budget. */
const SMALL_REGION = 1024;
/** Places listed in the count of what is not shown. */
const PLACES_LISTED = 12;

/** Lines of a text by their bounds: line i is `text.slice(at[i], at[i + 1])`, newline included. */
interface Lines {
  text: string;
  at: Int32Array;
  count: number;
}

/** The lines of `text` from `from`, a line start, to `to`, a line end or the text's end. */
function linesOf(text: string, from: number, to: number): Lines {
  let count = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) count++;
  // The last line may lack its newline: it is a line all the same.
  if (to > from && text.charCodeAt(to - 1) !== 10) count++;
  const at = new Int32Array(count + 1);
  at[0] = from;
  let k = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) {
    at[++k] = i + 1;
  }
  at[count] = to;
  return { text, at, count };
}

/** Whether line `i` of `p` and line `j` of `q` are the same, newline (or its lack) included. */
function sameLine(p: Lines, i: number, q: Lines, j: number): boolean {
  const ps = p.at[i], qs = q.at[j], len = p.at[i + 1] - ps;
  if (q.at[j + 1] - qs !== len) return false;
  const pt = p.text, qt = q.text;
  for (let k = 0; k < len; k++) if (pt.charCodeAt(ps + k) !== qt.charCodeAt(qs + k)) return false;
  return true;
}

/** Line `i` of `l` without its newline, and whether it had one. */
function lineAt(l: Lines, i: number): { line: string; eol: boolean } {
  const s = l.at[i], e = l.at[i + 1];
  const eol = e > s && l.text.charCodeAt(e - 1) === 10;
  return { line: l.text.slice(s, eol ? e - 1 : e), eol };
}

/** Old lines [a0, a1) became new lines [b0, b1): 0-based, ends excluded. */
interface Change {
  a0: number;
  a1: number;
  b0: number;
  b1: number;
}

/** The search over the middle, on line ids: patience anchors, then Myers in the gaps. */
class Search {
  readonly changes: Change[] = [];
  /** Regions shown as replaced without a search: the budget ran out. */
  readonly rough: Change[] = [];
  #work = 0;
  readonly #countA: Int32Array;
  readonly #countB: Int32Array;
  readonly #posB: Int32Array;

  constructor(readonly x: Int32Array, readonly y: Int32Array, ids: number) {
    this.#countA = new Int32Array(ids);
    this.#countB = new Int32Array(ids);
    this.#posB = new Int32Array(ids);
  }

  run(): void {
    const stack = [0, this.x.length, 0, this.y.length];
    while (stack.length) {
      const b1 = stack.pop()!, b0 = stack.pop()!, a1 = stack.pop()!, a0 = stack.pop()!;
      this.#region(a0, a1, b0, b1, stack);
    }
    this.changes.sort((p, q) => p.a0 - q.a0 || p.b0 - q.b0);
    this.rough.sort((p, q) => p.a0 - q.a0);
  }

  #region(a0: number, a1: number, b0: number, b1: number, stack: number[]): void {
    const { x, y } = this;
    const n0 = a1 - a0;
    while (a0 < a1 && b0 < b1 && x[a0] === y[b0]) a0++, b0++;
    while (a0 < a1 && b0 < b1 && x[a1 - 1] === y[b1 - 1]) a1--, b1--;
    this.#work += n0 - (a1 - a0);
    if (a0 === a1 || b0 === b1) {
      if (a0 < a1 || b0 < b1) this.changes.push({ a0, a1, b0, b1 });
      return;
    }
    const small = (a1 - a0) * (b1 - b0) <= SMALL_REGION;
    if (!small && this.#work < WORK_BUDGET) {
      const anchors = this.#anchors(a0, a1, b0, b1);
      if (anchors === null) {
        // No line in common: the region is replaced, exactly.
        this.changes.push({ a0, a1, b0, b1 });
        return;
      }
      if (anchors.length) {
        let pa = a0, pb = b0;
        for (let i = 0; i <= anchors.length; i += 2) {
          const na = i < anchors.length ? anchors[i] : a1;
          const nb = i < anchors.length ? anchors[i + 1] : b1;
          if (na > pa || nb > pb) stack.push(pa, na, pb, nb);
          pa = na + 1, pb = nb + 1;
        }
        return;
      }
    }
    if ((small || this.#work < WORK_BUDGET) && this.#myers(a0, a1, b0, b1, small)) return;
    this.changes.push({ a0, a1, b0, b1 });
    this.rough.push({ a0, a1, b0, b1 });
  }

  /**
   * Lines found once in each side of the region, in the longest run that keeps
   * their order on both sides, as pairs: old index, new index, old, new, …;
   * null when the two sides have no line in common.
   */
  #anchors(a0: number, a1: number, b0: number, b1: number): Int32Array | null {
    const { x, y } = this;
    const countA = this.#countA, countB = this.#countB, posB = this.#posB;
    for (let i = a0; i < a1; i++) countA[x[i]]++;
    for (let j = b0; j < b1; j++) countB[y[j]]++, posB[y[j]] = j;
    const at = new Int32Array(a1 - a0), to = new Int32Array(a1 - a0);
    let k = 0, shared = false;
    for (let i = a0; i < a1; i++) {
      const id = x[i];
      if (countB[id] > 0) shared = true;
      if (countA[id] === 1 && countB[id] === 1) at[k] = i, to[k++] = posB[id];
    }
    for (let i = a0; i < a1; i++) countA[x[i]] = 0;
    for (let j = b0; j < b1; j++) countB[y[j]] = 0;
    this.#work += 3 * (a1 - a0) + 2 * (b1 - b0);
    if (!shared) return null;
    // Longest increasing run of `to`, by patience sorting: tails[l] ends a run of l + 1.
    const tails = new Int32Array(k), prev = new Int32Array(k);
    let len = 0;
    for (let t = 0; t < k; t++) {
      let lo = 0, hi = len;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (to[tails[mid]] < to[t]) lo = mid + 1;
        else hi = mid;
      }
      prev[t] = lo > 0 ? tails[lo - 1] : -1;
      tails[lo] = t;
      if (lo === len) len++;
    }
    this.#work += k * (1 + Math.ceil(Math.log2(k + 1)));
    const pairs = new Int32Array(2 * len);
    for (let t = len ? tails[len - 1] : -1, i = len - 1; t !== -1; t = prev[t], i--) {
      pairs[2 * i] = at[t];
      pairs[2 * i + 1] = to[t];
    }
    return pairs;
  }

  /**
   * Myers' shortest edit script for the region, recorded as changes; false when
   * it needs more than {@link MYERS_MAX_EDITS} edits or the budget runs out first.
   */
  #myers(a0: number, a1: number, b0: number, b1: number, small: boolean): boolean {
    const { x, y } = this;
    const n = a1 - a0, m = b1 - b0, max = Math.min(n + m, MYERS_MAX_EDITS), off = max + 1;
    const v = new Int32Array(2 * max + 3);
    // trace[d] holds v for k in [-d, d] as it stood before step d.
    const trace: Int32Array[] = [];
    for (let d = 0; d <= max; d++) {
      if (!small && this.#work > WORK_BUDGET) return false;
      trace.push(v.slice(off - d, off + d + 1));
      this.#work += d + 1;
      for (let k = -d; k <= d; k += 2) {
        let xi = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])
          ? v[off + k + 1]
          : v[off + k - 1] + 1;
        let yi = xi - k;
        const from = xi;
        while (xi < n && yi < m && x[a0 + xi] === y[b0 + yi]) xi++, yi++;
        this.#work += xi - from;
        v[off + k] = xi;
        if (xi >= n && yi >= m) {
          this.#record(trace, d, n, m, a0, b0);
          return true;
        }
      }
    }
    return false;
  }

  /** Walks the trace back from (n, m), turning each run of edits into one change. */
  #record(trace: Int32Array[], d: number, n: number, m: number, a0: number, b0: number): void {
    const found: Change[] = [];
    let run: Change | undefined;
    let cx = n, cy = m;
    for (let dd = d; dd > 0; dd--) {
      const pv = trace[dd];
      const k = cx - cy;
      const down = k === -dd || (k !== dd && pv[k - 1 + dd] < pv[k + 1 + dd]);
      const pk = down ? k + 1 : k - 1;
      const px = pv[pk + dd], py = px - pk;
      // The diagonal from after the edit to (cx, cy) is common: it ends a run.
      const ex = down ? px : px + 1, ey = down ? py + 1 : py;
      if (cx > ex && run) found.push(run), run = undefined;
      run ??= { a0: a0 + px, a1: a0 + ex, b0: b0 + py, b1: b0 + ey };
      run.a0 = a0 + px;
      run.b0 = b0 + py;
      cx = px, cy = py;
    }
    if (run) found.push(run);
    this.changes.push(...found);
  }
}

/** Length of the common start of `a` and `b`, compared a block at a time. */
function commonHead(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  for (let block = 1024; block >= 64;) {
    if (i + block <= n && a.substring(i, i + block) === b.substring(i, i + block)) {
      i += block;
      if (block < 1 << 20) block *= 2;
    } else block >>= 1;
  }
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Length of the common end of `a` and `b`, at most `max`. */
function commonTail(a: string, b: string, max: number): number {
  const la = a.length, lb = b.length;
  let i = 0;
  for (let block = 1024; block >= 64;) {
    if (
      i + block <= max &&
      a.substring(la - i - block, la - i) === b.substring(lb - i - block, lb - i)
    ) {
      i += block;
      if (block < 1 << 20) block *= 2;
    } else block >>= 1;
  }
  while (i < max && a.charCodeAt(la - 1 - i) === b.charCodeAt(lb - 1 - i)) i++;
  return i;
}

/**
 * The lines of `a` and `b` that differ, with {@link CONTEXT} lines around them:
 * the common head and tail are found on the text, so a small change to a big
 * file looks at only a few lines. `first` is the 0-based number of the first line.
 */
function middleLines(a: string, b: string): { x: Lines; y: Lines; first: number } {
  const la = a.length, lb = b.length;
  const same = commonHead(a, b);
  const head = same === 0 ? 0 : a.lastIndexOf("\n", same - 1) + 1;
  let tail = la - commonTail(a, b, Math.min(la, lb) - head);
  // The tail's lines start after a newline on both sides.
  const lineStart = (s: string, i: number) => i === 0 || s.charCodeAt(i - 1) === 10;
  if (!lineStart(a, tail) || !lineStart(b, tail + lb - la)) {
    const nl = a.indexOf("\n", tail);
    tail = nl === -1 ? la : nl + 1;
  }
  let from = head;
  for (let k = 0; k < CONTEXT && from > 0; k++) {
    from = from < 2 ? 0 : a.lastIndexOf("\n", from - 2) + 1;
  }
  let to = tail;
  for (let k = 0; k < CONTEXT && to < la; k++) {
    const nl = a.indexOf("\n", to);
    to = nl === -1 ? la : nl + 1;
  }
  let first = 0;
  for (let i = a.indexOf("\n"); i !== -1 && i < from; i = a.indexOf("\n", i + 1)) first++;
  return { x: linesOf(a, from, to), y: linesOf(b, from, to + lb - la), first };
}

/**
 * Each line of `x` from `x0` to `x1` and of `y` from `y0` to `y1` as an id, equal
 * lines sharing one: FNV-1a hashes in an open addressing table, each hit
 * confirmed by comparing the lines.
 */
function lineIds(
  x: Lines,
  [x0, x1]: [number, number],
  y: Lines,
  [y0, y1]: [number, number],
): { xs: Int32Array; ys: Int32Array; count: number } {
  const total = x1 - x0 + y1 - y0;
  let size = 1024;
  while (size < 2 * total) size *= 2;
  const slots = new Int32Array(size).fill(-1);
  // By id: its hash, and where it first occurs (a line of x, or of y past x's count).
  const hashes = new Int32Array(total), first = new Int32Array(total);
  let count = 0;
  const ids = (l: Lines, from: number, to: number, base: number) => {
    const out = new Int32Array(to - from);
    const { text, at } = l;
    for (let i = from; i < to; i++) {
      let h = 0x811c9dc5;
      for (let c = at[i], end = at[i + 1]; c < end; c++) {
        h = Math.imul(h ^ text.charCodeAt(c), 16777619);
      }
      for (let slot = h & (size - 1);; slot = (slot + 1) & (size - 1)) {
        const id = slots[slot];
        if (id === -1) {
          slots[slot] = out[i - from] = count;
          hashes[count] = h;
          first[count++] = base + i;
          break;
        }
        const f = first[id];
        if (
          hashes[id] === h && (f < x.count ? sameLine(x, f, l, i) : sameLine(y, f - x.count, l, i))
        ) {
          out[i - from] = id;
          break;
        }
      }
    }
    return out;
  };
  const xs = ids(x, x0, x1, 0), ys = ids(y, y0, y1, x.count);
  return { xs, ys, count };
}

/** The changes that turn lines `x` into lines `y`, in order, and those not searched. */
function lineChanges(x: Lines, y: Lines): { changes: Change[]; rough: Change[] } {
  const n = x.count, m = y.count;
  let p = 0;
  while (p < n && p < m && sameLine(x, p, y, p)) p++;
  let s = 0;
  while (s < n - p && s < m - p && sameLine(x, n - 1 - s, y, m - 1 - s)) s++;
  if (p + s === n && p + s === m) return { changes: [], rough: [] };
  const { xs, ys, count } = lineIds(x, [p, n - s], y, [p, m - s]);
  const search = new Search(xs, ys, count);
  search.run();
  const shift = (c: Change): Change => ({ a0: c.a0 + p, a1: c.a1 + p, b0: c.b0 + p, b1: c.b1 + p });
  return { changes: search.changes.map(shift), rough: search.rough.map(shift) };
}

/** A 1-based span of lines, `from` being where an empty one sits: `7`, `7–9`, `(none at 7)`. */
function span(from: number, count: number): string {
  if (count === 0) return `(none at ${from})`;
  return count === 1 ? `${from}` : `${from}–${from + count - 1}`;
}

/** Where a change is, old → new, its lines numbered from `first` + 1. */
function placeOf(c: Change, first: number): string {
  return `${span(first + c.a0 + 1, c.a1 - c.a0)} → ${span(first + c.b0 + 1, c.b1 - c.b0)}`;
}

const isLow = (s: string, i: number) => {
  const c = s.charCodeAt(i);
  return c >= 0xdc00 && c <= 0xdfff;
};

/**
 * One line of the diff, at most {@link LINE_MAX_CHARS} characters of it: around
 * its first difference from `other` (the line it replaces or is replaced by),
 * else its start.
 */
function clipped(line: string, other: string | undefined): string {
  if (line.length <= LINE_MAX_CHARS) return line;
  let at = 0;
  if (other !== undefined) {
    while (at < line.length && at < other.length && line[at] === other[at]) at++;
  }
  let start = Math.max(0, Math.min(at - (LINE_MAX_CHARS >> 2), line.length - LINE_MAX_CHARS));
  if (start > 0 && isLow(line, start)) start--;
  let end = Math.min(line.length, start + LINE_MAX_CHARS);
  if (end < line.length && isLow(line, end)) end++;
  return (start > 0 ? `[… ${start} characters] ` : "") + line.slice(start, end) +
    (end < line.length ? ` [${line.length - end} more characters …]` : "");
}

/**
 * The unified diff of lines `x` and `y` (numbered from `first` + 1), bounded as
 * the module says.
 */
function render(
  x: Lines,
  y: Lines,
  first: number,
  name: string,
  { changes, rough }: { changes: Change[]; rough: Change[] },
): string {
  const out = [`--- ${name}`, `+++ ${name}`];
  if (rough.length) {
    const where = placeOf(rough[0], first).replace(" → ", " → new lines ");
    const more = rough.length > 1 ? ` and ${rough.length - 1} more ranges` : "";
    out.push(
      `(old lines ${where}${more} were not compared line by line: ` +
        "too many differences to search; shown as replaced)",
    );
  }
  const room = DIFF_MAX_LINES - 1; // the last line may count what is not shown
  /** Line `i` of `l`, shown around where it differs from line `j` of `pair` when given. */
  const push = (kind: string, l: Lines, i: number, pair?: Lines, j = 0): boolean => {
    const { line, eol } = lineAt(l, i);
    if (out.length + (eol ? 1 : 2) > room) return false;
    const other = pair && j < pair.count ? lineAt(pair, j).line : undefined;
    out.push(kind + clipped(line, other));
    if (!eol) out.push("\\ No newline at end of file");
    return true;
  };
  let shownRemoved = 0, shownAdded = 0;
  let cut = -1; // the first change not wholly shown
  let i = 0;
  hunks: while (i < changes.length) {
    let j = i;
    while (j + 1 < changes.length && changes[j + 1].a0 - changes[j].a1 <= 2 * CONTEXT) j++;
    const head = changes[i], end = changes[j];
    const aStart = Math.max(0, head.a0 - CONTEXT), bStart = head.b0 - (head.a0 - aStart);
    const aEnd = Math.min(x.count, end.a1 + CONTEXT), bEnd = end.b1 + (aEnd - end.a1);
    let size = 1 + (aEnd - aStart);
    for (let k = i; k <= j; k++) size += changes[k].b1 - changes[k].b0;
    // Whole hunks only, unless the first one alone is larger than the bound.
    if (out.length + size + 2 > room && shownRemoved + shownAdded > 0) {
      cut = i;
      break;
    }
    const countA = aEnd - aStart, countB = bEnd - bStart;
    const at = (start: number, count: number) => first + (count ? start + 1 : start);
    out.push(`@@ -${at(aStart, countA)},${countA} +${at(bStart, countB)},${countB} @@`);
    let a = aStart;
    for (let k = i; k <= j; k++) {
      const c = changes[k];
      cut = k;
      for (; a < c.a0; a++) if (!push(" ", x, a)) break hunks;
      // A change larger than the room left shows the start of both sides.
      const left = room - out.length, removed = c.a1 - c.a0, added = c.b1 - c.b0;
      const keep = removed + added + 2 <= left
        ? removed
        : Math.max(0, Math.min(removed, Math.max(left >> 1, left - added - 2)));
      for (let r = c.a0; r < c.a0 + keep; r++, shownRemoved++) {
        if (!push("-", x, r, c.b0 + r - c.a0 < c.b1 ? y : undefined, c.b0 + r - c.a0)) {
          break hunks;
        }
      }
      if (keep < removed) {
        if (out.length >= room) break hunks;
        out.push(`… ${removed - keep} more removed lines`);
      }
      for (let r = c.b0; r < c.b1; r++, shownAdded++) {
        if (!push("+", y, r, c.a0 + r - c.b0 < c.a1 ? x : undefined, c.a0 + r - c.b0)) {
          break hunks;
        }
      }
      if (keep < removed) break hunks;
      a = c.a1;
    }
    cut = -1;
    for (; a < aEnd; a++) {
      if (!push(" ", x, a)) {
        cut = j + 1 < changes.length ? j + 1 : -1;
        break hunks;
      }
    }
    i = j + 1;
  }
  if (cut === -1) return out.join("\n");
  let removed = -shownRemoved, added = -shownAdded;
  for (const c of changes) removed += c.a1 - c.a0, added += c.b1 - c.b0;
  const places = changes.slice(cut, cut + PLACES_LISTED).map((c) => placeOf(c, first));
  const unlisted = changes.length - cut - places.length;
  out.push(
    `… ${removed + added} more changed lines not shown (${removed} removed, ${added} added), ` +
      `at (old → new): ${places.join(", ")}${unlisted > 0 ? `, … and ${unlisted} more` : ""}`,
  );
  return out.join("\n");
}

/**
 * A unified diff of `a` against `b` (`--- name`, `+++ name`, hunks with three
 * lines of context), for the approval prompt: what the user approves is the
 * change. Bounded in time and length whatever the size of the texts; past the
 * bound, a last line counts the changed lines not shown and lists where they are.
 *
 * @example
 * ```ts
 * unifiedDiff("a\nb\n", "a\nc\n", "t.txt"); // "--- t.txt\n+++ t.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c"
 * ```
 */
export function unifiedDiff(a: string, b: string, name: string): string {
  const { x, y, first } = middleLines(a, b);
  return render(x, y, first, name, lineChanges(x, y));
}

/**
 * What the approval prompt shows for replacing `before` (the file's bytes, or
 * its text) with `after`: the {@link unifiedDiff}, or, when either side is not
 * text (not UTF-8, or holding NUL bytes), the sizes and why no diff is shown.
 * `verb` heads that line.
 *
 * @example
 * ```ts
 * changePreview(new Uint8Array([0xff]), "text\n", "x.bin");
 * // "overwrite x.bin: 1 B → 5 B; the old content is not UTF-8 text, so no line diff is shown"
 * ```
 */
export function changePreview(
  before: Uint8Array | string,
  after: string,
  name: string,
  verb = "overwrite",
): string {
  const size = typeof before === "string" ? utf8Length(before) : before.byteLength;
  const head = `${verb} ${name}: ${formatBytes(size)} → ${formatBytes(utf8Length(after))}; `;
  let old: string;
  try {
    old = typeof before === "string"
      ? before
      : new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(before);
  } catch {
    return `${head}the old content is not UTF-8 text, so no line diff is shown`;
  }
  const oldBinary = old.includes("\0"), newBinary = after.includes("\0");
  if (oldBinary || newBinary) {
    const which = oldBinary && newBinary
      ? "the old and the new content are"
      : oldBinary
      ? "the old content is"
      : "the new content is";
    return `${head}${which} binary (NUL bytes), so no line diff is shown`;
  }
  return unifiedDiff(old, after, name);
}

/** One hunk of a {@link structuredPatch}: 1-based starts, line counts, and its lines. */
export interface PatchHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** Each line with its mark: ` ` kept, `-` removed, `+` added; `\ No newline at end of file` after a last line without one. */
  lines: string[];
}

/**
 * The change from `a` to `b` as hunks with three lines of context, whole (no
 * line is cut or left out), in the shape hooks written for Claude Code read as
 * `structuredPatch`. The search is bounded in time as {@link unifiedDiff}'s.
 *
 * @example
 * ```ts
 * structuredPatch("a\nb\n", "a\nc\n");
 * // [{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, lines: [" a", "-b", "+c"] }]
 * ```
 */
export function structuredPatch(a: string, b: string): PatchHunk[] {
  const { x, y, first } = middleLines(a, b);
  const { changes } = lineChanges(x, y);
  const hunks: PatchHunk[] = [];
  const push = (lines: string[], kind: string, l: Lines, i: number) => {
    const { line, eol } = lineAt(l, i);
    lines.push(kind + line);
    if (!eol) lines.push("\\ No newline at end of file");
  };
  for (let i = 0; i < changes.length;) {
    let j = i;
    while (j + 1 < changes.length && changes[j + 1].a0 - changes[j].a1 <= 2 * CONTEXT) j++;
    const head = changes[i], end = changes[j];
    const aStart = Math.max(0, head.a0 - CONTEXT), bStart = head.b0 - (head.a0 - aStart);
    const aEnd = Math.min(x.count, end.a1 + CONTEXT), bEnd = end.b1 + (aEnd - end.a1);
    const lines: string[] = [];
    let a = aStart;
    for (let k = i; k <= j; k++) {
      const c = changes[k];
      for (; a < c.a0; a++) push(lines, " ", x, a);
      for (let r = c.a0; r < c.a1; r++) push(lines, "-", x, r);
      for (let r = c.b0; r < c.b1; r++) push(lines, "+", y, r);
      a = c.a1;
    }
    for (; a < aEnd; a++) push(lines, " ", x, a);
    const countA = aEnd - aStart, countB = bEnd - bStart;
    hunks.push({
      oldStart: first + (countA ? aStart + 1 : aStart),
      oldLines: countA,
      newStart: first + (countB ? bStart + 1 : bStart),
      newLines: countB,
      lines,
    });
    i = j + 1;
  }
  return hunks;
}
