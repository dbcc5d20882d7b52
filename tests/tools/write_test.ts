import assert from "node:assert/strict";
import { harness } from "../_harness.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";

Deno.test("write() creates a new file with parents", async () => {
  await using h = harness([readTool, writeTool]);
  const r = await h.call("write", { path: "d/e/a.txt", content: "hi\r\n" });
  assert.ok(r.ok);
  assert.equal(h.get("d/e/a.txt"), "hi\r\n");
});

Deno.test("write() refuses to overwrite a file not read", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("a.txt", "old");
  const r = await h.call("write", { path: "a.txt", content: "new" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_not_read");
  assert.equal(h.get("a.txt"), "old");
});

Deno.test("write() refuses after a same-size external rewrite with mtime restored", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.txt", "aaaa");
  await h.call("read", { path: "a.txt" });
  const st = Deno.statSync(p);
  Deno.writeTextFileSync(p, "bbbb");
  Deno.utimeSync(p, st.atime!, st.mtime!);
  const r = await h.call("write", { path: "a.txt", content: "cccc" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_changed_since_read");
  assert.equal(h.get("a.txt"), "bbbb");
});

Deno.test("write() passes after a touch with unchanged content and keeps mode", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.sh", "echo");
  Deno.chmodSync(p, 0o755);
  await h.call("read", { path: "a.sh" });
  Deno.utimeSync(p, new Date(), new Date(Date.now() + 5000));
  const r = await h.call("write", { path: "a.sh", content: "echo hi" });
  assert.ok(r.ok);
  assert.equal(h.get("a.sh"), "echo hi");
  assert.equal(Deno.statSync(p).mode! & 0o777, 0o755);
});

Deno.test("write() refuses a directory symlinked to outside", async () => {
  await using h = harness([readTool, writeTool], {});
  const out = Deno.makeTempDirSync();
  Deno.symlinkSync(out, `${h.dir}/ext`);
  const r = await h.call("write", { path: "ext/a.txt", content: "x" });
  const left = [...Deno.readDirSync(out)].length;
  Deno.removeSync(out, { recursive: true });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.equal(left, 0);
});
