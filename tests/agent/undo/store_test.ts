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
import { undoDir } from "../../../agent/undo/store.ts";

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
  const object = join(undoDir(s.ws, s.home), "objects", hash.slice(0, 2), hash.slice(2));
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
  assert.deepEqual(Deno.readFileSync(object), SECRET, "undo kept the Read-denied file");

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
