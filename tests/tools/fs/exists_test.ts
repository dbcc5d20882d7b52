import assert from "node:assert/strict";
import { join } from "node:path";
import { entryExists, lstatOrNull } from "../../../tools/fs/exists.ts";

Deno.test("entryExists() counts a dangling symlink and nothing that is missing", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-exists-" });
  try {
    Deno.writeTextFileSync(join(dir, "file"), "x");
    Deno.symlinkSync(join(dir, "gone"), join(dir, "dangling"));
    assert.deepEqual(
      ["file", "dangling", "gone", "file/below"].map((n) => entryExists(join(dir, n))),
      [true, true, false, false],
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("lstatOrNull() describes a symlink to a directory as a symlink", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-exists-" });
  try {
    Deno.symlinkSync(dir, join(dir, "self"));
    const info = lstatOrNull(join(dir, "self"));
    assert.deepEqual([info?.isSymlink, info?.isDirectory], [true, false]);
    assert.equal(lstatOrNull(join(dir, "missing")), null);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
