/**
 * `--add-dir` and `--setting-sources`, as `claude -p` takes them: a directory
 * outside the workspace opened for reads and writes (print mode keeping its
 * default), and the settings files chosen by scope.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addDirRules } from "../../../agent/settings/permissions.ts";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

Deno.test("addDirRules() gives a read and an edit rule on the absolute path", () => {
  assert.deepEqual(addDirRules(["/srv/lib", "/data/"]), [
    "Read(//srv/lib/**)",
    "Edit(//srv/lib/**)",
    "Read(//data/**)",
    "Edit(//data/**)",
  ]);
});

Deno.test("crab -p --add-dir approves reads, writes and commands under DIR, print mode's default kept", async () => {
  using s = sandbox();
  const extra = join(s.root, "extra");
  Deno.mkdirSync(extra);
  Deno.writeTextFileSync(join(extra, "in.txt"), "outside\n");
  const script = () => [
    {
      calls: [
        { name: "read", args: { path: join(extra, "in.txt") } },
        { name: "write", args: { path: join(extra, "new.txt"), content: "made\n" } },
        { name: "bash", args: { command: `echo ran > ${extra}/cmd.txt` } },
        { name: "read", args: { path: join(s.root, "config", "x") } },
      ],
    },
    { text: "done" },
  ];
  await using fake = await startFakeModel(script());
  const without = await printRun(s, fake, ["-p", "go"]);
  assert.equal(without.code, 0, without.stderr);
  const refused = toolResults(fake.modelRequests()[1]);
  assert.deepEqual([0, 1, 3].map((i) => refused[i].isError), [true, true, true]);
  // The command runs, and the sandbox keeps it from writing there (its /tmp is private).
  assert.match(refused[2].text, /No such file or directory|Read-only file system/);
  assert.equal(Deno.readDirSync(extra).toArray().length, 1);

  fake.push(...script());
  const r = await printRun(s, fake, [
    "-p",
    "go",
    "--add-dir",
    extra,
    "--output-format",
    "stream-json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(events[0].permissionMode, "acceptOffered");
  const results = toolResults(fake.modelRequests()[3]);
  assert.deepEqual(results.map((x) => x.isError), [false, false, false, true]);
  assert.match(results[0].text, /outside/);
  assert.equal(Deno.readTextFileSync(join(extra, "new.txt")), "made\n");
  assert.equal(Deno.readTextFileSync(join(extra, "cmd.txt")), "ran\n");

  const missing = await printRun(s, fake, ["-p", "go", "--add-dir", join(s.root, "nope")]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /Cannot use --add-dir ".*nope": no such directory/);
});

Deno.test("crab -p --setting-sources reads only the named scopes' settings files", async () => {
  using s = sandbox();
  s.put("secret.txt", "s3cret\n");
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(./secret.txt)"] } }));
  const call = { calls: [{ name: "read", args: { path: "secret.txt" } }] };
  await using fake = await startFakeModel([
    call,
    { text: "a" },
    call,
    { text: "b" },
    call,
    { text: "c" },
  ]);
  const all = await printRun(s, fake, ["-p", "go"]);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(toolResults(fake.modelRequests()[1])[0].isError, true);
  const user = await printRun(s, fake, ["-p", "go", "--setting-sources", "user,local"]);
  assert.equal(user.code, 0, user.stderr);
  const result = toolResults(fake.modelRequests()[3])[0];
  assert.equal(result.isError, false);
  assert.match(result.text, /s3cret/);
  // Empty, as the Agent SDK's `settingSources: []` sends it: no settings file at all.
  const none = await printRun(s, fake, ["-p", "go", "--setting-sources="]);
  assert.equal(none.code, 0, none.stderr);
  assert.equal(toolResults(fake.modelRequests()[5])[0].isError, false);
  const bad = await printRun(s, fake, ["-p", "go", "--setting-sources", "user,policy"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /expected user, project or local, comma-separated \(not "policy"\)/);
});
