/**
 * The dispatch stages of the commands that run tools without a conversation,
 * `crab tool` and `crab mcp serve`: telemetry's, the tool hooks, and undo's.
 *
 * Tool hooks are PreToolUse, PostToolUse and PostToolUseFailure from the same
 * files as a run's, under the same trust rule. These commands ask nobody, so a
 * workspace's own hooks run only once it is already trusted; until then one
 * notice says they were left out. The conversation's events (SessionStart,
 * Stop, …) do not fire here.
 *
 * Undo snapshots their mutating calls as it does a run's, so `crab undo` puts
 * back what they changed. Each run is a session of its own: `crab undo` with
 * no choice undoes the last call of the last run.
 *
 * @module
 */

import type { DispatchStage } from "../../tools/call/stages.ts";
import { printable } from "../../tools/fs/printable.ts";
import { recordHookRun } from "../store/hook_runs.ts";
import type { Store } from "../store/observe.ts";
import type { Telemetry } from "../telemetry/mod.ts";
import { type HookCommand, HookConfigError, loadHooks, TOOL_EVENTS } from "../settings/hooks.ts";
import { Hooks } from "./mod.ts";
import { hookStage } from "./stage.ts";
import type { Settings } from "../settings/crab.ts";
import { retentionOf } from "../undo/retention.ts";
import { undoStage } from "../undo/stage.ts";

/**
 * The tool hooks in effect in `workspace` (the user's, `--settings`', and the
 * workspace's when `trusted`), for `crab tool` and `crab mcp serve`: notices
 * and a malformed `hooks` object are said on stderr; undefined means the
 * command exits 2.
 */
export function loadToolHooks(
  workspace: string,
  trusted: boolean,
  settingsFlag: string | undefined,
  trustHint: string,
): HookCommand[] | undefined {
  try {
    const loaded = loadHooks(workspace, trusted, settingsFlag, { events: TOOL_EVENTS, trustHint });
    for (const n of loaded.notices) console.error(`crab: ${n}`);
    return loaded.hooks;
  } catch (e) {
    if (!(e instanceof HookConfigError)) throw e;
    console.error(`error: ${e.message}\nhint: ${e.hint}`);
    return undefined;
  }
}

/** What {@link toolHookStages} records and reports to. */
export interface ToolHookRun {
  workspace: string;
  store: Store;
  /** The run the hook runs are recorded under; hooks read it as `session_id`. */
  runId: string;
  permissionMode(): string;
  telemetry?: Telemetry;
  /** Undo's stage of this process in the workspace ({@link toolUndoStage}). */
  undo: DispatchStage;
}

/**
 * Undo's stage for these commands' calls in `workspace` (a real path), kept
 * as the `undo` setting says. One serves every run of the process, so that
 * their calls share one file watcher and stat cache; `watch: false` scans
 * instead, for a process that makes one call. What each call changed is noted
 * on its observation in `store`.
 */
export function toolUndoStage(
  workspace: string,
  store: Store,
  opts: { settings: Settings; watch: boolean },
): DispatchStage {
  return undoStage({
    workspace,
    sessionId: (runId) => runId,
    retention: retentionOf(opts.settings.undo),
    ...(opts.watch ? {} : { watchFs: false }),
    onChanges: (run, seq, changes) => store.noteChanges(run, seq, changes),
  });
}

/**
 * The dispatch stages of one run of these commands: telemetry's, when it is on,
 * one that runs `hooks` (none without hooks), then undo's, in a run's order.
 * Notices go to stderr.
 */
export function toolCommandStages(
  hooks: readonly HookCommand[],
  run: ToolHookRun,
): DispatchStage[] {
  const ids = { runId: run.runId };
  const stages = [...run.telemetry?.dispatchStages(ids) ?? []];
  if (hooks.length === 0) return [...stages, run.undo];
  let seq = 0;
  return [
    ...stages,
    hookStage(
      new Hooks({
        hooks,
        workspace: run.workspace,
        sessionId: () => run.runId,
        permissionMode: run.permissionMode,
        notice: (m) => console.error(`crab: ${printable(m, "prose")}`),
        record: (r) => recordHookRun(run.store, { ...r, runId: run.runId, seq: ++seq }),
        span: (event, command) => run.telemetry?.hookSpan(ids, event, command) ?? (() => {}),
      }),
    ),
    run.undo,
  ];
}
