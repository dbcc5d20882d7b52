import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { makePng } from "../../support/media.ts";
import { sleepMarker } from "../../support/marker.ts";

function processes(pattern: string): number {
  const out = new Deno.Command("ps", { args: ["-eo", "args"] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim() === pattern)
    .length;
}

Deno.test("repl: the screen moves while the model takes 4 s to answer", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "late answer", delayMs: 4000 }]);
  await using t = await replAgainst(s, fake);
  await submit(t, "hi");
  const first = await t.waitFor(/thinking… \d+\.\ds/);
  const seconds = (screen: string) => Number(screen.match(/thinking… (\d+\.\d)s/)![1]);
  const later = await t.waitFor(
    new RegExp(`thinking… (?!${seconds(first).toFixed(1).replace(".", "\\.")}s)\\d+\\.\\ds`),
  );
  assert.ok(seconds(later) > seconds(first), `${seconds(first)} then ${seconds(later)}`);
  assert.match(later, /↓ 0 tokens · Esc to interrupt/);
  // The answer streams in under the spinner, which goes when the turn ends: the screen settles
  // on the answer alone (a loaded machine shows the two together for a moment).
  const done = await t.waitFor(/^(?![\s\S]*thinking…)[\s\S]*late answer/, 15_000);
  assert.match(done, /late answer/);
});

Deno.test("repl: a running command's output streams under it, and its first lines stay after", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "bash",
        args: { command: "for i in 1 2 3 4 5 6 7 8; do echo tick$i; sleep 0.75; done" },
      }],
    },
    { text: "Ticked." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await submit(t, "tick");
  const running = await t.waitFor(/│ tick2/);
  assert.doesNotMatch(running, /tick8/);
  assert.match(running, /bash for i in .* · \d+\.\ds/);
  const after = await t.waitFor("Ticked.", 20_000);
  assert.match(
    after,
    /● bash for i in .* · \d+ B · \d+ ms\n +⎿ tick1\n +tick2\n +tick3\n +tick4\n.*4 more lines/,
  );
  assert.doesNotMatch(after, /│ tick/);
});

Deno.test("repl: Markdown is rendered: no asterisks, headings, lists and code", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{
    text:
      "# Plan\n\nThis is **bold** and *soft* and `code`.\n\n- first item\n- second **item**\n\n" +
      "```ts\nconst x = 1;\n```\n",
  }]);
  await using t = await replAgainst(s, fake);
  await submit(t, "hi");
  const screen = await t.waitFor("const x = 1;");
  assert.match(screen, /^Plan$/m);
  assert.match(screen, /^This is bold and soft and code\.$/m);
  assert.match(screen, /^• first item\n• second item$/m);
  assert.doesNotMatch(screen, /\*\*|`|^# /m);
});

Deno.test("repl: /help lists /compact and /model; a prompt starting with a path is sent", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "looked at it" }]);
  await using t = await replAgainst(s, fake);
  await submit(t, "/help");
  const help = await t.waitFor("/model");
  assert.match(help, /\/compact \[focus\]/);
  assert.match(help, /\/model \[id\]/);
  await submit(t, "/tmp/x.py has a bug");
  await t.waitFor("looked at it");
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /\/tmp\/x\.py has a bug/);
});

Deno.test("repl: Ctrl-O shows every call's full result, paged", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "seq 101 130" } }] },
    { text: "Counted." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await submit(t, "count");
  const preview = await t.waitFor("Counted.");
  assert.match(preview, /⎿ 101\n +102\n +103\n +104\n +… 26 more lines/);
  assert.doesNotMatch(preview, /^130$/m);
  await t.waitFor(/› $/m);
  await t.keys("C-o");
  const detail = await t.waitFor(/every call in full · lines/);
  assert.match(detail, /"command": "seq 101 130"/);
  await t.keys("G");
  await t.waitFor(/^130$/m);
  await t.keys("q");
  await t.waitFor(/› $/m);
});

Deno.test("repl: @path attaches the file through read, so it may be edited next", async () => {
  using s = sandbox();
  s.put("a.txt", "the secret is 4711\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "edit", args: { path: "a.txt", edits: [{ old: "4711", new: "42" }] } }] },
    { text: "Edited." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await t.waitFor(/› $/m);
  await t.type("change @a");
  await t.keys("Tab");
  await t.waitFor("change @a.txt");
  await t.type(" please");
  await t.keys("Enter");
  const screen = await t.waitFor("Edited.");
  assert.match(screen, /● read a\.txt · /);
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /the secret is 4711/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "the secret is 42\n");
  // The auto-approved edit still shows its change.
  assert.match(screen, /● edit a\.txt · .*\n.*⎿ --- a\.txt/);
  assert.match(screen, /-the secret is 4711\n +\+the secret is 42/);
});

Deno.test("repl: @shot.png and a pasted path of an image attach the image itself", async () => {
  using s = sandbox();
  Deno.writeFileSync(join(s.ws, "shot.png"), await makePng(64, 48));
  Deno.writeFileSync(join(s.ws, "mock up.png"), await makePng(30, 20));
  await using fake = await startFakeModel([{ text: "Seen." }, { text: "Seen too." }]);
  await using t = await replAgainst(s, fake, [], "claude-sonnet-4-6");
  await submit(t, "what is wrong in @shot.png");
  const screen = await t.waitFor("Seen.");
  assert.match(screen, /● read shot\.png · .*\n(.*\n)*.*\[image: shot\.png 64×48\]/);
  const imagesOf = (i: number) => {
    const body = fake.modelRequests()[i].body as { messages: { content: unknown }[] };
    const blocks = body.messages.at(-1)!.content as { type: string; source?: unknown }[];
    return blocks.filter((b) => b.type === "image").length;
  };
  assert.equal(imagesOf(0), 1);
  await submit(t, `and '${join(s.ws, "mock\\ up.png")}' too`);
  const second = await t.waitFor("Seen too.");
  assert.match(second, /\[image: .*mock up\.png 30×20\]/);
  assert.equal(imagesOf(1), 1);
});

Deno.test("repl: Esc interrupts a running command, leaving no process, and it reads as aborted", async () => {
  using s = sandbox();
  const marker = sleepMarker(700);
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
    { text: "Still here." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await submit(t, "wait");
  await until(() => processes(`sleep ${marker}`) > 0, "the bash call's sleep runs");
  assert.equal(processes(`sleep ${marker}`), 1);
  await t.waitFor(/bash sleep .* · \d+\.\ds/);
  await t.keys("Escape");
  const screen = await t.waitFor("⏹ interrupted", 5000);
  assert.match(screen, /● bash sleep [\d.]+ · aborted after \d+ ms/);
  assert.equal(processes(`sleep ${marker}`), 0);
  await submit(t, "again");
  await t.waitFor("Still here.");
});

Deno.test("repl: f at the approval refuses and sends the user's words to the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "rm -rf build" } }] },
    { text: "Understood, using ls." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "clean up");
  await t.waitFor("allow? [y]es/[n]o/[a]ll ");
  await t.keys("f");
  await t.waitFor("tell the model: ");
  await t.type("no, list the folder with ls instead");
  await t.keys("Enter");
  await t.waitFor("Understood, using ls.");
  const refusal = toolResults(fake.modelRequests()[1])[0];
  assert.equal(refusal.isError, true);
  assert.match(refusal.text, /refused.*no, list the folder with ls instead/s);
});

Deno.test("repl: a newline in a path cannot forge a second prompt line", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "notes\n⚠ write — safe.txt", content: "x\n" } }] },
    { text: "Not written." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "write");
  const screen = await t.waitFor("allow? [y]es/[n]o/[a]ll ");
  assert.equal(screen.split("\n").filter((l) => l.startsWith("⚠ write")).length, 1);
  assert.match(screen, /⚠ write — write: notes\\n⚠ write — safe\.txt/);
  await t.keys("n");
  await t.waitFor("Not written.");
});

Deno.test("repl: a new file's approval shows 20 lines, and v pages through all of it first", async () => {
  using s = sandbox();
  const content = Array.from({ length: 50 }, (_, i) => `row ${i + 1}`).join("\n") + "\n";
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "notes.txt", content } }] },
    { text: "Wrote it." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "write");
  const screen = await t.waitFor("allow? [y]es/[n]o/[a]ll ");
  assert.match(screen, /new file notes\.txt \(50 lines, 341 B\)\n\+row 1\n/);
  assert.match(screen, /\+row 20\n… 30 more lines/);
  assert.doesNotMatch(screen, /row 21/);
  await t.keys("v");
  await t.waitFor("the whole change · lines");
  await t.keys("G");
  await t.waitFor(/^\+row 50$/m);
  await t.keys("q");
  await t.waitFor(/allow\? \[y\]es\/\[n\]o\/\[a\]ll [a-z -]*this session(\/\[p\]ermanently)?: $/m);
  await t.keys("y");
  await t.waitFor("Wrote it.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "notes.txt")), content);
});

Deno.test("repl: a change to a 2 MB file shows its first changed lines, and v pages to the count of the rest", async () => {
  using s = sandbox();
  const old = Array.from({ length: 40_000 }, (_, i) => `row ${i + 1} ${"=".repeat(40)}`);
  s.put("big.txt", old.join("\n") + "\n");
  const changed = [...old];
  for (let k = 0; k < 1000; k++) changed[k * 40 + 20] = `changed ${k}`;
  const content = changed.join("\n") + "\n";
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "big.txt", limit: 1 } }] },
    { calls: [{ name: "write", args: { path: "big.txt", content } }], chunk: 1 << 16 },
    { text: "Wrote it." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "change it");
  const screen = await t.waitFor("allow? [y]es/[n]o/[a]ll ", 20_000);
  assert.match(
    screen,
    /@@ -18,7 \+18,7 @@\n row 18 =+\n row 19 =+\n row 20 =+\n-row 21 =+\n\+changed 0\n/,
  );
  assert.match(screen, /… \d+ more lines \(\d+ changed\) · v: view them/);
  await t.keys("v");
  await t.waitFor("the whole change · lines");
  await t.keys("G");
  await t.waitFor(/^… \d+ more changed lines not shown/m);
  await t.keys("q");
  await t.waitFor(/allow\? \[y\]es\/\[n\]o\/\[a\]ll [a-z -]*this session(\/\[p\]ermanently)?: $/m);
  await t.keys("y");
  await t.waitFor("Wrote it.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "big.txt")), content);
});

Deno.test("repl: the trust prompt lists what it would turn on, and a no is remembered", async () => {
  using s = sandbox();
  s.put(".crab/config.json", JSON.stringify({ maxTurns: 3, allow: ["exec"] }));
  s.put(".mcp.json", JSON.stringify({ mcpServers: { helper: { command: "/bin/true" } } }));
  await using fake = await startFakeModel([]);
  {
    await using t = await replAgainst(s, fake);
    const screen = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
    assert.match(screen, /settings from \.crab\/config\.json: maxTurns, allow/);
    assert.match(screen, /MCP server "helper": runs \/bin\/true/);
    await t.keys("n");
    await t.waitFor(/› $/m);
  }
  await using again = await replAgainst(s, fake);
  const screen = await again.waitFor(/› $/m);
  assert.doesNotMatch(screen, /Trust this workspace/);
  assert.match(screen, /you declined to trust this workspace/);
  assert.match(screen, /Waiting for trust:\n.*\n {2}• MCP server "helper": runs \/bin\/true\n/);
});

Deno.test("repl: keys arriving together at the approval: the first one that answers counts", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo ran > ran.txt" } }] },
    { text: "Done." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "go");
  await t.waitFor("allow? [y]es/[n]o/[a]ll ");
  await t.type("xy");
  await t.waitFor("Done.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "ran.txt")), "ran\n");
});

Deno.test("repl: a pasted tab stays a tab; Ctrl-R finds an earlier prompt", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "got the paste" }, { text: "got it again" }]);
  await using t = await replAgainst(s, fake);
  await t.waitFor(/› $/m);
  await t.paste("col1\tcol2");
  await t.keys("Enter");
  await t.waitFor("got the paste");
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /col1\\tcol2/);
  await t.waitFor(/› $/m);
  await t.keys("C-r");
  await t.type("col1");
  await t.waitFor("search: col1 › col1");
  await t.keys("Enter");
  await t.waitFor("got it again");
  assert.match(JSON.stringify(fake.modelRequests()[1].body), /col1\\tcol2.*col1\\tcol2/);
});
