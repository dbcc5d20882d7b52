import assert from "node:assert/strict";
import { Session } from "../../../tools/call/session.ts";

Deno.test("Session resolves its workspace to a real path", () => {
  const dir = Deno.makeTempDirSync();
  const link = `${dir}-link`;
  Deno.symlinkSync(dir, link);
  try {
    assert.equal(new Session(link).workspace, Deno.realPathSync(dir));
  } finally {
    Deno.removeSync(link);
    Deno.removeSync(dir);
  }
});
