import assert from "node:assert/strict";
import { harness } from "../../support/harness.ts";
import { type AskAnswer, hostRule, Policy } from "../../../tools/policy/policy.ts";
import { parseRule } from "../../../tools/policy/rules.ts";
import { editTool } from "../../../tools/edit.ts";
import { readTool } from "../../../tools/read.ts";
import { writeTool } from "../../../tools/write.ts";
import type { ApprovalClass, ApprovalRequest } from "../../../tools/tool.ts";
import { parseClasses } from "../../../agent/run/runtime.ts";
import { dataDir, ownSpillDirIfMade } from "../../../tools/fs/data_dir.ts";
import { truncateText } from "../../../tools/call/truncate.ts";
import { realPathOf } from "../../../tools/fs/workspace.ts";
import { join } from "node:path";
import { Dispatcher } from "../../../tools/call/dispatch.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { globTool } from "../../../tools/glob.ts";

/** An asker answering by class, recording what it was asked. */
function asker(answers: Partial<Record<ApprovalClass, "yes" | "no" | "all">>) {
  const asked: ApprovalRequest[] = [];
  return {
    asked,
    ask: (req: ApprovalRequest) => {
      asked.push(req);
      return Promise.resolve(answers[req.class] ?? "no");
    },
  };
}

Deno.test("Policy() answer a on an outside read never approves an outside write or edit", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    Deno.writeTextFileSync(`${outside}/b.txt`, "two\n");
    const a = asker({ "outside-read": "all", write: "all", "outside-write": "no" });
    await using h = harness([readTool, writeTool, editTool], { ask: a.ask });
    assert.ok((await h.call("read", { path: `${outside}/a.txt` })).ok);
    assert.ok((await h.call("read", { path: `${outside}/b.txt` })).ok, "a covers later reads");
    const w = await h.call("write", { path: `${outside}/a.txt`, content: "changed\n" });
    assert.ok(!w.ok && w.error.code === "refused", JSON.stringify(w));
    const e = await h.call("edit", {
      path: `${outside}/b.txt`,
      edits: [{ old: "two", new: "changed" }],
    });
    assert.ok(!e.ok && e.error.code === "refused", JSON.stringify(e));
    assert.deepEqual(a.asked.map((r) => r.class), [
      "outside-read",
      "write",
      "outside-write",
      "outside-write",
    ]);
    assert.equal(Deno.readTextFileSync(`${outside}/a.txt`), "one\n");
    assert.equal(Deno.readTextFileSync(`${outside}/b.txt`), "two\n");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("Policy() answer a on an outside write does not approve outside reads", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    const a = asker({ "outside-write": "all", write: "all", "outside-read": "no" });
    await using h = harness([readTool, writeTool], { ask: a.ask });
    assert.ok((await h.call("write", { path: `${outside}/new.txt`, content: "x" })).ok);
    const r = await h.call("read", { path: `${outside}/a.txt` });
    assert.ok(!r.ok && r.error.code === "refused");
    assert.deepEqual(a.asked.map((q) => q.class), ["write", "outside-write", "outside-read"]);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("parseClasses() takes outside as both outside classes, and each one alone", () => {
  const policy = (list: string[]) => new Policy({ allowed: parseClasses(list) });
  const both = policy(["outside"]);
  assert.ok(both.isAllowed("outside-read") && both.isAllowed("outside-write"));
  const read = policy(["outside-read"]);
  assert.ok(read.isAllowed("outside-read") && !read.isAllowed("outside-write"));
  const write = policy(["outside-write"]);
  assert.ok(!write.isAllowed("outside-read") && write.isAllowed("outside-write"));
  assert.throws(() => parseClasses(["outside-exec"]), /Cannot allow class "outside-exec"/);
});

Deno.test("Policy() refusal names the --allow flag of the class it needs", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    await using h = harness([readTool, writeTool], { allowed: ["write"] });
    const r = await h.call("read", { path: `${outside}/a.txt` });
    assert.ok(!r.ok);
    assert.match(r.error.message, /start crab with --allow outside-read\)$/);
    const w = await h.call("write", { path: `${outside}/n.txt`, content: "x" });
    assert.ok(!w.ok);
    assert.match(w.error.message, /start crab with --allow outside-write\)$/);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("write() of a hard-linked file asks outside-write", async () => {
  const a = asker({ write: "all", "outside-write": "yes" });
  await using h = harness([readTool, writeTool], { ask: a.ask });
  h.put("a.txt", "one\n");
  Deno.linkSync(`${h.dir}/a.txt`, `${h.dir}/other.txt`);
  await h.call("read", { path: "a.txt" });
  const w = await h.call("write", { path: "a.txt", content: "two\n" });
  assert.ok(w.ok, JSON.stringify(w));
  assert.deepEqual(a.asked.map((q) => q.class), ["write", "outside-write"]);
});

function askingPolicy(answers: AskAnswer[], allowed: string[] = []) {
  const asked: string[] = [];
  const policy = new Policy({
    allowed: allowed as ApprovalRequest["class"][],
    ask: (r) => {
      asked.push(r.summary);
      return Promise.resolve(answers.shift() ?? "no");
    },
  });
  const call = (summary: string) =>
    policy.approve({ tool: "f__echo", class: "mcp:f", summary }, new AbortController().signal);
  return { policy, asked, call };
}

Deno.test("Policy.forget() voids an 'a' answer, so the class asks again", async () => {
  const { policy, asked, call } = askingPolicy(["all", "yes"]);
  assert.deepEqual(await call("one"), { allowed: true });
  assert.deepEqual(await call("two"), { allowed: true });
  assert.equal(policy.forget("mcp:f"), true);
  assert.equal(policy.forget("mcp:f"), false);
  assert.deepEqual(await call("three"), { allowed: true });
  assert.deepEqual(asked, ["one", "three"]);
});

Deno.test("Policy.forget() keeps a class the user allowed up front", async () => {
  const { policy, asked, call } = askingPolicy([], ["mcp:f"]);
  assert.equal(policy.forget("mcp:f"), false);
  assert.deepEqual(await call("one"), { allowed: true });
  assert.deepEqual(asked, []);
});

Deno.test("Policy.sandbox carries the grant and the rules as they stand at each call", () => {
  const base = { project: "/w", home: "/h" };
  const policy = new Policy({
    rules: [parseRule("Read(./.env)", "deny", { scope: "user" }, base)],
    sandbox: {
      mode: "read-only",
      net: false,
      writable: ["/data"],
      limits: { processes: 64 },
      jobPortsOnHost: true,
    },
  });
  assert.equal(policy.sandbox.mode, "read-only");
  assert.deepEqual(policy.sandbox.writable, ["/data"]);
  assert.deepEqual(policy.sandbox.limits, { processes: 64 });
  assert.equal(policy.sandbox.jobPortsOnHost, true);
  assert.equal(new Policy().sandbox.jobPortsOnHost, undefined);
  assert.deepEqual(policy.sandbox.rules?.map((r) => r.text), ["Read(./.env)"]);
  // A rule added during the session (`/permissions`, a remembered answer) holds below the shell too.
  policy.rules.push(parseRule("Edit(./secrets/**)", "deny", { scope: "session" }, base));
  assert.deepEqual(policy.sandbox.rules?.map((r) => r.text), [
    "Read(./.env)",
    "Edit(./secrets/**)",
  ]);
  // Nobody to ask: no host question, so a host in no list is refused.
  assert.equal(policy.sandbox.askHost, undefined);
});

Deno.test("Policy.askHost() asks the front end; 'a' allows the host for the session; dontAsk and no asker refuse", async () => {
  const signal = new AbortController().signal;
  assert.equal(await new Policy().askHost("example.com", signal), false);
  const seen: ApprovalRequest[] = [];
  const answers: AskAnswer[] = ["no", "all"];
  const policy = new Policy({
    ask: (r) => {
      seen.push(r);
      return Promise.resolve(answers.shift()!);
    },
  });
  assert.equal(await policy.sandbox.askHost!("a.test", signal), false);
  assert.equal(await policy.askHost("b.test", signal), true);
  assert.deepEqual(seen.map((r) => [r.class, r.rememberAs, r.allOf]), [
    ["net", hostRule("a.test"), "connections to a.test"],
    ["net", hostRule("b.test"), "connections to b.test"],
  ]);
  assert.deepEqual(policy.rules.map((r) => `${r.effect} ${r.text} ${r.source.scope}`), [
    "allow WebFetch(domain:b.test) session",
  ]);
  policy.mode = "dontAsk";
  assert.equal(await policy.askHost("c.test", signal), false);
  assert.equal(seen.length, 2);
});

Deno.test("Policy.askHost() about a loopback, private or link-local address says so and offers this call only", async () => {
  const signal = new AbortController().signal;
  const seen: ApprovalRequest[] = [];
  const policy = new Policy({
    ask: (r) => {
      seen.push(r);
      return Promise.resolve("yes");
    },
  });
  for (const host of ["127.0.0.2", "10.1.2.3", "169.254.1.1", "::1"]) {
    assert.equal(await policy.askHost(host, signal), true);
  }
  // No rule to save, nothing for the session: an `always` question, which has no "all".
  assert.deepEqual(
    seen.map((r) => [r.rememberAs, r.allOf, r.decided?.effect, r.decided?.always]),
    Array(4).fill([undefined, undefined, "ask", true]),
  );
  assert.deepEqual(seen.map((r) => r.decided?.why.replace(/: this machine.*/, "")), [
    "127.0.0.2 is a loopback (127.0.0.0/8) address",
    "10.1.2.3 is a private (10.0.0.0/8) address",
    "169.254.1.1 is a link-local (169.254.0.0/16, cloud metadata) address",
    "::1 is a loopback (::1) address",
  ]);
  assert.equal(policy.rules.length, 0);
});

Deno.test("Policy.askHost() is asked under --yolo too: bypassPermissions answers no host question", async () => {
  const signal = new AbortController().signal;
  let asked = 0;
  const policy = new Policy({
    yolo: true,
    ask: () => {
      asked++;
      return Promise.resolve("no");
    },
  });
  assert.equal(policy.mode, "bypassPermissions");
  assert.equal(await policy.askHost("example.com", signal), false);
  assert.equal(asked, 1);
});

Deno.test("Policy's door questions give today's answers", () => {
  const policy = new Policy();
  assert.equal(policy.mayStore("/w/.env"), true);
  assert.equal(policy.mayGiveBack("/w/.git", "HEAD"), true);
});

Deno.test("Policy.importRefusal(): instructions only: the project's own, Markdown from ~/.claude/ once trusted, never a credential store", () => {
  const roots = { project: ["/repo", "/home/u/.claude"], user: ["/repo", "/home/u"] };
  const asker = (trusted: boolean) => (scope: "project" | "user", path: string) =>
    new Policy({ trusted }).importRefusal({ scope, path, roots: roots[scope], home: "/home/u" });
  const untrusted = asker(false), trusted = asker(true);
  const outside = "outside the project (a project file may import from the project and ~/.claude/)";
  const credential = "a credential store: crab never reads one into a prompt";
  const markdown =
    "only Markdown files are imported from ~/.claude/ (never its settings or credentials)";
  // A project's files: the project always; ~/.claude/ only trusted, and only Markdown.
  assert.equal(untrusted("project", "/repo/docs/a.md"), undefined);
  assert.match(untrusted("project", "/home/u/.claude/x.md")!, /untrusted project imports nothing/);
  assert.equal(trusted("project", "/home/u/.claude/x.md"), undefined);
  assert.equal(trusted("project", "/home/u/.claude/settings.json"), markdown);
  assert.equal(trusted("project", "/home/u/.claude/.credentials.json"), credential);
  assert.equal(untrusted("project", "/home/u/.claude/.credentials.json"), credential);
  assert.equal(trusted("project", "/home/u/.ssh/id_ed25519"), credential);
  assert.equal(trusted("project", "/home/u/notes.md"), outside);
  assert.equal(trusted("project", "/repository/a.md"), outside);
  // The user's own files: the project and the home folder, but no credential store either.
  assert.equal(untrusted("user", "/home/u/notes.md"), undefined);
  assert.equal(untrusted("user", "/home/u/.claude/CLAUDE-extra.md"), undefined);
  assert.equal(untrusted("user", "/home/u/.claude/settings.json"), markdown);
  assert.equal(untrusted("user", "/home/u/.ssh/id_ed25519"), credential);
  assert.equal(untrusted("user", "/home/u/.aws/credentials"), credential);
  assert.equal(untrusted("user", "/home/u/.ssh/known_hosts"), undefined);
  assert.equal(untrusted("user", "/etc/passwd"), "outside the project and the home folder");
});

Deno.test("Policy.hookRefusal(): a hook whose file changed since it was pinned runs only when the user says so", async () => {
  const signal = new AbortController().signal;
  const hook = { command: "./check.sh", scope: "user", source: "/h/.claude/settings.json" };
  assert.equal(await new Policy().hookRefusal({ ...hook, changed: [] }, signal), undefined);
  assert.match(
    (await new Policy().hookRefusal({ ...hook, changed: ["check.sh"] }, signal))!,
    /^check\.sh changed since crab pinned it; run crab interactively/,
  );
  const answers: AskAnswer[] = ["no", "yes"];
  const asked: ApprovalRequest[] = [];
  const policy = new Policy({
    ask: (r) => {
      asked.push(r);
      return Promise.resolve(answers.shift()!);
    },
  });
  const changed = { ...hook, changed: ["check.sh"] };
  assert.match((await policy.hookRefusal(changed, signal))!, /^the user refused it/);
  assert.equal(await policy.hookRefusal(changed, signal), undefined);
  assert.deepEqual(asked.map((r) => [r.class, r.summary]), [
    [
      "protected",
      "run the hook ./check.sh from /h/.claude/settings.json — check.sh changed since crab pinned it",
    ],
    [
      "protected",
      "run the hook ./check.sh from /h/.claude/settings.json — check.sh changed since crab pinned it",
    ],
  ]);
  policy.mode = "dontAsk";
  assert.match((await policy.hookRefusal(changed, signal))!, /run crab interactively/);
});

Deno.test("Policy.closedPath() closes crab's data dir but this run's spill folder, and a workspace inside it", () => {
  const policy = new Policy({ yolo: true });
  const data = realPathOf(dataDir());
  const ws = "/nowhere/ws";
  assert.match(policy.closedPath(join(data, "crab.db.key"), ws)!, /^crab's data directory/);
  assert.match(policy.closedPath(data, ws)!, /^crab's data directory/);
  assert.match(policy.closedPath(join(data, "spill", "run-1-other", "x.txt"), ws)!, /data dir/);
  const ownSpill = truncateText("x".repeat(100), { headBytes: 10, spill: true }).spillPath!;
  assert.equal(policy.closedPath(ownSpill, ws), undefined);
  Deno.removeSync(ownSpill);
  assert.equal(policy.closedPath(`${data}-other/x`, ws), undefined);
  // A workspace inside the data dir stays open; the rest of the data dir does not.
  const inside = join(data, "projects", "ws");
  assert.equal(policy.closedPath(join(inside, "a.ts"), inside), undefined);
  assert.match(policy.closedPath(join(data, "crab.db"), inside)!, /^crab's data directory/);
  // A search leaves it out too.
  assert.equal(policy.hidden(ws)(join(data, "undo", "x")), true);
  assert.equal(policy.hidden(ws)("/nowhere/ws/a.ts"), false);
});

Deno.test("Policy.changeRefusal() names the Edit or Write deny on paths that forbids a change", () => {
  const base = { project: "/w", home: "/h" };
  const rule = (text: string, effect: "deny" | "allow") =>
    parseRule(text, effect, { scope: "project", file: "/w/.claude/settings.json" }, base);
  const policy = new Policy({
    rules: [
      rule("Edit(**/*.lock)", "deny"),
      rule("Write(./.github/**)", "deny"),
      rule("Read(./.env)", "deny"),
      rule("Edit(./ok/**)", "allow"),
    ],
  });
  assert.equal(
    policy.changeRefusal("/w/a/b.lock", "/w", false),
    "an edit denied by Edit(**/*.lock) (/w/.claude/settings.json)",
  );
  assert.match(policy.changeRefusal("/w/.github/workflows", "/w", true)!, /Write\(\.\/\.github/);
  assert.equal(
    policy.changeRefusal("/w/.env", "/w", false),
    undefined,
    "a Read deny is not an edit's",
  );
  assert.equal(policy.changeRefusal("/w/ok/x", "/w", false), undefined);
  // A bare Edit deny is the tools' own: the sandbox and this check cannot hold it.
  assert.equal(
    new Policy({ rules: [rule("Edit", "deny")] }).changeRefusal("/w/x", "/w", false),
    undefined,
  );
});

Deno.test("Policy.sandbox.unseen() hides crab's data dir and the credential stores the grant does not open", () => {
  const home = "/home/u";
  const unseen = (credentials?: string[]) =>
    new Policy({
      home,
      sandbox: { mode: "workspace-write", net: false, writable: [], credentials },
    })
      .sandbox.unseen!();
  const all = unseen();
  assert.deepEqual(all.hidden[0], { path: dataDir() });
  // This run's spill folder, once it spilled: shown again inside the hidden data dir.
  const made = ownSpillDirIfMade();
  assert.deepEqual(all.shown, made ? [made] : []);
  const stores = all.hidden.slice(1).map((h) => h.store);
  for (
    const s of [".ssh/id_*", ".aws", ".netrc", ".config/gh/hosts.yml", ".claude/.credentials.json"]
  ) {
    assert.ok(stores.includes(s), s);
  }
  assert.ok(all.hidden.some((h) => h.path === "/home/u/.aws" && h.store === ".aws"));
  const open = unseen([".aws", ".ssh"]).hidden.map((h) => h.store);
  assert.equal(open.includes(".aws"), false);
  assert.equal(open.some((s) => s?.startsWith(".ssh/")), false);
  assert.ok(open.includes(".netrc"));
});

Deno.test("Policy.closedPath() follows dataDir() to ./.crab in a build that may write nowhere else", async () => {
  const { sandbox } = await import("../../support/cli.ts");
  const { presetFlags } = await import("../../../tools/host/capabilities.ts");
  using s = sandbox("crab-closed-");
  s.put(".crab/notes.txt", "STORE-SECRET\n");
  s.put("a.txt", "workspace\n");
  const flags = presetFlags("read-only");
  const tool = (name: string, args: Record<string, unknown>) =>
    s.crab(["tool", name, JSON.stringify(args)], { flags });
  const read = await tool("read", { path: ".crab/notes.txt" });
  assert.equal(read.code, 1, read.stdout);
  assert.match(read.stderr, /^error \[policy_denied\][^]*crab's data directory/);
  const grep = await tool("grep", { pattern: "SECRET", path: ".crab" });
  assert.match(grep.stderr, /^error \[policy_denied\]/);
  // The store went there, and the rest of the workspace reads as ever.
  assert.ok(Deno.statSync(join(s.ws, ".crab", "crab.db")).isFile);
  assert.equal((await tool("read", { path: "a.txt" })).stdout, "1\tworkspace\n");
});

Deno.test("Policy.openFolder() opens a skill's folder to reads only, deny rules still winning; never the home, the workspace's parent or a credential store", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-open-" }));
  try {
    const home = join(root, "home");
    const ws = join(root, "ws");
    const skill = join(home, ".claude", "skills", "x");
    Deno.mkdirSync(skill, { recursive: true });
    Deno.mkdirSync(ws);
    Deno.writeTextFileSync(join(skill, "notes.txt"), "notes\n");
    Deno.writeTextFileSync(join(skill, "secret.txt"), "secret\n");
    const deny = parseRule(`Read(/${skill}/secret.txt)`, "deny", { scope: "flag" }, {
      project: ws,
      home,
    });
    const policy = new Policy({ rules: [deny], home, allowed: ["read", "write"] });
    const dispatcher = new Dispatcher({
      registry: new Registry([readTool, writeTool, globTool]),
      session: new Session(ws),
      policy,
      sink: new MemorySink(),
      runId: "test-run",
    });
    const call = (name: string, args: unknown) => dispatcher.dispatch(name, args);
    const before = await call("read", { path: join(skill, "notes.txt") });
    assert.ok(!before.ok && before.error.code === "refused", JSON.stringify(before));

    const source = { scope: "skill" as const, file: join(skill, "SKILL.md") };
    assert.equal(policy.openFolder(skill, source, ws), undefined);
    assert.equal(policy.openFolder(skill, source, ws), undefined);
    assert.deepEqual(policy.rules.map((r) => r.text), [deny.text, `Read(/${skill}/**)`]);
    const read = await call("read", { path: join(skill, "notes.txt") });
    assert.ok(read.ok && read.output.includes("notes"), JSON.stringify(read));
    const listed = await call("glob", { pattern: "*.txt", path: skill });
    assert.ok(listed.ok && listed.output.includes("notes.txt"), JSON.stringify(listed));
    assert.ok(listed.ok && !listed.output.includes("secret.txt"), JSON.stringify(listed));
    const secret = await call("read", { path: join(skill, "secret.txt") });
    assert.ok(!secret.ok && secret.error.code === "policy_denied", JSON.stringify(secret));
    const written = await call("write", { path: join(skill, "notes.txt"), content: "x" });
    assert.ok(!written.ok && written.error.code === "refused", JSON.stringify(written));

    assert.deepEqual(
      [home, root, join(home, ".ssh"), join(home, ".aws", "x"), join(home, ".config")].map((d) =>
        policy.openFolder(d, source, ws)
      ),
      [
        "it holds the home directory",
        "it holds the workspace",
        "it is or holds a credential store",
        "it is or holds a credential store",
        "it is or holds a credential store",
      ],
    );
    assert.equal(policy.rules.length, 2);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("Policy.decide() of a subagent's call: its mode only narrows, read at each call; its allow rules never beat a deny", async () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    const base = { project: ws, home: "/home/x" };
    const policy = new Policy({
      mode: "acceptEdits",
      rules: [parseRule("Edit(locked.txt)", "deny", { scope: "project" }, base)],
      allowed: [],
    });
    const session = { workspace: ws };
    const write = (path: string, scope?: Parameters<Policy["decide"]>[0]["scope"]) =>
      policy.decide({ tool: writeTool, input: { path, content: "x" }, session, scope });
    const effect = (d: unknown) => typeof d === "string" ? d : (d as { effect: string }).effect;
    // The session's acceptEdits allows the write; a subagent in plan mode may not.
    assert.equal(effect(await write("a.txt")), "allow");
    const plan = { mode: "plan" as const };
    assert.match(JSON.stringify(await write("a.txt", plan)), /plan mode allows reading only/);
    // A looser mode than the session's widens nothing: the session's default asks.
    policy.mode = "default";
    assert.equal(effect(await write("a.txt", { mode: "bypassPermissions" })), "ask");
    // A mode switch reaches the subagent at its next call.
    policy.mode = "plan";
    assert.equal(effect(await write("a.txt", { mode: "acceptEdits" })), "deny");
    policy.mode = "default";
    // Its own allow rule lets its calls run, never past a deny rule, and only its own.
    const own = [parseRule("Edit", "allow", { scope: "agent", file: "/a.md" }, base)];
    assert.equal(effect(await write("a.txt", { rules: own })), "allow");
    assert.equal(effect(await write("a.txt")), "ask");
    assert.match(
      JSON.stringify(await write("locked.txt", { rules: own })),
      /denied by Edit\(locked\.txt\)/,
    );
    // What would ask is answered under the stricter mode: bypass on the session, default on it.
    policy.mode = "bypassPermissions";
    const request: ApprovalRequest = { tool: "write", class: "write", summary: "write: a.txt" };
    const signal = new AbortController().signal;
    assert.deepEqual(await policy.approve(request, signal), { allowed: true });
    const asked = await policy.approve({
      ...request,
      scope: { agent: "x", agentId: "1", mode: "default" },
    }, signal);
    assert.equal(asked.allowed, false);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
