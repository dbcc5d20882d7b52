/**
 * The undo store's table of raw content hashes in memory, in typed columns
 * (no object or string per hash): what a snapshot gathered for the index.
 *
 * @module
 */

/**
 * Objects gathered and not yet in the index, by raw hash, in columns (no
 * object or string each): their hashes, where each lies, and an
 * open-addressing table of rows by the hash's first bits. Cleared once the
 * rows are committed.
 */
export class Gathered {
  count = 0;
  bytes = 0;
  raw = new Uint8Array(0);
  /** Pack, offset and size of each row. */
  loc = new Float64Array(0);
  /** Row + 1 in each slot, 0 when empty. */
  #slots = new Int32Array(0);

  add(raw: Uint8Array, pack: number, off: number, size: number): void {
    if (2 * (this.count + 1) > this.#slots.length) this.#grow();
    const r = this.count++;
    this.raw.set(raw, 32 * r);
    this.loc[3 * r] = pack;
    this.loc[3 * r + 1] = off;
    this.loc[3 * r + 2] = size;
    this.bytes += size;
    const mask = this.#slots.length - 1;
    let i = this.#start(raw, 0) & mask;
    while (this.#slots[i] !== 0) i = (i + 1) & mask;
    this.#slots[i] = r + 1;
  }

  /** The row of `raw`, or -1. */
  find(raw: Uint8Array): number {
    if (this.count === 0) return -1;
    const mask = this.#slots.length - 1;
    for (let i = this.#start(raw, 0) & mask;; i = (i + 1) & mask) {
      const r = this.#slots[i] - 1;
      if (r < 0) return -1;
      let same = true;
      for (let k = 0; k < 32; k++) {
        if (this.raw[32 * r + k] !== raw[k]) {
          same = false;
          break;
        }
      }
      if (same) return r;
    }
  }

  clear(): void {
    this.count = 0;
    this.bytes = 0;
    this.#slots.fill(0);
  }

  /** The first 32 bits of the hash at `at` in `b`: already uniform, a slot as they are. */
  #start(b: Uint8Array, at: number): number {
    return (b[at] << 24 | b[at + 1] << 16 | b[at + 2] << 8 | b[at + 3]) >>> 0;
  }

  #grow(): void {
    const cap = Math.max(1024, this.#slots.length);
    const raw = new Uint8Array(32 * cap), loc = new Float64Array(3 * cap);
    raw.set(this.raw.subarray(0, 32 * this.count));
    loc.set(this.loc.subarray(0, 3 * this.count));
    this.raw = raw;
    this.loc = loc;
    const slots = new Int32Array(2 * cap), mask = slots.length - 1;
    for (let r = 0; r < this.count; r++) {
      let i = this.#start(raw, 32 * r) & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = r + 1;
    }
    this.#slots = slots;
  }
}

/** The first 30 bits of a raw hash, as a small integer. */
export function prefixOf(raw: Uint8Array): number {
  return (raw[0] << 22 | raw[1] << 14 | raw[2] << 6 | raw[3] >> 2) >>> 0;
}
