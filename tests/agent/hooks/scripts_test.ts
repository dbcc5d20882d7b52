/**
 * The files hooks run, protected and pinned: a sandboxed command cannot change
 * them, write and edit ask for them, and a hook whose file changed anyway does
 * not run until the user says so (in print mode its guard fails closed).
 * Real print runs against the fake model, real bwrap.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { hookRows, on, printRun, results, script, userHooks } from "../../support/hooks.ts";
import { commandWords, hookScripts } from "../../../agent/settings/hooks.ts";
import { workspaceCodeOf } from "../../../agent/hooks/scripts.ts";

const GUARD = `#!/bin/sh
input=$(cat)
case "$input" in
  *'"command":"rm '*) echo "rm is not allowed here" >&2; exit 2;;
esac
exit 0
`;

Deno.test("commandWords() and hookScripts() find every file a hook's command names in the workspace", () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hook-files-" }));
  try {
    for (const f of ["scripts/check.sh", ".claude/hooks/guard.py", "lint.json", "b c.sh"]) {
      Deno.mkdirSync(join(ws, f, ".."), { recursive: true });
      Deno.writeTextFileSync(join(ws, f), "x");
    }
    assert.deepEqual(commandWords(`a 'b c' "d\\"e" f\\ g && h;i|j`), [
      "a",
      "b c",
      'd"e',
      "f g",
      "h",
      "i",
      "j",
    ]);
    const command =
      `bash ./scripts/check.sh && python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py ` +
      `--config=lint.json 'b c.sh' /bin/sh missing.sh ~/x`;
    assert.deepEqual(hookScripts(command, ws, "/nonexistent-home"), [
      join(ws, "scripts/check.sh"),
      join(ws, ".claude/hooks/guard.py"),
      join(ws, "lint.json"),
      join(ws, "b c.sh"),
    ]);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test("workspaceCodeOf() names the hooks whose programs load code from the workspace", () => {
  assert.equal(workspaceCodeOf("npm run lint"), "a package script");
  assert.equal(workspaceCodeOf("npx eslint --fix ."), "a package's binary");
  assert.equal(workspaceCodeOf("cd x && make check"), "the workspace's build file");
  assert.equal(workspaceCodeOf("deno task fmt"), "deno task or a workspace module");
  assert.equal(workspaceCodeOf("./scripts/check.sh"), "a script in the workspace");
  assert.equal(
    workspaceCodeOf("prettier --check ."),
    "a tool that loads the workspace's config and plugins",
  );
  assert.equal(workspaceCodeOf("jq -r .tool_name"), undefined);
  assert.equal(workspaceCodeOf("say done"), undefined);
});

Deno.test("a hook's script in the workspace: a command cannot change it, write asks, and a changed one fails closed", async () => {
  using s = sandbox();
  s.put("scripts/check.sh", GUARD);
  Deno.chmodSync(join(s.ws, "scripts/check.sh"), 0o755);
  s.put("calc.py", "print(6 * 7)\n");
  // The README's own example: the guard is a script in the workspace.
  userHooks(s, on("PreToolUse", "Bash", "./scripts/check.sh"));
  // First run: the guard is pinned; a command trying to rewrite it fails, write is refused.
  const rewrite = "printf '#!/bin/sh\\nexit 0\\n' > scripts/check.sh; echo wrote";
  await using fake = await startFakeModel([
    ...script(
      { name: "bash", args: { command: rewrite } },
      { name: "write", args: { path: "scripts/check.sh", content: "#!/bin/sh\nexit 0\n" } },
    ),
    ...script({ name: "bash", args: { command: "rm -f calc.py" } }),
    ...script({ name: "bash", args: { command: "rm -f calc.py" } }),
  ]);
  let r = await printRun(s, fake, ["-p", "relax the guard"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "scripts/check.sh")), GUARD);
  const [bash, write] = results(fake);
  assert.match(bash, /Read-only file system|Permission denied/);
  assert.match(
    write,
    /^Error \[protected_path\]: Cannot write "scripts\/check\.sh": it is a protected path \(a PreToolUse hook runs it, outside the sandbox\)/,
  );
  // Unchanged, it runs and blocks rm.
  r = await printRun(s, fake, ["-p", "clean up"]);
  assert.equal(r.code, 0, r.stderr);
  // Each run's first request carries no result: only the calls' results count.
  const said = () => results(fake).filter((t) => t !== "");
  assert.match(said()[2], /rm is not allowed here/);
  assert.ok(Deno.statSync(join(s.ws, "calc.py")).isFile);
  // Changed behind crab's back: it does not run, and the call it guards is refused.
  Deno.writeTextFileSync(join(s.ws, "scripts/check.sh"), "#!/bin/sh\nexit 0\n");
  r = await printRun(s, fake, ["-p", "clean up"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /not running the PreToolUse hook "\.\/scripts\/check\.sh": scripts\/check\.sh changed since crab pinned it/,
  );
  assert.match(said()[3], /^Error \[hook_denied\]: .*it may not run \(scripts\/check\.sh changed/);
  assert.ok(Deno.statSync(join(s.ws, "calc.py")).isFile, "the guarded rm ran");
  assert.deepEqual(
    hookRows(s).map((row) => row.outcome),
    ["ok", "blocked", "blocked"],
  );
});
