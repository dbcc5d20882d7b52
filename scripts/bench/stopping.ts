/**
 * How soon crab lets go once a call or a model request must end, each beside
 * the same thing ending on its own:
 *
 * - bash (sandboxed and not): from its timeout, from an abort, and from its
 *   shell's exit while a child that ignores SIGTERM still holds the output
 *   (that one against `bash true`, which the child's call should cost about);
 * - a model request (both wire formats): from an abort mid-stream and from one
 *   before the response, beside a whole short answer.
 *
 * Each figure is the median of a few rounds. Target: each ends within
 * {@link TARGET_MS} ms of what ended it.
 *
 * Run alone: `deno run -A scripts/bench/stopping.ts`.
 *
 * @module
 */

import { join } from "node:path";
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { createProvider } from "../../agent/providers/mod.ts";
import { startFakeModel } from "../../tests/support/fake_model.ts";
import { bashDispatcher, benchWorkspace } from "./_alternate.ts";
import { median } from "./_table.ts";

const ROUNDS = 7;
const TARGET_MS = 500;
const TIMEOUT_MS = 300;
const ABORT_AFTER_MS = 200;

const ws = benchWorkspace("crab-bench-stopping-");
const rows: [string, number, number][] = [];

/** Times `f` `ROUNDS` times (after one warm-up) and keeps the median. */
async function timed(f: () => Promise<number>): Promise<number> {
  await f();
  const ms: number[] = [];
  for (let i = 0; i < ROUNDS; i++) ms.push(await f());
  return median(ms);
}

const modes: SandboxMode[] = ["danger-full-access"];
if ((await sandboxStatus(ws)).ok) modes.unshift("workspace-write");
else console.log("sandbox unavailable here: bash is timed without it only");

for (const mode of modes) {
  const d = bashDispatcher(ws, { mode, net: false, writable: [] });
  const call = async (
    command: string,
    extra: Record<string, unknown> = {},
    signal?: AbortSignal,
  ) => {
    const t0 = performance.now();
    const r = await d.dispatch("bash", { command, ...extra }, signal);
    if (!r.ok) throw new Error(JSON.stringify(r));
    return { ms: performance.now() - t0, outcome: r.outcome };
  };
  const plain = await timed(async () => (await call("true")).ms);
  const timeout = await timed(async () => {
    const r = await call("sleep 30", { timeout_ms: TIMEOUT_MS });
    if (r.outcome !== "timeout") throw new Error(`not timed out: ${r.outcome}`);
    return r.ms - TIMEOUT_MS;
  });
  const abort = await timed(async () => {
    const ac = new AbortController();
    let abortedAt = 0;
    setTimeout(() => (abortedAt = performance.now(), ac.abort()), ABORT_AFTER_MS);
    const r = await d.dispatch("bash", { command: "sleep 30" }, ac.signal);
    if (r.outcome !== "aborted") throw new Error(`not aborted: ${JSON.stringify(r)}`);
    return performance.now() - abortedAt;
  });
  const lingering = await timed(async () =>
    (await call("(trap '' TERM; sleep 30) & echo hi")).ms - plain
  );
  rows.push([`bash (${mode}): after its timeout`, timeout, plain]);
  rows.push([`bash (${mode}): after an abort`, abort, plain]);
  rows.push([`bash (${mode}): past \`true\`, a TERM-ignoring child left`, lingering, plain]);
}

for (const format of ["anthropic", "openai"] as const) {
  await using fake = await startFakeModel([]);
  const provider = await createProvider({
    provider: format,
    model: "m",
    apiKey: "k",
    baseUrl: fake.baseUrlFor(format),
  });
  /** Streams one answer; `onEvent` sees each event. Resolves when the stream ends, or fails. */
  const stream = async (signal: AbortSignal, onEvent: () => void = () => {}) => {
    try {
      for await (
        const _ of provider.stream({
          model: "m",
          system: "",
          messages: [{ role: "user", content: "hi" }],
          tools: [],
          signal,
        })
      ) onEvent();
    } catch {
      // Aborted: what is timed.
    }
  };
  const answer = await timed(async () => {
    fake.push({ text: "ok" });
    const t0 = performance.now();
    await stream(new AbortController().signal);
    return performance.now() - t0;
  });
  const midStream = await timed(async () => {
    fake.push({ text: "Thinking about it", hang: true });
    const ac = new AbortController();
    let abortedAt = 0;
    await stream(ac.signal, () => {
      if (!abortedAt) (abortedAt = performance.now(), ac.abort());
    });
    return performance.now() - abortedAt;
  });
  const beforeResponse = await timed(async () => {
    fake.push({ text: "late", delayMs: 60_000 });
    const ac = new AbortController();
    let abortedAt = 0;
    setTimeout(() => (abortedAt = performance.now(), ac.abort()), ABORT_AFTER_MS);
    await stream(ac.signal);
    return performance.now() - abortedAt;
  });
  rows.push([`model (${format}): after an abort mid-stream`, midStream, answer]);
  rows.push([`model (${format}): after an abort before the response`, beforeResponse, answer]);
}
Deno.removeSync(join(ws, ".."), { recursive: true });

for (const [what, ms, peer] of rows) {
  console.log(
    `${what}: ends ${ms.toFixed(1)} ms later (beside ${peer.toFixed(1)} ms for one ending on ` +
      `its own; target ≤ ${TARGET_MS} ms): ${ms <= TARGET_MS ? "ok" : "OVER"}`,
  );
}
