import assert from "node:assert/strict";
import { join } from "node:path";
import { writeExecutable } from "./executable.ts";

Deno.test("writeExecutable() writes a program sh runs, where one held open for writing is passed over", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-executable-" });
  try {
    const path = join(dir, "uname");
    const text = "#!/bin/sh\necho 'fake' \"$1\"\n";
    writeExecutable(path, text);
    assert.equal(Deno.readTextFileSync(path), text);
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o755);
    const run = (extra: string) =>
      new TextDecoder().decode(
        new Deno.Command("sh", {
          args: ["-c", `${extra}uname -m`],
          env: { PATH: `${dir}:/usr/bin:/bin` },
          clearEnv: true,
        }).outputSync().stdout,
      );
    assert.equal(run(""), "fake -m\n");
    // What the helper avoids: held open for writing, the fake is passed over.
    assert.notEqual(run(`exec 3>>'${path}'; `), "fake -m\n");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
