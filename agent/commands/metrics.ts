/**
 * `crab metrics`: what the model did, from the observation store. Looking does
 * not create the store: a machine with no runs gets an empty table. The tables
 * show tool names (the model's own for a tool that does not exist), targets,
 * models and workspaces in `printable`'s strict mode; `--json` gives them as stored.
 * A subagent's calls sit under the `task` call that ran them, named by its type.
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import { type RunSummary, Store, storePath } from "../store/observe.ts";
import { hookRuns } from "../store/hook_runs.ts";
import type { Observation } from "../../tools/call/observation.ts";

const strict = (s: string) => printable(s, "strict");

/** Options of `crab metrics`. */
export interface MetricsOptions {
  json?: boolean;
  tools?: boolean;
  limit?: number;
}

function table(header: string[], rows: string[][], rightFrom = 0): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i >= rightFrom && rightFrom > 0 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** Milliseconds, always as milliseconds: the column header names the unit. */
function ms(n: number): string {
  return n < 10 ? n.toFixed(2) : n < 1000 ? n.toFixed(1) : n.toFixed(0);
}

/** Seconds, for the length of whole runs. */
function seconds(n: number): string {
  return (n / 1000).toFixed(1);
}

function runJson(r: RunSummary) {
  return {
    id: r.id,
    started_at: new Date(r.startedAt).toISOString(),
    ended_at: r.endedAt == null ? null : new Date(r.endedAt).toISOString(),
    mode: r.mode,
    model: r.model,
    provider: r.provider,
    workspace: r.workspace,
    status: r.status,
    turns: r.turns,
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    calls: r.calls,
    tool_errors: r.toolErrors,
    refused: r.refused,
    aborted: r.aborted,
    bytes_out: r.bytesOut,
    duration_ms: r.durationMs,
  };
}

/** Runs `crab metrics [RUN]`; resolves to the exit code. */
export function metricsCommand(run: string | undefined, opts: MetricsOptions): number {
  const store = Store.openExisting();
  try {
    if (run !== undefined) return showRun(store, run, opts);
    if (opts.tools) return showTools(store, opts);
    const runs = store?.recentRuns(opts.limit ?? 20) ?? [];
    if (opts.json) {
      console.log(JSON.stringify({ runs: runs.map(runJson) }, null, 2));
      return 0;
    }
    const header = [
      "run",
      "started",
      "mode",
      "model",
      "calls",
      "tool-err",
      "refused",
      "aborted",
      "bytes out",
      "time s",
    ];
    const rows = runs.map((r) => [
      r.id,
      new Date(r.startedAt).toISOString().replace("T", " ").slice(0, 19),
      r.mode,
      r.model == null ? "-" : strict(r.model),
      String(r.calls),
      String(r.toolErrors),
      String(r.refused),
      String(r.aborted),
      String(r.bytesOut),
      r.endedAt == null ? "-" : seconds(r.endedAt - r.startedAt),
    ]);
    console.log(table(header, rows, 4));
    if (runs.length === 0) console.log("no runs recorded yet");
    return 0;
  } finally {
    store?.close();
  }
}

function showRun(store: Store | null, prefix: string, opts: MetricsOptions): number {
  const ids = store?.findRuns(prefix) ?? [];
  if (ids.length !== 1) {
    console.error(
      ids.length === 0
        ? `error: Cannot show run "${prefix}": no such run in "${storePath()}"\nhint: list runs with crab metrics`
        : `error: Cannot show run "${prefix}": the prefix matches ${ids.length} runs (${
          ids.join(", ")
        })\nhint: give more characters of the id`,
    );
    return 1;
  }
  const summary = store!.run(ids[0])!;
  const calls = store!.observations(ids[0]);
  const hooks = hookRuns(store!, ids[0]);
  // Hosts bash's commands asked crab's proxy for (network by domain).
  const hosts = store!.hostsOf(ids[0]);
  if (opts.json) {
    console.log(JSON.stringify(
      {
        run: runJson(summary),
        calls: calls.map((o) => ({
          call_seq: o.callSeq,
          tool: o.tool,
          class: o.class,
          outcome: o.outcome,
          error_code: o.errorCode,
          exit_code: o.exitCode,
          signal: o.signal,
          target: o.target,
          // The permission rule that decided the call, with its source.
          rule: o.rule ?? null,
          // A subagent's call: the task call that ran it, and the subagent's type.
          parent_seq: o.parent?.callSeq ?? null,
          agent: o.parent?.agent ?? null,
          bytes_in: o.bytesIn,
          bytes_out: o.bytesOut,
          bytes_full: o.bytesFull,
          duration_ms: o.durationMs,
          wait_ms: o.waitMs,
          // Empty for calls recorded before digests were keyed (cleared by the migration).
          args_digest: o.argsDigest || null,
          result_digest: o.resultDigest || null,
          started_at: new Date(o.startedAt).toISOString(),
        })),
        hooks: hooks.map((h) => ({
          seq: h.seq,
          event: h.event,
          command: h.command,
          source: h.source,
          call_seq: h.callSeq ?? null,
          outcome: h.outcome,
          exit_code: h.exitCode,
          blocked: h.blocked,
          duration_ms: h.durationMs,
          started_at: new Date(h.startedAt).toISOString(),
        })),
        hosts: hosts.map((h) => ({
          call_seq: h.callSeq,
          host: h.host,
          allowed: h.allowed,
          connections: h.connections,
          bytes: h.bytes,
        })),
      },
      null,
      2,
    ));
    return 0;
  }
  console.log(`run ${summary.id}  mode ${summary.mode}  workspace ${strict(summary.workspace)}`);
  console.log(table(
    [
      "seq",
      "tool",
      "target",
      "outcome",
      "error",
      "exit",
      "bytes in",
      "bytes out",
      "bytes full",
      "ms",
      "wait ms",
    ],
    grouped(calls).map((o) => [
      String(o.callSeq),
      o.parent ? `└ ${strict(o.parent.agent)}: ${strict(o.tool)}` : strict(o.tool),
      o.target == null ? "-" : strict(o.target),
      o.outcome,
      o.errorCode ?? "-",
      // A command killed by a signal has no exit code; the signal is its exit.
      o.signal ?? (o.exitCode == null ? "-" : String(o.exitCode)),
      String(o.bytesIn),
      String(o.bytesOut),
      o.bytesFull == null ? "-" : String(o.bytesFull),
      ms(o.durationMs),
      ms(o.waitMs),
    ]),
    5,
  ));
  if (hooks.length) {
    console.log("\nhooks");
    console.log(table(
      ["seq", "event", "call", "outcome", "exit", "ms", "command"],
      hooks.map((h) => [
        String(h.seq),
        h.event,
        h.callSeq === undefined ? "-" : String(h.callSeq),
        h.outcome,
        h.exitCode == null ? "-" : String(h.exitCode),
        ms(h.durationMs),
        strict(h.command.split("\n")[0]),
      ]),
    ));
  }
  if (hosts.length) {
    console.log("\nhosts asked for through crab's proxy");
    console.log(table(
      ["seq", "host", "verdict", "connections", "bytes"],
      hosts.map((h) => [
        String(h.callSeq),
        strict(h.host),
        h.allowed ? "allowed" : "refused",
        String(h.connections),
        String(h.bytes),
      ]),
      3,
    ));
  }
  return 0;
}

/** Calls in order, a subagent's calls right under the `task` call that ran them. */
function grouped(calls: Observation[]): Observation[] {
  const children = new Map<number, Observation[]>();
  for (const o of calls) {
    if (o.parent) children.set(o.parent.callSeq, [...children.get(o.parent.callSeq) ?? [], o]);
  }
  const top = calls.filter((o) => !o.parent || !calls.some((p) => p.callSeq === o.parent!.callSeq));
  return top.flatMap((o) => [o, ...o.parent ? [] : children.get(o.callSeq) ?? []]);
}

function showTools(store: Store | null, opts: MetricsOptions): number {
  const tools = store?.toolSummaries() ?? [];
  if (opts.json) {
    console.log(JSON.stringify(
      {
        tools: tools.map((t) => ({
          tool: t.tool,
          calls: t.calls,
          errors: t.errors,
          p50_ms: t.p50Ms,
          p95_ms: t.p95Ms,
          bytes_in: t.bytesIn,
          bytes_out: t.bytesOut,
        })),
      },
      null,
      2,
    ));
    return 0;
  }
  console.log(table(
    ["tool", "calls", "errors", "p50 ms", "p95 ms", "bytes in", "bytes out"],
    tools.map((t) => [
      strict(t.tool),
      String(t.calls),
      String(t.errors),
      ms(t.p50Ms),
      ms(t.p95Ms),
      String(t.bytesIn),
      String(t.bytesOut),
    ]),
    1,
  ));
  if (tools.length === 0) console.log("no calls recorded yet");
  return 0;
}
