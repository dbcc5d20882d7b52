/**
 * Bytes as lowercase hex and back: digests, random keys and ids, and trace ids
 * that OTLP/JSON writes as hex but protobuf carries as bytes.
 *
 * @module
 */

const DIGITS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * `bytes` as lowercase hex, two digits a byte.
 *
 * @example
 * ```ts
 * encodeHex(new Uint8Array([0, 15, 255])); // "000fff"
 * ```
 */
export function encodeHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += DIGITS[b];
  return out;
}

/**
 * The bytes `hex` spells, two digits a byte, either case. Throws on an odd
 * length or a character that is not a hex digit.
 *
 * @example
 * ```ts
 * decodeHex("000fFF"); // Uint8Array [0, 15, 255]
 * ```
 */
export function decodeHex(hex: string): Uint8Array<ArrayBuffer> {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(hex)) {
    throw new Error(
      `Cannot decode hex "${hex.length > 80 ? `${hex.slice(0, 80)}...` : hex}": ` +
        (hex.length % 2 ? "odd length" : "not a hex digit"),
    );
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const nib = (c: number) => (c <= 57 ? c - 48 : (c | 32) - 87);

/**
 * `out` filled from the hex digits of `hex` from `at`, two a byte, either
 * case, unchecked: for hex crab wrote itself and reads in bulk (undo's index
 * listed as one string), where {@link decodeHex}'s check per call would cost
 * more than the decoding.
 */
export function hexInto(hex: string, at: number, out: Uint8Array): Uint8Array {
  for (let i = 0; i < out.length; i++) {
    out[i] = (nib(hex.charCodeAt(at + 2 * i)) << 4) | nib(hex.charCodeAt(at + 2 * i + 1));
  }
  return out;
}

/** The number the `digits` hex digits of `hex` from `at` spell, unchecked (see {@link hexInto}). */
export function hexNumber(hex: string, at: number, digits: number): number {
  let n = 0;
  for (let d = 0; d < digits; d++) n = n * 16 + nib(hex.charCodeAt(at + d));
  return n;
}
