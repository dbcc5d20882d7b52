import assert from "node:assert/strict";
import { join } from "node:path";
import { gitAlone } from "../../../support/undo.ts";
import { applyDelta, blobId, GitPacks, loadGitReader } from "../../../../agent/undo/git/pack.ts";
import { decodeHex, encodeHex } from "../../../../tools/fs/hex.ts";

await loadGitReader();

const git = gitAlone;

/** A repository of files alike (so that packing makes chains of deltas), committed in rounds. */
function repo(): { root: string; ws: string; [Symbol.dispose](): void } {
  const root = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  git(ws, "init", "-q");
  const line = (i: number) => `line ${i}: ${"lorem ipsum dolor ".repeat(i % 7)}\n`;
  for (let round = 0; round < 4; round++) {
    for (let f = 0; f < 30; f++) {
      const lines = Array.from({ length: 200 + f * 10 }, (_, i) => line(i * (round + 1) + f));
      Deno.writeTextFileSync(join(ws, `f${f}.txt`), lines.join(""));
    }
    // One binary file, and an empty one.
    Deno.writeFileSync(join(ws, "bin"), new Uint8Array(70_000).map((_, i) => (i * round) & 255));
    Deno.writeTextFileSync(join(ws, "empty"), "");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", `round ${round}`);
  }
  return { root, ws, [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }) };
}

/** Every blob of the repository's history: id → bytes, as git gives them. */
function blobs(ws: string): Map<string, Uint8Array> {
  const ids = git(ws, "rev-list", "--objects", "--all").split("\n").map((l) => l.split(" ")[0])
    .filter((id) => id && git(ws, "cat-file", "-t", id).trim() === "blob");
  const out = new Map<string, Uint8Array>();
  for (const id of ids) {
    const got = new Deno.Command("git", {
      args: ["cat-file", "blob", id],
      cwd: ws,
      stdout: "piped",
    })
      .outputSync();
    out.set(id, got.stdout);
  }
  return out;
}

for (const offsets of [true, false]) {
  Deno.test(`GitPacks gives every blob of a packed history as git does (${offsets ? "OFS" : "REF"}_DELTA)`, () => {
    using r = repo();
    git(
      r.ws,
      "-c",
      `repack.useDeltaBaseOffset=${offsets}`,
      "repack",
      "-a",
      "-d",
      "-q",
      "-f",
      "--depth=20",
    );
    const packs = GitPacks.open(join(r.ws, ".git", "objects", "pack"));
    assert.equal(packs.names.length, 1);
    const all = blobs(r.ws);
    assert.ok(all.size >= 120, `${all.size} blobs`);
    for (const [id, bytes] of all) {
      assert.ok(packs.has(decodeHex(id)), id);
      assert.deepEqual(packs.blob(decodeHex(id)), bytes, id);
    }
    // Deltas were there to apply: the pack is much smaller than its blobs.
    const packBytes = [...Deno.readDirSync(join(r.ws, ".git", "objects", "pack"))]
      .filter((e) => e.name.endsWith(".pack"))
      .reduce((n, e) => n + Deno.statSync(join(r.ws, ".git/objects/pack", e.name)).size, 0);
    const blobBytes = [...all.values()].reduce((n, b) => n + b.byteLength, 0);
    assert.ok(packBytes * 5 < blobBytes, `${packBytes} vs ${blobBytes}`);
    // A commit is not a blob; an id of no object is absent.
    const head = git(r.ws, "rev-parse", "HEAD").trim();
    assert.ok(packs.has(decodeHex(head)));
    assert.equal(packs.blob(decodeHex(head)), undefined);
    assert.equal(packs.blob(new Uint8Array(20).fill(7)), undefined);
    packs.close();
  });
}

Deno.test("GitPacks never gives bytes a command changed in a pack", () => {
  using r = repo();
  git(r.ws, "repack", "-a", "-d", "-q");
  const dir = join(r.ws, ".git", "objects", "pack");
  const pack = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".pack"))!.name;
  const all = blobs(r.ws);
  // Every byte past the header flipped in turn would take long: 40 spread over the pack.
  const original = Deno.readFileSync(join(dir, pack));
  Deno.chmodSync(join(dir, pack), 0o644);
  let changed = 0;
  const step = Math.floor((original.byteLength - 32) / 40);
  for (let at = 12; at < original.byteLength - 20; at += step) {
    const bytes = original.slice();
    bytes[at] ^= 0x40;
    Deno.writeFileSync(join(dir, pack), bytes);
    const packs = GitPacks.open(dir);
    for (const [id, want] of all) {
      const got = packs.blob(decodeHex(id));
      if (got) assert.deepEqual(got, want, `byte ${at} changed: ${id} must be whole or absent`);
      else changed++;
    }
    packs.close();
  }
  assert.ok(changed > 0, "some blob was damaged by some change");
});

Deno.test("blobId is git's id of a blob; applyDelta refuses a delta of another base", () => {
  const id = encodeHex(blobId(new TextEncoder().encode("hello\n")));
  assert.equal(id, "ce013625030ba8dba906f756967f9e9ca394464a");
  // A delta of base size 3 that copies it whole, applied to 3 bytes, then to 4.
  const delta = new Uint8Array([3, 3, 0x90, 3]);
  assert.deepEqual(applyDelta(new Uint8Array([1, 2, 3]), delta), new Uint8Array([1, 2, 3]));
  assert.equal(applyDelta(new Uint8Array([1, 2, 3, 4]), delta), undefined);
  // A copy past the base's end.
  assert.equal(applyDelta(new Uint8Array([1, 2, 3]), new Uint8Array([3, 4, 0x90, 4])), undefined);
});
