import assert from "node:assert/strict";
import { Session } from "../../../tools/call/session.ts";
import { assertFresh, assertFreshOnDisk } from "../../../tools/fs/freshness.ts";
import { ToolError } from "../../../tools/tool.ts";

const enc = new TextEncoder();

function codeOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (e) {
    if (e instanceof ToolError) return e.code;
    throw e;
  }
}

async function asyncCodeOf(fn: () => Promise<unknown>): Promise<string | null> {
  try {
    await fn();
    return null;
  } catch (e) {
    if (e instanceof ToolError) return e.code;
    throw e;
  }
}

Deno.test("assertFresh() refuses a file never read", () => {
  const s = new Session(Deno.cwd());
  assert.equal(
    codeOf(() => assertFresh(s.files, "/x/a", "a", "edit", enc.encode("a"))),
    "file_not_read",
  );
});

Deno.test("assertFresh() compares content, not just size", () => {
  const s = new Session(Deno.cwd());
  s.record("/x/a", enc.encode("aaaa"), new Date(1000));
  assert.equal(codeOf(() => assertFresh(s.files, "/x/a", "a", "edit", enc.encode("aaaa"))), null);
  assert.equal(
    codeOf(() => assertFresh(s.files, "/x/a", "a", "edit", enc.encode("bbbb"))),
    "file_changed_since_read",
  );
  assert.equal(
    codeOf(() => assertFresh(s.files, "/x/a", "a", "write", enc.encode("aaaaa"))),
    "file_changed_since_read",
  );
});

Deno.test("Session.record() after crab's own write makes the new content the fresh one", () => {
  const s = new Session(Deno.cwd());
  s.record("/x/a", enc.encode("old"), null);
  s.record("/x/a", enc.encode("new"), null);
  assert.equal(codeOf(() => assertFresh(s.files, "/x/a", "a", "edit", enc.encode("new"))), null);
  assert.equal(
    codeOf(() => assertFresh(s.files, "/x/a", "a", "edit", enc.encode("old"))),
    "file_changed_since_read",
  );
});

Deno.test("assertFreshOnDisk() hashes the file when the size matches", async () => {
  const dir = Deno.makeTempDirSync();
  const p = `${dir}/a`;
  try {
    Deno.writeTextFileSync(p, "aaaa");
    const s = new Session(dir);
    s.record(p, enc.encode("aaaa"), Deno.statSync(p).mtime);
    assert.equal(await asyncCodeOf(() => assertFreshOnDisk(s.files, p, "a", "write", 4)), null);
    const st = Deno.statSync(p);
    Deno.writeTextFileSync(p, "bbbb");
    Deno.utimeSync(p, st.atime!, st.mtime!);
    assert.equal(
      await asyncCodeOf(() => assertFreshOnDisk(s.files, p, "a", "write", 4)),
      "file_changed_since_read",
    );
    assert.equal(
      await asyncCodeOf(() => assertFreshOnDisk(s.files, p, "a", "write", 5)),
      "file_changed_since_read",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
