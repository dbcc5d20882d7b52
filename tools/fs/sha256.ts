/**
 * SHA-256 without `node:crypto`: importing that module starts Deno's Node
 * compatibility layer, 15-20 ms of every start-up that hashes anything (a tool
 * call's digests, a read's freshness record). Digests of small inputs are
 * computed here in plain JavaScript (about 240 MB/s); {@link fileHasher} hands
 * large files to `node:crypto`, loaded only then, whose native code is eight
 * times faster where that start-up cost no longer matters.
 *
 * @module
 */

import { encodeHex } from "./hex.ts";

/** An incremental hash, shaped like `node:crypto`'s `Hash` so either can serve. */
export interface Hasher {
  update(data: Uint8Array): Hasher;
  /** The hex digest; the hasher is finished afterwards. */
  digest(encoding: "hex"): string;
}

const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];
/** The message schedule, shared: compression never re-enters. */
const W = new Int32Array(64);
const encoder = new TextEncoder();

/** SHA-256 (FIPS 180-4) in plain JavaScript, fed in pieces. */
export class Sha256 implements Hasher {
  readonly #h = Int32Array.from(INITIAL);
  readonly #block = new Uint8Array(64);
  #blockLen = 0;
  #total = 0;

  update(data: Uint8Array): this {
    const n = data.length;
    let off = 0;
    this.#total += n;
    if (this.#blockLen > 0) {
      off = Math.min(64 - this.#blockLen, n);
      this.#block.set(data.subarray(0, off), this.#blockLen);
      this.#blockLen += off;
      if (this.#blockLen < 64) return this;
      compress(this.#h, this.#block, 0);
      this.#blockLen = 0;
    }
    for (; off + 64 <= n; off += 64) compress(this.#h, data, off);
    if (off < n) {
      this.#block.set(data.subarray(off));
      this.#blockLen = n - off;
    }
    return this;
  }

  digest(_encoding: "hex" = "hex"): string {
    const bits = this.#total * 8;
    const pad = new Uint8Array((this.#blockLen < 56 ? 64 : 128) - this.#blockLen);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(pad.length - 4, bits >>> 0);
    this.update(pad);
    const out = new Uint8Array(32);
    const words = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) words.setInt32(4 * i, this.#h[i]);
    return encodeHex(out);
  }
}

function compress(h: Int32Array, p: Uint8Array, o: number): void {
  const w = W;
  for (let i = 0; i < 16; i++, o += 4) {
    w[i] = (p[o] << 24) | (p[o + 1] << 16) | (p[o + 2] << 8) | p[o + 3];
  }
  for (let i = 16; i < 64; i++) {
    const a = w[i - 15], b = w[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0;
  h[5] = (h[5] + f) | 0;
  h[6] = (h[6] + g) | 0;
  h[7] = (h[7] + k) | 0;
}

function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

/**
 * Hex SHA-256 of bytes or text (UTF-8).
 *
 * @example
 * ```ts
 * sha256("abc"); // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * ```
 */
export function sha256(data: Uint8Array | string): string {
  return new Sha256().update(bytesOf(data)).digest("hex");
}

/** Files at least this large are hashed by `node:crypto`'s native code. */
export const NATIVE_HASH_BYTES = 4 * 1024 * 1024;

/**
 * A hasher for a file of `size` bytes: plain JavaScript below
 * {@link NATIVE_HASH_BYTES}, `node:crypto` (loaded on first use) from there on.
 * Both give the same digest.
 */
export async function fileHasher(size: number): Promise<Hasher> {
  if (size < NATIVE_HASH_BYTES) return new Sha256();
  const { createHash } = await import("node:crypto");
  return createHash("sha256") as unknown as Hasher;
}

const HASH_CHUNK = 256 * 1024;

/** sha256 and size of a file's whole content, read in chunks (memory stays bounded). */
export async function hashFile(path: string): Promise<{ hash: string; size: number }> {
  const buf = new Uint8Array(HASH_CHUNK);
  let size = 0;
  using file = await Deno.open(path, { read: true });
  const hasher = await fileHasher((await file.stat()).size);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    hasher.update(buf.subarray(0, n));
    size += n;
  }
  return { hash: hasher.digest("hex"), size };
}
