/**
 * Keyed digests of what a tool call received and returned: HMAC-SHA-256, so a
 * digest in the store proves two calls were alike without letting anyone who
 * reads the store guess a short argument or output by hashing candidates. Web
 * Crypto does the work: native, asynchronous, and nothing to import at start-up.
 *
 * @module
 */

const encoder = new TextEncoder();

/** Random key material for {@link KeyedDigest}, as hex. */
export function randomKeyHex(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(32)));
}

function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += (b < 16 ? "0" : "") + b.toString(16);
  return out;
}

/** HMAC-SHA-256 under one key, as lowercase hex. */
export class KeyedDigest {
  readonly #key: Promise<CryptoKey>;

  /** `keyHex`: 64 hex characters (32 bytes). */
  constructor(keyHex: string) {
    if (!/^[0-9a-f]{64}$/i.test(keyHex)) {
      throw new Error("Cannot use digest key: expected 64 hex characters");
    }
    const raw = new Uint8Array(32);
    for (let i = 0; i < 32; i++) raw[i] = parseInt(keyHex.slice(2 * i, 2 * i + 2), 16);
    this.#key = crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
  }

  /** A digest under a fresh random key, for sinks that keep nothing across processes. */
  static random(): KeyedDigest {
    return new KeyedDigest(randomKeyHex());
  }

  /** The hex HMAC of `data` (UTF-8). */
  async digest(data: string): Promise<string> {
    const mac = await crypto.subtle.sign("HMAC", await this.#key, encoder.encode(data));
    return toHex(new Uint8Array(mac));
  }
}
