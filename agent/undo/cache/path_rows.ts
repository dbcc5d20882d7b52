/**
 * A tree's files by path (`cache/tree.ts`): a `Map<string, number>` in what
 * it answers, made in a fraction of a Map's time from a stat cache's paths.
 *
 * A stat cache names 100,000 files in a workspace that size, and a session
 * that follows another needs their index at its first call. A Map of them
 * takes 40-80 ms to fill (an entry made, the table grown again and again).
 * Here the paths the cache gave stay where they are (their row is their
 * place), found through one open-addressing table of their hashes, sized
 * once; a path set or removed since goes to a small Map beside it, and a
 * place given up is marked gone.
 *
 * Iteration gives the cache's paths in row order, then those set since, in
 * the order they were set (a Map gives a path set again at its first place:
 * nothing here depends on the order).
 *
 * @module
 */

/** FNV-1a over the UTF-16 code units: the same for a path made anew and one cut from the cache. */
function hashOf(p: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < p.length; i++) h = Math.imul(h ^ p.charCodeAt(i), 0x01000193);
  return h;
}

/** Path → row. */
export class PathRows {
  /** The cache's paths, row `i` at place `i` (the caller's array: a row given again may be renamed in it, once gone here). */
  readonly #base: readonly string[];
  /** How many paths the base had when made (rows given since may lengthen the caller's array). */
  readonly #n: number;
  /** Each base path's hash, and the table of places (place + 1, 0 when empty). */
  readonly #hashes: Int32Array;
  readonly #slots: Int32Array;
  /** Base places no longer in the index: removed, set anew, or left out when made. */
  #gone: Uint8Array | undefined;
  #baseCount = 0;
  /** Paths set since. */
  readonly #more = new Map<string, number>();

  /**
   * The index of `base` (path of row `i` at `i`), leaving out the places
   * `skip` marks; a path named twice is the later row's.
   */
  constructor(base: readonly string[] = [], skip?: Uint8Array) {
    this.#base = base;
    const n = this.#n = base.length;
    let cap = 16;
    while (cap < 2 * n) cap *= 2;
    this.#hashes = new Int32Array(n);
    this.#slots = new Int32Array(n ? cap : 0);
    const mask = cap - 1, slots = this.#slots, hashes = this.#hashes;
    for (let i = 0; i < n; i++) {
      if (skip?.[i]) {
        this.#goneAt(i);
        continue;
      }
      const p = base[i], h = hashes[i] = hashOf(p);
      let k = h & mask;
      for (; slots[k] !== 0; k = (k + 1) & mask) {
        const j = slots[k] - 1;
        if (hashes[j] === h && base[j] === p) break;
      }
      // Named twice: the later row is the path's, the earlier one's place is gone.
      if (slots[k] !== 0) this.#goneAt(slots[k] - 1);
      else this.#baseCount++;
      slots[k] = i + 1;
    }
  }

  #goneAt(i: number): void {
    (this.#gone ??= new Uint8Array(this.#n))[i] = 1;
  }

  /** The base place of `p` while it is in the index, or -1. */
  #find(p: string): number {
    if (this.#baseCount === 0) return -1;
    const slots = this.#slots, hashes = this.#hashes, mask = slots.length - 1, h = hashOf(p);
    for (let k = h & mask; slots[k] !== 0; k = (k + 1) & mask) {
      const i = slots[k] - 1;
      if (hashes[i] === h && this.#base[i] === p) return this.#gone?.[i] ? -1 : i;
    }
    return -1;
  }

  /** Takes base place `i` out. */
  #drop(i: number): void {
    this.#goneAt(i);
    this.#baseCount--;
  }

  get size(): number {
    return this.#baseCount + this.#more.size;
  }

  get(p: string): number | undefined {
    const r = this.#more.get(p);
    if (r !== undefined) return r;
    const i = this.#find(p);
    return i < 0 ? undefined : i;
  }

  has(p: string): boolean {
    return this.get(p) !== undefined;
  }

  set(p: string, r: number): this {
    const i = this.#find(p);
    if (i >= 0) this.#drop(i);
    this.#more.set(p, r);
    return this;
  }

  delete(p: string): boolean {
    if (this.#more.delete(p)) return true;
    const i = this.#find(p);
    if (i < 0) return false;
    this.#drop(i);
    return true;
  }

  *entries(): Generator<[string, number]> {
    const base = this.#base;
    for (let i = 0; i < this.#n && this.#baseCount > 0; i++) {
      if (!this.#gone?.[i]) yield [base[i], i];
    }
    yield* this.#more;
  }

  *keys(): Generator<string> {
    for (const [p] of this.entries()) yield p;
  }

  *values(): Generator<number> {
    for (const [, r] of this.entries()) yield r;
  }

  forEach(fn: (r: number, p: string) => void): void {
    for (const [p, r] of this.entries()) fn(r, p);
  }

  [Symbol.iterator](): Generator<[string, number]> {
    return this.entries();
  }
}
