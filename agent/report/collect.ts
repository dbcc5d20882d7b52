/**
 * A run's audit report as data: what crab recorded of it (observations,
 * refusals, hosts, hook runs, the transcript) and what undo's store kept of
 * the files it changed, gathered into one value whose JSON is the report's
 * stable schema (`docs/report.md`). Diff stats come from undo's objects:
 * crab never runs git for a report. No file's content is kept, only names and
 * line counts; every string that a model, a command or a server wrote has
 * the values of the variables crab scrubs from commands replaced.
 *
 * @module
 */

import type { Store } from "../store/observe.ts";
import { hookRuns } from "../store/hook_runs.ts";
import { Transcripts } from "../store/sessions.ts";
import { callId, type Entry, undoDir, UndoStore } from "../undo/store.ts";
import { structuredPatch } from "../../tools/call/diff.ts";
import { isSecret } from "../../tools/host/command_env.ts";
import type { RefusalLayer } from "../../tools/tool.ts";
import { lstatOrNull } from "../../tools/fs/exists.ts";

/** The schema's name and version: a field is added in a new version, never changed. */
export const REPORT_SCHEMA = "crab.report/2";

/** A file a call changed. */
export interface ReportFile {
  path: string;
  change: "added" | "modified" | "deleted";
  /** `RUN:SEQ`, as `crab undo` names the call. */
  undo_id: string;
  /** Lines added and removed; null for a file undo kept no text of (binary, too large). */
  added: number | null;
  removed: number | null;
}

/** A bash call. */
export interface ReportCommand {
  call_seq: number;
  command: string;
  exit_code: number | null;
  duration_ms: number;
  outcome: string;
  hosts: { host: string; allowed: boolean }[];
}

/** A refusal: of a whole call (a rule, a mode, a hook) or inside one (the sandbox). */
export interface ReportRefusal {
  call_seq: number;
  tool: string;
  layer: RefusalLayer | "hook";
  target: string;
  rule: string | null;
  source: string | null;
}

/** The whole report. */
export interface Report {
  schema: typeof REPORT_SCHEMA;
  run: {
    id: string;
    session_id: string | null;
    started_at: string;
    ended_at: string | null;
    mode: string;
    model: string | null;
    provider: string | null;
    workspace: string;
    status: string | null;
  };
  summary: {
    files_changed: number;
    commands: number;
    failures: number;
    refusals: number;
    tool_calls: number;
  };
  prompts: string[];
  answer: string | null;
  files: ReportFile[];
  commands: ReportCommand[];
  refusals: ReportRefusal[];
  hooks: {
    event: string;
    command: string;
    outcome: string;
    exit_code: number | null;
    blocked: boolean;
    duration_ms: number;
  }[];
  mcp: { call_seq: number; server: string; tool: string; outcome: string; duration_ms: number }[];
  tokens: { input: number; output: number; turns: number };
  /**
   * `total_cost_usd` as the run's result gave it (0 for a model without a price,
   * which `note` then says); null for a run that recorded none (an older crab's).
   */
  cost: { total_usd: number | null; note: string | null };
}

/** Replaces the values of the variables crab scrubs from commands found in `text`. */
export function redactor(env: Record<string, string>): (text: string) => string {
  const secrets = Object.entries(env).filter(([k, v]) => v.length >= 4 && isSecret(k, v))
    .sort((a, b) => b[1].length - a[1].length);
  return (text) => {
    let out = text;
    for (const [k, v] of secrets) out = out.split(v).join(`[${k} redacted]`);
    return out;
  };
}

/** The text of a message's content: a string, or its text blocks joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string).join("\n");
}

/** Lines added and removed from `b` to `a`, from undo's objects; null without both texts. */
function diffStat(
  undo: UndoStore,
  b: Entry | null,
  a: Entry | null,
): { added: number | null; removed: number | null } {
  const text = (e: Entry | null): string | null | undefined => {
    if (e === null) return "";
    if (e.t !== "f") return null;
    const bytes = undo.readObject(e.hash);
    if (!bytes || bytes.includes(0)) return null;
    return new TextDecoder().decode(bytes);
  };
  const before = text(b), after = text(a);
  if (before == null || after == null) return { added: null, removed: null };
  let added = 0, removed = 0;
  for (const h of structuredPatch(before, after)) {
    for (const l of h.lines) {
      if (l.startsWith("+")) added++;
      else if (l.startsWith("-")) removed++;
    }
  }
  return { added, removed };
}

/** The files run `runId` changed in `workspace`, from undo's journal. */
function filesOf(workspace: string, runId: string): ReportFile[] {
  const dir = undoDir(workspace);
  if (!lstatOrNull(dir)) return [];
  const undo = new UndoStore(dir);
  try {
    return undo.calls().filter((c) => c.run === runId).sort((x, y) => x.seq - y.seq)
      .flatMap((c) =>
        c.changes.map((ch) => ({
          path: ch.p,
          change: ch.b === null
            ? "added" as const
            : ch.a === null
            ? "deleted" as const
            : "modified" as const,
          undo_id: callId(c),
          ...diffStat(undo, ch.b, ch.a),
        }))
      );
  } finally {
    undo.close();
  }
}

/** The report of run `runId` (an exact id) from `store`; `env` is whose secrets are redacted. */
export function collectReport(
  store: Store,
  runId: string,
  env: Record<string, string> = Deno.env.toObject(),
): Report {
  const redact = redactor(env);
  const run = store.run(runId);
  if (!run) throw new Error(`no run ${runId}`);
  const calls = store.observations(runId);
  const hosts = store.hostsOf(runId);
  const inside = store.refusalsOf(runId);
  const sessionId = run.sessionId ?? null;
  const messages = sessionId ? new Transcripts(store).load(sessionId) : [];
  const prompts = messages.filter((m) => m.role === "user").map((m) => textOf(m.content))
    .filter((t) => t.trim() !== "").map(redact);
  const answers = messages.filter((m) => m.role === "assistant").map((m) => textOf(m.content))
    .filter((t) => t.trim() !== "");
  const commands: ReportCommand[] = calls.filter((o) => o.tool === "bash").map((o) => ({
    call_seq: o.callSeq,
    command: redact(o.target ?? ""),
    exit_code: o.exitCode,
    duration_ms: Math.round(o.durationMs),
    outcome: o.outcome,
    hosts: hosts.filter((h) => h.callSeq === o.callSeq).map((h) => ({
      host: h.host,
      allowed: h.allowed,
    })),
  }));
  const refusals: ReportRefusal[] = [];
  for (const o of calls) {
    if (o.outcome !== "refused") continue;
    const m = o.rule ? /^(.*) \((.*)\)$/.exec(o.rule) : null;
    refusals.push({
      call_seq: o.callSeq,
      tool: o.tool,
      layer: o.errorCode === "hook_denied" ? "hook" : m ? "rule" : "mode",
      target: redact(o.target ?? ""),
      rule: m?.[1] ?? null,
      source: m?.[2] ?? null,
    });
  }
  for (const r of inside) {
    refusals.push({
      call_seq: r.callSeq,
      tool: calls.find((o) => o.callSeq === r.callSeq)?.tool ?? "bash",
      layer: r.layer,
      target: redact(r.target),
      rule: r.rule ?? null,
      source: r.source ?? null,
    });
  }
  refusals.sort((a, b) => a.call_seq - b.call_seq);
  const files = filesOf(run.workspace, runId);
  return {
    schema: REPORT_SCHEMA,
    run: {
      id: run.id,
      session_id: sessionId,
      started_at: new Date(run.startedAt).toISOString(),
      ended_at: run.endedAt == null ? null : new Date(run.endedAt).toISOString(),
      mode: run.mode,
      model: run.model,
      provider: run.provider,
      workspace: run.workspace,
      status: run.status,
    },
    summary: {
      files_changed: new Set(files.map((f) => f.path)).size,
      commands: commands.length,
      failures: calls.filter((o) => ["error", "timeout", "denied"].includes(o.outcome)).length +
        commands.filter((c) => c.exit_code !== null && c.exit_code !== 0).length,
      refusals: refusals.length,
      tool_calls: calls.length,
    },
    prompts,
    answer: answers.length ? redact(answers.at(-1)!) : null,
    files,
    commands,
    refusals,
    hooks: hookRuns(store, runId).map((h) => ({
      event: h.event,
      command: redact(h.command),
      outcome: h.outcome,
      exit_code: h.exitCode,
      blocked: h.blocked,
      duration_ms: Math.round(h.durationMs),
    })),
    mcp: calls.filter((o) => o.tool.includes("__")).map((o) => {
      const [server, ...rest] = o.tool.split("__");
      return {
        call_seq: o.callSeq,
        server,
        tool: rest.join("__"),
        outcome: o.outcome,
        duration_ms: Math.round(o.durationMs),
      };
    }),
    tokens: { input: run.inputTokens, output: run.outputTokens, turns: run.turns },
    cost: (({ usd, note }) => ({ total_usd: usd, note: note === null ? null : redact(note) }))(
      store.runCost(runId),
    ),
  };
}
