import assert from "node:assert/strict";
import type { AskAnswer } from "../../tools/call/approval.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { writeTool } from "../../tools/write.ts";
import { readTool } from "../../tools/read.ts";
import { harness } from "../support/harness.ts";

function asking() {
  const seen: ApprovalRequest[] = [];
  const ask = (r: ApprovalRequest): Promise<AskAnswer> => {
    seen.push(r);
    return Promise.resolve("yes");
  };
  return { seen, ask };
}

Deno.test("write preview: a new file's approval shows every line, for the prompt to fold and page", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const content = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
  const r = await h.call("write", { path: "n.txt", content });
  assert.equal(r.ok, true);
  const lines = seen[0].detail!.split("\n");
  assert.equal(lines[0], "new file n.txt (50 lines, 391 B)");
  assert.equal(lines.length, 51);
  assert.equal(lines[50], "+line 50");
});

Deno.test("write preview: overwriting a file over 1 MiB shows sizes and the changed line ranges", async () => {
  const { seen, ask } = asking();
  await using h = harness([readTool, writeTool], { ask });
  const old = Array.from({ length: 30_000 }, (_, i) => `row ${i + 1} ${"=".repeat(40)}`);
  h.put("big.txt", old.join("\n") + "\n");
  await h.call("read", { path: "big.txt", limit: 1 });
  const changed = [...old];
  changed[99] = "row 100 changed";
  changed.splice(20_000, 0, "inserted a", "inserted b");
  const r = await h.call("write", { path: "big.txt", content: changed.join("\n") + "\n" });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(
    seen[0].detail,
    "overwrite big.txt: 1.4 MiB → 1.4 MiB, 30000 → 30002 lines (too large to show as a diff)\n" +
      "changed lines (old → new): 100 → 100, (none at 20001) → 20001–20002",
  );
});

Deno.test("write preview: a newline or tab in the path cannot start a line of its own", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const r = await h.call("write", { path: "a\n⚠ write — x\t.txt", content: "hi\n" });
  // Either the name is refused before anyone is asked, or the question shows it on one line.
  if (seen.length === 0) {
    assert.equal(r.ok, false);
    return;
  }
  const detail = seen[0].detail ?? "";
  assert.doesNotMatch(detail, /\n⚠/);
  assert.match(detail.split("\n")[0], /^new file a\\n⚠ write — x\\t\.txt /);
});
