// The first searches of a process: bounded patterns start on the calling thread and hand over to
// the workers; anything that could run away goes to the workers at once, where it is stopped.
import assert from "node:assert/strict";
import { createGrepTool, DEFAULT_TIMEOUT_MS, grepTool } from "../../tools/grep.ts";
import { POOL_SIZE, poolWorkers, shutdownPool } from "../../tools/search/grep_pool.ts";
import { HERE_MAX_BYTES } from "../../tools/search/grep_worker.ts";
import { harness } from "../support/harness.ts";
import { sandbox } from "../support/cli.ts";
import { until } from "../support/until.ts";

function okOutput(r: { ok: boolean } & Record<string, unknown>): string {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r.output as string;
}

/** How many worker threads (Deno names them `worker-N`) process `pid` runs. */
function workerThreads(pid: number): number {
  // `ps`, not /proc: Deno reads /proc only with every permission.
  const out = new Deno.Command("ps", { args: ["-T", "-o", "comm=", "-p", String(pid)] })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith("worker-"))
    .length;
}

/** Scheduling class (`ps`'s `cls`: TS, IDL, …) of each grep worker thread of process `pid`. */
function workerClasses(pid: number): string[] {
  const out = new Deno.Command("ps", { args: ["-T", "-o", "comm=,cls=", "-p", String(pid)] })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith("worker-"))
    .map((l) => l.trim().split(/\s+/).at(-1)!);
}

/** `(?:a|a)` 29 times, then `c`: no quantifier, but 2^29 ways to try at every `a`. */
const ALTERNATION_BOMB = "(?:a|a)".repeat(29) + "c";

/**
 * `(a|a)*` and a backreference: 2^n ways to try over n `a`s, hours on a line of
 * 40. V8's linear-time engine, which crab's runtime flags let take over a pattern
 * that backtracks too much, takes no backreference: this one still runs away.
 */
const BACKREFERENCE_BOMB = "(a|a)*\\1c";

/**
 * The same, fewer times: a few seconds of work (each about 3 s here), not
 * hours. A search in this process that times out leaves its worker thread
 * running, since `worker.terminate()` does not stop a thread busy in
 * JavaScript in this Deno (denoland/deno#35657); a bomb that ends on its own
 * gives the other test files their cores back. A crab process that times out
 * exits, and its threads with it.
 */
const FINITE_BOMBS = ["(?:a|a)".repeat(25) + "c", "(?:a|a){21}c"];

/**
 * A pattern V8's linear-time engine takes, which V8 hands to that engine once
 * it has backtracked 50,000 times; yet its greedy `[^b]*` backtracks without
 * counting, so the hand-over does not bound its work: 200 ms over 1 KB of
 * lines of `a`s, 17 s over 256 KB. It must never run on the calling thread.
 */
const GREEDY_BOMB = "(a+)+[^b]*c";

Deno.test("grep() searches a small tree without starting a worker", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "hit\n");
  h.put("src/b.txt", "no\nhit\n");
  // Workers start once this thread has searched 12 ms: a loaded machine can take that long
  // for two small files once, so three tries (the answers are right every time).
  const workers: number[] = [];
  for (let i = 0; i < 3; i++) {
    shutdownPool();
    assert.equal(
      okOutput(await h.call("grep", { pattern: "hit" })),
      "a.txt:1:hit\nsrc/b.txt:2:hit",
    );
    assert.equal(
      okOutput(await h.call("grep", { pattern: "TODO|hit", path: "a.txt" })),
      "a.txt:1:hit",
    );
    workers.push(poolWorkers().length);
    if (workers.at(-1) === 0) break;
  }
  assert.equal(workers.at(-1), 0, `workers started each time: ${workers}`);
});

Deno.test("grep() starts the workers at once for a pattern that could run away", async () => {
  shutdownPool();
  await using h = harness([grepTool]);
  h.put("a.txt", "hit\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "hi+t" })), "a.txt:1:hit");
  assert.equal(poolWorkers().length, POOL_SIZE);
});

Deno.test("grep() hands a file too large for this thread to the workers, in path order", async () => {
  shutdownPool();
  await using h = harness([grepTool]);
  const expected: string[] = [];
  for (const d of ["a", "c"]) {
    for (let i = 0; i < 5; i++) {
      h.put(`${d}/${i}.txt`, `x\nhit ${d}${i}\n`);
      expected.push(`${d}/${i}.txt:2:hit ${d}${i}`);
      if (d === "a" && i === 4) {
        const filler = "filler line\n".repeat(Math.ceil(HERE_MAX_BYTES / 12) + 10);
        h.put("b/big.txt", `hit first\n${filler}hit last\n`);
        expected.push("b/big.txt:1:hit first", `b/big.txt:${filler.length / 12 + 2}:hit last`);
      }
    }
  }
  const out = okOutput(await h.call("grep", { pattern: "hit", max_results: 10000 }));
  assert.deepEqual(out.split("\n"), expected);
  assert.equal(poolWorkers().length, POOL_SIZE, "the large file went to the workers");
  // The same search on the running pool answers the same.
  assert.equal(okOutput(await h.call("grep", { pattern: "hit", max_results: 10000 })), out);
});

Deno.test("grep() keeps path order when a long search moves from this thread to the workers", async () => {
  shutdownPool();
  await using h = harness([grepTool]);
  const expected: string[] = [];
  for (let i = 0; i < 5000; i++) {
    const rel = `d${String(i % 50).padStart(2, "0")}/f${String(i).padStart(4, "0")}.txt`;
    h.put(rel, i % 3 ? "nothing\n" : `x\nneedle ${i}\n`);
    if (i % 3 === 0) expected.push(`${rel}:2:needle ${i}`);
  }
  expected.sort();
  const out = okOutput(await h.call("grep", { pattern: "needle", max_results: 10000 }));
  assert.deepEqual(out.split("\n"), expected);
  assert.equal(poolWorkers().length, POOL_SIZE, "a search this long starts the workers");
});

Deno.test("grep() stops a quantifier-free alternation bomb on the first search of a process", async () => {
  shutdownPool();
  await using h = harness([createGrepTool({ timeoutMs: 500 })]);
  h.put("a.txt", "a".repeat(40) + "\n");
  for (const pattern of FINITE_BOMBS) {
    const t0 = performance.now();
    const r = await h.call("grep", { pattern });
    assert.equal(r.ok, false, pattern);
    assert.equal(!r.ok && r.error.code, "regex_timeout", pattern);
    assert.ok(performance.now() - t0 < DEFAULT_TIMEOUT_MS, "ended at its own bound");
  }
});

Deno.test("crab tool grep ends a runaway first search with regex_timeout", async () => {
  using s = sandbox();
  s.put("a.txt", "a".repeat(40) + "\n");
  const child = s.spawn(["tool", "grep", JSON.stringify({ pattern: BACKREFERENCE_BOMB })], {
    env: { CRAB_GREP_TIMEOUT_MS: "1000" },
  });
  await child.stdin.close();
  const t0 = performance.now();
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const out = await child.output();
  clearTimeout(timer);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(stderr, /^error \[regex_timeout\]/);
  // Unbounded, the pattern runs for tens of seconds on this one line.
  assert.ok(performance.now() - t0 < 12_000, "stopped at its time bound");
});

Deno.test("crab with its runtime flags answers a pattern that backtracks without end; a backreference still times out", async () => {
  using s = sandbox();
  s.put("a.txt", "a".repeat(40) + "b\n");
  s.put("c.txt", "aaa\n");
  // Started as the installed command and the binary start it (crabArgs gives the runtime's
  // flags): V8 goes over to its linear-time engine once a pattern it can take backtracks too
  // much, and a search ends instead of running away.
  const env = { CRAB_GREP_TIMEOUT_MS: "3000" };
  const nested = await s.crab(["tool", "grep", JSON.stringify({ pattern: "(a+)+$" })], { env });
  assert.equal(nested.code, 0, nested.stderr);
  assert.equal(nested.stdout, "c.txt:1:aaa\n");
  // Nor does it take the `i` flag: a case-insensitive search goes to it without one.
  for (const pattern of ["(A+)+$", "([^B]+)+$"]) {
    const folded = await s.crab(
      ["tool", "grep", JSON.stringify({ pattern, case_insensitive: true })],
      { env },
    );
    assert.equal(folded.code, 0, folded.stderr);
    assert.equal(folded.stdout, "c.txt:1:aaa\n", pattern);
  }
  const alternation = await s.crab(
    ["tool", "grep", JSON.stringify({ pattern: ALTERNATION_BOMB, path: "a.txt" })],
    { env },
  );
  assert.equal(alternation.code, 0, alternation.stderr);
  assert.match(alternation.stdout, /^No matches/);
  // That engine takes no backreference: such a pattern is stopped at its bound, as before.
  const backreference = await s.crab(
    ["tool", "grep", JSON.stringify({ pattern: BACKREFERENCE_BOMB, path: "a.txt" })],
    { env: { CRAB_GREP_TIMEOUT_MS: "1000" } },
  );
  assert.equal(backreference.code, 1, backreference.stderr);
  assert.match(backreference.stderr, /^error \[regex_timeout\]/);
});

/**
 * Starts `crab tool grep` of `pattern` over `content`, waits (at most
 * `waitMs`) until its worker threads are up, sends SIGTERM, and checks that
 * crab's handler ended it promptly.
 */
async function sigtermOnTheWorkers(content: string, pattern: string, waitMs = 30_000) {
  using s = sandbox();
  s.put("a.txt", content);
  const child = s.spawn(["tool", "grep", JSON.stringify({ pattern })], {
    env: { CRAB_GREP_TIMEOUT_MS: "120000" },
  });
  await child.stdin.close();
  const hardStop = setTimeout(() => child.kill("SIGKILL"), 30_000);
  await until(() => workerThreads(child.pid) > 0, "the search reached its workers", {
    timeoutMs: waitMs,
  });
  const sent = performance.now();
  child.kill("SIGTERM");
  const status = await child.status;
  clearTimeout(hardStop);
  await child.stdout.cancel();
  await child.stderr.cancel();
  assert.equal(status.code, 143, "ended by its SIGTERM handler, not by the test's SIGKILL");
  assert.ok(performance.now() - sent < 5000, "SIGTERM was handled promptly");
}

Deno.test("crab tool grep searches a pattern whose backtracking V8 does not bound on its workers: SIGTERM still ends it", async () => {
  // On the workers from the start: their threads are up long before the search could end. On
  // the calling thread, this search would hold it 17 s and no worker would start meanwhile.
  await sigtermOnTheWorkers(("a".repeat(40) + "\n").repeat(6000), GREEDY_BOMB, 10_000);
});

Deno.test("a search stopped at its bound leaves its runaway thread in the idle scheduling class", async () => {
  using s = sandbox();
  s.put("a.txt", "a".repeat(40) + "\n");
  // One process for two calls: the second finds the first one's thread still running.
  // The bound holds for both calls: the second must end well within it on a loaded machine.
  const child = s.spawn(["tool", "--jsonl"], { env: { CRAB_GREP_TIMEOUT_MS: "2000" } });
  const hardStop = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const w = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const call = async (args: Record<string, unknown>) => {
    await w.write(new TextEncoder().encode(JSON.stringify({ tool: "grep", args }) + "\n"));
    let out = "";
    while (!out.includes("\n")) out += (await reader.read()).value ?? "";
    return JSON.parse(out);
  };
  const first = await call({ pattern: BACKREFERENCE_BOMB });
  assert.equal(first.ok, false, JSON.stringify(first));
  assert.equal(first.error.code, "regex_timeout");
  // terminate() does not stop a thread busy in a regex: the runaway one is still there.
  // (Its idle partner, moved with it, may not have ended yet.)
  const stuck = workerClasses(child.pid);
  assert.ok(stuck.length > 0 && stuck.every((c) => c === "IDL"), `classes: ${stuck}`);
  // The next search's fresh workers run as any thread does, and answer.
  const second = await call({ pattern: "a+$", path: "a.txt" });
  assert.equal(second.ok, true, JSON.stringify(second));
  const after = workerClasses(child.pid);
  assert.equal(after.filter((c) => c === "TS").length, POOL_SIZE, `classes: ${after}`);
  assert.ok(after.some((c) => c === "IDL"), `classes: ${after}`);
  await w.close();
  await reader.cancel();
  await child.stderr.cancel();
  await child.status;
  clearTimeout(hardStop);
});

Deno.test("crab tool grep exits on SIGTERM during a runaway first search", async () => {
  // The runaway pattern goes to the search workers at once: once their threads are up,
  // start-up is over and the search is under way.
  await sigtermOnTheWorkers("a".repeat(40) + "\n", BACKREFERENCE_BOMB);
});
