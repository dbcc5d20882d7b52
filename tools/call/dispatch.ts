/**
 * The one path every tool call takes: parse and validate the arguments, ask the
 * approval policy, run the tool with an AbortSignal, write exactly one
 * observation, and return a result. Failures are results, never exceptions.
 * Hooks, policy, undo and telemetry plug into its named stages
 * (`call/stages.ts`), given when the dispatcher is made; the workspace lock
 * (`call/workspace_lock.ts`) is one every dispatcher runs, outermost.
 *
 * @module
 */

import {
  type HostContact,
  type Observation,
  type ObservationSink,
  type Outcome,
  type SandboxRefusal,
  targetOf,
} from "./observation.ts";
import type {
  ApprovalPolicy,
  CheckedCall,
  DispatchStage,
  PolicyDecision,
  RuleRef,
  RunOutcome,
  ToolCall,
  Verdict,
} from "./stages.ts";
import type { Registry } from "./registry.ts";
import type { Session } from "./session.ts";
import { KeyedDigest } from "./digest.ts";
import {
  type AnyTool,
  type ApprovalCall,
  type ApprovalRequest,
  type Attachment,
  type CallScope,
  type MediaFacts,
  type ObjectSchema,
  type ToolContext,
  ToolError,
  type ToolErrorCode,
} from "../tool.ts";
import { validate } from "./validate.ts";
import { workspaceLock } from "./workspace_lock.ts";
import { findDuplicateKey } from "./json_keys.ts";
import {
  abortedError,
  assertOpen,
  changedTooOften,
  failureOf,
  MAX_REDECIDED,
  notOffered,
  REFUSED_HINT,
  StageFailure,
  unknownTool,
} from "./call_errors.ts";

/**
 * The codes dispatch itself answers with, whatever the tool: bad or oversized
 * arguments, an unknown tool, a refused approval, an interrupted call, a workspace
 * that another call held too long, and the failures a tool body lets escape (a
 * missing permission, a refusal by the OS, a file gone missing, a defect). They mean the same for every tool, and each
 * error's message and hint say what to do, so tools' descriptions do not list them.
 */
export const DISPATCH_ERROR_CODES = [
  "invalid_arguments",
  "arguments_too_large",
  "unknown_tool",
  "refused",
  "hook_denied",
  "policy_denied",
  "aborted",
  "workspace_busy",
  "permission_denied",
  "os_permission_denied",
  "file_not_found",
  "internal_error",
] as const satisfies readonly ToolErrorCode[];

/** Arguments larger than this (as JSON) are refused before parsing. */
export const MAX_ARGS_BYTES = 4 * 1024 * 1024;

/** An error as the model and scripts see it. */
export interface ToolErrorInfo {
  code: ToolErrorCode;
  message: string;
  hint: string;
}

/** What a call returned. */
export type DispatchResult =
  & {
    tool: string;
    callSeq: number;
    outcome: Outcome;
    durationMs: number;
    waitMs: number;
    bytesOut: number;
    /** The permission rule that allowed, asked for or denied the call, if one did. */
    rule?: RuleRef;
  }
  & (
    | {
      ok: true;
      output: string;
      display?: string;
      exitCode?: number | null;
      /** Hosts the call's commands asked crab's proxy for. */
      hosts?: HostContact[];
      /** What crab's fence refused inside the call (bash). */
      refusals?: SandboxRefusal[];
      /** An image or PDF for the model, beside `output`. */
      attachment?: Attachment;
    }
    | { ok: false; error: ToolErrorInfo }
  );

/** Per-call extras of {@link Dispatcher.dispatch}. */
export interface DispatchOptions {
  /** The model's id for the call, passed on to the observation sink. */
  callId?: string;
  /** Receives the tool's output as it streams (bash), for a live view. */
  onOutput?: (chunk: string) => void;
  /** `user`: the user's own command (`ToolCall.origin`). */
  origin?: "user";
  /** A subagent's call: its frame (`ToolCall.scope`). */
  scope?: CallScope;
}

/** What one dispatcher needs: the run it records into and the session it acts in. */
export interface DispatcherOptions {
  registry: Registry;
  session: Session;
  policy: ApprovalPolicy;
  sink: ObservationSink;
  runId: string;
  /**
   * What plugs into every call (hooks, policy, undo, telemetry), in this order,
   * after the workspace lock, which every dispatcher runs first.
   */
  stages?: readonly DispatchStage[];
}

const encoder = new TextEncoder();

/** What a successful call hands to `finish`. */
interface ResultBody {
  output: string;
  display?: string;
  exitCode?: number | null;
  signal?: string | null;
  bytesFull?: number;
  hosts?: HostContact[];
  refusals?: SandboxRefusal[];
  attachment?: Attachment;
  media?: MediaFacts;
}

let ownDigest: KeyedDigest | undefined;

/** The key of sinks without one (memory sinks): random, for this process only. */
function processDigest(): KeyedDigest {
  return ownDigest ??= KeyedDigest.random();
}

/** What a tool with a foreign schema (`rawSchema`) is checked against: any object. */
const ANY_OBJECT: ObjectSchema = { type: "object", properties: {}, additionalProperties: true };

function byteLength(s: string): number {
  // Fast path: ASCII-only strings are as long in bytes as in UTF-16 units.
  // deno-lint-ignore no-control-regex
  return /^[\x00-\x7f]*$/.test(s) ? s.length : encoder.encode(s).byteLength;
}

/** JSON with object keys sorted, so equal arguments digest equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]));
    }
    return v;
  });
}

/** The text the model reads for an error result. */
export function errorText(e: ToolErrorInfo): string {
  return `Error [${e.code}]: ${e.message}\nHint: ${e.hint}`;
}

/** The text the model reads for any result. */
export function resultText(r: DispatchResult): string {
  return r.ok ? r.output : errorText(r.error);
}

/** Runs tool calls for one session and records one observation per call. */
export class Dispatcher {
  readonly registry: Registry;
  readonly session: Session;
  readonly policy: ApprovalPolicy;
  readonly sink: ObservationSink;
  readonly runId: string;
  readonly #digest: (data: string) => Promise<string>;
  readonly #stages: StagesByKind;
  #callSeq = 0;

  constructor(opts: DispatcherOptions) {
    this.registry = opts.registry;
    this.session = opts.session;
    this.policy = opts.policy;
    this.sink = opts.sink;
    this.runId = opts.runId;
    const sink = opts.sink;
    this.#digest = sink.digest
      ? (data) => sink.digest!(data)
      : (data) => processDigest().digest(data);
    const policy = opts.policy;
    // The session's permission rules decide first, in every dispatcher.
    const permissions: DispatchStage[] = policy.decide
      ? [{ name: "permissions", decide: (call) => policy.decide!(call) }]
      : [];
    this.#stages = byKind([workspaceLock, ...permissions, ...opts.stages ?? []]);
  }

  /** Ends the run's stages (their {@link DispatchStage.close}); no call is dispatched after. */
  async close(): Promise<void> {
    for (const stage of this.#stages.close) {
      try {
        await stage.close!();
      } catch (e) {
        console.error(
          `crab: the ${stage.name} stage failed to close: ${e instanceof Error ? e.message : e}`,
        );
      }
    }
  }

  /** Number of calls dispatched so far. */
  get calls(): number {
    return this.#callSeq;
  }

  /**
   * Dispatches one call. `args` is the parsed object or the raw JSON text the
   * model sent. Never throws for anything a model or user can cause.
   */
  dispatch(
    name: string,
    args: unknown,
    signal: AbortSignal = new AbortController().signal,
    opts: DispatchOptions = {},
  ): Promise<DispatchResult> {
    const call: OpenCall = {
      // A tool named by its alias is called, observed and reported by its own name.
      name: this.registry.get(name)?.name ?? name,
      callSeq: ++this.#callSeq,
      callId: opts.callId,
      runId: this.runId,
      args,
      signal,
      session: this.session,
      tool: undefined,
      input: undefined,
      ...(opts.origin ? { origin: opts.origin } : {}),
      ...(opts.scope ? { scope: opts.scope } : {}),
    };
    if (this.#stages.around.length === 0) return this.#settle(call, opts.onOutput);
    return this.#around(call, opts.onOutput);
  }

  /** Runs the call inside every `around` stage, the first registered outermost. */
  async #around(call: OpenCall, onOutput?: (chunk: string) => void): Promise<DispatchResult> {
    const arounds = this.#stages.around;
    let settled: Promise<DispatchResult> | undefined;
    const step = async (i: number): Promise<void> => {
      if (i === arounds.length) {
        await (settled ??= this.#settle(call, onOutput));
        return;
      }
      let inner: Promise<void> | undefined;
      const next = () => inner ??= step(i + 1);
      try {
        await arounds[i].around!(call, next);
      } catch (e) {
        report(arounds[i], call, e);
      }
      // The rest of the call runs even when the stage failed or never called `next`.
      await next();
    };
    await step(0);
    return settled!;
  }

  /** The call from validation to the observation: its steps, each ending in one record. */
  async #settle(call: OpenCall, onOutput?: (chunk: string) => void): Promise<DispatchResult> {
    const record = new CallRecord(this, call, this.#digest, this.#stages.observe);
    const tool = this.registry.get(call.name);
    // The observation names the tool's class even when its arguments are refused.
    record.toolClass = tool?.class;
    const scope = call.scope;
    const early = record.parseArguments() ??
      (tool ? undefined : unknownTool(call.name, this.registry)) ??
      (scope && !scope.tools.has(tool!.name) ? notOffered(call.name, scope) : undefined) ??
      check(tool!, record.parsed, `Invalid arguments for ${call.name}`, FIX_HINT);
    if (early) return record.fail(early);
    call.tool = tool;
    call.input = dropNulls(record.parsed as Record<string, unknown>);
    const checked = call as CheckedCall;
    const ctx = record.context(checked, this.policy, onOutput);
    let ran: { outcome: RunOutcome; additions: string[] };
    try {
      if (call.signal.aborted) throw abortedError();
      await this.#admit(checked, ctx, record);
      ran = await this.#runLocked(checked, ctx);
    } catch (e) {
      return record.fail(failureOf(e, call));
    }
    return record.finishRun(ran.outcome, ran.additions);
  }

  /**
   * Pre-tool hooks, the policy's decision and the approval it calls for: the
   * call goes on, or one of them throws why it may not.
   */
  async #admit(call: CheckedCall, ctx: ToolContext, record: CallRecord): Promise<void> {
    const tool = call.tool;
    if (this.#stages.preTool.length > 0 && call.origin !== "user") {
      await this.#preTool(call as OpenCall, tool);
      record.target = targetOf(call.input);
    }
    const decide = () => this.#stages.decide.length > 0 ? this.#decide(call) : classDefault(tool);
    let decision = await decide();
    if (call.origin === "user") {
      // The user typed it: nothing asks, and the mode (the model's leash) does not apply.
      record.rule = decision.rule;
      if (decision.effect === "deny" && !decision.byMode) throw policyDenied(call, decision);
      record.covered = decision.covers ?? [];
      return;
    }
    // An answer may give another input (a permission prompt tool's): it is decided
    // again, so no answer escapes a deny rule; only an ask rule on it asks again.
    for (let round = 0;; round++) {
      record.rule = decision.rule;
      if (decision.effect === "deny") throw policyDenied(call, decision);
      // A plain allow runs at once; one the rules or the mode gave goes by the approval policy,
      // which tells the user (the REPL shows an approved edit's change).
      const asks = decision.effect === "ask" || decision.why !== "";
      if (!asks || (round > 0 && !decision.always)) break;
      const input = await record.ask({
        tool: call.name,
        class: tool.class,
        summary: summarize(tool, call.input, ctx),
        detail: tool.preview ? await tool.preview(call.input, ctx) : undefined,
        ...(decision.always || decision.effect === "allow"
          ? {
            decided: {
              effect: decision.effect,
              why: decision.why,
              ...(decision.always ? { always: true } : {}),
              ...(decision.rule ? { byRule: true } : {}),
            },
          }
          : {}),
        call: approvalCall(call, true),
      });
      if (input === undefined) break;
      if (round === MAX_REDECIDED) throw changedTooOften(call.name);
      const invalid = check(
        tool,
        input,
        `Invalid arguments for ${call.name} as the approval changed them`,
        "The changed call cannot run; the approver gave arguments the tool does not take.",
      );
      if (invalid) throw invalid;
      (call as OpenCall).input = input;
      record.target = targetOf(input);
      decision = await decide();
    }
    record.covered = decision.covers ?? [];
  }

  /** Pre-run, run and post-run, inside every lock stage. */
  async #runLocked(
    call: CheckedCall,
    ctx: ToolContext,
  ): Promise<{ outcome: RunOutcome; additions: string[] }> {
    const stages = this.#stages;
    const additions: string[] = [];
    let ran: RunOutcome | undefined;
    // Never rejects: what fails here is the call's outcome.
    const inside = async (): Promise<void> => {
      try {
        for (const stage of stages.preRun) await staged(stage, () => stage.preRun!(call));
      } catch (e) {
        ran = { ok: false, error: failureOf(e, call) };
        return;
      }
      try {
        ran = { ok: true, result: await call.tool.run(call.input, ctx) };
      } catch (e) {
        ran = { ok: false, error: failureOf(e, call) };
      }
      for (const stage of stages.postRun) {
        try {
          const added = await stage.postRun!(call, ran);
          if (added) additions.push(added);
        } catch (e) {
          report(stage, call, e);
        }
      }
    };
    if (stages.lock.length === 0) await inside();
    else await this.#lock(call, inside);
    // `inside` has run: a lock stage that never called it failed the call.
    return { outcome: ran!, additions };
  }

  /** Runs the pre-tool stages in order; a rewrite is validated before the next one sees it. */
  async #preTool(call: OpenCall, tool: AnyTool): Promise<void> {
    for (const stage of this.#stages.preTool) {
      const verdict = await staged(stage, () => stage.preTool!(call as CheckedCall));
      if (!verdict) continue;
      if ("deny" in verdict) {
        throw new ToolError(
          "hook_denied",
          `Cannot run ${call.name}: ${verdict.deny}`,
          REFUSED_HINT,
          "refused",
        );
      }
      const invalid = check(
        tool,
        verdict.input,
        `Invalid arguments for ${call.name} as the ${stage.name} stage rewrote them`,
        "The rewritten call cannot run; change the call, or ask the user to check their hooks.",
      );
      if (invalid) throw invalid;
      call.input = dropNulls(verdict.input);
    }
  }

  /**
   * Every policy stage's decision, combined: the first denial, else `ask` (asked
   * always if any stage says so), else `allow` (with what every allow covers).
   */
  async #decide(call: CheckedCall): Promise<Verdict> {
    let asked: Verdict | undefined;
    let allowed: Verdict | undefined;
    for (const stage of this.#stages.decide) {
      const d = await staged(stage, () => stage.decide!(call));
      if (d === undefined) continue;
      const v = verdictOf(d);
      if (v.effect === "deny") return v;
      if (v.effect === "ask") {
        asked = asked && (asked.always || !v.always) ? asked : v;
      } else if (!allowed) allowed = v;
      else {
        const covers = [...allowed.covers ?? [], ...v.covers ?? []];
        allowed = { ...allowed, ...(covers.length ? { covers } : {}) };
      }
    }
    // An allow that answers the class's prompt outranks that prompt, never an ask a rule made.
    if (asked && allowed?.answersPrompt && asked.why === "" && !asked.always) return allowed;
    return asked ?? allowed ?? classDefault(call.tool);
  }

  /** Runs `inside` within every lock stage, the first registered outermost. */
  async #lock(call: CheckedCall, inside: () => Promise<void>): Promise<void> {
    const locks = this.#stages.lock;
    const step = async (i: number): Promise<void> => {
      if (i === locks.length) return inside();
      let inner: Promise<void> | undefined;
      // An inner stage's failure is not this stage's: `next` resolves, and it is thrown after.
      let failed: { error: unknown } | undefined;
      const next = () => inner ??= step(i + 1).catch((error) => void (failed = { error }));
      try {
        await locks[i].lock!(call, next);
      } catch (e) {
        // Failing before `inside` leaves the call unrun; after, the result stands.
        if (!inner) throw e instanceof ToolError ? e : new StageFailure(locks[i], e);
        report(locks[i], call, e);
      }
      if (!inner) {
        throw new StageFailure(locks[i], new Error("it returned without running the call"));
      }
      await inner;
      if (failed) throw failed.error;
    };
    await step(0);
  }
}

/**
 * One call's bookkeeping from its arguments to its observation: what it
 * received, the time it waited for approval, its target and the rule that
 * decided it, and the one record every path ends in.
 */
class CallRecord {
  readonly #call: OpenCall;
  readonly #dispatcher: Dispatcher;
  readonly #digest: (data: string) => Promise<string>;
  readonly #observers: readonly DispatchStage[];
  readonly #startedAt = Date.now();
  readonly #t0 = performance.now();
  readonly #raw: string | undefined;
  waitMs = 0;
  bytesIn: number;
  /** The arguments, parsed (or as given when they came as a value). */
  parsed: unknown;
  /** What the arguments digest is taken of: the canonical JSON once parsed, else the raw text. */
  argsText: string;
  target: string | null = null;
  rule: RuleRef | undefined;
  /** Approvals the permission decision already gave for what the tool asks during the call. */
  covered: readonly string[] = [];
  /** The class of the tool the call names, when a tool has that name. */
  toolClass: string | undefined;

  constructor(
    dispatcher: Dispatcher,
    call: OpenCall,
    digest: (data: string) => Promise<string>,
    observers: readonly DispatchStage[],
  ) {
    this.#dispatcher = dispatcher;
    this.#call = call;
    this.#digest = digest;
    this.#observers = observers;
    this.#raw = typeof call.args === "string" ? call.args : undefined;
    this.bytesIn = this.#raw !== undefined ? byteLength(this.#raw) : 0;
    this.parsed = call.args;
    this.argsText = this.#raw ?? "";
  }

  /** Parses raw JSON arguments and bounds their size; the error, if they cannot be used. */
  parseArguments(): ToolError | undefined {
    const { name } = this.#call;
    const raw = this.#raw;
    if (raw !== undefined) {
      if (this.bytesIn > MAX_ARGS_BYTES) return tooLarge(name, this.bytesIn);
      try {
        this.parsed = raw.trim() === "" ? {} : JSON.parse(raw);
      } catch (e) {
        return new ToolError(
          "invalid_arguments",
          `Cannot parse arguments of ${name}: ${e instanceof Error ? e.message : e}`,
          "Send the arguments as one JSON object.",
        );
      }
      const dup = findDuplicateKey(raw, "args");
      if (dup) {
        return new ToolError(
          "invalid_arguments",
          `Cannot parse arguments of ${name}: the key "${dup.key}" appears twice (at ${dup.path})`,
          "Send each field once.",
        );
      }
    }
    const canonical = canonicalJson(this.parsed ?? null);
    this.argsText = canonical;
    this.target = targetOf(this.parsed);
    if (raw === undefined) {
      this.bytesIn = byteLength(canonical);
      if (this.bytesIn > MAX_ARGS_BYTES) return tooLarge(name, this.bytesIn);
    }
    return undefined;
  }

  /**
   * Asks the approval policy, counting the wait; throws `refused` when it says
   * no. Resolves to the other input the answer gave, if it gave one that
   * differs (null fields dropped); one given while the call runs is refused.
   */
  async ask(request: ApprovalRequest): Promise<Record<string, unknown> | undefined> {
    if (this.covered.includes(request.class)) return undefined;
    const w0 = performance.now();
    const refused = (why: string | undefined) =>
      new ToolError(
        "refused",
        `Call refused: ${request.summary}` + (why ? `. ${why}` : ""),
        REFUSED_HINT,
        "refused",
      );
    const scope = this.#call.scope;
    if (scope) {
      request = {
        ...request,
        scope: { agent: scope.agent, agentId: scope.agentId, mode: scope.mode },
      };
    }
    try {
      const decision = await this.#dispatcher.policy.approve(request, this.#call.signal);
      if (!decision.allowed) throw refused(decision.reason);
      const input = decision.input && dropNulls(decision.input);
      if (!input || canonicalJson(input) === canonicalJson(this.#call.input ?? {})) {
        return undefined;
      }
      if (!request.call?.mayChangeInput) {
        throw refused("the answer changed the input of a call that is already running");
      }
      return input;
    } finally {
      this.waitMs += performance.now() - w0;
    }
  }

  /** What the tool body gets besides its arguments. */
  context(
    call: CheckedCall,
    policy: ApprovalPolicy,
    onOutput: ((chunk: string) => void) | undefined,
  ): ToolContext {
    const workspace = call.session.workspace;
    const hidden = call.tool.class === "read" ? policy.hidden?.(workspace) : undefined;
    return {
      session: call.session,
      signal: call.signal,
      call: {
        id: call.callId,
        seq: call.callSeq,
        ...(call.scope ? { scope: call.scope } : {}),
      },
      requestApproval: async (request) => {
        await this.ask({ ...request, tool: call.name, call: approvalCall(call, false) });
      },
      onOutput,
      ...(hidden ? { hidden } : {}),
      ...(policy.closedPath
        ? { assertOpen: (path, what) => assertOpen(policy, path, workspace, what) }
        : {}),
    };
  }

  /** Records a call that failed. */
  fail(e: ToolError): Promise<DispatchResult> {
    return this.finish(e.outcome, { code: e.code, message: e.message, hint: e.hint });
  }

  /** Records a call that ran, with what post-run stages added to its text. */
  finishRun(outcome: RunOutcome, additions: string[]): Promise<DispatchResult> {
    if (!outcome.ok) {
      const e = outcome.error;
      return this.finish(e.outcome, {
        code: e.code,
        message: added(e.message, additions),
        hint: e.hint,
      });
    }
    const result = outcome.result;
    const body: ResultBody = {
      output: added(result.output, additions),
      exitCode: result.exitCode,
      signal: result.signal,
      bytesFull: result.bytesFull,
      ...(result.hosts?.length ? { hosts: result.hosts } : {}),
      ...(result.refusals?.length ? { refusals: result.refusals } : {}),
      ...(result.attachment ? { attachment: result.attachment } : {}),
      ...(result.media ? { media: result.media } : {}),
    };
    if (this.#call.signal.aborted && result.outcome !== "timeout") {
      return this.finish("aborted", body);
    }
    const display = result.display === undefined ? undefined : added(result.display, additions);
    return this.finish(result.outcome ?? "ok", { ...body, display });
  }

  /** Makes the result, records its one observation and tells the observing stages. */
  async finish(outcome: Outcome, body: ResultBody | ToolErrorInfo): Promise<DispatchResult> {
    const call = this.#call;
    const isError = "code" in body;
    const text = isError ? errorText(body) : body.output;
    const bytesOut = byteLength(text);
    const durationMs = Math.max(0, performance.now() - this.#t0 - this.waitMs);
    const rule = this.rule;
    const common = {
      tool: call.name,
      callSeq: call.callSeq,
      outcome,
      durationMs,
      waitMs: this.waitMs,
      bytesOut,
      ...(rule ? { rule } : {}),
    };
    let result: DispatchResult;
    if (isError) result = { ...common, ok: false, error: body };
    else {
      const { signal: _signal, bytesFull: _bytesFull, media: _media, ...shown } = body;
      result = { ...common, ok: true, ...shown };
    }
    let observation: Observation;
    try {
      const [argsDigest, resultDigest] = await Promise.all([
        this.#digest(this.argsText),
        this.#digest(text),
      ]);
      observation = {
        runId: call.runId,
        callSeq: call.callSeq,
        tool: call.name,
        class: this.toolClass ?? "unknown",
        argsDigest,
        resultDigest,
        bytesIn: this.bytesIn,
        bytesOut,
        durationMs,
        waitMs: this.waitMs,
        outcome,
        errorCode: isError ? body.code : null,
        exitCode: !isError && typeof body.exitCode === "number" ? body.exitCode : null,
        signal: !isError && body.signal ? body.signal : null,
        bytesFull: !isError && typeof body.bytesFull === "number" ? body.bytesFull : null,
        target: this.target,
        startedAt: this.#startedAt,
        rule: rule ? `${rule.text} (${rule.source})` : null,
        callId: call.callId,
        ...(call.scope
          ? {
            parent: {
              callSeq: call.scope.parentSeq,
              callId: call.scope.parentCallId,
              agent: call.scope.agent,
            },
          }
          : {}),
        ...(!isError && body.hosts?.length ? { hosts: body.hosts } : {}),
        ...(!isError && body.refusals?.length ? { refusals: body.refusals } : {}),
        ...(!isError && body.media ? { media: body.media } : {}),
      };
      this.#dispatcher.sink.record(observation);
    } catch (e) {
      console.error(`crab: could not record observation: ${e instanceof Error ? e.message : e}`);
      return result;
    }
    for (const stage of this.#observers) {
      try {
        stage.observe!(observation, call);
      } catch (e) {
        report(stage, call, e);
      }
    }
    return result;
  }
}

/** A call as its approval request carries it. */
function approvalCall(call: CheckedCall, mayChangeInput: boolean): ApprovalCall {
  const { tool, input, callId, callSeq, session } = call;
  return { tool, input, callId, callSeq, session, mayChangeInput };
}

/** The decision when no policy stage has one: read-class and subagent calls run, the others ask. */
function classDefault(tool: AnyTool): Verdict {
  return tool.class === "read" || tool.class === "agent" ? PLAIN_ALLOW : PLAIN_ASK;
}

const PLAIN_ALLOW: Verdict = { effect: "allow", why: "" };
const PLAIN_ASK: Verdict = { effect: "ask", why: "" };

/** The error of a call the policy denied. */
function policyDenied(call: CheckedCall, decision: Verdict): ToolError {
  return new ToolError(
    "policy_denied",
    `Cannot run ${call.name}: ${decision.why}`,
    decision.hint ?? REFUSED_HINT,
    "refused",
  );
}

/** A stage's decision as a {@link Verdict}: the plain ones have no reasons. */
function verdictOf(d: PolicyDecision): Verdict {
  if (d === "allow") return PLAIN_ALLOW;
  if (d === "ask") return PLAIN_ASK;
  if ("deny" in d) return { effect: "deny", why: d.deny };
  return d;
}

/** The internal shape of a {@link CheckedCall} while dispatch fills it in. */
type OpenCall = ToolCall & {
  tool: AnyTool | undefined;
  input: Record<string, unknown> | undefined;
};

/** Each stage member, with the stages that have it, in registration order. */
type StagesByKind = { [K in Exclude<keyof DispatchStage, "name">]: DispatchStage[] };

function byKind(stages: readonly DispatchStage[]): StagesByKind {
  const having = (k: keyof StagesByKind) => stages.filter((s) => s[k] !== undefined);
  return {
    around: having("around"),
    preTool: having("preTool"),
    decide: having("decide"),
    lock: having("lock"),
    preRun: having("preRun"),
    postRun: having("postRun"),
    observe: having("observe"),
    close: having("close"),
  };
}

/** Runs one stage member, marking what it throws (a `ToolError` passes as itself). */
async function staged<T>(stage: DispatchStage, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw e instanceof ToolError ? e : new StageFailure(stage, e);
  }
}

/** A watching stage failed: the call goes on, and stderr says so. */
function report(stage: DispatchStage, call: ToolCall, e: unknown): void {
  const message = e instanceof Error ? e.message : String(e);
  console.error(`crab: the ${stage.name} stage failed on ${call.name}: ${message}`);
}

/** The arguments' problems for `tool` as one error, or undefined when they are valid. */
function check(tool: AnyTool, args: unknown, what: string, hint: string): ToolError | undefined {
  const problems = validate(tool.rawSchema ? ANY_OBJECT : tool.schema, args);
  if (problems.length === 0) return undefined;
  return new ToolError("invalid_arguments", `${what}: ${problems.join("; ")}`, hint);
}

const FIX_HINT = "Fix every listed problem and call again; the schema is in the tool description.";

/** `text` with what post-run stages added, each on a line of its own. */
function added(text: string, additions: string[]): string {
  if (additions.length === 0) return text;
  return [text, ...additions].join("\n");
}

function tooLarge(name: string, bytes: number): ToolError {
  return new ToolError(
    "arguments_too_large",
    `Cannot run ${name}: arguments are ${bytes} bytes, more than the ${MAX_ARGS_BYTES}-byte limit`,
    "Split the work into smaller calls (write a file in parts: write the start, then append with edit).",
  );
}

function dropNulls(obj: Record<string, unknown>): Record<string, unknown> {
  let hasNull = false;
  for (const k in obj) if (obj[k] === null) hasNull = true;
  if (!hasNull) return obj;
  const out: Record<string, unknown> = {};
  for (const k in obj) if (obj[k] !== null) out[k] = obj[k];
  return out;
}

function summarize(tool: AnyTool, args: Record<string, unknown>, ctx: ToolContext): string {
  if (tool.summarize) return tool.summarize(args, ctx);
  return JSON.stringify(args);
}
