import assert from "node:assert/strict";
import { commonPrefix, completePath, isCommand, mentions } from "../../../agent/repl/input.ts";

Deno.test("isCommand() tells /name from a prompt that starts with a path", () => {
  assert.equal(isCommand("/help"), true);
  assert.equal(isCommand("/compact the tests"), true);
  assert.equal(isCommand("/frontend:test a b"), true);
  assert.equal(isCommand("/frontend: x"), false);
  assert.equal(isCommand("/tmp/x.py has a bug"), false);
  assert.equal(isCommand("/etc/hosts"), false);
});

Deno.test("mentions() takes a pasted or dropped path of an image or PDF as a mention", () => {
  assert.deepEqual(
    mentions("see /tmp/shot.png and '/home/u/my\\ mock.JPG' plus ~/spec.pdf", "/home/u"),
    ["/tmp/shot.png", "/home/u/my mock.JPG", "/home/u/spec.pdf"],
  );
  assert.deepEqual(mentions("not /tmp/notes.txt nor a.png nor http://x/a.png"), []);
});

Deno.test("mentions() finds @paths, not e-mail addresses, without trailing punctuation", () => {
  assert.deepEqual(mentions("look at @src/a.ts, and @b.txt. mail me@host.org"), [
    "src/a.ts",
    "b.txt",
  ]);
  assert.deepEqual(mentions("@my\\ file.txt twice @my\\ file.txt"), ["my file.txt"]);
});

Deno.test("completePath() lists entries by prefix, directories with a slash, dot files on request", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-complete-" });
  try {
    Deno.mkdirSync(`${dir}/src`);
    Deno.writeTextFileSync(`${dir}/src/main.ts`, "");
    Deno.writeTextFileSync(`${dir}/setup.sh`, "");
    Deno.writeTextFileSync(`${dir}/.env`, "");
    assert.deepEqual(completePath(dir, "s"), ["setup.sh", "src/"]);
    assert.deepEqual(completePath(dir, "src/"), ["src/main.ts"]);
    assert.deepEqual(completePath(dir, ""), ["setup.sh", "src/"]);
    assert.deepEqual(completePath(dir, "."), [".env"]);
    assert.equal(commonPrefix(["setup.sh", "src/"]), "s");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
