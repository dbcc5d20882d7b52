import assert from "node:assert/strict";
import { MAIN, sandbox } from "../../support/cli.ts";
import { terminal } from "../../support/tmux.ts";
import { presetFlags } from "../../../tools/host/capabilities.ts";

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

Deno.test("crab tool read and grep show a file's control sequences escaped on a terminal", async () => {
  using s = sandbox();
  // Clear-screen, an OSC 52 clipboard write and a bidi override.
  s.put("evil.txt", "before\u001b[2J\u001b]52;c;aGVsbG8=\u0007after \u202Egnp.exe\n");
  const crab = [Deno.execPath(), "run", ...presetFlags("full"), MAIN].map(quote).join(" ");
  await using t = await terminal(
    [
      "sh",
      "-c",
      `${crab} tool read '{"path":"evil.txt"}'; ${crab} tool grep '{"pattern":"after"}'; echo DONE`,
    ],
    { env: s.env, cwd: s.ws },
  );
  const screen = await t.waitFor(/^DONE$/m);
  const shown = "before\\x1b[2J\\x1b]52;c;aGVsbG8=\\x07after <U+202E>gnp.exe";
  assert.ok(screen.includes(`1\t${shown}`) || screen.includes(`1       ${shown}`), screen);
  assert.ok(screen.includes(`evil.txt:1:${shown}`), screen);
});

Deno.test("crab tool output into a pipe stays byte for byte", async () => {
  using s = sandbox();
  const text = "before\u001b[2Jafter\n";
  s.put("evil.txt", text);
  const r = await s.crab(["tool", "read", JSON.stringify({ path: "evil.txt" })]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `1\t${text}`);
});
