/**
 * "Did you mean": the known name nearest to a mistyped one, by edit distance
 * (a swap of two neighbours counts as one edit), or one it is the start of.
 * Config files' unknown fields use the same distance.
 *
 * @module
 */

/**
 * The optimal string alignment distance: the fewest edits (insert, delete,
 * substitute, swap two neighbours) that turn `a` into `b`, no part edited twice.
 * Unlike Levenshtein's, a swap is one typo, not two.
 *
 * @example
 * ```ts
 * osaDistance("mdoel", "model"); // 1 (Levenshtein: 2)
 * ```
 */
export function osaDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/**
 * The candidate `input` most likely stands for, or undefined: the nearest one
 * within a third of its length in edits (at least one), else the only one that
 * `input` (3 characters or more) is the start of.
 *
 * @example
 * ```ts
 * suggest("mertics", ["metrics", "sessions"]); // "metrics"
 * suggest("--trust", ["--trust-project", "--tools"]); // "--trust-project"
 * ```
 */
export function suggest(input: string, candidates: readonly string[]): string | undefined {
  const bare = (s: string) => s.replace(/^-+/, "").toLowerCase();
  const word = bare(input);
  if (word === "") return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const distance = osaDistance(word, bare(c));
    if (distance < bestDistance) {
      best = c;
      bestDistance = distance;
    }
  }
  if (best !== undefined && bestDistance <= Math.max(1, Math.floor(word.length / 3))) return best;
  const starts = candidates.filter((c) => word.length >= 3 && bare(c).startsWith(word));
  return starts.length === 1 ? starts[0] : undefined;
}
