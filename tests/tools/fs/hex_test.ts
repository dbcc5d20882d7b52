import assert from "node:assert/strict";
import { decodeHex, encodeHex, hexInto, hexNumber } from "../../../tools/fs/hex.ts";

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

Deno.test("hexInto() and hexNumber() read hex in place, from any offset, either case", () => {
  const out = new Uint8Array(3);
  assert.deepEqual(hexInto("xx00fFaB", 2, out), Uint8Array.of(0, 255, 171));
  assert.equal(hexNumber("..01a3F2e4c1b0", 2, 12), 0x01a3f2e4c1b0);
  assert.equal(hexNumber("ff", 0, 2), 255);
});
