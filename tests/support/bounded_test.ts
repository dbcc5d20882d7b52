import assert from "node:assert/strict";
import { bounded } from "./bounded.ts";

function start(script: string, root: string): Deno.ChildProcess {
  return new Deno.Command("sh", {
    args: ["-c", script],
    cwd: root,
    // As crab's own processes do (CRAB_HOME): the environment names the run's folder.
    env: { RUN_ROOT: root },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** True while `pid` runs (a zombie has ended). */
const alive = (pid: number) => {
  const out = new Deno.Command("ps", { args: ["-p", String(pid), "-o", "stat="], stdout: "piped" })
    .outputSync();
  const stat = new TextDecoder().decode(out.stdout).trim();
  return stat !== "" && !stat.startsWith("Z");
};

Deno.test("bounded() gives a finished process's output and code", async () => {
  const root = Deno.makeTempDirSync();
  try {
    const r = await bounded(start("echo out; echo err >&2; exit 3", root), root, 30_000);
    assert.equal(r.code, 3);
    assert.equal(new TextDecoder().decode(r.stdout), "out\n");
    assert.equal(new TextDecoder().decode(r.stderr), "err\n");
    assert.equal(r.overrun, undefined);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("bounded() kills a hung process and its children, and says what they were", async () => {
  const root = Deno.makeTempDirSync();
  try {
    const child = start("echo started; sleep 600 & echo $! > pid; wait", root);
    const r = await bounded(child, root, 500);
    assert.equal(r.code, 124);
    assert.equal(new TextDecoder().decode(r.stdout), "started\n");
    assert.match(r.overrun ?? "", /was still running/);
    assert.match(r.overrun ?? "", /sleep 600/);
    const sleeper = Number(Deno.readTextFileSync(`${root}/pid`));
    assert.ok(!alive(sleeper), "the sleeper was killed");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("bounded() finds a process that outlived the child and holds its output", async () => {
  const root = Deno.makeTempDirSync();
  try {
    const child = start("sleep 600 & echo $! > pid; echo left", root);
    const r = await bounded(child, root, 500);
    assert.equal(r.code, 124);
    assert.equal(new TextDecoder().decode(r.stdout), "left\n");
    assert.match(r.overrun ?? "", /had ended but its output was held open/);
    assert.match(r.overrun ?? "", /sleep 600/);
    assert.ok(!alive(Number(Deno.readTextFileSync(`${root}/pid`))));
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
