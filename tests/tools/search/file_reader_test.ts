import assert from "node:assert/strict";
import {
  nativeRead,
  readFiles,
  type ReadStat,
  StatsAhead,
} from "../../../tools/search/file_reader.ts";
import { lstatFields } from "../../../tools/fs/exists.ts";

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
    for (const [workers, native] of [[1, true], [3, true], [1, false]] as const) {
      const seen: number[] = [];
      await readFiles(
        `${dir}/`,
        names,
        listed,
        8 * 1024 * 1024,
        (i, got) => {
          seen.push(i);
          if (i === 9) return assert.deepEqual(got, { failed: "unreadable" });
          assert.ok(got.bytes, `file ${i}`);
          assert.deepEqual(got.bytes, Deno.readFileSync(paths[i]), `file ${i}`);
        },
        workers,
        { native },
      );
      assert.deepEqual(seen, paths.map((_, i) => i), `${workers} readers, native ${native}`);
      const tooBig: number[] = [];
      await readFiles(
        `${dir}/`,
        names,
        listed,
        max,
        (i, got) => {
          if (!got.bytes && got.failed === "too big") tooBig.push(i);
        },
        workers,
        { native },
      );
      assert.deepEqual(tooBig, [5, 11]);
      // With each file's stat, as lstat has it; a symlink is not followed (read here instead).
      Deno.symlinkSync(names[0], `${dir}/link`);
      const stats: (ReadStat | undefined)[] = [];
      await readFiles(
        `${dir}/`,
        [...names.slice(0, 20), "link"],
        listed,
        max,
        (i, got) => {
          stats[i] = got.bytes ? got.stat : undefined;
        },
        workers,
        { native, stats: true },
      );
      for (let i = 0; i < 20; i++) {
        if (i === 9 || i === 11 || i === 5) continue;
        const st = lstatFields(paths[i])!;
        assert.deepEqual(stats[i], {
          ino: st.ino,
          size: st.size,
          mtime: st.mtime,
          ctime: st.ctime,
          mode: st.mode,
          nlink: st.nlink,
        }, `file ${i}, native ${native}`);
      }
      assert.equal(stats[20], undefined, "the symlink");
      Deno.removeSync(`${dir}/link`);
    }
    // Nothing to read: it ends at once.
    await readFiles("/", [], [], max, () => assert.fail("no file"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("nativeRead() reads a file whole, or says it is too big or its buffer too small; follows no symlink, waits on no FIFO", () => {
  const read = nativeRead();
  assert.ok(read, "libc can be called here (Linux, --allow-ffi)");
  const dir = Deno.makeTempDirSync({ prefix: "crab-nativeread-" });
  try {
    const content = bytes(3000, 7);
    Deno.writeFileSync(`${dir}/f`, content);
    Deno.symlinkSync("f", `${dir}/l`);
    const { mkfifo } = Deno.dlopen("libc.so.6", {
      mkfifo: { parameters: ["buffer", "u32"], result: "i32" },
    }).symbols;
    assert.equal(mkfifo(new TextEncoder().encode(`${dir}/p\0`), 0o600), 0);
    const buf = new Uint8Array(5000);
    assert.equal(read(`${dir}/f`, buf, 100, 1 << 20), 3000);
    assert.deepEqual(buf.subarray(100, 3100), content);
    assert.equal(read(`${dir}/f`, buf, 2500, 1 << 20), -3, "no room for it from 2500");
    assert.equal(read(`${dir}/f`, buf, 0, 3000), -2, "3000 bytes: not under the limit");
    assert.equal(read(`${dir}/f`, buf, 0, 3001), 3000);
    assert.equal(read(`${dir}/l`, buf, 0, 1 << 20), -1, "a symlink is not followed");
    assert.equal(read(`${dir}/gone`, buf, 0, 1 << 20), -1);
    assert.equal(read(`${dir}/f\0x`, buf, 0, 1 << 20), -1, "a NUL ends no path early");
    assert.equal(read(`${dir}/p`, buf, 0, 1 << 20), 0, "a FIFO with no writer reads empty at once");
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
      dev: f.dev,
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
