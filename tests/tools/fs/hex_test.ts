import assert from "node:assert/strict";
import { decodeHex, encodeHex } from "../../../tools/fs/hex.ts";

Deno.test("encodeHex() writes two lowercase digits a byte, and decodeHex() reads them back", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  const hex = encodeHex(all);
  assert.equal(hex.slice(0, 8), "00010203");
  assert.equal(hex.slice(-6), "fdfeff");
  assert.equal(hex.length, 512);
  assert.deepEqual(decodeHex(hex), all);
  assert.deepEqual(decodeHex(hex.toUpperCase()), all);
  assert.equal(encodeHex(new Uint8Array()), "");
  assert.deepEqual(decodeHex(""), new Uint8Array());
});

Deno.test("decodeHex() rejects an odd length and a character that is no hex digit", () => {
  assert.throws(() => decodeHex("abc"), { message: 'Cannot decode hex "abc": odd length' });
  assert.throws(() => decodeHex("0g"), { message: 'Cannot decode hex "0g": not a hex digit' });
  assert.throws(() => decodeHex("-1"), /not a hex digit/);
});
