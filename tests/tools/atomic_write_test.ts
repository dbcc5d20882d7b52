import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { TEMP_PREFIX } from "../../tools/fs/confine.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";

/** Temp entries (files or directories) crab left in `dir`. */
function temps(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
}

/** Modes of every temp file in `dir` (a temp file, or the file inside a temp directory). */
function tempModes(dir: string): number[] {
  const modes: number[] = [];
  for (const name of temps(dir)) {
    for (const p of [`${dir}/${name}`, `${dir}/${name}/n`]) {
      try {
        const info = Deno.lstatSync(p);
        if (info.isFile) modes.push(info.mode! & 0o777);
      } catch {
        // Gone between listing and looking.
      }
    }
  }
  return modes;
}

Deno.test("write() keeps the temp file of a 0600 target at 0600 while it is written", async () => {
  await using h = harness([readTool, writeTool]);
  const target = h.put(".env", "SECRET=1\n");
  Deno.chmodSync(target, 0o600);
  await h.call("read", { path: ".env" });
  const seen: number[] = [];
  let writing = true;
  const watch = (async () => {
    while (writing) {
      seen.push(...tempModes(h.dir));
      await new Promise((r) => setTimeout(r, 0));
    }
  })();
  // 3 MiB: written in several steps, so the watcher looks at the temp file while it grows.
  const content = "SECRET=2\n".repeat(350_000);
  const r = await h.call("write", { path: ".env", content });
  writing = false;
  await watch;
  assert.ok(r.ok, JSON.stringify(r));
  assert.ok(seen.length > 0, "the watcher never saw the temp file");
  assert.deepEqual([...new Set(seen)], [0o600]);
  assert.equal(Deno.statSync(target).mode! & 0o777, 0o600);
  assert.equal(h.get(".env"), content);
  assert.deepEqual(temps(h.dir), []);
});

Deno.test("write() gives a new file the mode of the umask and an overwrite the old mode", async () => {
  await using h = harness([readTool, writeTool]);
  const probe = h.put("probe", "");
  const umaskMode = Deno.statSync(probe).mode! & 0o777;
  assert.ok((await h.call("write", { path: "new.txt", content: "x" })).ok);
  assert.equal(Deno.statSync(`${h.dir}/new.txt`).mode! & 0o777, umaskMode);
  const exe = h.put("run.sh", "#!/bin/sh\n");
  Deno.chmodSync(exe, 0o750);
  await h.call("read", { path: "run.sh" });
  assert.ok((await h.call("write", { path: "run.sh", content: "#!/bin/sh\necho\n" })).ok);
  assert.equal(Deno.statSync(exe).mode! & 0o777, 0o750);
});

/** Kills one writer child at a random point of its write loop. */
async function killOnce(dir: string, size: number): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_killed_writer.ts", import.meta.url).pathname, dir, `${size}`],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  await new Promise((r) => setTimeout(r, Math.random() * 100));
  child.kill("SIGKILL");
  await reader.cancel();
  await child.status;
}

Deno.test("write() killed by SIGKILL 200 times leaves no partial file, and no temp after the next write", async () => {
  await using h = harness([readTool, writeTool]);
  const SIZE = 3 * 1024 * 1024;
  const TRIALS = 200;
  const PARALLEL = 4;
  const dirs = Array.from({ length: PARALLEL }, (_, i) => `w${i}`);
  for (const d of dirs) h.put(`${d}/big.txt`, "a".repeat(SIZE));
  let partial = 0;
  for (let t = 0; t < TRIALS; t += PARALLEL) {
    await Promise.all(dirs.map((d) => killOnce(`${h.dir}/${d}`, SIZE)));
    for (const d of dirs) {
      const text = Deno.readTextFileSync(`${h.dir}/${d}/big.txt`);
      if (text !== "a".repeat(SIZE) && text !== "b".repeat(SIZE)) partial++;
    }
  }
  const left = dirs.reduce((n, d) => n + temps(`${h.dir}/${d}`).length, 0);
  // The next write into each directory removes what the killed processes left.
  for (const d of dirs) {
    assert.ok((await h.call("write", { path: `${d}/after.txt`, content: "x" })).ok);
  }
  const after = dirs.flatMap((d) => temps(`${h.dir}/${d}`));
  assert.equal(partial, 0);
  assert.deepEqual(after, [], `${left} temps were left before the cleanup`);
});

Deno.test("write() removes the temps of dead processes and old ones, and keeps live ones", async () => {
  await using h = harness([readTool, writeTool]);
  const dead = new Deno.Command("true").spawn();
  await dead.status;
  const live = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const plant = (name: string, ageMs = 0) => {
      Deno.mkdirSync(`${h.dir}/d/${name}`, { recursive: true });
      Deno.writeTextFileSync(`${h.dir}/d/${name}/n`, "partial");
      Deno.symlinkSync("..", `${h.dir}/d/${name}/up`);
      const t = new Date(Date.now() - ageMs);
      Deno.utimeSync(`${h.dir}/d/${name}`, t, t);
    };
    plant(`${TEMP_PREFIX}p${dead.pid}-dead`);
    plant(`${TEMP_PREFIX}p${live.pid}-live`);
    plant(`${TEMP_PREFIX}p${live.pid}-old`, 2 * 60 * 60 * 1000);
    plant(`${TEMP_PREFIX}p${Deno.pid}-mine`);
    // The single temp file of older versions, two hours old.
    h.put(`d/${TEMP_PREFIX}0b5d0c8e-5d7e-4c1e-9a8a-1f2e3d4c5b6a`, "partial");
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    Deno.utimeSync(`${h.dir}/d/${TEMP_PREFIX}0b5d0c8e-5d7e-4c1e-9a8a-1f2e3d4c5b6a`, old, old);
    assert.ok((await h.call("write", { path: "d/a.txt", content: "x" })).ok);
    assert.deepEqual(
      temps(`${h.dir}/d`).sort(),
      [
        `${TEMP_PREFIX}p${Deno.pid}-mine`,
        `${TEMP_PREFIX}p${live.pid}-live`,
      ].sort(),
    );
  } finally {
    live.kill("SIGKILL");
    await live.status;
  }
});
