import assert from "node:assert/strict";
import { join } from "node:path";
import {
  closeDirFd,
  entryExists,
  listDir,
  lstatFields,
  lstatFieldsAt,
  lstatOrNull,
  openDirFd,
  statsNatively,
} from "../../../tools/fs/exists.ts";

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

Deno.test("lstatFields() by statx gives what Deno's lstat gives: files, folders, links, odd names, times to the ms", () => {
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
      assert.deepEqual(lstatFields(`${dir}/${name}`), {
        isFile: st.isFile,
        isDirectory: st.isDirectory,
        isSymlink: st.isSymlink,
        ino: st.ino,
        size: st.size,
        mtime: st.mtime!.getTime(),
        ctime: st.ctime!.getTime(),
        mode: st.mode,
        nlink: st.nlink,
        dev: st.dev,
      }, name);
    }
    assert.equal(lstatFields(`${dir}/f`)!.mtime, 1_700_000_000_987);
    assert.equal(lstatFields(`${dir}/absent`), null);
    assert.equal(lstatFields(`${dir}/f\0/etc`), null, "a NUL does not cut the path short");
    assert.equal(lstatFields(`${dir}/f/under-a-file`), null);
    assert.equal(lstatFields(`${dir}/${"x".repeat(5000)}`), null, "a name past the system's limit");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("lstatFieldsAt() of a name in an open folder is lstatFields() of its path; it never walks out", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-lstat-at-" }));
  const fds: number[] = [];
  try {
    Deno.mkdirSync(`${dir}/d/sub`, { recursive: true });
    Deno.writeTextFileSync(`${dir}/d/f`, "12345");
    Deno.symlinkSync("nowhere", `${dir}/d/dangling`);
    Deno.symlinkSync("sub", `${dir}/d/to-sub`);
    Deno.writeTextFileSync(`${dir}/d/日本語 ñ`, "");
    Deno.writeTextFileSync(`${dir}/outside`, "x");
    Deno.symlinkSync(`${dir}/d`, `${dir}/link-to-d`);
    // With or without a trailing slash.
    for (const path of [`${dir}/d`, `${dir}/d/`]) {
      const fd = openDirFd(path);
      fds.push(fd);
      assert.ok(fd >= 0, path);
      for (const name of ["f", "sub", "dangling", "to-sub", "日本語 ñ", "absent"]) {
        assert.deepEqual(lstatFieldsAt(fd, name), lstatFields(`${dir}/d/${name}`), name);
      }
      // A name is a name: no path through the folder or out of it.
      for (const name of ["../outside", "..", ".", "", "sub/", "to-sub/", "f\0x"]) {
        assert.equal(lstatFieldsAt(fd, name), null, JSON.stringify(name));
      }
    }
    // A symlink to a folder is not opened as that folder, with or without a trailing slash.
    assert.equal(openDirFd(`${dir}/link-to-d`), -1);
    assert.equal(openDirFd(`${dir}/link-to-d/`), -1);
    assert.equal(openDirFd(`${dir}/d/f`), -1);
    assert.equal(openDirFd(`${dir}/absent`), -1);
  } finally {
    for (const fd of fds) closeDirFd(fd);
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("listDir() gives each entry and its kind as Deno's readDirSync does, natively or not; throws where it cannot list", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-listdir-" });
  try {
    // More names than one read of the folder holds, half not ASCII.
    for (let i = 0; i < 3000; i++) {
      Deno.writeTextFileSync(join(dir, i % 2 ? `file-${i}-ünï.txt` : `file-${i}.txt`), "");
    }
    Deno.mkdirSync(join(dir, "sub"));
    Deno.writeTextFileSync(join(dir, "sub", "inner"), "");
    Deno.symlinkSync("sub", join(dir, "to-dir"));
    Deno.symlinkSync("file-1-ünï.txt", join(dir, "to-file"));
    Deno.symlinkSync("nowhere", join(dir, "dangling"));
    Deno.writeTextFileSync(join(dir, ".gitignore"), "x\n");
    const { mkfifo } = Deno.dlopen("libc.so.6", {
      mkfifo: { parameters: ["buffer", "u32"], result: "i32" },
    }).symbols;
    assert.equal(mkfifo(new TextEncoder().encode(join(dir, "fifo") + "\0"), 0o600), 0);
    const deno = (d: string) =>
      [...Deno.readDirSync(d)].map((e) =>
        [e.name, e.isDirectory ? "d" : e.isFile ? "f" : e.isSymlink ? "l" : "o"].join(" ")
      ).sort();
    const ours = (d: string, native: boolean) => {
      const l = listDir(d, native);
      assert.equal(l.names.length, l.kinds.length);
      return l.names.map((n, i) => `${n} ${l.kinds[i]}`).sort();
    };
    for (const native of [true, false]) {
      assert.deepEqual(ours(dir, native), deno(dir), `native ${native}`);
      assert.equal(ours(dir, native).length, 3006);
      assert.ok(ours(dir, native).includes("fifo o"));
      // A symlink to a folder is listed through, as Deno lists it.
      assert.deepEqual(ours(join(dir, "to-dir"), native), ["inner f"]);
      assert.throws(() => listDir(join(dir, "missing"), native));
      assert.throws(() => listDir(join(dir, "sub", "inner"), native));
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
