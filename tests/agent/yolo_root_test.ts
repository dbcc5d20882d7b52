import assert from "node:assert/strict";
import { crabArgs, type Sandbox, sandbox } from "../support/cli.ts";
import { startFakeModel } from "../support/fake_model.ts";
import { terminal } from "../support/tmux.ts";

// Who crab runs as is set with a user namespace: `unshare -Ur` maps the test's user to
// root (uid 0), `unshare --map-user=1000` to an ordinary user.
const AS_ROOT = ["-Ur"];
const AS_USER = ["--map-user=1000", "--map-group=1000"];

const WARNING = "crab: warning: --yolo as root: every call runs without asking, with root's rights";

async function printAs(s: Sandbox, who: string[], args: string[]) {
  await using fake = await startFakeModel([{ text: "done" }]);
  const out = await new Deno.Command("unshare", {
    args: [
      ...who,
      Deno.execPath(),
      ...crabArgs(),
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      ...args,
      "-p",
      "go",
    ],
    cwd: s.ws,
    env: { ...s.env, ANTHROPIC_API_KEY: "k" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("crab --yolo -p as root prints one warning line, and only then", async () => {
  using s = sandbox();
  const root = await printAs(s, AS_ROOT, ["--yolo"]);
  assert.equal(root.code, 0, root.stderr);
  assert.equal(root.stdout, "done\n");
  assert.equal(root.stderr, WARNING + "\n");
  const user = await printAs(s, AS_USER, ["--yolo"]);
  assert.equal(user.code, 0, user.stderr);
  assert.equal(user.stderr, "");
  const noYolo = await printAs(s, AS_ROOT, []);
  assert.equal(noYolo.code, 0, noYolo.stderr);
  assert.equal(noYolo.stderr, "");
});

Deno.test("crab --yolo as root warns in interactive mode too", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([]);
  const argv = [
    "unshare",
    ...AS_ROOT,
    Deno.execPath(),
    ...crabArgs(),
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--yolo",
  ];
  await using t = await terminal(argv, { env: { ...s.env, ANTHROPIC_API_KEY: "k" }, cwd: s.ws });
  const screen = await t.waitFor("› ", 30_000);
  assert.equal(screen.split("--yolo as root").length - 1, 1, screen);
  assert.match(screen, /crab: warning: --yolo as root: every call runs without asking/);
});
