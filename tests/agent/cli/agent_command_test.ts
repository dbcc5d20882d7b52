/**
 * The root command's system prompt flags, run for real against the fake model:
 * what each one puts in the system prompt the model receives.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import {
  type FakeModel,
  startFakeModel,
  systemPrompt,
  toolNames,
} from "../../support/fake_model.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab([
    "-p",
    "hi",
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--model",
    "fake-model",
    ...args,
  ], { env: { ANTHROPIC_API_KEY: "k" } });
}

Deno.test("crab -p --system-prompt replaces crab's prompt; instructions and tools remain", async () => {
  using s = sandbox();
  s.put("AGENTS.md", "Project: use tabs.");
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await printRun(s, fake, ["--system-prompt", "You are a pirate."]);
  assert.equal(r.code, 0, r.stderr);
  const req = fake.modelRequests()[0];
  assert.equal(
    systemPrompt(req),
    "You are a pirate.\n\n# Project instructions (AGENTS.md)\n\nProject: use tabs.\n",
  );
  // The tools' contracts reach the model through the tool list.
  assert.ok(toolNames(req).includes("edit"), toolNames(req).join(","));
});

Deno.test("crab -p --append-system-prompt adds after crab's prompt and the instructions", async () => {
  using s = sandbox();
  s.put("AGENTS.md", "Project: use tabs.");
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await printRun(s, fake, ["--append-system-prompt", "Answer in French."]);
  assert.equal(r.code, 0, r.stderr);
  const prompt = systemPrompt(fake.modelRequests()[0]);
  assert.match(prompt, /^You are crab/);
  assert.ok(prompt.endsWith("Project: use tabs.\n\n\nAnswer in French."), prompt.slice(-120));
});

Deno.test("crab -p --system-prompt-file and --append-system-prompt-file read files from where crab starts", async () => {
  using s = sandbox();
  s.put("prompts/sys.md", "From a file.\n");
  s.put("prompts/more.md", "More from a file.\n");
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await printRun(s, fake, [
    "--system-prompt-file",
    "prompts/sys.md",
    "--append-system-prompt",
    "Inline.",
    "--append-system-prompt-file",
    join(s.ws, "prompts", "more.md"),
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    systemPrompt(fake.modelRequests()[0]),
    "From a file.\n\n\nInline.\n\nMore from a file.\n",
  );
});

Deno.test("crab exits 2 naming a system prompt file it cannot read, before any model call", async () => {
  using s = sandbox();
  Deno.writeFileSync(join(s.ws, "bin.dat"), new Uint8Array([0xff, 0xfe, 0x00]));
  await using fake = await startFakeModel([{ text: "ok" }]);
  const cases: [string[], RegExp][] = [
    [
      ["--system-prompt-file", "nope.md"],
      /^error: Cannot read --system-prompt-file "nope\.md": no such file\nhint: give a readable text file .*--system-prompt TEXT\n$/,
    ],
    [
      ["--append-system-prompt-file", "prompts"],
      /^error: Cannot read --append-system-prompt-file "prompts": not a file\n/,
    ],
    [["--system-prompt-file", "bin.dat"], /"bin\.dat": it is not UTF-8 text/],
    [
      ["--system-prompt", "a", "--system-prompt-file", "x"],
      /^error: Cannot use --system-prompt with --system-prompt-file\n/,
    ],
  ];
  Deno.mkdirSync(join(s.ws, "prompts"));
  for (const [args, expected] of cases) {
    const r = await printRun(s, fake, args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, expected);
    assert.equal(r.stdout, "");
  }
  // The REPL's command line is checked the same way, before it needs a terminal.
  const repl = await s.crab(["--system-prompt-file", "nope.md"]);
  assert.equal(repl.code, 2, repl.stderr);
  assert.match(repl.stderr, /Cannot read --system-prompt-file "nope\.md"/);
  assert.equal(fake.modelRequests().length, 0);
});
