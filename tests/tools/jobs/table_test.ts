/**
 * The job table through the tools, as the model uses it: bash with
 * `run_in_background`, bash_output, bash_kill, against real sandboxes.
 *
 * @module
 */

import assert from "node:assert/strict";
import { jobsHarness, ok, running } from "../../support/jobs.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { configDir } from "../../../tools/fs/data_dir.ts";
import { harness } from "../../support/harness.ts";
import { until } from "../../support/until.ts";
import { takeUncappedNotice } from "../../support/sandbox_notice.ts";
import { bashTool } from "../../../tools/bash.ts";
import { jobsBeside, openJobs } from "../../../tools/jobs/table.ts";
import { HEAD_BYTES, markerLine } from "../../../tools/jobs/output.ts";
import type { SandboxMode } from "../../../tools/policy/sandbox.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { sleepMarker } from "../../support/marker.ts";

await takeUncappedNotice();

/** What a sandboxed job's start says of its ports, when the user keeps them off the host. */
const PORTS_LINE = "A port it listens on (127.0.0.1 or all addresses) is reachable from later " +
  "bash calls at 127.0.0.1 on the same port once it listens; bash_output lists its ports. The " +
  "user's machine cannot reach them: only the user allows that, with the flag " +
  '--job-ports-on-host or "sandbox": {"jobPortsOnHost": true} in ' +
  `${join(configDir(), "config.json")}; tell the user if they need it.`;

const MODES: SandboxMode[] = ["workspace-write", "danger-full-access"];

/** Whether a connection to the host's 127.0.0.1:`port` is refused. */
async function refused(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return false;
  } catch (e) {
    return e instanceof Deno.errors.ConnectionRefused;
  }
}

function marker(): string {
  return sleepMarker(800);
}

for (const mode of MODES) {
  Deno.test(`bash run_in_background returns at once; bash_output gives what is new, then how it ended (${mode})`, async () => {
    await using t = jobsHarness(mode);
    const { h, jobs } = t;
    const t0 = performance.now();
    const started = ok(
      await h.call("bash", {
        command: "echo one; echo two >&2; read -t 30 x < /dev/null; sleep 0.3; echo three; exit 4",
        run_in_background: true,
      }),
    );
    assert.ok(performance.now() - t0 < 2000);
    const path = jobs.list()[0].outputPath;
    assert.ok(path.startsWith(`${t.home}/spill/`), path);
    assert.equal(
      started,
      "Started background job b1: echo one; echo two >&2; read -t 30 x < /dev/null; sleep 0.3; " +
        `echo three; exit 4\nIts output goes to ${path}. Read what is new with bash_output ` +
        '{"id": "b1"}; stop it with bash_kill {"id": "b1"}. It runs until it ends, is stopped, ' +
        "or the session ends; you are told when it ends on its own." +
        (mode === "danger-full-access" ? "" : `\n${PORTS_LINE}`),
    );
    await until(() => jobs.list()[0].outputBytes >= 8, "the first lines are written");
    const first = ok(await h.call("bash_output", { id: "b1" }));
    assert.match(first, /^Job b1 \(echo one; .*\): running for [\d.]+ s\.\none\ntwo$/);
    await until(() => jobs.list()[0].state !== "running", "the job ends");
    const second = await h.call("bash_output", { id: "b1" });
    assert.match(ok(second), /: exited with code 4\.\nthree\n/);
    assert.ok(second.ok && second.exitCode === 4);
    assert.equal(h.sink.observations.at(-1)!.exitCode, 4);
    // Read already: the model heard how it ended, so no note follows.
    assert.deepEqual(jobs.takeNotes(), []);
    assert.match(
      ok(await h.call("bash_output", { id: "b1" })),
      /exited with code 4\.\n\(no new output\)/,
    );
    assert.equal(Deno.readTextFileSync(path), "one\ntwo\nthree\n");
  });
}

Deno.test("a job that ends on its own is noted once for the model", async () => {
  await using t = jobsHarness("workspace-write");
  ok(await t.h.call("bash", { command: "exit 0", run_in_background: true }));
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  assert.deepEqual(t.jobs.takeNotes(), ["[job b1 exited with code 0: exit 0]"]);
  assert.deepEqual(t.jobs.takeNotes(), []);
});

Deno.test("the ninth job is refused with the running ones named; a stopped one makes room", async () => {
  await using t = jobsHarness("workspace-write");
  const m = marker();
  for (let i = 1; i <= 8; i++) {
    ok(await t.h.call("bash", { command: `sleep ${m} # ${i}`, run_in_background: true }));
  }
  const ninth = await t.h.call("bash", { command: "echo nine", run_in_background: true });
  assert.ok(!ninth.ok);
  assert.equal(ninth.error.code, "too_many_jobs");
  assert.equal(
    ninth.error.message,
    "Cannot start another background job: 8 are running, the most this session may run at " +
      "once (jobs.max in crab's settings is 8)",
  );
  assert.equal(
    ninth.error.hint,
    "Stop one you no longer need with bash_kill first: " +
      Array.from({ length: 8 }, (_, i) => `b${i + 1} (sleep ${m} # ${i + 1})`).join(", ") + ".",
  );
  assert.match(ok(await t.h.call("bash_kill", { id: "b3" })), /^Killed job b3 /);
  assert.match(
    ok(await t.h.call("bash", { command: "echo nine", run_in_background: true })),
    /^Started background job b9: echo nine/,
  );
  await t.jobs.close();
  await until(() => running(m).length === 0, "every sleep is gone");
  assert.deepEqual(t.jobs.list().map((j) => j.state).filter((s) => s === "running"), []);
});

Deno.test("bash_output and bash_kill of an unknown id name the session's jobs", async () => {
  await using t = jobsHarness("workspace-write");
  const none = await t.h.call("bash_output", { id: "b1" });
  assert.ok(!none.ok);
  assert.deepEqual(none.error, {
    code: "job_not_found",
    message: 'No background job "b1" in this session',
    hint: "This session has started no background job: bash with run_in_background: true " +
      "starts one.",
  });
  ok(await t.h.call("bash", { command: "exit 0", run_in_background: true }));
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  const kill = await t.h.call("bash_kill", { id: "b7" });
  assert.ok(!kill.ok);
  assert.equal(kill.error.code, "job_not_found");
  assert.equal(kill.error.hint, "This session's jobs: b1 (exited: exit 0).");
  assert.equal(
    ok(await t.h.call("bash_kill", { id: "b1" })),
    "Job b1 (exit 0) had ended already: exited with code 0.\n" +
      "files changed while it ran: not known (no file watcher ran in this workspace)",
  );
});

for (const mode of MODES) {
  Deno.test(`bash_kill stops the job and everything it started, however it detached (${mode})`, async () => {
    await using t = jobsHarness(mode);
    const m = marker();
    // `setsid` leaves the process group: only the sandbox's PID namespace holds it.
    const detached = mode === "workspace-write" ? `setsid sleep ${m} & ` : "";
    ok(
      await t.h.call("bash", {
        command: `${detached}sleep ${m} & trap '' TERM; echo up; sleep ${m}`,
        run_in_background: true,
      }),
    );
    await until(() => t.jobs.list()[0].outputBytes > 0, "all run");
    const out = ok(await t.h.call("bash_kill", { id: "b1" }));
    assert.match(out, /^Killed job b1 \(.*\) after [\d.]+ s\./);
    assert.deepEqual(running(m), []);
    assert.equal(t.jobs.list()[0].state, "killed");
  });
}

Deno.test("a job that writes 50 MB leaves a capped file: the head, the dropped count, the tail", async () => {
  await using t = jobsHarness("workspace-write");
  ok(
    await t.h.call("bash", {
      command: "seq 1 7000000; echo the-end",
      run_in_background: true,
    }),
  );
  await until(() => t.jobs.list()[0].state !== "running", "the job ends", { timeoutMs: 60_000 });
  const job = t.jobs.list()[0];
  const total = new TextEncoder().encode(
    Array.from({ length: 7_000_000 }, (_, i) => `${i + 1}\n`).join("") + "the-end\n",
  ).byteLength;
  assert.equal(job.outputBytes, total);
  assert.ok(total > 50 * 1024 * 1024);
  const size = Deno.statSync(job.outputPath).size;
  assert.ok(size <= 10 * 1024 * 1024 + 160, `${size}`);
  const file = Deno.readFileSync(job.outputPath);
  const text = new TextDecoder().decode(file);
  // The head as it came.
  const head = new TextDecoder().decode(file.subarray(0, HEAD_BYTES));
  assert.ok(head.startsWith("1\n2\n3\n"));
  // The marker, then the tail, from a line's start to the end.
  const at = text.indexOf("\n[… ");
  const dropped = Number(/\[… (\d+) bytes of this job's output were dropped here/.exec(text)![1]);
  const marker = markerLine(dropped);
  assert.equal(text.slice(at, at + marker.length), marker);
  const tail = text.slice(at + marker.length);
  assert.ok(tail.endsWith("6999999\n7000000\nthe-end\n"));
  assert.match(tail, /^\d+\n/);
  assert.equal(HEAD_BYTES + dropped + new TextEncoder().encode(tail).byteLength, total);
  // A read shows the first and last 15 KiB of what is new, and where the rest is.
  const read = ok(await t.h.call("bash_output", { id: "b1" }));
  assert.match(read, /^Job b1 \(seq 1 7000000; echo the-end\): exited with code 0\.\n1\n2\n/);
  assert.match(
    read,
    new RegExp(
      `\\[… \\d+ bytes \\([\\d.]+ MiB\\) of new output not shown; the job's output is in ` +
        `${job.outputPath}: read it with offset/limit or grep it\\]\\n`,
    ),
  );
  assert.ok(read.endsWith("7000000\nthe-end"), read.slice(-100));
  assert.ok(read.length < 40 * 1024);
});

Deno.test("bash_output's filter keeps matching lines and consumes the others", async () => {
  await using t = jobsHarness("workspace-write");
  ok(
    await t.h.call("bash", {
      command: "for i in 1 2 3 4 5 6; do echo line $i; done; printf 'line 7 without newline'",
      run_in_background: true,
    }),
  );
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  const even = ok(await t.h.call("bash_output", { id: "b1", filter: "[246]$" }));
  assert.equal(
    even,
    "Job b1 (for i in 1 2 3 4 5 6; do echo line $i; done; printf 'line 7 " +
      "without newline'): exited with code 0.\nline 2\nline 4\nline 6\n" +
      "files changed while it ran: not known (no file watcher ran in this workspace)",
  );
  assert.match(ok(await t.h.call("bash_output", { id: "b1" })), /\(no new output\)/);
  // A pattern whose work is not bounded is tested off crab's thread, with the same answer.
  ok(await t.h.call("bash", { command: "echo aaa; echo abab; echo b", run_in_background: true }));
  await until(() => t.jobs.list()[1].state === "exited", "the second job ends");
  assert.match(
    ok(await t.h.call("bash_output", { id: "b2", filter: "^(a|b)+$" })),
    /\.\naaa\nabab\nb\n/,
  );
  const bad = await t.h.call("bash_output", { id: "b2", filter: "(" });
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, "invalid_pattern");
});

Deno.test("bash_output's filter that runs past its bound ends with regex_timeout, its thread in the idle class", async () => {
  await using t = jobsHarness("workspace-write", undefined, 300);
  ok(await t.h.call("bash", { command: `echo ${"a".repeat(40)}`, run_in_background: true }));
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  // 2^21 ways at each `a`: seconds, not hours, so this process gets its core back soon.
  const r = await t.h.call("bash_output", { id: "b1", filter: "(?:a|a){21}c" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "regex_timeout");
  assert.match(r.error.message, /took longer than 0\.3 s/);
  // Terminated, the worker's thread still runs the pattern: it does so in SCHED_IDLE.
  const ps = new Deno.Command("ps", { args: ["-T", "-o", "comm=,cls=", "-p", String(Deno.pid)] })
    .outputSync();
  const classes = new TextDecoder().decode(ps.stdout).split("\n")
    .filter((l) => l.startsWith("worker-")).map((l) => l.trim().split(/\s+/).at(-1));
  assert.ok(classes.includes("IDL"), `worker threads' classes: ${classes}`);
  // As the error says, the output was not consumed: the next read shows it.
  assert.match(ok(await t.h.call("bash_output", { id: "b1" })), new RegExp(`\\n${"a".repeat(40)}`));
});

Deno.test("bash_output's filter stopped by an abort ends the call at once and leaves the output unread", async () => {
  await using t = jobsHarness("workspace-write");
  ok(await t.h.call("bash", { command: `echo ${"a".repeat(40)}`, run_in_background: true }));
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  const ac = new AbortController();
  const t0 = performance.now();
  setTimeout(() => ac.abort(), 100);
  const r = await t.h.call("bash_output", { id: "b1", filter: "(?:a|a){21}c" }, ac.signal);
  assert.ok(!r.ok);
  assert.equal(r.error.code, "aborted");
  assert.ok(performance.now() - t0 < 5_000, "ends at the abort, not at the 10 s bound");
  assert.match(ok(await t.h.call("bash_output", { id: "b1" })), new RegExp(`\\n${"a".repeat(40)}`));
});

Deno.test("jobsBeside() names the jobs of a workspace alive since a time; close() ends them all", async () => {
  await using t = jobsHarness("workspace-write");
  const m = marker();
  const before = Date.now();
  ok(await t.h.call("bash", { command: `sleep ${m}`, run_in_background: true }));
  ok(await t.h.call("bash", { command: "exit 0", run_in_background: true }));
  await until(() => t.jobs.list()[1].state === "exited", "the second job ends");
  const after = Date.now() + 1;
  assert.deepEqual(jobsBeside(t.h.dir, before), ["b1", "b2"]);
  assert.deepEqual(jobsBeside(t.h.dir, after), ["b1"]);
  assert.deepEqual(jobsBeside("/elsewhere", before), []);
  await t.jobs.close();
  assert.deepEqual(running(m), []);
  assert.deepEqual(t.jobs.list().map((j) => j.state), ["killed", "exited"]);
  assert.deepEqual(jobsBeside(t.h.dir, before), []);
});

Deno.test("a job never asks about a host: the proxy refuses it and bash_output names it", async () => {
  await using t = jobsHarness("workspace-write");
  const asked: string[] = [];
  // Where a call would ask (and be let through), the job is refused without a question.
  t.h.session.sandbox = {
    mode: "workspace-write",
    net: false,
    writable: [],
    askHost: (host) => {
      asked.push(host);
      return Promise.resolve(true);
    },
  };
  ok(
    await t.h.call("bash", {
      command: "curl -sS -o /dev/null -w '%{http_code}\\n' http://blocked.test/; echo curl-done",
      run_in_background: true,
    }),
  );
  await until(() => t.jobs.list()[0].state === "exited", "the job ends");
  const read = ok(await t.h.call("bash_output", { id: "b1" }));
  assert.match(read, /\n403\ncurl-done\n/);
  assert.match(
    read,
    /\ncrab's proxy refused blocked\.test \(a background job is never asked about a host\): crab's sandbox refused "blocked\.test": it is not among the hosts this run allows/,
  );
  assert.deepEqual(asked, []);
  // The same command as a call is asked about: the job's refusal was its own rule.
  await t.h.call("bash", { command: "curl -sS -o /dev/null http://blocked.test/; true" });
  assert.deepEqual(asked, ["blocked.test"]);
});

Deno.test("a job's output file is read by later calls of the session; the rest of crab's data dir stays hidden", async () => {
  // Not under /tmp, which is private to each sandbox: where a data dir normally is, in view.
  const home = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-jobs-" }));
  const env = { get: (k: string) => k === "CRAB_HOME" ? home : undefined };
  const { readTool } = await import("../../../tools/read.ts");
  await using h = harness([bashTool, readTool], { yolo: true, env });
  // The policy's own grant, whose unseen() hides this data dir and shows this run's spill folder.
  h.session.sandbox =
    new Policy({ yolo: true, env, sandbox: { mode: "workspace-write", net: false, writable: [] } })
      .sandbox;
  const jobs = openJobs(h.session, { env });
  try {
    Deno.writeTextFileSync(`${home}/secret.txt`, "not for commands\n");
    ok(await h.call("bash", { command: "echo from-the-job", run_in_background: true }));
    await until(() => jobs.list()[0].state === "exited", "the job ends");
    const path = jobs.list()[0].outputPath;
    assert.equal(ok(await h.call("bash", { command: `cat '${path}'` })), "from-the-job\n");
    assert.equal(ok(await h.call("read", { path })), "1\tfrom-the-job\n");
    assert.match(
      ok(await h.call("bash", { command: `echo x >> '${path}'` })),
      /Read-only file system/,
    );
    assert.match(
      ok(await h.call("bash", { command: `cat '${home}/secret.txt'` })),
      /secret\.txt: (No such file or directory|Permission denied)\nExit code 1$/,
    );
  } finally {
    await jobs.close();
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("a job's server is reached by later calls of its session only, and the host until it ends; its folder goes once no call holds it", async () => {
  await using t = jobsHarness("workspace-write");
  t.h.session.sandbox = { ...t.h.session.sandbox, jobPortsOnHost: true };
  await using other = jobsHarness("workspace-write");
  // The job's port is taken on the host: there it moves to a free one.
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = taken.addr.port;
  ok(
    await t.h.call("bash", {
      command: `exec python3 -m http.server ${port} --bind 127.0.0.1`,
      run_in_background: true,
    }),
  );
  await until(() => t.jobs.exposedPorts().length > 0, "the job's port is exposed");
  const dir = t.jobs.list()[0].portsDir!;
  assert.deepEqual(t.jobs.exposedPorts(), [{ port, socket: `${dir}/${port}` }]);
  const curl = `curl -sS --max-time 5 http://127.0.0.1:${port}/`;
  assert.match(ok(await t.h.call("bash", { command: curl })), /Directory listing for \//);
  // Another session's call has nothing on that port.
  assert.match(
    ok(await other.h.call("bash", { command: curl })),
    new RegExp(`Failed to connect to 127\\.0\\.0\\.1 port ${port}.*\\nExit code 7$`, "s"),
  );
  const read = ok(await t.h.call("bash_output", { id: "b1" }));
  const onHost = read.match(
    new RegExp(
      `\\nPort ${port} is reachable from later bash calls at 127\\.0\\.0\\.1:${port}, and from ` +
        `the user's machine at http://127\\.0\\.0\\.1:(\\d+) \\(${port} was taken there\\)\\.$`,
    ),
  );
  assert.ok(onHost, read);
  const hostPort = Number(onHost[1]);
  assert.notEqual(hostPort, port);
  const page = await fetch(`http://127.0.0.1:${hostPort}/`);
  assert.match(await page.text(), /Directory listing for \//);
  // A call started with the job's sockets holds its folder past the job's end.
  const lent = t.jobs.lendPorts()!;
  assert.deepEqual(lent.ports, [{ port, socket: `${dir}/${port}` }]);
  await t.jobs.kill("b1");
  // Deno lets the listener go once its pending accept is cancelled, a moment after close().
  await until(() => refused(hostPort), "the host's port closes with the job");
  assert.deepEqual(t.jobs.exposedPorts(), []);
  assert.equal(t.jobs.lendPorts(), undefined);
  assert.deepEqual([...Deno.readDirSync(dir)], [], "the job's sockets went with it");
  lent.release();
  assert.equal(existsSync(dir), false, "the folder goes once no call holds it");
  assert.equal(t.jobs.list()[0].portsDir, undefined);
});

Deno.test("subscribe() tells a job's start, its output (the last line), its reads and its end", async () => {
  await using t = jobsHarness("danger-full-access");
  const events: [string, string, string][] = [];
  const stop = t.jobs.subscribe((e) => events.push([e.kind, e.job.state, e.job.lastLine]));
  ok(
    await t.h.call("bash", {
      command: "echo first; sleep 0.4; echo last",
      run_in_background: true,
    }),
  );
  await until(() => events.some(([k]) => k === "ended"), "the job ends");
  ok(await t.h.call("bash_output", { id: "b1" }));
  stop();
  ok(await t.h.call("bash_output", { id: "b1" }));
  assert.deepEqual(events[0], ["started", "running", ""]);
  const outputs = events.filter(([k]) => k === "output");
  assert.deepEqual(outputs[0], ["output", "running", "first"]);
  assert.deepEqual(events.slice(-2), [["ended", "exited", "last"], ["read", "exited", "last"]]);
  const [info] = t.jobs.list();
  assert.deepEqual(
    [info.id, info.command, info.state, info.exitCode, info.lastLine],
    ["b1", "echo first; sleep 0.4; echo last", "exited", 0, "last"],
  );
  assert.ok(info.ageMs >= 400 && info.endedAt !== null, JSON.stringify(info));
});
