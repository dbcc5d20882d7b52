/**
 * What a sandboxed command sees of crab's own files and the user's credential
 * stores, in print runs against the fake model with real bubblewrap. Roots lie
 * under /var/tmp: /tmp is the sandbox's private directory, which hides
 * whatever lies under it anyway.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { printAgainst, type Sandbox, sandbox } from "../../support/cli.ts";
import { type RecordedRequest, startFakeModel, toolResults } from "../../support/fake_model.ts";

/** A sandbox whose root (HOME, CRAB_HOME and the workspace) lies under /var/tmp. */
function outsideTmp(prefix: string): Sandbox {
  return sandbox(prefix, { root: `/var/tmp/${prefix}${crypto.randomUUID().slice(0, 8)}` });
}

/** Writes `text` at `path`, making its folders. */
function put(path: string, text: string): void {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, text);
}

/** The texts of the tool results each model request after the first carried. */
function resultTexts(requests: RecordedRequest[]): string[][] {
  return requests.slice(1).map((r) => toolResults(r).map((t) => t.text));
}

/** crab's files, each holding a secret word, as another run would have left them. */
function crabFiles(home: string): void {
  put(join(home, "crab.db.key"), "KEY-SECRET\n");
  put(join(home, "transcripts", "t.jsonl"), "TRANSCRIPT-SECRET\n");
  put(join(home, "quarantine", "1-abc", "evil"), "QUARANTINE-SECRET\n");
  put(join(home, "undo", "0123", "objects", "ab", "cdef"), "UNDO-SECRET\n");
  put(join(home, "spill", "run-1-other", "bash-x.txt"), "OTHER-SPILL-SECRET\n");
  put(join(home, "spill", "bash-old.txt"), "OLD-SPILL-SECRET\n");
  put(join(home, "sandbox", "net", "0123abcdh"), "SOCKET-SECRET\n");
}

const SECRETS =
  /KEY-SECRET|TRANSCRIPT-SECRET|QUARANTINE-SECRET|UNDO-SECRET|SPILL-SECRET|SOCKET-SECRET/;

Deno.test("sandboxLayout() hides crab's data dir from commands but this run's spill files, which bash and read open", async () => {
  using s = outsideTmp("crab-layout-");
  crabFiles(s.home);
  const look = [
    `cat ${s.home}/crab.db.key`,
    `ls ${s.home}`,
    `grep -ra SECRET ${s.home}`,
    `find ${s.home} -type f`,
    `python3 -c "import os; print([os.path.join(d, f) for d, _, fs in os.walk('${s.home}') for f in fs])"`,
    `cat ${s.home}/spill/run-1-other/bash-x.txt`,
    `echo > ${s.home}/planted; echo planted=$?`,
  ].join("; ");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "seq 1 100000" } }] },
    (req) => {
      const spill = /saved to (\S+\.txt)/.exec(toolResults(req)[0].text)![1];
      return {
        calls: [
          { name: "bash", args: { command: `tail -n 1 ${spill}; echo > ${spill}; echo w=$?` } },
          { name: "bash", args: { command: look } },
          { name: "read", args: { path: spill, offset: 100000 } },
          { name: "read", args: { path: join(s.home, "spill", "run-1-other", "bash-x.txt") } },
        ],
      };
    },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"]);
  assert.equal(r.code, 0, r.stderr);
  const [[first], [ownSpill, looked, readOwn, readOther]] = resultTexts(fake.modelRequests());
  assert.match(first, /saved to .*\/spill\/run-/);
  // The run's own spill file: readable, and read-only.
  assert.match(ownSpill, /^100000\n[^]*Read-only file system[^]*w=1/);
  assert.match(readOwn, /100000/);
  // Everything else of crab's is out of sight.
  assert.doesNotMatch(looked, SECRETS);
  assert.match(looked, /crab\.db\.key: No such file or directory/);
  assert.match(looked, /planted=1/);
  assert.throws(() => Deno.lstatSync(join(s.home, "planted")), Deno.errors.NotFound);
  assert.match(readOther, /^Error \[policy_denied\][^]*crab's data directory/);
});

Deno.test("sandboxLayout() hides a data dir inside the workspace, and it cannot be moved away", async () => {
  // Under /tmp too: the private /tmp does not hide what the workspace's bind shows again.
  for (const under of ["/var/tmp", "/tmp"]) {
    using s = under === "/tmp" ? sandbox("crab-layout-") : outsideTmp("crab-layout-");
    await dataDirInWorkspace(s);
  }
});

async function dataDirInWorkspace(s: Sandbox): Promise<void> {
  const data = join(s.ws, "state", "crab");
  crabFiles(data);
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "bash",
        args: {
          command: "cat state/crab/crab.db.key; ls state/crab; mv state/crab gone; echo mv=$?; " +
            "mv state moved; echo mvparent=$?; echo hi > notes.txt",
        },
      }],
    },
    { calls: [{ name: "grep", args: { pattern: "SECRET" } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"], { CRAB_HOME: data });
  assert.equal(r.code, 0, r.stderr);
  const [[bash], [grep]] = resultTexts(fake.modelRequests());
  assert.doesNotMatch(bash + grep, SECRETS);
  assert.match(bash, /mv=1[^]*mvparent=1/);
  assert.equal(Deno.readTextFileSync(join(data, "crab.db.key")), "KEY-SECRET\n");
  assert.match(grep, /No matches/);
}

Deno.test("sandboxLayout() hides the entries of a data dir that holds the workspace, not the workspace", async () => {
  using s = outsideTmp("crab-layout-");
  crabFiles(s.root);
  s.put("a.txt", "workspace file\n");
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "bash",
        args: { command: `cat a.txt ${s.root}/crab.db.key ${s.root}/undo/0123/objects/ab/cdef` },
      }],
    },
    { calls: [{ name: "read", args: { path: join(s.root, "crab.db.key") } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"], { CRAB_HOME: s.root });
  assert.equal(r.code, 0, r.stderr);
  const [[bash], [read]] = resultTexts(fake.modelRequests());
  assert.match(bash, /^workspace file\n/);
  assert.doesNotMatch(bash + read, SECRETS);
  assert.match(read, /crab's data directory/);
});

/** The user's credential stores under HOME (the sandbox's root), each with a secret word. */
function credentialStores(home: string): void {
  put(join(home, ".ssh", "id_ed25519"), "SSH-PRIVATE\n");
  put(join(home, ".ssh", "deploy_rsa"), "SSH-DEPLOY\n");
  put(join(home, ".ssh", "id_ed25519.pub"), "ssh-ed25519 PUBLIC-KEY\n");
  put(join(home, ".ssh", "known_hosts"), "example.test KNOWN-HOST\n");
  put(join(home, ".aws", "credentials"), "AWS-SECRET\n");
  put(join(home, ".netrc"), "NETRC-SECRET\n");
  put(join(home, ".config", "gh", "hosts.yml"), "GH-SECRET\n");
  put(join(home, ".claude", ".credentials.json"), "CLAUDE-SECRET\n");
  put(join(home, ".kube", "config"), "KUBE-SECRET\n");
}

const CREDENTIALS =
  /SSH-PRIVATE|SSH-DEPLOY|AWS-SECRET|NETRC-SECRET|GH-SECRET|CLAUDE-SECRET|KUBE-SECRET/;

const CAT_STORES = "cd ~; cat .ssh/id_ed25519 .ssh/deploy_rsa .aws/credentials .netrc " +
  ".config/gh/hosts.yml .claude/.credentials.json .kube/config; " +
  "cat .ssh/id_ed25519.pub .ssh/known_hosts; ls .ssh";

Deno.test("sandboxLayout() hides credential stores; the first result that names one says which setting opens it", async () => {
  using s = outsideTmp("crab-cred-");
  credentialStores(s.root);
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: CAT_STORES } }] },
    { calls: [{ name: "bash", args: { command: "cat ~/.aws/credentials" } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"]);
  assert.equal(r.code, 0, r.stderr);
  const [[first], [second]] = resultTexts(fake.modelRequests());
  assert.doesNotMatch(first + second, CREDENTIALS);
  assert.match(first, /PUBLIC-KEY[^]*KNOWN-HOST/);
  assert.match(first, /Permission denied/);
  const note = first.split("\n").filter((l) => l.includes("sandbox"));
  assert.equal(note.length, 1, first);
  assert.match(
    note[0],
    /^Note: ~\/\.ssh\/id_ed25519 is hidden from commands \(a credential store\)\. Only the user can open it, in .*\/config\/crab\/config\.json: "sandbox": \{"credentials": \{"allow": \["\.ssh\/id_\*"\]\}\}\.$/,
  );
  assert.match(second, /Permission denied/);
  assert.doesNotMatch(second, /^Note:/m, "the note comes once a session");
  // The read the sandbox refused is named at every call, the store's setting with it.
  assert.match(
    second,
    /^Refused by the sandbox's filesystem: an access to \/.*\/\.aws\/credentials — a credential store, hidden from commands; only the user can open it, in .*"sandbox": \{"credentials": \{"allow": \["\.aws"\]\}\}\. This is the user's policy/m,
  );
});

Deno.test("sandbox.credentials.allow in the user's config opens a store, and only that one", async () => {
  using s = outsideTmp("crab-cred-");
  credentialStores(s.root);
  put(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ sandbox: { credentials: { allow: [".aws", ".ssh"] } } }),
  );
  // A project's config never opens one.
  s.put(".crab/config.json", JSON.stringify({ sandbox: { credentials: { allow: [".netrc"] } } }));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: CAT_STORES } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo", "--trust-project"]);
  assert.equal(r.code, 0, r.stderr);
  const [[out]] = resultTexts(fake.modelRequests());
  assert.match(out, /SSH-PRIVATE\nSSH-DEPLOY\nAWS-SECRET\n/);
  assert.doesNotMatch(out, /NETRC-SECRET|GH-SECRET|CLAUDE-SECRET|KUBE-SECRET/);

  put(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ sandbox: { credentials: { allow: [".awz"] } } }),
  );
  const bad = await printAgainst(s, fake, []);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /sandbox\.credentials\.allow[^]*"\.awz" is not a credential store/);
});

Deno.test("sandboxLayout() hides crab's data dir where XDG_DATA_HOME puts it", async () => {
  using s = outsideTmp("crab-layout-");
  const xdg = join(s.root, "xdg");
  crabFiles(join(xdg, "crab"));
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "bash",
        args: { command: `cat ${xdg}/crab/crab.db.key; grep -ra SECRET ${xdg}; echo done` },
      }],
    },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"], { CRAB_HOME: "", XDG_DATA_HOME: xdg });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(Deno.statSync(join(xdg, "crab", "crab.db")).isFile, "the store is there");
  const [[bash]] = resultTexts(fake.modelRequests());
  assert.doesNotMatch(bash, SECRETS);
  assert.match(bash, /Permission denied[^]*done/);
});
