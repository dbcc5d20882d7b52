import assert from "node:assert/strict";
import { harness } from "../../support/harness.ts";
import type { ApprovalRequest, Tool } from "../../../tools/tool.ts";
import {
  guardPath,
  isSystemPath,
  peekPath,
  realPathOf,
  resolvePath,
} from "../../../tools/fs/workspace.ts";

/** A tool that resolves its path through the guard, to see what the guard decides. */
const probe: Tool<{ path: string }> = {
  name: "probe",
  class: "read",
  description: "",
  schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  run: async (args, ctx) => ({ output: (await guardPath(ctx, args.path, "read")).display }),
};

Deno.test("guardPath() makes every escape an outside access", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  Deno.writeTextFileSync(`${outside}/secret`, "s");
  try {
    await using h = harness([probe], {});
    Deno.symlinkSync(`${outside}/secret`, `${h.dir}/link`);
    Deno.symlinkSync(outside, `${h.dir}/dirlink`);
    Deno.symlinkSync(`${outside}/not-yet`, `${h.dir}/dangling`);
    h.put("inner/file", "x");
    const escapes = [
      "link",
      "dirlink/secret",
      "dirlink/new-file",
      "dangling",
      "../x",
      "inner/../../x",
      `${outside}/secret`,
    ];
    for (const path of escapes) {
      const r = await h.call("probe", { path });
      assert.ok(!r.ok, path);
      assert.equal(r.error.code, "refused", path);
      assert.match(r.error.message, /outside the workspace/, path);
      assert.equal(h.sink.observations.at(-1)?.outcome, "refused", path);
    }
    const inside = await h.call("probe", { path: "inner/../inner/file" });
    assert.ok(inside.ok && inside.output === "inner/file");
    const absInside = await h.call("probe", { path: `${h.dir}/inner/file` });
    assert.ok(absInside.ok && absInside.output === "inner/file");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("guardPath() asks for outside-read with the real target named", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  const asked: ApprovalRequest[] = [];
  try {
    await using h = harness([probe], {
      ask: (req) => {
        asked.push(req);
        return Promise.resolve("yes");
      },
    });
    Deno.symlinkSync(outside, `${h.dir}/ext`);
    const r = await h.call("probe", { path: "ext/f" });
    assert.ok(r.ok);
    assert.equal(r.output, `${outside}/f`);
    // The request names the call it is asked for; what it asks is the rest.
    assert.deepEqual(asked.map(({ call: _, ...rest }) => rest), [{
      tool: "probe",
      class: "outside-read",
      summary: `read outside the workspace: ${outside}/f (via ext/f)`,
    }]);
    assert.deepEqual(asked[0].call?.input, { path: "ext/f" });
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("guardPath() refuses /proc, /sys and /dev without asking", async () => {
  const asked: ApprovalRequest[] = [];
  await using h = harness([probe], {
    ask: (req) => {
      asked.push(req);
      return Promise.resolve("yes");
    },
  });
  Deno.symlinkSync("/proc/self/environ", `${h.dir}/env`);
  for (const path of ["/proc/self/status", "/sys/kernel", "/dev/null", "env"]) {
    const r = await h.call("probe", { path });
    assert.ok(!r.ok, path);
    assert.equal(r.error.code, "not_regular_file", path);
  }
  assert.deepEqual(asked, []);
});

Deno.test("guardPath() refuses empty paths and NUL bytes", async () => {
  await using h = harness([probe]);
  for (const path of ["", "a\0b"]) {
    const r = await h.call("probe", { path });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "invalid_path");
  }
});

Deno.test("realPathOf() reports a symlink loop as a tool error", async () => {
  await using h = harness([probe]);
  Deno.symlinkSync("b", `${h.dir}/a`);
  Deno.symlinkSync("a", `${h.dir}/b`);
  const r = await h.call("probe", { path: "a" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "symlink_loop");
});

Deno.test("realPathOf() resolves the existing part and appends a missing tail", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.mkdirSync(`${dir}/real`);
    Deno.symlinkSync("real", `${dir}/l`);
    Deno.writeTextFileSync(`${dir}/file`, "x");
    assert.equal(realPathOf(`${dir}/l/new/deeper.txt`), `${dir}/real/new/deeper.txt`);
    assert.equal(realPathOf(`${dir}/file/below`), `${dir}/file/below`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("resolvePath() names inside paths relative to the workspace", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    assert.deepEqual(resolvePath(dir, "a/../b.txt"), {
      abs: `${dir}/b.txt`,
      real: `${dir}/b.txt`,
      inside: true,
      display: "b.txt",
    });
    assert.equal(resolvePath(dir, ".").display, ".");
    // A sibling whose name starts like the workspace is not inside it.
    assert.equal(resolvePath(dir, `${dir}-other/x`).inside, false);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("isSystemPath() lets a workspace under /dev use its own files", () => {
  assert.equal(isSystemPath("/home/u/ws", "/dev/null"), true);
  assert.equal(isSystemPath("/home/u/ws", "/proc/1/status"), true);
  assert.equal(isSystemPath("/dev/shm/ws", "/dev/shm/ws/a.txt"), false);
  assert.equal(isSystemPath("/dev/shm/ws", "/dev/null"), false); // still refused: not a regular file
  assert.equal(isSystemPath("/", "/proc/1/status"), true);
  assert.equal(isSystemPath("/", "/etc/hosts"), false);
});

Deno.test("peekPath() tells a regular file from a missing path and a FIFO, asking nothing", async () => {
  await using h = harness([]);
  h.put("f.txt", "x");
  assert.ok((await new Deno.Command("mkfifo", { args: [`${h.dir}/fifo`] }).output()).success);
  assert.deepEqual(
    await Promise.all(
      ["f.txt", "missing", "fifo", "/proc/self/status"].map(async (p) =>
        (await peekPath(h.dir, p)).kind
      ),
    ),
    ["file", "missing", "other", "other"],
  );
});
