// The plain-JavaScript SHA-256 must agree with node:crypto's on every length and split.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  fileHasher,
  hashFile,
  NATIVE_HASH_BYTES,
  Sha256,
  sha256,
} from "../../../tools/fs/sha256.ts";

function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (Math.imul(i + seed, 2654435761) >>> 24) & 0xff;
  return out;
}

const native = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

Deno.test("sha256() equals node:crypto on the FIPS vectors and on every length up to three blocks", () => {
  assert.equal(sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(
    sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  for (let n = 0; n <= 200; n++) {
    const b = bytes(n);
    assert.equal(sha256(b), native(b), `length ${n}`);
  }
  assert.equal(sha256("héllo ✓ 𝄞"), native("héllo ✓ 𝄞"));
});

Deno.test("Sha256 fed in pieces equals the digest of the whole", () => {
  const data = bytes(100_003, 7);
  for (const step of [1, 3, 63, 64, 65, 1000, 65_536]) {
    const h = new Sha256();
    for (let i = 0; i < data.length; i += step) h.update(data.subarray(i, i + step));
    assert.equal(h.digest("hex"), native(data), `step ${step}`);
  }
});

Deno.test("fileHasher() gives the same digest below and above the native threshold", async () => {
  for (const n of [0, 10, NATIVE_HASH_BYTES - 1, NATIVE_HASH_BYTES, NATIVE_HASH_BYTES + 77]) {
    const data = bytes(n, 11);
    const h = await fileHasher(n);
    for (let i = 0; i < n; i += 256 * 1024) h.update(data.subarray(i, i + 256 * 1024));
    assert.equal(h.digest("hex"), native(data), `size ${n}`);
  }
});

Deno.test("hashFile() equals sha256 of the whole content across chunk boundaries", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const content = new Uint8Array(600_000).map((_, i) => (i * 7) % 251);
    Deno.writeFileSync(`${dir}/f`, content);
    assert.deepEqual(await hashFile(`${dir}/f`), { hash: sha256(content), size: content.length });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
