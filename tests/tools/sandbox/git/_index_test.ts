/**
 * The index bits that hide changes, read and set on indexes real git wrote:
 * versions 2, 3 and 4, SHA-1 and SHA-256, checked by git itself (`ls-files -v`
 * shows the bits, `fsck` the checksum).
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import {
  assumeUnchangedFlips,
  type Digest,
  flipAssumeUnchanged,
  hiddenPaths,
} from "../../../../tools/sandbox/git/_index.ts";

const digest: Digest = (algorithm, data) =>
  new Uint8Array(createHash(algorithm).update(data).digest());

function git(cwd: string, ...args: string[]): string {
  const o = new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" }).outputSync();
  if (!o.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
  return new TextDecoder().decode(o.stdout);
}

/** A repository with tracked files, its index written at `version`. */
function repo(version: number, format: "sha1" | "sha256" = "sha1") {
  const dir = Deno.makeTempDirSync({ prefix: "crab-index-" });
  git(dir, "init", "-q", `--object-format=${format}`);
  Deno.mkdirSync(join(dir, "secrets/deep"), { recursive: true });
  for (const f of [".env", "a.txt", "secrets/deep/key", "secrets/x", "secretsbis", "z.txt"]) {
    Deno.writeTextFileSync(join(dir, f), f);
  }
  git(dir, "add", ".");
  git(dir, "update-index", "--index-version", String(version));
  // An extended flag keeps version 3 from being written as 2.
  if (version === 3) git(dir, "update-index", "--skip-worktree", "z.txt");
  const path = join(dir, ".git", "index");
  return {
    dir,
    path,
    idBytes: format === "sha256" ? 32 : 20,
    flags: () => git(dir, "ls-files", "-v").trim().split("\n").sort(),
    [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }),
  };
}

const SECRET = (p: string) => p === ".env" || p.startsWith("secrets/");

for (const [version, format] of [[2, "sha1"], [3, "sha1"], [4, "sha1"], [4, "sha256"]] as const) {
  Deno.test(`flipAssumeUnchanged() sets and clears the bits git reads, index v${version} ${format}`, () => {
    using r = repo(version, format);
    const before = Deno.readFileSync(r.path);
    assert.equal(new DataView(before.buffer).getUint32(4), version);
    const set = assumeUnchangedFlips(before, r.idBytes, SECRET, true)!;
    assert.deepEqual(set.paths, [".env", "secrets/deep/key", "secrets/x"]);
    Deno.writeFileSync(r.path, flipAssumeUnchanged(before, set, r.idBytes, digest));
    assert.deepEqual(r.flags(), [
      "H a.txt",
      "H secretsbis",
      version === 3 ? "S z.txt" : "H z.txt",
      "h .env",
      "h secrets/deep/key",
      "h secrets/x",
    ]);
    git(r.dir, "fsck", "--no-dangling", "--no-progress");
    const hidden = [...hiddenPaths(Deno.readFileSync(r.path), r.idBytes)!].sort();
    assert.deepEqual(hidden, [
      ".env",
      "secrets/deep/key",
      "secrets/x",
      ...version === 3 ? ["z.txt"] : [],
    ]);
    // Set again: nothing left to flip. Cleared: the very bytes git wrote.
    const marked = Deno.readFileSync(r.path);
    assert.deepEqual(assumeUnchangedFlips(marked, r.idBytes, SECRET, true)!.paths, []);
    const clear = assumeUnchangedFlips(marked, r.idBytes, SECRET, false)!;
    assert.deepEqual(flipAssumeUnchanged(marked, clear, r.idBytes, digest), before);
  });
}

Deno.test("assumeUnchangedFlips() leaves a bit git set to whoever set it, and a split index alone", () => {
  using r = repo(2);
  git(r.dir, "update-index", "--assume-unchanged", ".env");
  const flips = assumeUnchangedFlips(Deno.readFileSync(r.path), r.idBytes, SECRET, true)!;
  assert.deepEqual(flips.paths, ["secrets/deep/key", "secrets/x"]);
  git(r.dir, "update-index", "--split-index");
  assert.equal(assumeUnchangedFlips(Deno.readFileSync(r.path), r.idBytes, SECRET, true), null);
  assert.equal(
    assumeUnchangedFlips(new TextEncoder().encode("not an index"), 20, SECRET, true),
    null,
  );
});
