/**
 * Keyed digests of what a tool call received and returned: HMAC-SHA-256, so a
 * digest in the store proves two calls were alike without letting anyone who
 * reads the store guess a short argument or output by hashing candidates. Web
 * Crypto does the work: native, asynchronous, and nothing to import at start-up.
 *
 * @module
 */

import { decodeHex, encodeHex } from "../fs/hex.ts";

const encoder = new TextEncoder();

/** Random key material for {@link KeyedDigest}, as hex. */
export function randomKeyHex(): string {
  return encodeHex(crypto.getRandomValues(new Uint8Array(32)));
}

/** HMAC-SHA-256 under one key, as lowercase hex. */
export class KeyedDigest {
  readonly #key: Promise<CryptoKey>;

  /** `keyHex`: 64 hex characters (32 bytes). */
  constructor(keyHex: string) {
    if (!/^[0-9a-f]{64}$/i.test(keyHex)) {
      throw new Error("Cannot use digest key: expected 64 hex characters");
    }
    this.#key = crypto.subtle.importKey(
      "raw",
      decodeHex(keyHex),
      { name: "HMAC", hash: "SHA-256" },
      false,
      [
        "sign",
      ],
    );
  }

  /** A digest under a fresh random key, for sinks that keep nothing across processes. */
  static random(): KeyedDigest {
    return new KeyedDigest(randomKeyHex());
  }

  /** The hex HMAC of `data` (UTF-8). */
  async digest(data: string): Promise<string> {
    const mac = await crypto.subtle.sign("HMAC", await this.#key, encoder.encode(data));
    return encodeHex(new Uint8Array(mac));
  }
}
