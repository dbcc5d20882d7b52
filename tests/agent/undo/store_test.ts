/**
 * Undo's store keeps what a Read deny hides, and gives it to nobody but
 * `crab undo`: print runs against the fake model, with crab's data dir outside
 * /tmp (the sandbox's private /tmp would hide it anyway), try every way the
 * model has to read it back.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { printAgainst, type Sandbox, sandbox } from "../../support/cli.ts";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { LOOSE_BYTES, undoDir, UndoStore } from "../../../agent/undo/store.ts";

/** A sandbox whose root (HOME, CRAB_HOME and the workspace) lies under /var/tmp. */
function outsideTmp(prefix: string): Sandbox {
  return sandbox(prefix, { root: `/var/tmp/${prefix}${crypto.randomUUID().slice(0, 8)}` });
}

/** The secret: CRLF, no final newline, a byte that is not UTF-8. */
const SECRET = new Uint8Array([
  ...new TextEncoder().encode("API_KEY=s4-03-hunter2\r\nTOKEN=s4-03-hunter3"),
  0xff,
]);

const WALK = "import os, sys\n" +
  "for d, _, fs in os.walk(sys.argv[1]):\n" +
  "    for f in fs:\n" +
  "        p = os.path.join(d, f)\n" +
  "        try:\n" +
  "            print(p, open(p, 'rb').read())\n" +
  "        except Exception as e:\n" +
  "            print(p, 'refused', type(e).__name__)\n";

Deno.test("S4-03: with Read(./.env) denied, undo keeps .env and no tool or command reads it back, even under --yolo", async () => {
  using s = outsideTmp("crab-s403-");
  Deno.writeFileSync(join(s.ws, ".env"), SECRET);
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }));
  const hash = createHash("sha256").update(SECRET).digest("hex");
  // Small contents are packed: the pack holds the secret's bytes.
  const object = join(undoDir(s.ws, s.home), "packs", "0.pack");
  await using fake = await startFakeModel([
    // A mutating call: undo's snapshot before it keeps every file, .env too.
    { calls: [{ name: "bash", args: { command: "echo hi > notes.txt" } }] },
    {
      calls: [
        { name: "bash", args: { command: `cat ${object}; grep -ra hunter ${s.home}; echo done` } },
        { name: "bash", args: { command: `python3 -c "${WALK}" ${s.home}; echo walked` } },
        { name: "read", args: { path: object } },
        { name: "grep", args: { pattern: "hunter", path: s.home } },
        { name: "grep", args: { pattern: "hunter", path: join(s.home, "undo") } },
        { name: "glob", args: { pattern: "**/*", path: s.home } },
        { name: "glob", args: { pattern: `${s.home}/undo/**` } },
      ],
    },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(
    new UndoStore(undoDir(s.ws, s.home)).readObject(hash),
    SECRET,
    "undo kept the Read-denied file",
  );
  assert.ok(new TextDecoder().decode(Deno.readFileSync(object)).includes("hunter"), "in the pack");

  const results = toolResults(fake.modelRequests()[2]);
  assert.equal(results.length, 7);
  for (const result of results) assert.doesNotMatch(result.text, /hunter|s4-03/);
  const [cat, walked, read, grep, grepUndo, glob, globUndo] = results;
  assert.match(cat.text, /Permission denied[^]*done/);
  assert.match(walked.text, /walked/);
  for (const refused of [read, grep, grepUndo, glob, globUndo]) {
    assert.match(refused.text, /^Error \[policy_denied\][^]*crab's data directory/, refused.text);
  }
});

Deno.test("S4-03: with only Read(./.env) denied, a write that overwrites .env is undone byte for byte", async () => {
  using s = outsideTmp("crab-s403-");
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }));
  const first = "API_KEY=s4-03-hunter2\r\nTOKEN=\u00ffé\u2028 no final newline";
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: ".env", content: first } }] },
    { calls: [{ name: "write", args: { path: ".env", content: "second\n" } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, ".env")), "second\n");
  const last = await s.crab(["undo", "--yes"]);
  assert.equal(last.code, 0, last.stdout + last.stderr);
  assert.deepEqual(Deno.readFileSync(join(s.ws, ".env")), new TextEncoder().encode(first));
});

Deno.test("S4-03: crab undo after rm .env (no sandbox) brings the Read-denied .env back byte for byte", async () => {
  using s = outsideTmp("crab-s403-");
  Deno.writeFileSync(join(s.ws, ".env"), SECRET);
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "rm .env" } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo", "--sandbox", "danger-full-access"]);
  assert.equal(r.code, 0, r.stderr);
  assert.throws(() => Deno.lstatSync(join(s.ws, ".env")), Deno.errors.NotFound);
  const undo = await s.crab(["undo", "--yes"]);
  assert.equal(undo.code, 0, undo.stdout + undo.stderr);
  assert.deepEqual(Deno.readFileSync(join(s.ws, ".env")), SECRET);
});

Deno.test("UndoStore packs small contents into one file, keeps large ones apart, and reads both back", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  try {
    const store = new UndoStore(dir);
    const small = Array.from({ length: 500 }, (_, i) => new TextEncoder().encode(`file ${i}\n`));
    const big = new Uint8Array(LOOSE_BYTES).fill(7);
    for (const b of [...small, big]) {
      store.putObject(createHash("sha256").update(b).digest("hex"), b);
    }
    store.flush();
    // 500 small objects in one pack: not one file (and one disk block) each.
    assert.deepEqual([...Deno.readDirSync(join(dir, "packs"))].map((e) => e.name), ["0.pack"]);
    const content = small.reduce((n, b) => n + b.byteLength, 0);
    assert.equal(Deno.statSync(join(dir, "packs", "0.pack")).size, content);
    const bigHash = createHash("sha256").update(big).digest("hex");
    assert.ok(Deno.statSync(store.objectPath(bigHash)).isFile);
    store.close();
    // Another process's store finds them all.
    const again = new UndoStore(dir);
    for (const b of small) {
      assert.deepEqual(again.readObject(createHash("sha256").update(b).digest("hex")), b);
    }
    assert.deepEqual(again.readObject(bigHash), big);
    // Listed with their sizes and when they were stored, packed or not.
    const listed = again.objects();
    const hashOf = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
    assert.deepEqual(new Set(listed.map((o) => o.hash)), new Set([...small.map(hashOf), bigHash]));
    assert.equal(listed.reduce((n, o) => n + o.size, 0), content + big.byteLength);
    assert.ok(listed.every((o) => Math.abs(Date.now() - o.at) < 60_000), "stored just now");
    again.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("UndoStore names no object before its bytes are written, and a removed half of a pack is given back", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  try {
    const store = new UndoStore(dir);
    const bytes = (i: number) => new TextEncoder().encode(`object ${i} `.repeat(100));
    const hash = (i: number) => createHash("sha256").update(bytes(i)).digest("hex");
    for (let i = 0; i < 10; i++) store.putObject(hash(i), bytes(i));
    // Gathered, not written: another store does not see them yet.
    const other = new UndoStore(dir);
    assert.equal(other.hasObject(hash(0)), false);
    store.flush();
    assert.equal(other.hasObject(hash(0)), true);
    other.close();
    const pack = join(dir, "packs", "0.pack");
    const before = Deno.statSync(pack).size;
    // Removing six of ten leaves less than half: the pack is rewritten with the four left.
    store.removeObjects([0, 1, 2, 3, 4, 5].map(hash));
    const packs = [...Deno.readDirSync(join(dir, "packs"))].map((e) => e.name);
    const after = packs.reduce((n, p) => n + Deno.statSync(join(dir, "packs", p)).size, 0);
    assert.ok(after < before * 0.5, `${after} of ${before} bytes left`);
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(store.readObject(hash(i)), i < 6 ? undefined : bytes(i), `object ${i}`);
    }
    store.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("UndoStore.storedAtMost() bounds the stored bytes from the files alone, removed objects' bytes included", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-bound-" });
  try {
    const store = new UndoStore(dir);
    const bytes = (i: number) => new TextEncoder().encode(`object ${i} `.repeat(50 + i));
    const hash = (i: number) => createHash("sha256").update(bytes(i)).digest("hex");
    const big = new Uint8Array(LOOSE_BYTES + 1).fill(3);
    for (let i = 0; i < 10; i++) store.putObject(hash(i), bytes(i));
    store.putObject(createHash("sha256").update(big).digest("hex"), big);
    // Gathered, written, then some removed (a pack keeps their bytes until rewritten).
    const exact = () => store.storedBytes();
    assert.equal(store.storedAtMost(), exact());
    store.flush();
    assert.equal(store.storedAtMost(), exact());
    store.removeObjects([hash(0), hash(1)]);
    assert.ok(store.storedAtMost() > exact(), `${store.storedAtMost()} > ${exact()}`);
    store.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("UndoStore writes a first snapshot's bytes in batches and names them in the index at the flush", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  try {
    const store = new UndoStore(dir);
    // Past the bytes one batch gathers (512 KB): the first batches are written before the flush.
    const bytes = (i: number) =>
      new Uint8Array(512 * 1024).fill(i % 251).map((b, k) => k < 8 ? i >> k : b);
    const digest = (b: Uint8Array) => new Uint8Array(createHash("sha256").update(b).digest());
    const hashes: string[] = [];
    for (let i = 0; i < 40; i++) {
      const file = join(dir, `f${i}`);
      Deno.writeFileSync(file, bytes(i));
      const kept = store.putFile(file, bytes(i).byteLength, digest)!;
      assert.equal(kept.size, bytes(i).byteLength);
      hashes.push(createHash("sha256").update(bytes(i)).digest("hex"));
      assert.deepEqual(kept.hash, digest(bytes(i)));
    }
    // The same content again is kept once.
    Deno.writeFileSync(join(dir, "again"), bytes(3));
    store.putFile(join(dir, "again"), bytes(3).byteLength, digest);
    assert.ok(Deno.statSync(join(dir, "packs", "0.pack")).size > 0, "written before the flush");
    // Written, not yet named: another process does not see them; this one does.
    const other = new UndoStore(dir);
    assert.equal(other.hasObject(hashes[0]), false);
    for (let i = 0; i < 40; i++) assert.deepEqual(store.readObject(hashes[i]), bytes(i));
    store.flush();
    for (let i = 0; i < 40; i++) assert.deepEqual(other.readObject(hashes[i]), bytes(i));
    assert.equal(Deno.statSync(join(dir, "packs", "0.pack")).size, 40 * 512 * 1024);
    other.close();
    store.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("UndoStore names a big first snapshot's objects in the index as it goes, each once", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  try {
    const store = new UndoStore(dir);
    const bytes = (i: number) => new TextEncoder().encode(`object ${i}\n`.repeat(40));
    const raw = (i: number) => new Uint8Array(createHash("sha256").update(bytes(i)).digest());
    const hex = (i: number) => createHash("sha256").update(bytes(i)).digest("hex");
    // 70,000 objects of 440-480 bytes: about 60 batches of 512 KB.
    let most = 0;
    for (let i = 0; i < 70_000; i++) {
      store.putRead(raw(i), bytes(i));
      most = Math.max(most, store.pendingObjects);
    }
    // What waits for the index (a hash and a place each, in memory) stays bounded.
    assert.ok(most <= 40_000, `${most} objects waited for the index at once`);
    // The first ones are named already: another process finds them before the flush.
    const other = new UndoStore(dir);
    assert.deepEqual(other.readObject(hex(0)), bytes(0));
    const packed = () =>
      [...Deno.readDirSync(join(dir, "packs"))]
        .reduce((n, e) => n + Deno.statSync(join(dir, "packs", e.name)).size, 0);
    store.flush();
    const size = packed();
    // An object named in an earlier transaction is not kept again.
    for (const i of [0, 1, 29_999, 69_999]) store.putRead(raw(i), bytes(i));
    store.flush();
    assert.equal(packed(), size);
    for (const i of [0, 12_345, 29_999, 30_000, 69_999]) {
      assert.deepEqual(other.readObject(hex(i)), bytes(i), `object ${i}`);
    }
    assert.equal(other.objects().length, 70_000);
    other.close();
    store.close();
    // A later process asks for many: it reads every packed hash's prefix at once, and keeps the
    // new ones only.
    const later = new UndoStore(dir);
    for (let i = 69_000; i < 71_000; i++) later.putRead(raw(i), bytes(i));
    later.flush();
    const added = Array.from({ length: 1000 }, (_, k) => bytes(70_000 + k).byteLength)
      .reduce((a, b) => a + b, 0);
    assert.equal(packed(), size + added);
    assert.equal(later.objects().length, 71_000);
    later.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("UndoStore never hands out packed bytes that are not the content their hash names", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-pack-" });
  try {
    const store = new UndoStore(dir);
    const bytes = new TextEncoder().encode("the content before the call\n");
    const hash = createHash("sha256").update(bytes).digest("hex");
    store.putObject(hash, bytes);
    store.flush();
    assert.deepEqual(store.readObject(hash), bytes);
    // What a crash could leave: the index names bytes the disk never got.
    Deno.writeFileSync(join(dir, "packs", "0.pack"), new Uint8Array(bytes.byteLength));
    assert.equal(store.readObject(hash), undefined);
    store.close();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
