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
  indexEntries,
} from "../../../../tools/sandbox/git/_index.ts";
import { encodeHex } from "../../../../tools/fs/hex.ts";

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

for (const version of [2, 3, 4]) {
  Deno.test(`indexEntries() gives each file's stat and blob id as git lists them, index v${version}`, () => {
    using r = repo(version);
    Deno.chmodSync(join(r.dir, "a.txt"), 0o755);
    // A name not ASCII, between others in git's order (bytes compared).
    Deno.writeTextFileSync(join(r.dir, "secrets\u00e9"), "x");
    git(r.dir, "add", ".");
    const entries = indexEntries(Deno.readFileSync(r.path))!;
    // git's own account: mode, id and stage, then its stat data.
    const listed = git(r.dir, "-c", "core.quotePath=false", "ls-files", "--stage", "--debug")
      .trim().split("\n");
    const want: Record<string, string> = {};
    for (let i = 0; i < listed.length; i += 6) {
      const [head, ctime, mtime, devIno, , sizeFlags] = listed.slice(i, i + 6);
      const [mode, oid, , path] = head.split(/\s+/);
      const ino = devIno.match(/ino: (\d+)/)![1];
      const size = sizeFlags.match(/size: (\d+)/)![1];
      want[path] = `${mode} ${oid} ${ctime.trim()} ${mtime.trim()} ino ${ino} size ${size}`;
    }
    const got: Record<string, string> = {};
    for (const path of entries.paths()) {
      const e = entries.stat(entries.find(path));
      got[path] = `${e.mode.toString(8)} ${encodeHex(e.oid)} ctime: ${e.ctimeSec}:${e.ctimeNsec} ` +
        `mtime: ${e.mtimeSec}:${e.mtimeNsec} ino ${e.ino} size ${e.size}`;
    }
    assert.deepEqual(got, want);
    assert.equal(Object.keys(got).length, 7);
    assert.match(got["a.txt"], /^100755 /);
    // Paths not there, before, between and after the names; a prefix of one.
    for (const p of ["", "0", "b", "secrets", "secrets/", "secrets/deep", "zz", "a.tx", "\u00e9"]) {
      assert.equal(entries.find(p), -1, p);
    }
    assert.equal(entries.hasBaseName("x"), true);
    assert.equal(entries.hasBaseName("key"), true);
    assert.equal(entries.hasBaseName("z.txt"), true);
    assert.equal(entries.hasBaseName("deep"), false);
    assert.equal(entries.hasBaseName("bis"), false);
    assert.equal(entries.hasBaseName(".gitattributes"), false);
  });
}

Deno.test("indexEntries() leaves out a conflict's stages and reads no SHA-256 index", () => {
  using r = repo(2);
  git(r.dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one");
  git(r.dir, "checkout", "-qb", "other");
  Deno.writeTextFileSync(join(r.dir, "a.txt"), "other");
  git(r.dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "other");
  git(r.dir, "checkout", "-q", "-");
  Deno.writeTextFileSync(join(r.dir, "a.txt"), "mine");
  git(r.dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "mine");
  new Deno.Command("git", {
    args: ["merge", "-q", "other"],
    cwd: r.dir,
    stdout: "null",
    stderr: "null",
  })
    .outputSync();
  assert.match(git(r.dir, "ls-files", "--stage", "a.txt"), / 3\ta\.txt/);
  const entries = indexEntries(Deno.readFileSync(r.path))!;
  assert.equal(entries.find("a.txt"), -1);
  assert.ok(entries.find("z.txt") > 0);
  assert.deepEqual([...entries.paths()], [
    ".env",
    "secrets/deep/key",
    "secrets/x",
    "secretsbis",
    "z.txt",
  ]);
  using s = repo(4, "sha256");
  assert.equal(indexEntries(Deno.readFileSync(s.path)), null);
});
