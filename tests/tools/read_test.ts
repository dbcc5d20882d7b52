import assert from "node:assert/strict";
import { harness } from "../_harness.ts";
import { readTool } from "../../tools/read.ts";

Deno.test("read() numbers lines and notes the next offset", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "one\ntwo\nthree\n");
  const r = await h.call("read", { path: "a.txt", offset: 2, limit: 1 });
  assert.ok(r.ok);
  assert.equal(r.output, "2\ttwo\n\n(file has 3 lines; continue with offset=3)");
  assert.equal(h.sink.observations.length, 1);
  assert.equal(h.sink.observations[0].outcome, "ok");
});

Deno.test("read() refuses an offset past the end", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "one\ntwo\n");
  const r = await h.call("read", { path: "a.txt", offset: 5 });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "offset_out_of_range");
  assert.match(r.error.message, /2 lines/);
});

Deno.test("read() rejects negative and string offsets", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "x\n");
  for (const offset of [-1, "2"]) {
    const r = await h.call("read", { path: "a.txt", offset });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "invalid_arguments");
  }
});

Deno.test("read() returns promptly on a FIFO", async () => {
  await using h = harness([readTool]);
  await new Deno.Command("mkfifo", { args: [`${h.dir}/f`] }).output();
  const r = await h.call("read", { path: "f" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "not_regular_file");
});

Deno.test("read() refuses a symlink to a file outside the workspace", async () => {
  await using h = harness([readTool], {});
  const out = Deno.makeTempFileSync();
  Deno.symlinkSync(out, `${h.dir}/link`);
  const r = await h.call("read", { path: "link" });
  Deno.removeSync(out);
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.equal(h.sink.observations[0].outcome, "refused");
});

Deno.test("read() summarises a binary file", async () => {
  await using h = harness([readTool]);
  h.put("b.bin", new Uint8Array([1, 0, 2]));
  const r = await h.call("read", { path: "b.bin" });
  assert.ok(r.ok);
  assert.equal(r.output, `"b.bin" is a binary file (3 B)`);
});
