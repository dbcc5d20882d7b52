/**
 * Background jobs end with their session, whichever way it ends: a print run's
 * final answer, SIGTERM, SIGKILL of crab itself (the sandbox's
 * `--die-with-parent`, or the wrapper that watches crab's pipe without one).
 * Each test starts crab as a user does, against the fake model, and looks
 * for the job's marker in the process table.
 *
 * @module
 */

import assert from "node:assert/strict";
import { running } from "../../support/jobs.ts";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";
import type { SandboxMode } from "../../../tools/policy/sandbox.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { serve, textOf } from "../../support/mcp_serve.ts";
import { all, envOf, resultOf } from "../../support/sdk.ts";
import { query } from "../../../sdk.ts";
import { sleepMarker } from "../../support/marker.ts";

/** Processes whose command line holds `marker` (ps and grep left out). */
/** A marker no other test uses: a sleep's odd duration. */
function marker(): string {
  return sleepMarker(900);
}

const MODES: SandboxMode[] = ["workspace-write", "danger-full-access"];

/** What job `id` of the run whose data dir is `home` wrote so far ("" before it has a file). */
function outputOf(home: string, id: string): string {
  for (const run of Deno.readDirSync(join(home, "spill"))) {
    for (const e of Deno.readDirSync(join(home, "spill", run.name))) {
      if (!e.name.startsWith(`job-${id}-`)) continue;
      return Deno.readTextFileSync(join(home, "spill", run.name, e.name, "output.txt"));
    }
  }
  return "";
}

function crabArgs(fake: { baseUrlFor(f: "anthropic"): string }, mode: SandboxMode): string[] {
  return [
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--sandbox",
    mode,
    "--output-format",
    "json",
    "-p",
    "go",
  ];
}

for (const mode of MODES) {
  Deno.test(`crab -p: a job's output is read, and the job ends with the final answer, listed as killed (${mode})`, async () => {
    using s = sandbox();
    const m = marker();
    const command = `echo ready; while :; do echo tick; sleep ${m}; done`;
    await using fake = await startFakeModel([
      { text: "Starting.", calls: [{ name: "bash", args: { command, run_in_background: true } }] },
      // Read once the job wrote its first line.
      async () => {
        await until(() => outputOf(s.home, "b1").startsWith("ready\n"), "the job writes");
        return { text: "Reading.", calls: [{ name: "bash_output", args: { id: "b1" } }] };
      },
      { text: "Done." },
    ]);
    const child = s.spawn(crabArgs(fake, mode), { env: { ANTHROPIC_API_KEY: "k" } });
    await child.stdin.close();
    let answered = 0;
    const out = child.output();
    // The final answer's request is the third; the run ends within 2 s of it.
    await until(() => fake.modelRequests().length === 3, "the final answer is asked for");
    answered = Date.now();
    const done = await out;
    const ended = Date.now() - answered;
    const stderr = new TextDecoder().decode(done.stderr);
    assert.equal(done.code, 0, stderr);
    assert.ok(ended < 2000, `the run took ${ended} ms after the final answer`);
    assert.deepEqual(running(m), []);
    const result = JSON.parse(new TextDecoder().decode(done.stdout));
    assert.equal(result.result, "Done.");
    assert.equal(result.background_jobs.length, 1);
    const job = result.background_jobs[0];
    assert.deepEqual(
      [job.id, job.command, job.state, job.killed],
      ["b1", command, "killed", true],
    );
    // bash_output showed the job's own output to the model.
    const third = JSON.stringify(fake.modelRequests()[2].body);
    assert.match(third, /Job b1 \(.*\): running for [\d.]+ s\.\\nready/);
  });
}

/** A port free on the host's loopback now. */
function freePort(): number {
  using l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return l.addr.port;
}

/** Whether a job of the run whose data dir is `home` exposes `port` (its socket is there). */
function exposes(home: string, port: number): boolean {
  const folder = join(home, "sandbox", "ports");
  try {
    return [...Deno.readDirSync(folder)].some((d) => {
      try {
        return Deno.lstatSync(join(folder, d.name, String(port))).isSocket === true;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** What curl run by the test itself, on the host, fetched from `url`, or its exit code. */
async function fetchOnHost(url: string): Promise<string | number> {
  const out = await new Deno.Command("curl", {
    args: ["-s", "--max-time", "5", url],
    stdout: "piped",
    stderr: "null",
  }).output();
  return out.code === 0 ? new TextDecoder().decode(out.stdout) : out.code;
}

for (const onHost of [false, true]) {
  Deno.test(`crab -p: a job's server answers the next bash call; the host reaches it ${onHost ? "with" : "only with"} --job-ports-on-host`, async () => {
    using s = sandbox();
    s.put("hello.txt", "hello from the job\n");
    const port = freePort();
    const server = `python3 -m http.server ${port} --bind 127.0.0.1`;
    const url = `http://127.0.0.1:${port}/hello.txt`;
    const curl = `curl -s --retry-connrefused --retry 20 --retry-delay 0 --max-time 10 ${url}`;
    let fromHost: string | number = "";
    let answered = 0;
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: server, run_in_background: true } }] },
      // As a model that looked first: the job listens by then.
      async () => {
        await until(() => exposes(s.home, port), "the job's port is exposed");
        return { calls: [{ name: "bash", args: { command: curl } }] };
      },
      async () => {
        await until(() => outputOf(s.home, "b1").includes("GET /hello.txt"), "the server logs");
        return { calls: [{ name: "bash_output", args: { id: "b1" } }] };
      },
      async (req) => {
        // The job runs until this answer: the test, on the host, tries where bash_output said.
        const at = toolResults(req)[0].text.match(/user's machine at (http:\/\/127\.0\.0\.1:\d+)/);
        fromHost = await fetchOnHost(at ? `${at[1]}/hello.txt` : url);
        answered = Date.now();
        return { text: "Done." };
      },
    ]);
    const args = [...crabArgs(fake, "workspace-write"), ...(onHost ? ["--job-ports-on-host"] : [])];
    const r = await s.crab(args, { env: { ANTHROPIC_API_KEY: "k" } });
    const ended = Date.now() - answered;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(ended < 2000, `the run took ${ended} ms after the final answer`);
    assert.deepEqual(running(server), []);
    const result = JSON.parse(r.stdout);
    assert.deepEqual(
      result.background_jobs.map((j: Record<string, unknown>) => [j.id, j.state, j.killed]),
      [["b1", "killed", true]],
    );
    const [started, fetched, read] = [1, 2, 3].map((i) => toolResults(fake.modelRequests()[i])[0]);
    assert.match(
      started.text,
      /is reachable from later bash calls at 127\.0\.0\.1 on the same port/,
    );
    assert.equal(fetched.text, "hello from the job\n");
    assert.match(read.text, /"GET \/hello\.txt HTTP\/1\.1" 200 -/);
    if (onHost) {
      assert.match(
        read.text,
        new RegExp(
          `\\nPort ${port} is reachable from later bash calls at 127\\.0\\.0\\.1:${port}, and from ` +
            "the user's machine at http://127\\.0\\.0\\.1:\\d+",
        ),
      );
      assert.equal(fromHost, "hello from the job\n");
    } else {
      assert.match(
        read.text,
        new RegExp(
          `\\nPort ${port} is reachable from later bash calls at 127\\.0\\.0\\.1:${port}\\.\\n` +
            "The user's machine cannot reach them: only the user allows that, with the flag " +
            "--job-ports-on-host",
        ),
      );
      assert.equal(fromHost, 7, "curl on the host cannot connect");
    }
    // The job's folder of sockets went with the session.
    assert.deepEqual([...Deno.readDirSync(join(s.home, "sandbox", "ports"))], []);
  });
}

for (const mode of MODES) {
  for (const sig of ["SIGKILL", "SIGTERM", "SIGHUP"] as const) {
    Deno.test(`a job ends when crab gets ${sig} (${mode})`, async () => {
      using s = sandbox();
      const m = marker();
      await using fake = await startFakeModel([
        {
          text: "Starting.",
          calls: [{ name: "bash", args: { command: `sleep ${m}`, run_in_background: true } }],
        },
        // The run waits here, the job running, until the test sends the signal.
        { text: "Waiting.", calls: [{ name: "bash", args: { command: "sleep 30" } }] },
        { text: "Done." },
      ]);
      const child = s.spawn(crabArgs(fake, mode), { env: { ANTHROPIC_API_KEY: "k" } });
      await child.stdin.close();
      await until(() => running(m).length > 0, "the job runs");
      await until(() => fake.modelRequests().length === 2, "the second call is asked for");
      child.kill(sig);
      await child.output();
      // Without crab, the sandbox goes with bubblewrap's parent; the wrapper sees its pipe close.
      // A loaded machine may take seconds; what is left after the wait is named in the failure.
      await until(() => running(m).length === 0, `nothing of the job survives ${sig}`)
        .catch(() => {});
      assert.deepEqual(running(m), [], `the job's processes survived ${sig}`);
    });
  }
}

for (const [how, keys] of [["/exit", ["/exit", "Enter"]], ["Ctrl-C twice", ["C-c", "C-c"]]]) {
  Deno.test(`repl: the session's jobs end when it is left with ${how}`, async () => {
    using s = sandbox();
    const m = marker();
    await using fake = await startFakeModel([
      {
        text: "Started.",
        calls: [{ name: "bash", args: { command: `sleep ${m}`, run_in_background: true } }],
      },
      { text: "It runs." },
    ]);
    await using t = await replAgainst(s, fake, ["--yolo"]);
    await submit(t, "start a job");
    await t.waitFor("It runs.");
    assert.equal(running(m).length > 0, true);
    await t.waitFor(/› $/m);
    if (keys[0] === "/exit") {
      await t.type(keys[0]);
      await t.keys(keys[1]);
    } else {
      await t.keys(keys[0]);
      await t.waitFor("press Ctrl-C again");
      await t.keys(keys[1]);
    }
    await until(async () => !(await t.alive()), "crab exits");
    assert.deepEqual(running(m), []);
  });
}

Deno.test("query(): the jobs of a query end with it, listed as killed in its result", async () => {
  using s = sandbox("crab-sdk-");
  const m = marker();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${m}`, run_in_background: true } }] },
    { text: "Started it." },
  ]);
  const ms = await all(query({
    prompt: "start a job",
    options: { cwd: s.ws, env: envOf(s, fake.url), model: "fake-model", allowedTools: ["Bash"] },
  }));
  const result = resultOf(ms);
  assert.deepEqual(result.background_jobs?.map((j) => [j.id, j.state]), [["b1", "killed"]]);
  assert.deepEqual(running(m), []);
});

Deno.test("crab mcp serve: a connection's jobs end when it closes", async () => {
  using s = sandbox();
  const m = marker();
  const served = await serve(s, ["--tools", "bash,bash_output,bash_kill"]);
  const r = await served.client.callTool({
    name: "bash",
    arguments: { command: `echo up; sleep ${m}`, run_in_background: true },
  });
  assert.match(textOf(r), /^Started background job b1: echo up; sleep /);
  await until(() => running(m).length > 0, "the job runs");
  const read = await served.client.callTool({ name: "bash_output", arguments: { id: "b1" } });
  assert.match(textOf(read), /^Job b1 \(echo up; sleep [\d.]+\): running for /);
  await served.close();
  assert.deepEqual(running(m), []);
});

Deno.test("crab -p: a job that ends on its own is told to the model with the next message, once, and recorded", async () => {
  using s = sandbox();
  const command = "echo hi; sleep 0.5; exit 3";
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command, run_in_background: true } }] },
    async () => {
      await until(() => outputOf(s.home, "b1").startsWith("hi\n"), "the job writes");
      // The job ends while this call runs.
      return { calls: [{ name: "bash", args: { command: "sleep 1.5" } }] };
    },
    { calls: [{ name: "bash_output", args: { id: "b1" } }] },
    { text: "Done." },
  ]);
  const r = await s.crab(crabArgs(fake, "workspace-write"), { env: { ANTHROPIC_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  const note = `[job b1 exited with code 3: ${command}]`;
  const lastUser = (i: number) => {
    const messages = (fake.modelRequests()[i].body as { messages: { content: unknown }[] })
      .messages;
    return JSON.stringify(messages.at(-1)!.content);
  };
  assert.ok(lastUser(2).includes(JSON.stringify(note)), lastUser(2));
  assert.ok(!lastUser(3).includes("[job b1"), lastUser(3));
  const result = JSON.parse(r.stdout);
  assert.deepEqual(
    result.background_jobs.map((j: Record<string, unknown>) => [j.id, j.state, j.exit_code]),
    [["b1", "exited", 3]],
  );
  // The store keeps its start, its read and its end; the calls are observations as ever.
  const db = new DatabaseSync(join(s.home, "crab.db"), { readOnly: true });
  try {
    const jobs = db.prepare(
      "SELECT job_id, state, exit_code, output_bytes, reads FROM background_jobs",
    )
      .all().map((row) => ({ ...row }));
    assert.deepEqual(jobs, [{
      job_id: "b1",
      state: "exited",
      exit_code: 3,
      output_bytes: 3,
      reads: 1,
    }]);
    const calls = db.prepare("SELECT tool, exit_code FROM observations ORDER BY call_seq").all()
      .map((row) => ({ ...row }));
    assert.deepEqual(calls, [
      { tool: "bash", exit_code: null },
      { tool: "bash", exit_code: 0 },
      { tool: "bash_output", exit_code: 3 },
    ]);
  } finally {
    db.close();
  }
});

Deno.test("crab tool --jsonl: the jobs its calls started end with its input", async () => {
  using s = sandbox();
  const m = marker();
  const start = JSON.stringify({
    tool: "bash",
    args: { command: `echo up; sleep ${m}`, run_in_background: true },
  });
  const child = s.spawn(["tool", "--jsonl"]);
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(start + "\n"));
  await until(() => running(m).length > 0, "the job runs");
  await writer.close();
  const out = await child.output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.match(new TextDecoder().decode(out.stdout), /Started background job b1: echo up; sleep/);
  assert.deepEqual(running(m), []);
});

Deno.test("crab -p: jobs.max in the user's settings bounds the jobs of a session", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ jobs: { max: 1 } }),
  );
  const m = marker();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${m}`, run_in_background: true } }] },
    { calls: [{ name: "bash", args: { command: "echo two", run_in_background: true } }] },
    { text: "Done." },
  ]);
  const r = await s.crab(crabArgs(fake, "workspace-write"), { env: { ANTHROPIC_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  const second = JSON.stringify(fake.modelRequests()[2].body);
  assert.ok(
    second.includes(
      "Cannot start another background job: 1 is running, the most this session may run at " +
        "once (jobs.max in crab's settings is 1)",
    ),
    second.slice(-2000),
  );
  assert.deepEqual(running(m), []);
});
