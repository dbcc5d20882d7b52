/**
 * The undo store's tables of raw content hashes in memory, in typed columns
 * (no object or string per hash): what a snapshot gathered for the index, and
 * how many records need each object while the store is pruned.
 *
 * @module
 */

/**
 * Distinct raw hashes (32 bytes each), a row each, found through an
 * open-addressing table of rows by the hash's first bits. A table of its own
 * keeps columns beside the hashes and grows them in {@link grow}; alone, it
 * is a set of hashes.
 */
export class HashRows {
  count = 0;
  raw = new Uint8Array(0);
  /** Row + 1 in each slot, 0 when empty. */
  #slots = new Int32Array(0);

  /** The row of the hash at `at` in `raw`, or -1. */
  find(raw: Uint8Array, at = 0): number {
    if (this.count === 0) return -1;
    const mask = this.#slots.length - 1;
    for (let i = start(raw, at) & mask;; i = (i + 1) & mask) {
      const r = this.#slots[i] - 1;
      if (r < 0) return -1;
      let same = true;
      for (let k = 0; k < 32; k++) {
        if (this.raw[32 * r + k] !== raw[at + k]) {
          same = false;
          break;
        }
      }
      if (same) return r;
    }
  }

  /** The row of the hash at `at` in `raw`, added if new (columns beside it start at zero). */
  row(raw: Uint8Array, at = 0): number {
    const r = this.find(raw, at);
    return r >= 0 ? r : this.addRow(raw, at);
  }

  /** A new row for the hash at `at` in `raw` (the caller knows it is not there yet). */
  protected addRow(raw: Uint8Array, at = 0): number {
    if (2 * (this.count + 1) > this.#slots.length) this.#grow();
    const r = this.count++;
    this.raw.set(raw.subarray(at, at + 32), 32 * r);
    const mask = this.#slots.length - 1;
    let i = start(raw, at) & mask;
    while (this.#slots[i] !== 0) i = (i + 1) & mask;
    this.#slots[i] = r + 1;
    return r;
  }

  /** Columns beside the hashes grow to `cap` rows, their first {@link count} kept. */
  protected grow(_cap: number): void {}

  clear(): void {
    this.count = 0;
    this.#slots.fill(0);
  }

  #grow(): void {
    const cap = Math.max(1024, this.#slots.length);
    const raw = new Uint8Array(32 * cap);
    raw.set(this.raw.subarray(0, 32 * this.count));
    this.raw = raw;
    this.grow(cap);
    const slots = new Int32Array(2 * cap), mask = slots.length - 1;
    for (let r = 0; r < this.count; r++) {
      let i = start(raw, 32 * r) & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = r + 1;
    }
    this.#slots = slots;
  }
}

/** The first 32 bits of the hash at `at` in `b`: already uniform, a slot as they are. */
function start(b: Uint8Array, at: number): number {
  return (b[at] << 24 | b[at + 1] << 16 | b[at + 2] << 8 | b[at + 3]) >>> 0;
}

/** A column of `cap` rows with the first `count` of `from`, `width` values a row. */
function grown<T extends Float64Array | Int32Array | Uint8Array>(
  from: T,
  make: new (n: number) => T,
  cap: number,
  count: number,
  width = 1,
): T {
  const out = new make(width * cap);
  out.set(from.subarray(0, width * count) as never);
  return out;
}

/**
 * Objects gathered and not yet in the index: their hashes and where each lies.
 * Cleared once the rows are committed.
 */
export class Gathered extends HashRows {
  bytes = 0;
  /** Pack, offset and size of each row. */
  loc = new Float64Array(0);

  add(raw: Uint8Array, pack: number, off: number, size: number): void {
    const r = this.addRow(raw);
    this.loc[3 * r] = pack;
    this.loc[3 * r + 1] = off;
    this.loc[3 * r + 2] = size;
    this.bytes += size;
  }

  override clear(): void {
    super.clear();
    this.bytes = 0;
  }

  protected override grow(cap: number): void {
    this.loc = grown(this.loc, Float64Array, cap, this.count, 3);
  }
}

/** A row's flags in {@link RefCounts}: a dropped record needed it; the store holds it. */
export const FREED = 1, STORED = 2;

/**
 * How many kept records need each object, its size, when it was stored and
 * its {@link FREED}/{@link STORED} flags, by raw hash: what pruning counts,
 * a few dozen bytes an object where a string and an entry in maps each took
 * hundreds.
 */
export class RefCounts extends HashRows {
  refs = new Int32Array(0);
  size = new Float64Array(0);
  at = new Float64Array(0);
  flags = new Uint8Array(0);

  protected override grow(cap: number): void {
    this.refs = grown(this.refs, Int32Array, cap, this.count);
    this.size = grown(this.size, Float64Array, cap, this.count);
    this.at = grown(this.at, Float64Array, cap, this.count);
    this.flags = grown(this.flags, Uint8Array, cap, this.count);
  }
}

/** The first 30 bits of a raw hash, as a small integer. */
export function prefixOf(raw: Uint8Array): number {
  return (raw[0] << 22 | raw[1] << 14 | raw[2] << 6 | raw[3] >> 2) >>> 0;
}
