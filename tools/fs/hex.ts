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
