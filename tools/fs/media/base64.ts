/** Base64 of bytes, in chunks, so a multi-megabyte image never builds one huge argument list. */

/**
 * `bytes` as standard base64.
 *
 * @example
 * ```ts
 * encodeBase64(new Uint8Array([104, 105])); // "aGk="
 * ```
 */
export function encodeBase64(bytes: Uint8Array): string {
  const parts: string[] = [];
  // A multiple of 3, so no chunk but the last is padded.
  const CHUNK = 3 * 16 * 1024;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    parts.push(btoa(String.fromCharCode(...bytes.subarray(i, i + CHUNK))));
  }
  return parts.join("");
}
