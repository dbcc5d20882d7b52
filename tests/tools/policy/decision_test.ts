import assert from "node:assert/strict";
import { join } from "node:path";
import { type Harness, harness } from "../../support/harness.ts";
import type { AskAnswer, Policy, PolicyOptions } from "../../../tools/policy/policy.ts";
import { bashTool } from "../../../tools/bash.ts";
import { readTool } from "../../../tools/read.ts";
import { writeTool } from "../../../tools/write.ts";
import { editTool } from "../../../tools/edit.ts";
import { grepTool } from "../../../tools/grep.ts";
import { globTool } from "../../../tools/glob.ts";
import type { ApprovalRequest } from "../../../tools/tool.ts";
import type { DispatchResult } from "../../../tools/call/dispatch.ts";
import { type Effect, parseRule, shellParserLoaded } from "../../../tools/policy/mod.ts";

const TOOLS = [bashTool, readTool, writeTool, editTool, grepTool, globTool];

/** A harness whose policy holds `rules` (with their effects), and an asker that records. */
function world(
  rules: [Effect, string][],
  opts: PolicyOptions & { answers?: AskAnswer[] } = {},
) {
  const asked: ApprovalRequest[] = [];
  const answers = opts.answers;
  const ask = answers
    ? (r: ApprovalRequest) => (asked.push(r), Promise.resolve(answers.shift() ?? "no"))
    : undefined;
  const h: Harness = harness(TOOLS, { ...opts, ...(ask ? { ask } : {}) });
  // bash without the OS sandbox: these tests are about the decision, not the fence.
  h.session.sandbox = { ...h.session.sandbox, mode: "danger-full-access" };
  const policy = h.dispatcher.policy as Policy;
  const file = join(h.dir, ".claude", "settings.json");
  for (const [effect, text] of rules) {
    policy.rules.push(
      parseRule(text, effect, { scope: "project", file }, { project: h.dir, home: h.dir }),
    );
  }
  return { h, policy, asked, file };
}

function errorOf(r: DispatchResult) {
  assert.ok(!r.ok, `expected an error, got ${JSON.stringify(r)}`);
  return r.error;
}

Deno.test("permissions: bash rules for other tools only never load the shell parser", async () => {
  await using w = asyncWorld([["deny", "WebFetch"], ["allow", "Read"]], { yolo: true });
  const r = await w.h.call("bash", { command: "echo hi" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(shellParserLoaded(), false);
});

/** {@link world}, disposable. */
function asyncWorld(rules: [Effect, string][], opts: Parameters<typeof world>[1] = {}) {
  const w = world(rules, opts);
  return { ...w, [Symbol.asyncDispose]: () => w.h[Symbol.asyncDispose]() };
}

Deno.test("permissions: a deny rule holds under --yolo, naming the rule and its file", async () => {
  await using w = asyncWorld([["deny", "Bash(rm *)"]], { yolo: true });
  w.h.put("calc.py", "print(1)\n");
  const e = errorOf(await w.h.call("bash", { command: "rm -f calc.py" }));
  assert.equal(e.code, "policy_denied");
  assert.equal(
    e.message,
    `Cannot run bash: rm -f calc.py: denied by Bash(rm *) (${w.file})`,
  );
  assert.match(e.hint, /^The user's permission rules forbid this call\. Do not retry it/);
  assert.equal(w.h.get("calc.py"), "print(1)\n");
  const o = w.h.sink.observations.at(-1)!;
  assert.deepEqual([o.outcome, o.errorCode, o.rule], [
    "refused",
    "policy_denied",
    `Bash(rm *) (${w.file})`,
  ]);
  // Other commands still run without asking.
  assert.ok((await w.h.call("bash", { command: "echo ok" })).ok);
  assert.equal(w.h.sink.observations.at(-1)!.rule, null);
});

Deno.test("permissions: --allow exec and 'a' never override a deny or an ask rule", async () => {
  await using w = asyncWorld(
    [["deny", "Bash(curl *)"], ["ask", "Bash(git push *)"]],
    { allowed: ["exec"], answers: ["yes", "all", "no"] },
  );
  assert.equal(
    errorOf(await w.h.call("bash", { command: "curl x | sh" })).code,
    "policy_denied",
  );
  // The ask rule asks although exec is approved; 'a' approves exec, not the rule.
  assert.ok((await w.h.call("bash", { command: "git push origin x || true" })).ok);
  assert.ok((await w.h.call("bash", { command: "git push origin y || true" })).ok);
  assert.equal(
    errorOf(await w.h.call("bash", { command: "git push origin z || true" })).code,
    "refused",
  );
  assert.ok((await w.h.call("bash", { command: "echo plain" })).ok);
  assert.deepEqual(w.asked.map((r) => [r.summary, r.decided?.effect]), [
    ["run: git push origin x || true", "ask"],
    ["run: git push origin y || true", "ask"],
    ["run: git push origin z || true", "ask"],
  ]);
  assert.match(w.asked[0].decided!.why, /asked for by Bash\(git push \*\)/);
});

Deno.test("permissions: an ask rule under --yolo asks, and is refused where nobody can answer", async () => {
  await using asking = asyncWorld([["ask", "Bash(deploy*)"]], {
    yolo: true,
    answers: ["yes"],
  });
  assert.ok((await asking.h.call("bash", { command: "echo deploy; true" })).ok);
  assert.ok((await asking.h.call("bash", { command: "deploy --dry-run || true" })).ok);
  assert.equal(asking.asked.length, 1);
  await using alone = asyncWorld([["ask", "Bash(deploy*)"]], { yolo: true });
  const e = errorOf(await alone.h.call("bash", { command: "deploy" }));
  assert.equal(e.code, "refused");
  assert.equal(
    e.message,
    `Call refused: run: deploy. deploy: asked for by Bash(deploy*) (${alone.file}); ` +
      "nobody is here to answer, so it is refused",
  );
  assert.equal(alone.h.sink.observations.at(-1)!.rule, `Bash(deploy*) (${alone.file})`);
});

Deno.test("permissions: Read(./.env) denies read and grep of .env, and a link to it", async () => {
  await using w = asyncWorld([["deny", "Read(./.env)"]], { yolo: true });
  w.h.put(".env", "KEY=secret\n");
  w.h.put("app/.env", "KEY=other\n");
  Deno.symlinkSync(join(w.h.dir, ".env"), join(w.h.dir, "config.txt"));
  for (
    const [tool, args] of [
      ["read", { path: ".env" }],
      ["read", { path: "app/.env" }],
      ["read", { path: "config.txt" }],
      ["grep", { pattern: "KEY", path: ".env" }],
    ] as const
  ) {
    const e = errorOf(await w.h.call(tool, args));
    assert.equal(e.code, "policy_denied", `${tool} ${JSON.stringify(args)}`);
    assert.match(e.message, /: denied by Read\(\.\/\.env\) \(.*settings\.json\)$/);
  }
  w.h.put("README", "hello\n");
  assert.ok((await w.h.call("read", { path: "README" })).ok);
});

Deno.test("permissions: an allow rule never opens a protected path", async () => {
  await using w = asyncWorld([["allow", "Edit"], ["allow", "Write"]], { answers: [] });
  Deno.mkdirSync(join(w.h.dir, ".git"));
  const e = errorOf(await w.h.call("write", { path: ".git/config", content: "[core]\n" }));
  assert.equal(e.code, "protected_path");
  // The rule allowed the write; the protected path asked (and was refused).
  assert.deepEqual(w.asked.map((r) => r.class), ["protected"]);
  assert.ok((await w.h.call("write", { path: "notes.txt", content: "x\n" })).ok);
  assert.equal(w.h.get("notes.txt"), "x\n");
});

Deno.test("permissions: a path allow rule outside the workspace gives the outside approval", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-outside-" }));
  try {
    Deno.writeTextFileSync(join(outside, "a.txt"), "far\n");
    await using w = asyncWorld([["allow", `Read(/${outside}/**)`]]);
    const r = await w.h.call("read", { path: join(outside, "a.txt") });
    assert.ok(r.ok, JSON.stringify(r));
    // A bare Read does not reach outside.
    await using bare = asyncWorld([["allow", "Read"]]);
    assert.equal(
      errorOf(await bare.h.call("read", { path: join(outside, "a.txt") })).code,
      "refused",
    );
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("permissions: plan mode denies all but reads, allow rules and grants included", async () => {
  await using w = asyncWorld([["allow", "Bash(echo *)"]], {
    mode: "plan",
    allowed: ["exec", "write"],
  });
  w.h.put("a.txt", "a\n");
  assert.ok((await w.h.call("read", { path: "a.txt" })).ok);
  for (
    const [tool, args] of [
      ["bash", { command: "echo hi" }],
      ["write", { path: "b.txt", content: "b" }],
    ] as const
  ) {
    const e = errorOf(await w.h.call(tool, args));
    assert.equal(e.code, "policy_denied");
    assert.match(e.message, /plan mode allows reading only/);
    assert.match(e.hint, /^Plan mode: only read, grep and glob run/);
  }
});

Deno.test("permissions: acceptEdits approves writes in the workspace only", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-outside-" }));
  try {
    await using w = asyncWorld([], { mode: "acceptEdits", answers: ["no", "no"] });
    assert.ok((await w.h.call("write", { path: "new.txt", content: "n\n" })).ok);
    assert.equal(
      errorOf(await w.h.call("write", { path: `${outside}/x`, content: "x" })).code,
      "refused",
    );
    assert.equal(errorOf(await w.h.call("bash", { command: "sleep 0" })).code, "refused");
    assert.deepEqual(w.asked.map((r) => r.class), ["write", "exec"]);
    // A read-only command is a read: no question.
    assert.ok((await w.h.call("bash", { command: "ls new.txt" })).ok);
    assert.equal(w.asked.length, 2);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("permissions: dontAsk runs what rules allow and denies the rest without asking", async () => {
  await using w = asyncWorld([["allow", "Bash(echo *)"]], { mode: "dontAsk", answers: [] });
  assert.ok((await w.h.call("bash", { command: "echo ok" })).ok);
  const e = errorOf(await w.h.call("bash", { command: "npm test" }));
  assert.equal(e.code, "policy_denied");
  assert.match(e.message, /dontAsk mode denies what no rule allows/);
  assert.ok((await w.h.call("write", { path: "n.txt", content: "n" })).ok === false);
  assert.deepEqual(w.asked, []);
});

Deno.test("permissions: grep and glob over a directory leave out files a Read deny rule names", async () => {
  await using w = asyncWorld([["deny", "Read(secrets/**)"], ["ask", "Read(./private.txt)"]], {
    yolo: true,
  });
  w.h.put("secrets/key.txt", "TOKEN=abc\n");
  w.h.put("private.txt", "TOKEN=mine\n");
  w.h.put("app/main.txt", "TOKEN=public\n");
  const grep = await w.h.call("grep", { pattern: "TOKEN", output_mode: "files_with_matches" });
  assert.ok(grep.ok, JSON.stringify(grep));
  assert.equal(grep.output, "app/main.txt");
  const glob = await w.h.call("glob", { pattern: "**/*.txt" });
  assert.ok(glob.ok, JSON.stringify(glob));
  assert.equal(glob.output, "app/main.txt");
  // Named directly, the rule decides the call; below a named directory, the filter.
  assert.equal(
    errorOf(await w.h.call("grep", { pattern: "TOKEN", path: "secrets/key.txt" })).code,
    "policy_denied",
  );
  const below = await w.h.call("grep", { pattern: "TOKEN", path: "secrets" });
  assert.ok(below.ok && below.output.startsWith("No matches found in secrets"));
});

Deno.test("permissions: echo hi > out.txt under Bash(echo *) is a write: asked once, run in acceptEdits or with writes approved, denied in dontAsk", async () => {
  const rules: [Effect, string][] = [["allow", "Bash(echo *)"]];
  {
    await using w = asyncWorld(rules, { answers: ["yes", "no"] });
    assert.ok((await w.h.call("bash", { command: "echo hi 2>&1 >/dev/null" })).ok);
    assert.equal(w.asked.length, 0);
    assert.ok((await w.h.call("bash", { command: "echo hi > out.txt" })).ok);
    assert.equal(w.h.get("out.txt"), "hi\n");
    // One question for the call, as for any bash call: the class is bash's.
    assert.deepEqual(w.asked.map((r) => [r.class, r.decided?.effect ?? "class"]), [
      ["exec", "class"],
    ]);
    assert.equal(
      errorOf(await w.h.call("bash", { command: "echo no >> out.txt" })).code,
      "refused",
    );
    assert.equal(w.h.get("out.txt"), "hi\n");
  }
  {
    await using w = asyncWorld(rules, { mode: "acceptEdits", answers: [] });
    assert.ok((await w.h.call("bash", { command: "echo hi >> notes.txt" })).ok);
    assert.equal(w.h.get("notes.txt"), "hi\n");
    assert.deepEqual(w.asked, []);
  }
  {
    await using w = asyncWorld(rules, { allowed: ["write"], answers: [] });
    assert.ok((await w.h.call("bash", { command: "echo hi > out.txt" })).ok);
    assert.deepEqual(w.asked, []);
  }
  {
    await using w = asyncWorld(rules, { mode: "dontAsk", answers: [] });
    const e = errorOf(await w.h.call("bash", { command: "echo hi > out.txt" }));
    assert.equal(e.code, "policy_denied");
    assert.match(e.message, /writes out\.txt, which no Edit or Write rule allows/);
    assert.throws(() => w.h.get("out.txt"));
  }
});

Deno.test("permissions: the user's own bash call passes ask rules and plan mode, never a deny rule", async () => {
  await using w = asyncWorld([["deny", "Bash(rm *)"], ["ask", "Bash(touch *)"]], {
    mode: "plan",
    answers: [],
  });
  w.h.put("calc.py", "print(1)\n");
  const user = { origin: "user" as const };
  const signal = new AbortController().signal;
  const run = (command: string) => w.h.dispatcher.dispatch("bash", { command }, signal, user);
  const e = errorOf(await run("rm -f calc.py"));
  assert.equal(e.message, `Cannot run bash: rm -f calc.py: denied by Bash(rm *) (${w.file})`);
  assert.equal(w.h.get("calc.py"), "print(1)\n");
  assert.ok((await run("touch made.txt")).ok);
  assert.ok((await run("echo x > note.txt")).ok);
  assert.equal(w.h.get("note.txt"), "x\n");
  assert.deepEqual(w.asked, []);
});
