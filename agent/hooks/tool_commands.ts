/**
 * Tool hooks for the commands that run tools without a conversation, `crab
 * tool` and `crab mcp serve`: PreToolUse, PostToolUse and PostToolUseFailure
 * from the same files as a run's, under the same trust rule. These commands
 * ask nobody, so a workspace's own hooks run only once it is already trusted;
 * until then one notice says they were left out. The conversation's events
 * (SessionStart, Stop, …) do not fire here.
 *
 * @module
 */

import type { DispatchStage } from "../../tools/call/stages.ts";
import { printable } from "../../tools/fs/printable.ts";
import { recordHookRun } from "../store/hook_runs.ts";
import type { Store } from "../store/observe.ts";
import type { Telemetry } from "../telemetry/mod.ts";
import { type HookCommand, loadHooks, TOOL_EVENTS } from "./config.ts";
import { Hooks } from "./mod.ts";
import { hookStage } from "./stage.ts";

/**
 * The tool hooks in effect in `workspace` (the user's, `--settings`', and the
 * workspace's when `trusted`); notices go to `notice`. Throws
 * `HookConfigError` for a malformed `hooks` object.
 */
export function loadToolHooks(
  workspace: string,
  trusted: boolean,
  settingsFlag: string | undefined,
  opts: { trustHint: string; notice(message: string): void },
): HookCommand[] {
  const loaded = loadHooks(workspace, trusted, settingsFlag, {
    events: TOOL_EVENTS,
    trustHint: opts.trustHint,
  });
  for (const n of loaded.notices) opts.notice(n);
  return loaded.hooks;
}

/** What {@link toolHookStages} records and reports to. */
export interface ToolHookRun {
  workspace: string;
  store: Store;
  /** The run the hook runs are recorded under; hooks read it as `session_id`. */
  runId: string;
  permissionMode(): string;
  telemetry?: Telemetry;
}

/**
 * The dispatch stages of one run of these commands: telemetry's, when it is on,
 * then one that runs `hooks` (none without hooks). Notices go to stderr.
 */
export function toolCommandStages(
  hooks: readonly HookCommand[],
  run: ToolHookRun,
): DispatchStage[] {
  const ids = { runId: run.runId };
  const stages = [...run.telemetry?.dispatchStages(ids) ?? []];
  if (hooks.length === 0) return stages;
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
  ];
}
