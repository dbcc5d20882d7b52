import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { editTool } from "../../tools/edit.ts";
import { globTool } from "../../tools/glob.ts";
import { grepTool } from "../../tools/grep.ts";
import { readTool } from "../../tools/read.ts";
import { truncateText } from "../../tools/call/truncate.ts";
import { writeTool } from "../../tools/write.ts";

/** Runs `fn` with a fresh temp data dir and the environment that names it (CRAB_HOME). */
async function withHome(
  fn: (home: string, env: Pick<Deno.Env, "get">) => Promise<void>,
): Promise<void> {
  const home = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-home-" }));
  try {
    await fn(home, { get: (k) => k === "CRAB_HOME" ? home : undefined });
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
}

Deno.test("read() and grep() open this process's spill files without approval; write() and edit() never", async () => {
  await withHome(async (home, env) => {
    const full = Array.from({ length: 5000 }, (_, i) => `row ${i + 1}`).join("\n") + "\n";
    const opts = { headBytes: 100, tailBytes: 100, spill: true, label: "bash", env };
    const spill = truncateText(full, opts).spillPath!;
    assert.ok(spill.startsWith(`${home}/spill/`));
    // No approval of any outside class: only the spill file itself is let through.
    await using h = harness([readTool, grepTool, writeTool, editTool, globTool], {
      allowed: ["write"],
      env,
    });
    const read = await h.call("read", { path: spill, offset: 4000, limit: 2 });
    assert.ok(read.ok, JSON.stringify(read));
    assert.equal(
      read.output,
      `4000\trow 4000\n4001\trow 4001\n\n(file has 5000 lines; continue with offset=4002)`,
    );
    const grep = await h.call("grep", { pattern: "^row 4999$", path: spill });
    assert.ok(grep.ok, JSON.stringify(grep));
    assert.equal(grep.output, `${spill}:4999:row 4999`);
    const write = await h.call("write", { path: spill, content: "x" });
    assert.ok(!write.ok);
    assert.equal(write.error.code, "read_only");
    const edit = await h.call("edit", { path: spill, edits: [{ old: "row 1\n", new: "x\n" }] });
    assert.ok(!edit.ok);
    assert.equal(edit.error.code, "read_only");
    assert.equal(Deno.readTextFileSync(spill), full);
    // The rest of the spill directory is crab's data dir: closed, whatever was approved.
    const glob = await h.call("glob", { pattern: "*", path: `${home}/spill` });
    assert.ok(!glob.ok && glob.error.code === "policy_denied", JSON.stringify(glob));
    const other = `${home}/spill/bash-not-ours.txt`;
    Deno.writeTextFileSync(other, "someone else's\n");
    const notOurs = await h.call("read", { path: other });
    assert.ok(!notOurs.ok && notOurs.error.code === "policy_denied", JSON.stringify(notOurs));
  });
});

Deno.test("read() refuses a spill file that was replaced by a link to another file", async () => {
  await withHome(async (home, env) => {
    const opts = { headBytes: 10, spill: true, label: "bash", env };
    const spill = truncateText("x".repeat(1000), opts).spillPath!;
    Deno.writeTextFileSync(`${home}/secret`, "secret\n");
    Deno.removeSync(spill);
    Deno.symlinkSync(`${home}/secret`, spill);
    await using h = harness([readTool], { env });
    const r = await h.call("read", { path: spill });
    assert.ok(!r.ok);
    // Where the link leads is crab's data dir, and no spill file of this run.
    assert.equal(r.error.code, "policy_denied");
  });
});
