/**
 * The hint of a failed edit: the text in the file most like the `old` that was
 * not found. Only the hint uses it; where an edit applies is decided by exact
 * matching alone. A difference in Unicode normalization (NFC vs NFD) or in
 * whitespace is named as such, since those look identical on screen.
 *
 * @module
 */

/** `s` as a JSON string, cut at `max` characters. */
export function quote(s: string, max = 200): string {
  return JSON.stringify(s.length > max ? s.slice(0, max) + "…" : s);
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** Character bigrams of a line, as numbers, whitespace squashed. */
function bigrams(s: string): Set<number> {
  const t = squash(s);
  const out = new Set<number>();
  for (let i = 0; i + 1 < t.length; i++) out.add(t.charCodeAt(i) * 65536 + t.charCodeAt(i + 1));
  return out;
}

/** Similarity of a file line to a wanted line in [0, 1]: mean of Dice and recall of bigrams. */
function similarity(line: string, want: Set<number>): number {
  if (want.size === 0) return 0;
  const t = squash(line);
  if (t.length < 2) return 0;
  const seen = new Set<number>();
  let inter = 0;
  for (let i = 0; i + 1 < t.length; i++) {
    const g = t.charCodeAt(i) * 65536 + t.charCodeAt(i + 1);
    if (seen.has(g)) continue;
    seen.add(g);
    if (want.has(g)) inter++;
  }
  return (2 * inter / (seen.size + want.size) + inter / want.size) / 2;
}

/** Column (1-based) in `line` where `want` most plausibly starts. */
function bestColumn(line: string, want: string): number {
  const w = want.trimStart();
  // The longest prefix of w found in the line; "found" is monotone in the length.
  let lo = 0, hi = Math.min(w.length, line.length);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (line.includes(w.slice(0, mid))) lo = mid;
    else hi = mid - 1;
  }
  if (lo >= 3) return line.indexOf(w.slice(0, lo)) + 1;
  return line.length - line.trimStart().length + 1;
}

/** Work budget of the similarity search, in characters compared. */
const SIMILARITY_BUDGET = 30_000_000;
const MIN_SIMILARITY = 0.4;

/**
 * Finds the text most like `old` for the error hint. Only the hint uses it: where
 * an edit applies is decided by exact matching alone.
 */
export function closestCandidate(text: string, old: string): string {
  const lines = text.split("\n");
  const want = old.split("\n");
  const n = want.length;
  const at = (i: number) => {
    const win = lines.slice(i, i + n).join("\n");
    return `line ${i + 1}, column ${bestColumn(lines[i], want[0])}: ${quote(win)}`;
  };
  const normalization = normalizationCandidate(text, old, lines, n);
  if (normalization) return `${normalization.why} at ${at(normalization.line)}`;
  // A difference in whitespace only (indentation, tabs, spacing) is the common miss.
  const sq = want.map(squash);
  const lineSq = lines.map(squash);
  for (let i = 0; i + n <= lines.length; i++) {
    let ok = true;
    for (let k = 0; k < n && ok; k++) {
      const l = lineSq[i + k];
      ok = n === 1
        ? sq[0] !== "" && l.includes(sq[0])
        : k === 0
        ? l.endsWith(sq[0])
        : k === n - 1
        ? l.startsWith(sq[k])
        : l === sq[k];
    }
    if (ok) return `closest candidate (differs in whitespace only) at ${at(i)}`;
  }
  // Otherwise score windows by line similarity over a sample of old's lines.
  const informative = want.map((_, k) => k).filter((k) => sq[k].length >= 2);
  if (informative.length === 0) return "no similar text found in the file";
  const samples = Math.max(
    1,
    Math.min(informative.length, 8, Math.floor(SIMILARITY_BUDGET / Math.max(1, text.length))),
  );
  const picked = Array.from(
    { length: samples },
    (_, j) => informative[Math.floor(j * informative.length / samples)],
  );
  const grams = new Map(picked.map((k) => [k, bigrams(want[k])]));
  let best = -1, bestAt = 0;
  for (let i = 0; i + n <= Math.max(lines.length, n); i++) {
    let score = 0;
    for (const k of picked) {
      if (i + k < lines.length) score += similarity(lines[i + k], grams.get(k)!);
    }
    score /= picked.length;
    if (score > best) [best, bestAt] = [score, i];
  }
  if (best < MIN_SIMILARITY) return "no similar text found in the file";
  return `closest candidate at ${at(bestAt)}`;
}

/** The Unicode normalization form a text is in, for the hint. */
function formOf(s: string): string {
  const nfc = s === s.normalize("NFC"), nfd = s === s.normalize("NFD");
  return nfc && !nfd ? "NFC (composed)" : nfd && !nfc ? "NFD (decomposed)" : "a mix of forms";
}

/**
 * When `old` occurs in the file once both are normalized the same way (NFC),
 * the first window of lines that holds it: the two spell the same characters
 * with different code points (`é` as U+00E9, or as `e` + U+0301).
 */
function normalizationCandidate(
  text: string,
  old: string,
  lines: string[],
  n: number,
): { line: number; why: string } | undefined {
  const oldNfc = old.normalize("NFC");
  if (!text.normalize("NFC").includes(oldNfc)) return undefined;
  for (let i = 0; i + n <= lines.length; i++) {
    const win = lines.slice(i, i + n).join("\n");
    if (!win.normalize("NFC").includes(oldNfc)) continue;
    const why = `closest candidate (differs only in Unicode normalization: the file has ` +
      `${formOf(win)}, old has ${formOf(old)}; copy the text from the file as it is)`;
    return { line: i, why };
  }
  return undefined;
}
