import assert from "node:assert/strict";
import { join } from "node:path";
import {
  applyMode,
  decide,
  type DecideContext,
  type Decision,
  type Effect,
  loadShellAnalysis,
  MAX_PARTS,
  type Mode,
  needsShellParser,
  parseRule,
  pathVerdict,
  type Rule,
} from "../../../tools/policy/mod.ts";
import { realPathOf } from "../../../tools/fs/workspace.ts";
import { parseShell } from "../../../tools/policy/shell.ts";
import { COMMAND_TABLE, DIFFERENTIAL_RULES, TABLE_RULES } from "../../support/policy_commands.ts";

await loadShellAnalysis();

/** A workspace with the files the rules speak of, and symlinks to them. */
function workspace(): { ctx: DecideContext; home: string } {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-policy-" }));
  globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));
  const ws = join(root, "ws");
  const home = join(root, "home");
  for (const d of [ws, home, join(ws, "secrets"), join(ws, "src"), join(ws, "app")]) {
    Deno.mkdirSync(d, { recursive: true });
  }
  for (const f of [".env", "secrets/key", "src/a.ts", "app/.env", "ok.txt"]) {
    Deno.writeTextFileSync(join(ws, f), "x");
  }
  Deno.symlinkSync(join(ws, ".env"), join(ws, "env-link"));
  Deno.symlinkSync(join(ws, "secrets"), join(ws, "stash"));
  Deno.symlinkSync(join(ws, "secrets", "key"), join(ws, "src", "key"));
  Deno.symlinkSync("/etc/hostname", join(ws, "src", "outside"));
  return { ctx: { workspace: ws, home, realPath: realPathOf }, home };
}

const { ctx, home } = workspace();
const BASE = { project: ctx.workspace, home };
const SOURCE = { scope: "project" as const, file: ".claude/settings.json" };

function rules(spec: [string, Effect][]): Rule[] {
  return spec.map(([text, effect]) => parseRule(text, effect, SOURCE, BASE));
}

const TABLE = rules(TABLE_RULES);

function bash(command: string, rs: Rule[] = TABLE): Decision {
  return decide(rs, { tool: "bash", args: { command } }, ctx);
}

Deno.test("decide() on the command table: the decision and the rule that made it", () => {
  assert.ok(COMMAND_TABLE.length >= 60, `${COMMAND_TABLE.length} commands`);
  const wrong: string[] = [];
  for (const [command, effect, ruleText] of COMMAND_TABLE) {
    const d = bash(command);
    const got = [d.effect, d.rule?.text];
    if (got[0] !== effect || got[1] !== ruleText) {
      wrong.push(
        `${JSON.stringify(command)}: got ${got[0]} by ${
          got[1]
        } (${d.why}); want ${effect} by ${ruleText}`,
      );
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("decide() breaks a compound command into parts, each with its own decision", () => {
  const d = bash("FOO=1 npm test 2>&1 | tail -5 && cd src; curl x > ../out");
  assert.equal(d.effect, "deny");
  assert.equal(d.rule?.text, "Bash(curl *)");
  assert.deepEqual(
    d.parts?.map((p) => [p.command, p.effect, p.rule?.text]),
    [
      ["FOO=1 npm test 2>&1", "allow", "Bash(npm test *)"],
      ["tail -5", "allow", "Bash(tail *)"],
      ["cd src", "allow", undefined],
      ["curl x > ../out", "deny", "Bash(curl *)"],
    ],
  );
  assert.match(
    d.why,
    /^curl x > \.\.\/out: denied by Bash\(curl \*\) \(\.claude\/settings\.json\)$/,
  );
});

Deno.test("decide() lists the real paths a command writes, for the protected-path check", () => {
  const d = bash("npm test > log.txt 2>/dev/null | tee src/copy");
  assert.deepEqual(d.parts?.map((p) => p.writes), [
    [join(ctx.workspace, "log.txt")],
    [join(ctx.workspace, "src/copy")],
  ]);
});

Deno.test("decide() asks for a command of more than 200 parts, and still denies a denied one", () => {
  assert.equal(MAX_PARTS, 200);
  const many = Array(300).fill("npm test").join("; ");
  const d = bash(many);
  assert.equal(d.effect, "ask");
  assert.match(d.why, /more than 200 commands/);
  assert.equal(bash(many + "; curl x").effect, "ask"); // the 301st part is past the limit
  assert.equal(bash("curl x; " + many).effect, "deny");
});

Deno.test("decide() without rules that look inside commands decides bash whole, unparsed", () => {
  const only = rules([["Bash", "allow"], ["Read(./x)", "allow"]]);
  assert.equal(needsShellParser(only), false);
  assert.deepEqual(bash("echo 'unclosed; $CMD", only), {
    effect: "allow",
    rule: only[0],
    why: "allowed by Bash (.claude/settings.json)",
  });
  assert.equal(bash("ls", rules([["Read(./x)", "allow"]])).effect, "default");
  assert.equal(needsShellParser(rules([["Edit(./secrets/**)", "deny"]])), true);
  assert.equal(needsShellParser(rules([["Bash(ls)", "allow"]])), true);
  const denyAll = rules([["Bash", "deny"], ["Bash(ls)", "allow"]]);
  assert.equal(bash("ls", denyAll).effect, "deny");
});

Deno.test("decide() with only an Edit deny rule still checks where a command writes", () => {
  const editOnly = rules([["Edit(./secrets/**)", "deny"]]);
  assert.equal(bash("echo x > secrets/k", editOnly).effect, "deny");
  assert.equal(bash("echo x > ok.txt", editOnly).effect, "default");
});

/** Path calls: [tool, args, effect, rule]. */
const PATH_RULES = rules([
  ["Read(./.env)", "deny"],
  ["Read(./secrets)", "deny"],
  ["Edit(./secrets/**)", "deny"],
  ["Read(//etc/shadow)", "deny"],
  ["Read(~/.ssh/**)", "ask"],
  ["Edit(src/**)", "allow"],
  ["Read(//etc/hostname)", "allow"],
]);

Deno.test("decide() matches path rules on real paths: a symlink to .env is .env", () => {
  const cases: [string, Record<string, unknown>, string, string | undefined][] = [
    ["read", { path: ".env" }, "deny", "Read(./.env)"],
    ["read", { path: "app/.env" }, "deny", "Read(./.env)"],
    ["read", { path: "env-link" }, "deny", "Read(./.env)"],
    ["read", { path: join(ctx.workspace, ".env") }, "deny", "Read(./.env)"],
    ["read", { path: "secrets/key" }, "deny", "Read(./secrets)"],
    ["read", { path: "stash/key" }, "deny", "Read(./secrets)"],
    ["read", { path: "src/key" }, "deny", "Read(./secrets)"],
    ["grep", { pattern: "x", path: "stash" }, "deny", "Read(./secrets)"],
    ["glob", { pattern: "*", path: "secrets" }, "deny", "Read(./secrets)"],
    ["grep", { pattern: "x" }, "default", undefined],
    ["read", { path: "ok.txt" }, "default", undefined],
    ["read", { path: "/etc/shadow" }, "deny", "Read(//etc/shadow)"],
    ["read", { path: join(home, ".ssh/id_ed25519") }, "ask", "Read(~/.ssh/**)"],
    ["write", { path: "secrets/new", content: "" }, "deny", "Edit(./secrets/**)"],
    ["edit", { path: "stash/key", edits: [] }, "deny", "Edit(./secrets/**)"],
    ["write", { path: "src/b.ts", content: "" }, "allow", "Edit(src/**)"],
    // Allowed by the given path, but the real one is a secret: the deny holds.
    ["write", { path: "src/key", content: "" }, "deny", "Edit(./secrets/**)"],
    // Allowed by the given path, but the real one is outside: no allow.
    ["write", { path: "src/outside", content: "" }, "default", undefined],
    ["read", { path: "src/outside" }, "allow", "Read(//etc/hostname)"],
    ["Read", { file_path: ".env" }, "deny", "Read(./.env)"],
    ["MultiEdit", { file_path: "secrets/key", edits: [] }, "deny", "Edit(./secrets/**)"],
  ];
  for (const [tool, args, effect, rule] of cases) {
    const d = decide(PATH_RULES, { tool, args }, ctx);
    assert.deepEqual(
      [d.effect, d.rule?.text],
      [effect, rule],
      `${tool} ${JSON.stringify(args)}: ${d.why}`,
    );
  }
});

Deno.test("decide() denies a symlink named like a denied file, whatever it points to", () => {
  const dir = Deno.makeTempDirSync({ dir: ctx.workspace });
  Deno.symlinkSync(join(ctx.workspace, "ok.txt"), join(dir, ".env"));
  const d = decide(PATH_RULES, { tool: "read", args: { path: join(dir, ".env") } }, ctx);
  assert.deepEqual([d.effect, d.rule?.text], ["deny", "Read(./.env)"]);
});

Deno.test("decide() in bash follows symlinks and cd for redirections and reads", () => {
  const cases: [string, string, string | undefined][] = [
    ["cat env-link", "deny", "Read(./.env)"],
    ["cat < stash/key", "deny", "Read(./secrets)"],
    ["echo x > stash/new", "deny", "Edit(./secrets/**)"],
    ["cd stash && echo x > new", "deny", "Edit(./secrets/**)"],
    ["cd app; cat .env", "deny", "Read(./.env)"],
    ["echo x > ~/.ssh/config", "default", undefined], // Read rules do not govern writes
    ["cat ~/.ssh/config", "ask", "Read(~/.ssh/**)"],
    ["cat $F", "ask", "Read(./.env)"],
    ["cd $D && echo x > f", "ask", "Edit(./secrets/**)"],
  ];
  for (const [command, effect, rule] of cases) {
    const d = bash(command, PATH_RULES);
    assert.deepEqual([d.effect, d.rule?.text], [effect, rule], `${command}: ${d.why}`);
  }
});

Deno.test("decide() on web_fetch and MCP calls", () => {
  const rs = rules([
    ["WebFetch(domain:evil.example)", "deny"],
    ["WebFetch(domain:*.docs.example)", "allow"],
    ["WebFetch(domain:example.com)", "allow"],
    ["mcp__gh__delete_repo", "deny"],
    ["mcp__gh", "allow"],
    ["fs__write", "ask"],
  ]);
  const cases: [string, Record<string, unknown>, string, string | undefined][] = [
    ["web_fetch", { url: "https://evil.example/x" }, "deny", "WebFetch(domain:evil.example)"],
    ["web_fetch", { url: "https://EXAMPLE.com./a" }, "allow", "WebFetch(domain:example.com)"],
    ["web_fetch", { url: "https://www.example.com/" }, "default", undefined],
    ["web_fetch", { url: "https://api.docs.example/" }, "allow", "WebFetch(domain:*.docs.example)"],
    ["web_fetch", { url: "https://docs.example/" }, "default", undefined],
    ["web_fetch", { url: "not a url" }, "default", undefined],
    ["WebFetch", { url: "http://evil.example" }, "deny", "WebFetch(domain:evil.example)"],
    ["gh__delete_repo", {}, "deny", "mcp__gh__delete_repo"],
    ["gh__list_issues", {}, "allow", "mcp__gh"],
    ["ghost__list", {}, "default", undefined],
    ["fs__write", {}, "ask", "fs__write"],
  ];
  for (const [tool, args, effect, rule] of cases) {
    const d = decide(rs, { tool, args }, ctx);
    assert.deepEqual([d.effect, d.rule?.text], [effect, rule], `${tool} ${JSON.stringify(args)}`);
  }
});

Deno.test("decide(): deny beats ask beats allow, whatever the order and the specificity", () => {
  const rs = rules([
    ["Bash(aws s3 ls)", "allow"],
    ["Bash(aws *)", "deny"],
    ["Bash(git push)", "allow"],
    ["Bash(git *)", "ask"],
  ]);
  assert.deepEqual([bash("aws s3 ls", rs).effect, bash("aws s3 ls", rs).rule?.text], [
    "deny",
    "Bash(aws *)",
  ]);
  assert.deepEqual([bash("git push", rs).effect, bash("git push", rs).rule?.text], [
    "ask",
    "Bash(git *)",
  ]);
});

Deno.test("pathVerdict() answers for one real path, as the sandbox and search filters ask", () => {
  assert.equal(
    pathVerdict(PATH_RULES, "read", join(ctx.workspace, "app/.env"), ctx).effect,
    "deny",
  );
  assert.equal(
    pathVerdict(PATH_RULES, "write", join(ctx.workspace, "secrets/x"), ctx).effect,
    "deny",
  );
  assert.equal(
    pathVerdict(PATH_RULES, "read", join(ctx.workspace, "ok.txt"), ctx).effect,
    "default",
  );
});

Deno.test("applyMode() settles a decision by the decision table", () => {
  const d = (effect: Decision["effect"]): Decision => ({ effect, why: "w" });
  const modes: Mode[] = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"];
  const row = (effect: Decision["effect"], cls: string, inside: boolean) =>
    modes.map((m) => applyMode(d(effect), m, cls, { insideWorkspace: inside }).effect);
  // Rules: deny holds everywhere; ask asks (dontAsk and plan deny); allow holds, but not in plan.
  assert.deepEqual(row("deny", "exec", true), ["deny", "deny", "deny", "deny", "deny"]);
  assert.deepEqual(row("ask", "exec", true), ["ask", "ask", "deny", "deny", "ask"]);
  assert.deepEqual(row("allow", "exec", true), ["allow", "allow", "deny", "allow", "allow"]);
  assert.deepEqual(row("allow", "read", false), ["allow", "allow", "allow", "allow", "allow"]);
  assert.deepEqual(row("ask", "read", true), ["ask", "ask", "ask", "deny", "ask"]);
  // No rule: the mode, then the class.
  assert.deepEqual(row("default", "read", true), ["allow", "allow", "allow", "allow", "allow"]);
  assert.deepEqual(row("default", "read", false), ["ask", "ask", "ask", "deny", "allow"]);
  assert.deepEqual(row("default", "write", true), ["ask", "allow", "deny", "deny", "allow"]);
  assert.deepEqual(row("default", "write", false), ["ask", "ask", "deny", "deny", "allow"]);
  assert.deepEqual(row("default", "exec", true), ["ask", "ask", "deny", "deny", "allow"]);
  assert.deepEqual(row("default", "net", true), ["ask", "ask", "deny", "deny", "allow"]);
  assert.deepEqual(row("default", "mcp:gh", true), ["ask", "ask", "deny", "deny", "allow"]);
  const settled = applyMode(d("default"), "plan", "exec", { insideWorkspace: true });
  assert.equal(settled.why, "plan mode allows reading only (w)");
});

Deno.test("decide() never throws on random shell text, and never allows what it cannot parse", () => {
  const tokens = [
    "npm",
    "test",
    "curl",
    "rm",
    "-rf",
    "x",
    "env",
    "timeout",
    "5",
    "xargs",
    "-I{}",
    "{}",
    "sudo",
    "nice",
    "-n",
    "sh",
    "-c",
    "eval",
    "trap",
    "find",
    "-exec",
    "\\;",
    "tee",
    "cd",
    "..",
    "cat",
    ".env",
    "secrets/k",
    "$X",
    '"$X"',
    "'a b'",
    "$(",
    ")",
    "`",
    "<(",
    ">",
    ">>",
    "<",
    "2>&1",
    "|",
    "&&",
    "||",
    ";",
    "&",
    "\n",
    "(",
    "{",
    "}",
    "if",
    "then",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "$((x))",
    "${a[i]}",
    "~/f",
    "*.ts",
    "--",
    "-",
    "=",
    "A=1",
    "PATH=.",
    "<<EOF\nx\nEOF\n",
    "#",
  ];
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const deadline = Date.now() + 10_000;
  let allowed = 0;
  for (let n = 0; n < 3000 && Date.now() < deadline; n++) {
    const len = 1 + (next() % 12);
    const words = Array.from({ length: len }, () => tokens[next() % tokens.length]).join(" ");
    const command = n % 2 ? `npm test ${words}` : words;
    const d = bash(command);
    assert.ok(["allow", "ask", "deny", "default"].includes(d.effect), command);
    if (d.effect === "allow") {
      assert.ok(d.parts?.every((p) => p.effect === "allow"), command);
      // A rule allowed it, or no part needed one.
      assert.ok(d.rule || d.parts?.every((p) => !p.rule), command);
      assert.deepEqual(parseShell(command).problems, [], command);
    }
    allowed += d.effect === "allow" ? 1 : 0;
  }
  assert.ok(allowed > 0, "some random commands are plain enough to be allowed");
});

Deno.test("decide() matches an MCP call by its server and Claude Code's name, never by splitting a name", () => {
  const rs = rules([
    ["mcp__a", "deny"],
    [`mcp__s__${"t".repeat(70)}`, "ask"],
  ]);
  // Server "a_" tool "x" is exposed as "a___x", which starts with "a__": still not server a's.
  const other = decide(
    rs,
    { tool: "a___x", args: {}, mcp: { server: "a_", alias: "mcp__a___x" } },
    ctx,
  );
  assert.equal(other.effect, "default");
  const mine = decide(
    rs,
    { tool: "a__x", args: {}, mcp: { server: "a", alias: "mcp__a__x" } },
    ctx,
  );
  assert.equal(mine.rule?.text, "mcp__a");
  // A long tool name is shortened for the model; Claude Code's name is not, and still matches.
  const long = decide(rs, {
    tool: "s__ttttttttttttttttttttttttttttttttttttttttttttttttttttttt_0123abcd",
    args: {},
    mcp: { server: "s", alias: `mcp__s__${"t".repeat(70)}` },
  }, ctx);
  assert.equal(long.effect, "ask");
});

// ---- the seams: values run as code, programs by path, writes by redirection ----

const FIXED = rules(DIFFERENTIAL_RULES);
/** A PATH with no directory a command can write. */
const SAFE_PATH = ["/usr/local/bin", "/usr/bin", "/bin"];

function fixed(command: string, rs: Rule[] = FIXED, extra: Partial<DecideContext> = {}): Decision {
  return decide(rs, { tool: "bash", args: { command } }, { ...ctx, path: SAFE_PATH, ...extra });
}

/** [command, effect, rule] rows, each checked under `rs`; returns what came out otherwise. */
function wrongRows(
  rows: [string, Decision["effect"], string | undefined][],
  rs: Rule[] = FIXED,
  extra: Partial<DecideContext> = {},
): string[] {
  return rows.flatMap(([command, effect, rule]) => {
    const d = fixed(command, rs, extra);
    return d.effect === effect && d.rule?.text === rule
      ? []
      : [`${JSON.stringify(command)}: got ${d.effect} by ${d.rule?.text} (${d.why})`];
  });
}

Deno.test("decide() asks for x='$(rm v)'; echo \"${x@P}\" and x='a[$(rm v)]'; echo ${!x} under a Bash(rm:*) deny", () => {
  for (const command of [`x='$(rm v)'; echo "\${x@P}"`, "x='a[$(rm v)]'; echo ${!x}"]) {
    const d = fixed(command);
    assert.equal(d.effect, "ask", `${command}: ${d.why}`);
    assert.match(d.why, /known only at run time|cannot be decided before it runs/);
  }
});

Deno.test("decide() asks for every expansion that evaluates a value as code or as a name", () => {
  const ask = (command: string): [string, "ask", undefined] => [command, "ask", undefined];
  assert.deepEqual(
    wrongRows([
      // Transformations: prompt expansion runs $(…); the others are asked for alike.
      ask('echo "${x@P}"'),
      ask('echo "${x@E}"'),
      ask('echo "${x@A}"'),
      ask('echo "${x@a}"'),
      ask('echo "${x@K}"'),
      ask('echo "${x@k}"'),
      // Indirection: the value is a name, and a name may hold a subscript.
      ask("echo ${!x}"),
      ask('echo "${!x:-}"'),
      ask("echo ${!x#a}"),
      ask("declare -n r=x; echo $r"),
      ask("typeset -n r; r=$x; echo $r"),
      ask("f() { local -n r=$1; }; f x"),
      // Builtins that assign a name given at run time, or a subscript.
      ask('printf -v "$x" hi'),
      ask("printf -v 'a[$(rm v)]' hi"),
      ask("printf -v a[i] hi"),
      ask('read "$x" <<< hi'),
      ask('read -a "$x" <<< hi'),
      ask("read 'a[i]' <<< hi"),
      ask('mapfile "$x" < /dev/null'),
      ask('readarray -t "$x" < /dev/null'),
      ask('mapfile -C "$cb" a < /dev/null'),
      ask('unset "$x"'),
      ask("unset 'a[i]'"),
      ask('declare "$x"=1'),
      ask("declare 'a[i]=1'"),
      ask('export "$x"'),
      ask("exec {a[i]}>/dev/null"),
      // Arithmetic on variables: bash evaluates their values, subscripts and all.
      ask("echo $((x))"),
      ask("(( x ))"),
      ask("let x"),
      ask("let i++"),
      ask("[[ $x -eq 1 ]]"),
      ask("[[ -v $x ]]"),
      ask("echo ${a[$i]}"),
      ask("echo ${a[i]}"),
      ask("a[i]=1"),
      ask("B=([x]=1)"),
      ask("declare -a B=([i]=1)"),
      ask("echo ${s:x}"),
      ask("for ((i=x;0;)); do :; done"),
      ask("declare -i y; y=$x"),
      ask("local -i y=1"),
      ask("typeset -i y"),
      // Variables bash runs as code.
      ask("PS4='$(rm v)'; set -x; :"),
      ask("export PS4='$(rm v)'; set -x; :"),
      ask("declare PS4='$(touch t)'"),
      ask("read PS4 < f"),
      ask("printf -v PS4 %s x"),
      ask("BASH_ENV=./s.sh bash -c :"),
      ask("env BASH_ENV=./s.sh bash -c :"),
      ask("env 'BASH_FUNC_e%%=() { :; }' bash -c e"),
      ask("PROMPT_COMMAND='touch t' bash -ic :"),
      // Commands bash runs from text or files the parser cannot see.
      ask(". ./s.sh"),
      ask("source s.sh"),
      ask("alias e='touch t'"),
      ask("compgen -C 'touch t' x"),
      ask("hash -p /usr/bin/touch e; e t"),
      ask("enable -f ./x.so x"),
      ask("bash -lc 'echo hi'"),
      ask("bash -ic 'echo hi'"),
      ask("bash --rcfile x -c 'echo hi'"),
    ]),
    [],
  );
});

Deno.test("decide() still allows expansions that only read a value", () => {
  assert.deepEqual(
    wrongRows([
      ['x=1; echo "${x@Q}" "${x@U}" "${x@u}" "${x@L}"', "allow", "Bash(echo:*)"],
      [
        "echo ${!a[@]} ${!pre@} ${!pre*} ${#x} ${x:-d} ${x%.c} ${x/a/b} ${x^^}",
        "allow",
        "Bash(echo:*)",
      ],
      ["echo $((1 + 2)) ${a[0]} ${s:1:2}", "allow", "Bash(echo:*)"],
      ["declare x=1; echo $x", "allow", "Bash(echo:*)"],
      ["printf -v out %s hi; echo $out", "allow", "Bash(echo:*)"],
      ["read -r line < /dev/null; echo $line", "allow", "Bash(echo:*)"],
      ["mapfile -t lines < /dev/null; echo ${lines[0]}", "allow", "Bash(echo:*)"],
      ["unset x; echo", "allow", "Bash(echo:*)"],
      ["mapfile -C 'rm v' -c 1 a < /dev/null", "deny", "Bash(rm:*)"],
      ["alias", "allow", undefined],
    ]),
    [],
  );
  // The callback runs with the index and the line appended: not what Bash(npm test) names.
  const exact = rules([["Bash(npm test)", "allow"]]);
  assert.equal(fixed("mapfile -C 'npm test' -c 1 a < /dev/null", exact).effect, "default");
  assert.equal(fixed("npm test", exact).effect, "allow");
});

Deno.test("decide() denies /bin/rm v, git --no-pager push and git -C . push under Bash(rm:*) and Bash(git push:*) denies", () => {
  const RM = "Bash(rm:*)";
  const PUSH = "Bash(git push:*)";
  assert.deepEqual(
    wrongRows([
      ["/bin/rm v", "deny", RM],
      ["/usr/bin/rm v", "deny", RM],
      ["./rm v", "deny", RM],
      ["../x/rm v", "deny", RM],
      ["~/bin/rm v", "deny", RM],
      ["busybox rm v", "deny", RM],
      ["toybox rm -rf v", "deny", RM],
      ["/usr/local/bin/busybox rm v", "deny", RM],
      ["timeout 5 /bin/rm v", "deny", RM],
      ["./env rm v", "deny", RM],
      ["git --no-pager push", "deny", PUSH],
      ["git -C . push", "deny", PUSH],
      ["git -C /elsewhere push origin main", "deny", PUSH],
      ["git -c a.b=c push", "deny", PUSH],
      ["git --git-dir=.git --work-tree . push", "deny", PUSH],
      ["git --exec-path=/x push", "deny", PUSH],
      ["git -P --namespace n --literal-pathspecs push", "deny", PUSH],
      ["git --bare push", "deny", PUSH],
      ["/usr/bin/git --no-pager push", "deny", PUSH],
      ["env git --no-pager push", "deny", PUSH],
      // An option that is not known, or that can make any subcommand a push: asked.
      ["git --frobnicate push", "ask", PUSH],
      ["git -c alias.p=push p", "ask", PUSH],
      ["git $OPTS push", "ask", PUSH],
      // Not a push, however it is spelled.
      ["git --no-pager log", "allow", undefined],
      ["git --no-pager log --ext-diff", "default", undefined],
      ["echo rm v", "allow", "Bash(echo:*)"],
    ]),
    [],
  );
});

Deno.test("decide() reads the global options of git, npm, pnpm, yarn, cargo, go, docker, podman, kubectl and gh", () => {
  const rs = rules([
    ["Bash(npm publish:*)", "deny"],
    ["Bash(pnpm publish:*)", "deny"],
    ["Bash(yarn publish:*)", "deny"],
    ["Bash(cargo publish:*)", "deny"],
    ["Bash(go run:*)", "deny"],
    ["Bash(docker rm:*)", "deny"],
    ["Bash(podman rm:*)", "deny"],
    ["Bash(kubectl delete:*)", "deny"],
    ["Bash(gh repo delete:*)", "deny"],
  ]);
  const deny = (c: string, r: string): [string, "deny", string] => [c, "deny", `Bash(${r}:*)`];
  assert.deepEqual(
    wrongRows(
      [
        deny("npm --prefix ../x publish", "npm publish"),
        deny("npm -w pkg --silent publish", "npm publish"),
        deny("npm --registry=https://r.example publish", "npm publish"),
        deny("pnpm -C sub --filter a publish", "pnpm publish"),
        deny("yarn --cwd sub --silent publish", "yarn publish"),
        deny("cargo +nightly -q --locked publish", "cargo publish"),
        deny("cargo --config build.rustc-wrapper=x publish", "cargo publish"),
        deny("docker --context c -l debug rm box", "docker rm"),
        deny("docker -H tcp://h rm box", "docker rm"),
        deny("podman --log-level debug rm box", "podman rm"),
        deny("podman --remote rm box", "podman rm"),
        deny("kubectl --context prod -n ns delete pod p", "kubectl delete"),
        deny("kubectl --kubeconfig k delete pod p", "kubectl delete"),
        deny("gh -R o/r repo delete", "gh repo delete"),
        ["go -C x run .", "ask", "Bash(go run:*)"],
        ["npm --weird publish", "ask", "Bash(npm publish:*)"],
        ["docker --weird rm box", "ask", "Bash(docker rm:*)"],
      ],
      rs,
    ),
    [],
  );
});

Deno.test("decide() lets an allow rule match the bare name through a PATH nobody can write, or the exact path it names", () => {
  const diff = "Bash(git diff:*)";
  const rs = rules([["Bash(git diff:*)", "allow"], ["Bash(/usr/bin/git log:*)", "allow"]]);
  const ws = ctx.workspace;
  // Global options that change nothing are read through; the others never allowed.
  assert.deepEqual(
    wrongRows(
      [
        ["git diff", "allow", diff],
        ["git --no-pager diff --stat", "allow", diff],
        ["git -P diff", "allow", diff],
        ["git -C src diff", "allow", diff],
        ["git -C /etc diff", "default", undefined],
        ["git -C $D diff", "default", undefined],
        ["git -c core.pager=x diff", "default", undefined],
        ["git --exec-path=. diff", "default", undefined],
        ["git --git-dir=/x/.git diff", "default", undefined],
        ["git --work-tree=/x diff", "default", undefined],
        ["git --bare diff", "default", undefined],
        // By path: only the exact path a rule names, never a relative one.
        ["/usr/bin/git diff --ext-diff", "default", undefined],
        ["/usr/bin/git log", "allow", "Bash(/usr/bin/git log:*)"],
        ["./git diff", "default", undefined],
        ["bin/git diff", "default", undefined],
        ["git log --ext-diff", "default", undefined],
        // Read-only: a system git needs no rule, by path or not.
        ["/usr/bin/git diff", "allow", undefined],
        ["git log", "allow", undefined],
      ],
      rs,
    ),
    [],
  );
  // A PATH with a directory commands can write before the program: not what the rule allowed.
  const writable = [join(ws, "bin"), "/tmp/bin", ".", ""];
  for (const dir of writable) {
    const d = fixed("git diff", rs, { path: [dir, ...SAFE_PATH] });
    assert.deepEqual([d.effect, d.rule], ["default", undefined], `PATH=${dir}: ${d.why}`);
    assert.match(d.why, /looked up in PATH/);
  }
  const extra = fixed("git diff", rs, { path: ["/opt/tools", ...SAFE_PATH], writable: ["/opt"] });
  assert.equal(extra.effect, "default", extra.why);
  // After the program, a writable directory changes nothing.
  assert.equal(fixed("git diff", rs, { path: [...SAFE_PATH, join(ws, "bin")] }).effect, "allow");
  // A program that needs no rule is still looked up: cat from the workspace is not cat.
  assert.equal(fixed("cat src/a.ts", rs).effect, "allow");
  assert.equal(
    fixed("cat src/a.ts", rs, { path: [join(ws, "bin"), ...SAFE_PATH] }).effect,
    "default",
  );
  assert.equal(
    fixed("cat src/a.ts", rs, { path: [join(ws, "bin"), ...SAFE_PATH] }).why,
    "cat src/a.ts: cat is looked up in PATH, where " + join(ws, "bin") +
      " (a directory commands can write) comes first: no allow rule covers it",
  );
  // A builtin runs whatever PATH holds.
  assert.equal(fixed("echo hi", FIXED, { path: [".", ...SAFE_PATH] }).effect, "allow");
  assert.equal(fixed("env echo hi", FIXED, { path: [".", ...SAFE_PATH] }).effect, "default");
});

Deno.test("decide() denies by a rule that names a program by path, whatever the command's path", () => {
  const rs = rules([["Bash(/usr/bin/rm:*)", "deny"]]);
  assert.deepEqual(
    wrongRows([
      ["rm v", "deny", "Bash(/usr/bin/rm:*)"],
      ["/bin/rm v", "deny", "Bash(/usr/bin/rm:*)"],
      ["./rm v", "deny", "Bash(/usr/bin/rm:*)"],
    ], rs),
    [],
  );
});

Deno.test("decide() makes git diff > out.txt a write no rule allows under Bash(git diff:*), and echo hi >> notes.txt too", () => {
  const write = (command: string, rs: Rule[] = FIXED) => {
    const d = fixed(command, rs);
    return [d.effect, d.rule?.text, d.asWrite ?? false];
  };
  const cases: [string, unknown[], Rule[]?][] = [
    ["git diff > out.txt", ["default", undefined, true]],
    ["echo hi >> notes.txt", ["default", undefined, true]],
    ["git diff &> all.txt", ["default", undefined, true]],
    ["git diff >| clobber.txt", ["default", undefined, true]],
    ["git diff 3> fd3.txt", ["default", undefined, true]],
    ["git diff >& both.txt", ["default", undefined, true]],
    ["git diff 2> err.txt", ["default", undefined, true]],
    ["echo hi > src/new.ts", ["default", undefined, true]],
    ["git diff --output=o.txt", ["default", undefined, true]],
    ["git --no-pager diff --output o.txt HEAD", ["default", undefined, true]],
    // Read-only but for the option that writes: the command needs a rule, the file an Edit rule.
    ["sort -o s.txt ok.txt", ["default", undefined, false]],
    ["git log --output=log.txt", ["default", undefined, false]],
    // Nothing is written: free.
    ["git diff > /dev/null", ["allow", "Bash(git diff:*)", false]],
    ["git diff 2>&1 >/dev/stderr", ["allow", "Bash(git diff:*)", false]],
    ["echo hi > /dev/stdout 2>/dev/stderr", ["allow", "Bash(echo:*)", false]],
    ["git diff 2>&1 | tail -3", ["allow", "Bash(git diff:*)", false]],
    // A command no rule allows stays the class's; a write outside the workspace is not a write's.
    ["echo hi | tee t.txt", ["default", undefined, false]],
    ["git diff > /etc/out.txt", ["default", undefined, false]],
    ["grep x ok.txt > /etc/out.txt", ["default", undefined, false]],
    // A read-only command needs no rule: only its redirection does.
    ["git log > log.txt", ["default", undefined, true]],
    // An Edit or Write rule allows it.
    ["echo hi >> notes.txt", ["allow", "Bash(echo:*)", false], [
      ...FIXED,
      ...rules([["Edit(./notes.txt)", "allow"]]),
    ]],
    [
      "echo hi > x.txt",
      ["allow", "Edit", false],
      rules([["Bash(rm:*)", "deny"], ["Edit", "allow"]]),
    ],
    [
      "echo hi > src/x.txt",
      ["allow", "Edit(src/**)", false],
      rules([
        ["Bash(rm:*)", "deny"],
        ["Edit(src/**)", "allow"],
      ]),
    ],
    // A deny still wins.
    ["echo hi > secrets/k", ["deny", "Edit(./secrets/**)", false], [
      ...FIXED,
      ...rules([["Edit(./secrets/**)", "deny"]]),
    ]],
    ["echo hi > x.txt", ["deny", "Edit", false], [...FIXED, ...rules([["Edit", "deny"]])]],
  ];
  const wrong = cases.flatMap(([command, want, rs]) => {
    const got = write(command, rs);
    return JSON.stringify(got) === JSON.stringify(want)
      ? []
      : [`${command}: got ${JSON.stringify(got)} (${fixed(command, rs).why})`];
  });
  assert.deepEqual(wrong, []);
  assert.equal(
    fixed("git diff > out.txt").why,
    "git diff > out.txt: writes out.txt, which no Edit or Write rule allows",
  );
});

Deno.test("decide() on a skill call: Skill(NAME) one skill, Skill(NAME *) a prefix, Skill every one; deny first", () => {
  const rs = rules([
    ["Skill(deploy)", "deny"],
    ["Skill(review *)", "ask"],
    ["Skill(pdf)", "allow"],
  ]);
  const skill = (name: string, r: Rule[] = rs) => {
    const d = decide(r, { tool: "Skill", args: { skill: name } }, ctx);
    return [d.effect, d.rule?.text];
  };
  assert.deepEqual(skill("deploy"), ["deny", "Skill(deploy)"]);
  assert.deepEqual(skill("review-pr"), ["ask", "Skill(review *)"]);
  assert.deepEqual(skill("pdf"), ["allow", "Skill(pdf)"]);
  assert.deepEqual(skill("deploy-docs"), ["default", undefined]);
  assert.deepEqual(skill("pdf", rules([["Skill", "deny"], ["Skill(pdf)", "allow"]])), [
    "deny",
    "Skill",
  ]);
  assert.throws(() => rules([["Skill(a b)", "deny"]]), /is not a skill name/);
});
