import assert from "node:assert/strict";
import { join } from "node:path";
import {
  addRule,
  loadPermissions,
  PermissionError,
  type PermissionFlags,
  permissionsWantTrust,
  ruleFile,
} from "../../../agent/settings/permissions.ts";
import { settingsReader } from "../../../agent/settings/files.ts";
import { ruleName } from "../../../tools/policy/mod.ts";

/**
 * A temp HOME, config dir and workspace, and `load`: {@link loadPermissions} for
 * the workspace with HOME and XDG_CONFIG_HOME in the temp dir.
 */
function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-settings-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const vars: Record<string, string> = { HOME: root, XDG_CONFIG_HOME: join(root, "config") };
  const env = { get: (k: string) => vars[k] };
  const put = (path: string, value: unknown) => {
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    Deno.writeTextFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
    return path;
  };
  return {
    root,
    ws,
    user: join(root, "config", "crab", "config.json"),
    claudeUser: join(root, ".claude", "settings.json"),
    project: join(ws, ".claude", "settings.json"),
    crabProject: join(ws, ".crab", "config.json"),
    local: join(ws, ".claude", "settings.local.json"),
    put,
    env,
    load: (trusted: boolean, flags: PermissionFlags = {}) =>
      loadPermissions(ws, trusted, flags, settingsReader(), env),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

const names = (p: { rules: Parameters<typeof ruleName>[0][] }) =>
  p.rules.map((r) => `${r.effect} ${ruleName(r)}`);

Deno.test("loadPermissions() takes a project's deny and ask before trust, its allow only after", () => {
  using p = place();
  p.put(p.project, {
    permissions: { allow: ["Bash(npm test *)"], ask: ["Bash(git push *)"], deny: ["Bash(rm *)"] },
    hooks: {},
  });
  const untrusted = p.load(false);
  assert.deepEqual(names(untrusted), [
    `deny Bash(rm *) (${p.project})`,
    `ask Bash(git push *) (${p.project})`,
  ]);
  assert.deepEqual(untrusted.notices, [
    `ignoring 1 allow rule in "${p.project}": this workspace is not trusted (its deny and ask ` +
    "rules apply; pass --trust-project to use the rest)",
  ]);
  assert.equal(permissionsWantTrust(p.ws), true);
  const trusted = p.load(true);
  assert.deepEqual(names(trusted), [
    `deny Bash(rm *) (${p.project})`,
    `ask Bash(git push *) (${p.project})`,
    `allow Bash(npm test *) (${p.project})`,
  ]);
  assert.deepEqual(trusted.notices, []);
});

Deno.test("loadPermissions() orders sources: flags, --settings, local, project, user", () => {
  using p = place();
  p.put(p.user, { model: "m", permissions: { deny: ["WebFetch"], defaultMode: "plan" } });
  p.put(p.claudeUser, { permissions: { deny: ["Read(~/.ssh/**)"] } });
  p.put(p.crabProject, { permissions: { deny: ["Bash(curl *)"] } });
  p.put(p.local, { permissions: { allow: ["Edit"], defaultMode: "acceptEdits" } });
  const settings = p.put(join(p.root, "s.json"), { permissions: { ask: ["Bash(git *)"] } });
  const got = p.load(true, {
    settings,
    allowedTools: ["Read,Bash(npm test:*)", "Grep"],
    disallowedTools: ["Bash(sudo *)"],
  });
  assert.deepEqual(names(got), [
    "deny Bash(sudo *) (command line)",
    "allow Read (command line)",
    "allow Bash(npm test:*) (command line)",
    "allow Grep (command line)",
    `ask Bash(git *) (${settings})`,
    `allow Edit (${p.local})`,
    `deny Bash(curl *) (${p.crabProject})`,
    `deny WebFetch (${p.user})`,
    `deny Read(~/.ssh/**) (${p.claudeUser})`,
  ]);
  // The mode: the local file wins over the user's.
  assert.equal(got.mode, "acceptEdits");
  assert.equal(got.modeSource, p.local);
  assert.equal(got.fromCommandLine, true);
  // A flag wins over every file.
  const flagged = p.load(true, { permissionMode: "dontAsk" });
  assert.deepEqual([flagged.mode, flagged.modeSource], ["dontAsk", "--permission-mode"]);
  assert.equal(p.load(true).fromCommandLine, false);
});

Deno.test("loadPermissions() never lets a workspace's files lower its mode", () => {
  using p = place();
  p.put(p.project, { permissions: { defaultMode: "bypassPermissions" } });
  for (const trusted of [false, true]) {
    const got = p.load(trusted);
    assert.equal(got.mode, "default");
    assert.deepEqual(got.notices, [
      `ignoring defaultMode bypassPermissions in "${p.project}": a workspace's own settings ` +
      "never choose bypassPermissions (use --yolo or your user settings)",
    ]);
  }
  p.put(p.project, { permissions: { defaultMode: "acceptEdits" } });
  assert.equal(p.load(false).mode, "default");
  assert.equal(p.load(true).mode, "acceptEdits");
  // Stricter modes apply at once.
  p.put(p.project, { permissions: { defaultMode: "plan" } });
  assert.equal(p.load(false).mode, "plan");
});

Deno.test("loadPermissions() reads --settings as JSON", () => {
  using p = place();
  const got = p.load(false, {
    settings: '{"permissions": {"deny": ["Read(./.env)"], "defaultMode": "dontAsk"}}',
  });
  assert.deepEqual(names(got), ["deny Read(./.env) (--settings)"]);
  assert.deepEqual([got.mode, got.modeSource], ["dontAsk", "--settings"]);
});

/** The PermissionError `fn` throws, as [message, hint]. */
function failure(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof PermissionError, String(e));
    return [e.message, e.hint];
  }
  assert.fail("no error");
}

Deno.test("loadPermissions() names the file, field and rule of a bad deny rule", () => {
  using p = place();
  p.put(p.project, { permissions: { deny: ["Bsh(rm *)"] } });
  const [message, hint] = failure(() => p.load(false));
  assert.equal(
    message,
    `Cannot use rule "Bsh(rm *)" in "${p.project}" (permissions.deny): unknown tool "Bsh"`,
  );
  assert.match(hint, /^Tools are: Bash, Read/);
});

Deno.test("loadPermissions() leaves out a bad allow rule of a file, with a notice", () => {
  using p = place();
  p.put(p.user, { permissions: { allow: ["Read(", "Grep"] } });
  const got = p.load(false);
  assert.deepEqual(names(got), [`allow Grep (${p.user})`]);
  assert.equal(got.notices.length, 1);
  assert.match(
    got.notices[0],
    /^ignoring rule "Read\(" in ".*config\.json" \(permissions\.allow\)/,
  );
});

Deno.test("loadPermissions() refuses bad flags and files with the place and a hint", () => {
  using p = place();
  assert.deepEqual(
    failure(() => p.load(false, { allowedTools: ["Bash(npm test"] })),
    [
      'Cannot split rule list "Bash(npm test": a "(" is not closed (--allowedTools)',
      'Close every parenthesis: "Bash(npm test *)".',
    ],
  );
  assert.match(
    failure(() => p.load(false, { disallowedTools: ["Frob"] }))[0],
    /^Cannot use rule "Frob" in --disallowedTools: unknown tool "Frob"$/,
  );
  assert.match(
    failure(() => p.load(false, { settings: "{not json" }))[0],
    /^Cannot parse --settings: /,
  );
  assert.equal(
    failure(() => p.load(false, { settings: "missing.json" }))[0],
    'Cannot read --settings "missing.json": no such file',
  );
  assert.equal(
    failure(() => p.load(false, { yolo: true, permissionMode: "plan" }))[0],
    "Cannot use --yolo with --permission-mode plan",
  );
  p.put(p.project, "{ broken");
  assert.match(failure(() => p.load(false))[0], /^Cannot parse settings ".*"/);
  p.put(p.project, { permissions: { defaultMode: "acceptEdit" } });
  assert.deepEqual(failure(() => p.load(false)), [
    `Cannot use settings "${p.project}": field "permissions.defaultMode" must be one of ` +
    "default, acceptEdits, plan, dontAsk, bypassPermissions",
    'Did you mean "acceptEdits"?',
  ]);
  p.put(p.project, { permissions: { deny: "Bash(rm *)" } });
  assert.equal(
    failure(() => p.load(false))[0],
    `Cannot use settings "${p.project}": field "permissions.deny" must be an array of strings`,
  );
});

Deno.test("loadPermissions() honours disableBypassPermissionsMode, from a project too", () => {
  using p = place();
  p.put(p.project, { permissions: { disableBypassPermissionsMode: "disable" } });
  assert.match(
    failure(() => p.load(false, { yolo: true }))[0],
    /^Cannot use --yolo: ".*settings\.json" sets disableBypassPermissionsMode$/,
  );
  p.put(p.user, { permissions: { defaultMode: "bypassPermissions" } });
  const got = p.load(false);
  assert.equal(got.mode, "default");
  assert.match(got.notices.join("\n"), /ignoring defaultMode bypassPermissions in .*config\.json/);
});

Deno.test("addRule() writes the local file, keeps its fields and excludes it from git", async () => {
  using p = place();
  const git = new Deno.Command("git", { args: ["init", "-q", p.ws] });
  assert.equal((await git.output()).code, 0);
  const file = ruleFile("local", p.ws);
  assert.equal(addRule(file, "allow", "Bash(npm test *)", p.ws), true);
  assert.equal(addRule(file, "allow", "Bash(npm test *)", p.ws), false);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(file)), {
    permissions: { allow: ["Bash(npm test *)"] },
  });
  const exclude = Deno.readTextFileSync(join(p.ws, ".git", "info", "exclude"));
  assert.equal(exclude.split("\n").filter((l) => l === "/.crab/config.local.json").length, 1);
  addRule(file, "deny", "Read(./.env)", p.ws);
  assert.equal(
    Deno.readTextFileSync(join(p.ws, ".git", "info", "exclude")).split("\n")
      .filter((l) => l === "/.crab/config.local.json").length,
    1,
  );
  // The next run reads what was written: trusted, the allow rule applies.
  assert.deepEqual(names(p.load(true)), [
    `deny Read(./.env) (${file})`,
    `allow Bash(npm test *) (${file})`,
  ]);
  // A user file keeps crab's other fields.
  p.put(p.user, { model: "m" });
  addRule(ruleFile("user", p.ws, p.env), "deny", "WebFetch", p.ws);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(p.user)), {
    model: "m",
    permissions: { deny: ["WebFetch"] },
  });
  assert.throws(() => addRule(p.user, "deny", "Nope(x)", p.ws), PermissionError);
});
