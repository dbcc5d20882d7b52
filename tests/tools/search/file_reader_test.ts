import assert from "node:assert/strict";
import {
  lstatTaken,
  readFiles,
  StatsAhead,
  statsNatively,
} from "../../../tools/search/file_reader.ts";

function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (Math.imul(i + seed, 2654435761) >>> 24) & 0xff;
  return out;
}

Deno.test("readFiles() gives every file's bytes in order, across batches and readers; says which it could not read", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-readhashed-" });
  try {
    // More files than a batch holds, one batch over its bytes, an empty one, a missing one, one
    // at the limit and one that grew past the size it was listed with.
    const sizes = Array.from({ length: 700 }, (_, i) => (i * 37) % 3000);
    sizes[5] = 5 * 1024 * 1024;
    const names = sizes.map((_, i) => `f${i}`);
    const paths = names.map((n) => `${dir}/${n}`);
    sizes.forEach((n, i) => Deno.writeFileSync(paths[i], bytes(n, i)));
    Deno.removeSync(paths[9]);
    Deno.writeFileSync(paths[11], bytes(4096, 11));
    const max = 4096;
    const listed = sizes.map((n, i) => (i === 11 ? 10 : n));
    for (const workers of [1, 3]) {
      const seen: number[] = [];
      await readFiles(`${dir}/`, names, listed, 8 * 1024 * 1024, (i, got) => {
        seen.push(i);
        if (i === 9) return assert.deepEqual(got, { failed: "unreadable" });
        assert.ok(got.bytes, `file ${i}`);
        assert.deepEqual(got.bytes, Deno.readFileSync(paths[i]), `file ${i}`);
      }, workers);
      assert.deepEqual(seen, paths.map((_, i) => i), `${workers} readers`);
      const tooBig: number[] = [];
      await readFiles(`${dir}/`, names, listed, max, (i, got) => {
        if (!got.bytes && got.failed === "too big") tooBig.push(i);
      }, workers);
      assert.deepEqual(tooBig, [5, 11]);
    }
    // Nothing to read: it ends at once.
    await readFiles("/", [], [], max, () => assert.fail("no file"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("StatsAhead takes each path's stat once, as lstat gives it; the caller takes what the thread did not", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-statsahead-" });
  try {
    Deno.writeTextFileSync(`${dir}/f`, "12345");
    Deno.chmodSync(`${dir}/f`, 0o640);
    Deno.mkdirSync(`${dir}/d`);
    Deno.symlinkSync("f", `${dir}/l`);
    Deno.linkSync(`${dir}/f`, `${dir}/hard`);
    // Two folders' names; a directory's index is skipped ("sub"), one listed as a file may be a
    // directory by now ("d").
    Deno.mkdirSync(`${dir}/sub`);
    const ahead = StatsAhead.start(`${dir}/`, [["", ["f", "sub", "d"], "fdf"], ["", [
      "l",
      "gone",
      "hard",
    ], "lff"]])!;
    assert.ok(ahead);
    // Claimed here first, the thread leaves it: the caller stats it.
    assert.equal(ahead.take(0), undefined);
    await ahead.done;
    assert.equal(ahead.take(0), undefined, "still ours");
    assert.equal(ahead.take(1), undefined, "a directory, skipped");
    const f = Deno.lstatSync(`${dir}/hard`);
    assert.deepEqual(ahead.take(5), {
      isFile: true,
      isDirectory: false,
      isSymlink: false,
      ino: f.ino,
      size: 5,
      mtime: f.mtime!.getTime(),
      ctime: f.ctime!.getTime(),
      mode: f.mode,
      nlink: 2,
    });
    assert.equal(ahead.take(2)?.isDirectory, true);
    assert.equal(ahead.take(3)?.isSymlink, true);
    assert.equal(ahead.take(3)?.size, 1, "the link's own size");
    assert.equal(ahead.take(4), null, "absent");
    ahead.stop();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("lstatTaken() by statx gives what Deno's lstat gives: files, folders, links, odd names, times to the ms", () => {
  assert.ok(statsNatively(), "the suite runs with every permission it needs (--allow-ffi)");
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-lstat-" }));
  try {
    Deno.writeTextFileSync(`${dir}/f`, "12345");
    Deno.chmodSync(`${dir}/f`, 0o4751);
    // Sub-millisecond and pre-epoch-free times: Deno truncates to the ms.
    Deno.utimeSync(`${dir}/f`, 1_700_000_000.123_456_789, 1_700_000_000.987_654_321);
    Deno.mkdirSync(`${dir}/d`);
    Deno.symlinkSync("nowhere", `${dir}/dangling`);
    Deno.linkSync(`${dir}/f`, `${dir}/hard`);
    Deno.writeTextFileSync(`${dir}/日本語 ñ`, "");
    Deno.writeFileSync(`${dir}/big`, new Uint8Array(1 << 20));
    for (const name of ["f", "d", "dangling", "hard", "日本語 ñ", "big", "."]) {
      const st = Deno.lstatSync(`${dir}/${name}`);
      assert.deepEqual(lstatTaken(`${dir}/${name}`), {
        isFile: st.isFile,
        isDirectory: st.isDirectory,
        isSymlink: st.isSymlink,
        ino: st.ino,
        size: st.size,
        mtime: st.mtime!.getTime(),
        ctime: st.ctime!.getTime(),
        mode: st.mode,
        nlink: st.nlink,
      }, name);
    }
    assert.equal(lstatTaken(`${dir}/f`)!.mtime, 1_700_000_000_987);
    assert.equal(lstatTaken(`${dir}/absent`), null);
    assert.equal(lstatTaken(`${dir}/f/under-a-file`), null);
    assert.equal(lstatTaken(`${dir}/${"x".repeat(5000)}`), null, "a name past the system's limit");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
