/**
 * Deny rules below the shell, with real bubblewrap: what `Read(…)` denies is
 * unreadable to every program a command runs, what `Edit(…)` denies is
 * read-only, and the rest of the workspace is as it was.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Dispatcher, type DispatchResult } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { bashTool } from "../../../tools/bash.ts";
import { parseRule } from "../../../tools/policy/rules.ts";
import { deniedPaths } from "../../../tools/sandbox/denials.ts";

function place(rules: [string, "deny" | "allow"][]) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-deny-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const base = { project: ws, home: root };
  const parsed = rules.map(([text, effect]) =>
    parseRule(text, effect, { scope: "project", file: join(ws, ".claude/settings.json") }, base)
  );
  const session = new Session(ws);
  session.sandbox = { mode: "workspace-write", net: false, writable: [], rules: parsed };
  const d = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "denials-test",
  });
  const put = (rel: string, text: string) => {
    Deno.mkdirSync(join(ws, rel, ".."), { recursive: true });
    Deno.writeTextFileSync(join(ws, rel), text);
  };
  return {
    root,
    ws,
    rules: parsed,
    put,
    bash: (command: string) => d.dispatch("bash", { command }),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

Deno.test("bash() in the sandbox: a Read deny rule hides the file from every program, a link to it too", async () => {
  using p = place([["Read(./.env)", "deny"], ["Edit(./src/**)", "deny"]]);
  p.put(".env", "API_KEY=secret\n");
  p.put("app/.env", "NESTED=secret\n");
  p.put("src/a.ts", "export {};\n");
  p.put("README.md", "hello\n");
  Deno.symlinkSync(".env", join(p.ws, "innocent"));
  const r = out(
    await p.bash([
      "cat .env; echo cat=$?",
      "cat app/.env; echo nested=$?",
      "cat innocent; echo link=$?",
      "cp .env copy; echo cp=$?",
      "perl -e 'open(F, \"<.env\") or exit 3; print <F>'; echo perl=$?",
      "echo x >> src/a.ts; echo edit=$?",
      "cat src/a.ts README.md",
    ].join("; ")),
  );
  assert.doesNotMatch(r, /secret/);
  assert.match(r, /cat=1/);
  assert.match(r, /nested=1/);
  assert.match(r, /link=1/);
  assert.match(r, /cp=1/);
  assert.match(r, /perl=3/);
  assert.match(r, /Permission denied/);
  assert.match(r, /edit=1/);
  assert.match(r, /export \{\};\nhello\n/);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".env")), "API_KEY=secret\n");
  assert.equal(Deno.readTextFileSync(join(p.ws, "src/a.ts")), "export {};\n");
});

Deno.test("deniedPaths() expands globs under the rule's base and skips allow rules", () => {
  using p = place([["Read(./secrets/**)", "deny"], ["Read(*.pem)", "deny"], [
    "Read(./ok)",
    "allow",
  ]]);
  p.put("secrets/a.txt", "a");
  p.put("deep/x/key.pem", "k");
  p.put("ok", "fine");
  p.put("node_modules/pkg/cert.pem", "skipped: a dependency folder is not walked");
  const d = deniedPaths(p.rules, p.ws);
  assert.deepEqual(d.hidden, [join(p.ws, "deep/x/key.pem"), join(p.ws, "secrets/a.txt")]);
  assert.deepEqual(d.readOnly, []);
});

Deno.test("crab tool bash: a project's Read(./.env) deny hides .env from cat, as read is refused", async () => {
  const { sandbox } = await import("../../support/cli.ts");
  using s = sandbox("crab-deny-cli-");
  s.put(".env", "API_KEY=secret\n");
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }));
  // The rules refuse `cat .env` before it runs; a name the parser cannot see meets the sandbox.
  const cat = await s.crab(["tool", "bash", JSON.stringify({ command: "cat .env" })]);
  assert.match(cat.stderr, /denied by Read\(\.\/\.env\)/);
  const hidden = `perl -e 'open(F, "<", ".e" . "nv") or die "no: $!"; print <F>'; echo rc=$?`;
  const bash = await s.crab(["tool", "bash", JSON.stringify({ command: hidden })]);
  assert.doesNotMatch(bash.stdout, /secret/);
  assert.match(bash.stdout, /no: Permission denied[\s\S]*rc=13/);
  const read = await s.crab(["tool", "read", JSON.stringify({ path: ".env" })]);
  assert.notEqual(read.code, 0);
  assert.doesNotMatch(read.stdout + read.stderr, /secret/);
});

Deno.test("Edit(.github/**) denied: a program the parser cannot see into creates nothing below .github, missing or not", async () => {
  const { printAgainst, sandbox } = await import("../../support/cli.ts");
  const { startFakeModel, toolResults } = await import("../../support/fake_model.ts");
  const attack = `python3 -c "import os; os.makedirs('.github/workflows'); ` +
    `open('.github/workflows/evil.yml','w').write('x')"; echo rc=$?`;
  for (const before of ["missing", "empty", "with a file"]) {
    using s = sandbox("crab-deny-new-");
    s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Edit(.github/**)"] } }));
    if (before === "empty") Deno.mkdirSync(join(s.ws, ".github"));
    if (before === "with a file") s.put(".github/CODEOWNERS", "* @owner\n");
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: attack } }] },
      { text: "done" },
    ]);
    const r = await printAgainst(s, fake, ["--yolo"]);
    assert.equal(r.code, 0, r.stderr);
    const [result] = toolResults(fake.modelRequests()[1]);
    assert.match(result.text, /rc=1/, `${before}: ${result.text}`);
    assert.throws(() => Deno.lstatSync(join(s.ws, ".github/workflows")), Deno.errors.NotFound);
    // The placeholder of a missing folder is gone after the call; what was there stays.
    assert.equal(
      [...Deno.readDirSync(s.ws)].some((e) => e.name === ".github"),
      before !== "missing",
      before,
    );
    if (before === "with a file") {
      assert.equal(Deno.readTextFileSync(join(s.ws, ".github/CODEOWNERS")), "* @owner\n");
    }
  }
});

Deno.test("deniedPaths() makes the folder of a DIR/** edit deny read-only, and returns it missing when it is", () => {
  using p = place([["Edit(./.github/**)", "deny"], ["Edit(docs/api/**)", "deny"], [
    "Edit(**/*.lock)",
    "deny",
  ]]);
  p.put(".github/CODEOWNERS", "x");
  p.put("a/b.lock", "x");
  const d = deniedPaths(p.rules, p.ws);
  assert.deepEqual(d.readOnly, [join(p.ws, ".github"), join(p.ws, "a/b.lock")]);
  assert.deepEqual(d.missing, [join(p.ws, "docs/api")]);
});
