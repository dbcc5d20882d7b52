/**
 * The workbench: the one place a session's policy, its tool session, its hook
 * runner and its dispatcher are put together, for every front end — the REPL,
 * print mode, `crab tool` and `crab mcp serve` — from the settings and the front
 * end's few differences (who answers an "ask", which session a call belongs to,
 * the mode and the classes approved up front). Every call then goes through the
 * same stages:
 *
 * ```
 * validate → pre-tool hooks → policy → approval → lock → undo → run → post-tool hooks → observe
 * ```
 *
 * (telemetry wraps them all when it is on). The policy answers every door the
 * call and the session reach: the call itself, the sandbox's layout and network,
 * undo's store, hook scripts, git's give-back (`tools/policy/mod.ts` keeps the
 * table of doors).
 *
 * @module
 */

import { Dispatcher } from "../../tools/call/dispatch.ts";
import type { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { ApprovalPolicy, DispatchStage } from "../../tools/call/stages.ts";
import type { ApprovalClass, ApprovalRequest } from "../../tools/tool.ts";
import {
  type AllowedClass,
  type Asker,
  Policy,
  type ProtectedExtra,
} from "../../tools/policy/policy.ts";
import { relative } from "../../tools/fs/path.ts";
import { debug } from "../../tools/fs/debug_log.ts";
import { checkPins, repin } from "../hooks/scripts.ts";
import { hookScripts } from "../settings/hooks.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import type { SandboxGrant } from "../../tools/policy/sandbox.ts";
import type { Settings } from "../settings/mod.ts";
import type { HookCommand } from "../settings/hooks.ts";
import { type HookOutput, Hooks } from "../hooks/mod.ts";
import { hookStage, untrustedGuardStage } from "../hooks/stage.ts";
import type { SdkHookBridge } from "../hooks/sdk.ts";
import { recordHookRun } from "../store/hook_runs.ts";
import { recordJobEnd, recordJobRead, recordJobStart } from "../store/jobs.ts";
import type { Store } from "../store/observe.ts";
import type { JobSpanEnd, Telemetry } from "../telemetry/mod.ts";
import type { UndoStageOptions } from "../undo/stage.ts";
import { LOOK_AHEAD_AFTER_MS, watchFromNow } from "../undo/watch.ts";
import { isMutating } from "../../tools/call/workspace_lock.ts";
import type { ChangeWatch, JobEvent } from "../../tools/jobs/info.ts";
import { closeJobs, jobsAtFirstUse } from "../../tools/jobs/recipe.ts";

/** What the front end decides about its session's policy. */
export interface PolicyChoice {
  mode: Mode;
  /** Classes approved up front (`--allow`, print mode's offered tools, the tool `crab tool` names). */
  allowed: Iterable<AllowedClass>;
  /** What bash's sandbox is granted. */
  sandbox: SandboxGrant;
  /** Who answers an "ask" (the REPL's prompt, print mode's prompt tool); nobody without it. */
  ask?: Asker;
  /** `ask` answers tool calls only (a permission prompt tool), not hook scripts or hosts. */
  askCallsOnly?: boolean;
  /** Told of each call allowed without asking. */
  notify?: (request: ApprovalRequest) => void;
  /** The flag that would approve a class, for the refusal text. */
  flagFor?: (cls: ApprovalClass) => string;
}

/** What the front end decides about its hooks. */
export interface HookChoice {
  commands: readonly HookCommand[];
  /** The workspace's hooks that wait for trust: the calls its PreToolUse ones match always ask. */
  untrusted?: readonly HookCommand[];
  /** The Agent SDK's callbacks (stream-json's `initialize`). */
  sdk?: SdkHookBridge;
  /** The session hooks see as `session_id`. */
  sessionId(): string;
  /** The session's Claude Code-format transcript, or null. */
  transcriptPath?(): string | null;
  /** One line for the user. */
  notice(message: string): void;
  /** A hook's plain stdout (the REPL shows it). */
  output?(out: HookOutput): void;
}

/** Everything a workbench is built from. */
export interface WorkbenchOptions {
  settings: Settings;
  registry: Registry;
  store: Store;
  /** The run the calls are recorded under. */
  runId: string;
  policy: PolicyChoice;
  hooks: HookChoice;
  /**
   * Undo's stage, made for this session's policy (see {@link undoFor}), or one
   * that serves several workbenches (`crab mcp serve`'s connections).
   */
  undo: DispatchStage | ((policy: Policy) => DispatchStage);
  telemetry?: Telemetry;
  /** Waits before an approval is asked (a tool-list refresh in flight may void an MCP grant). */
  beforeApproval?(request: ApprovalRequest): Promise<void>;
  /**
   * The sandbox's probe: `started` is the probe under way, if any; `start`
   * starts it (once) and resolves when it is done. A bash call starts it and
   * waits; any other call waits for one under way, so what the probe lays out in
   * the workspace is gone before undo looks.
   */
  probe?: { started(): Promise<void> | undefined; start(): Promise<void> };
}

/** A session ready for calls. */
export interface Workbench {
  policy: Policy;
  session: Session;
  hooks: Hooks;
  dispatcher: Dispatcher;
  /**
   * Ends the session's background jobs: every job still running is stopped.
   * The front end calls it when the session ends. The table opens when a job
   * first needs it; a front end that shows jobs opens it at once with
   * `jobsFor(session)` (`tools/jobs/table.ts`).
   */
  closeJobs(): Promise<void>;
}

/** Puts a session together (see the module doc). */
export function workbench(opts: WorkbenchOptions): Workbench {
  const { settings, store, runId, telemetry } = opts;
  const rules = settings.permissions();
  let seq = 0;
  // The hook runner asks the policy before each script; the policy's prompt fires Notification hooks.
  const hooks: Hooks = new Hooks({
    hooks: opts.hooks.commands,
    ...(opts.hooks.sdk ? { sdk: opts.hooks.sdk } : {}),
    workspace: settings.workspace,
    sessionId: opts.hooks.sessionId,
    ...(opts.hooks.transcriptPath ? { transcriptPath: opts.hooks.transcriptPath } : {}),
    permissionMode: (): string => policy.mode,
    notice: opts.hooks.notice,
    ...(opts.hooks.output ? { output: opts.hooks.output } : {}),
    // Where nobody can answer, a prompt a waiting workspace hook would check is refused.
    ...(opts.policy.ask && !opts.policy.askCallsOnly ? {} : {
      promptGuards: (opts.hooks.untrusted ?? []).filter((h) => h.event === "UserPromptSubmit"),
    }),
    record: (r) => recordHookRun(store, { ...r, runId, seq: ++seq }),
    span: (event, command) =>
      telemetry?.hookSpan({ runId, sessionId: opts.hooks.sessionId }, event, command) ??
        (() => {}),
    refusal: (h, signal) => hookRefusal(policy, settings.workspace, h, signal),
  });
  const policy: Policy = new Policy({
    mode: opts.policy.mode,
    rules: rules.rules,
    home: rules.home,
    allowed: opts.policy.allowed,
    sandbox: opts.policy.sandbox,
    trusted: settings.trusted,
    protect: hookProtection(settings.workspace, opts.hooks.commands),
    ...(opts.policy.ask ? { ask: hooks.notifying(opts.policy.ask) } : {}),
    ...(opts.policy.askCallsOnly ? { askCallsOnly: true } : {}),
    ...(opts.policy.notify ? { notify: opts.policy.notify } : {}),
    ...(opts.policy.flagFor ? { flagFor: opts.policy.flagFor } : {}),
  });
  const session = new Session(settings.workspace);
  session.sandbox = policy.sandbox;
  jobsAtFirstUse(session, {
    options: {
      max: settings.crab().settings.jobs?.max,
      watchChanges: () => jobWatch(settings.workspace),
      changeRefusal: (path, isDir) => policy.changeRefusal(path, settings.workspace, isDir),
    },
    subscriber: jobRecorder(store, runId, telemetry, opts.hooks.sessionId),
  });
  const approval: ApprovalPolicy = {
    approve: async (request, signal) => {
      await opts.beforeApproval?.(request);
      return policy.approve(request, signal);
    },
    decide: (call) => policy.decide(call),
    hidden: (workspace) => policy.hidden(workspace),
    closedPath: (path, workspace) => policy.closedPath(path, workspace),
  };
  const stages: DispatchStage[] = [
    ...telemetry?.dispatchStages({ runId, sessionId: opts.hooks.sessionId }) ?? [],
    ...(hooks.commands.length ? [hookStage(hooks)] : []),
    ...(opts.hooks.untrusted?.length ? [untrustedGuardStage(opts.hooks.untrusted)] : []),
    ...(opts.probe ? [probeStage(opts.probe)] : []),
    typeof opts.undo === "function" ? opts.undo(policy) : opts.undo,
  ];
  const dispatcher = new Dispatcher({
    registry: opts.registry,
    session,
    policy: approval,
    sink: store,
    runId,
    stages,
  });
  return { policy, session, hooks, dispatcher, closeJobs: () => closeJobs(session) };
}

/** What changed in the workspace while a job ran, from undo's file watcher (none before it runs). */
function jobWatch(workspace: string): ChangeWatch | undefined {
  const sub = watchFromNow(workspace);
  if (!sub) return undefined;
  return {
    async take() {
      const flushed = await sub.flush();
      const { paths, complete } = sub.take();
      return { paths, complete: complete && flushed };
    },
    close: () => sub.close(),
  };
}

/**
 * Keeps each job's start, reads and end in the store (the starting call and
 * each read are observations of their own), and gives it a span when
 * telemetry is on.
 */
function jobRecorder(
  store: Store,
  runId: string,
  telemetry: Telemetry | undefined,
  sessionId: () => string,
): (event: JobEvent) => void {
  const spans = new Map<string, (end: JobSpanEnd) => void>();
  return (event) => {
    const job = event.job;
    if (event.kind === "started") {
      recordJobStart(store, runId, job);
      const span = telemetry?.jobSpan({ runId, sessionId }, job.id);
      if (span) spans.set(job.id, span);
    } else if (event.kind === "read") recordJobRead(store, runId, job.id);
    else if (event.kind === "ended") {
      recordJobEnd(store, runId, job);
      spans.get(job.id)?.({
        state: job.state,
        exitCode: job.exitCode,
        outputBytes: job.outputBytes,
      });
      spans.delete(job.id);
    }
  };
}

/** A one-shot call watches a workspace of at least this many files (see `undoStage`'s `watchFrom`). */
const WATCH_FROM_FILES = 20_000;

/**
 * Undo's stage for a workspace, kept as the settings say. `sessionId` names the
 * undo session of a run's calls; `watch: false` scans instead of watching,
 * `big` watches only a workspace of many files (a process that makes one
 * call); `policy` answers what may be stored.
 *
 * Its code (the snapshot, the store, a tenth of what a run loads) is loaded
 * when a call may change files, or when the look ahead of the first call
 * begins: a run that changes nothing, `crab tool read`, never loads it.
 */
export function undoFor(
  settings: Settings,
  store: Store,
  opts: {
    sessionId: (runId: string) => string;
    /** False: no file watcher; `big`: one only in a workspace of many files (one-shot calls). */
    watch?: boolean | "big";
    policy: Pick<Policy, "mayStore" | "changeRefusal">;
    /**
     * Settles once the process has (a first request on its way, a prompt
     * drawn): the look ahead begins {@link LOOK_AHEAD_AFTER_MS} after it, so it
     * never holds back what the user waits for. Without it, after the stage is made.
     */
    settled?: Promise<unknown>;
  },
): DispatchStage {
  // A process of many calls looks ahead of its first; the stat cache is written as it ends.
  const warm = opts.watch === undefined || opts.watch === true;
  const options: Omit<UndoStageOptions, "retention"> = {
    workspace: settings.workspace,
    sessionId: opts.sessionId,
    ...(opts.watch === false ? { watchFs: false } : {}),
    ...(opts.watch === "big" ? { watchFrom: WATCH_FROM_FILES } : {}),
    // Made when the look ahead is due, or a call waits: it begins at once (a call waits for it).
    warm: warm ? 0 : false,
    saveOnExit: true,
    onChanges: (run, seq, changes) => store.noteChanges(run, seq, changes),
    mayStore: (path) => opts.policy.mayStore(path),
    changeRefusal: (path, isDir) => opts.policy.changeRefusal(path, settings.workspace, isDir),
  };
  let real: DispatchStage | undefined;
  let loading: Promise<DispatchStage> | undefined;
  let closed = false;
  const load = () =>
    loading ??= Promise.all([import("../undo/stage.ts"), import("../undo/retention.ts")])
      .then(([{ undoStage }, { retentionOf }]) =>
        real = undoStage({ ...options, retention: retentionOf(settings.undo()) })
      );
  if (warm) {
    const begin = () =>
      Deno.unrefTimer(setTimeout(() => {
        if (closed) return;
        debug("undo", "look ahead begins");
        load().catch(() => {});
      }, LOOK_AHEAD_AFTER_MS));
    if (opts.settled) opts.settled.then(begin, () => {});
    else begin();
  }
  return {
    name: "undo",
    around: (call, next) => real?.around ? real.around(call, next) : next(),
    async preRun(call) {
      if (!isMutating(call.tool)) return;
      await (real ?? await load()).preRun!(call);
    },
    postRun: async (call, ran) => await real?.postRun?.(call, ran),
    observe: (observation, call) => real?.observe?.(observation, call),
    async close() {
      closed = true;
      await loading?.catch(() => {});
      await real?.close?.();
    },
  };
}

/**
 * The hook door: the files `hook`'s command names in the workspace, against
 * their pins, and the policy's answer. A change the user confirms is pinned.
 */
async function hookRefusal(
  policy: Policy,
  workspace: string,
  hook: HookCommand,
  signal: AbortSignal = new AbortController().signal,
): Promise<string | undefined> {
  const files = hookScripts(hook.command, workspace);
  const states = checkPins(workspace, files);
  const changed = files.filter((f) => states.get(f) === "changed");
  const why = await policy.hookRefusal(
    { ...hook, changed: changed.map((f) => relative(workspace, f)) },
    signal,
  );
  if (why === undefined && changed.length) repin(workspace, changed);
  return why;
}

/** What the sandbox and write and edit protect for `hooks`: every file their commands name. */
export function hookProtection(
  workspace: string,
  hooks: readonly HookCommand[],
): ProtectedExtra[] {
  const out: ProtectedExtra[] = [];
  for (const h of hooks) {
    for (const path of hookScripts(h.command, workspace)) {
      if (out.some((e) => e.path === path)) continue;
      out.push({ path, reason: `a ${h.event} hook runs it, outside the sandbox` });
    }
  }
  return out;
}

/** The stage that waits for the sandbox's probe (see {@link WorkbenchOptions.probe}). */
function probeStage(probe: NonNullable<WorkbenchOptions["probe"]>): DispatchStage {
  return {
    name: "sandbox probe",
    preRun: (call) => call.tool.class === "exec" ? probe.start() : probe.started(),
  };
}
