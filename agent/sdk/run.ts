/**
 * `query()` in the calling process: the options made into a print-mode run's
 * flags, the run started through the same path as `crab -p` (`ClaudeRun`:
 * settings layers, policy, sandbox, undo, hooks, observations, telemetry), and
 * its messages handed to the script. `canUseTool` and hook callbacks answer
 * through the same bridges as the Agent SDK's over stream-json, called here
 * directly. Loaded only once a query starts.
 *
 * @module
 */

import { realPathOrNull } from "../../tools/fs/exists.ts";
import { withEnv } from "./env_scope.ts";
import { crabNameOf } from "../../tools/table.ts";
import { ClaudeRun } from "../print/claude_run.ts";
import type { PrintJson } from "../print/events.ts";
import { PromptTool } from "../print/prompt_tool.ts";
import { compileSchema, type OutputSchema, SchemaError } from "../print/structured.ts";
import { SdkHookBridge } from "../hooks/sdk.ts";
import type { HookEvent as CrabHookEvent } from "../settings/hooks.ts";
import type { RunFlags, Runtime } from "../run/runtime.ts";
import { PRINT_DEFAULT_MODE, UsageError } from "../run/runtime.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import { resolveModel } from "../providers/fallback.ts";
import { printCommands } from "../print/slash.ts";
import { checkApiAccess, checkPermissions } from "./permissions.ts";
import { sdkServers } from "./mcp.ts";
import { userText } from "./options.ts";
import { type AgentDefinition, AgentError, agentsFromJson } from "../subagents/definitions.ts";
import type { HookCallback, Options, QueryChannel, SDKMessage, SDKUserMessage } from "./types.ts";

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The run's flags from `query()`'s options: the Agent SDK's defaults where crab's differ. */
async function runFlags(options: Options, cwd: string): Promise<RunFlags> {
  const mode = options.permissionMode;
  if (mode === "bypassPermissions" && options.allowDangerouslySkipPermissions !== true) {
    throw new UsageError(
      'Cannot use permissionMode "bypassPermissions" without allowDangerouslySkipPermissions: true',
    );
  }
  const system = options.systemPrompt;
  const append = [
    isObject(system) ? system.append : undefined,
    options.appendSystemPrompt,
  ].filter((s): s is string => typeof s === "string" && s.trim() !== "");
  const addDirs = (options.additionalDirectories ?? []).map((d) => {
    const real = realPathOrNull(d);
    if (!real) throw new UsageError(`Cannot add directory "${d}": it does not exist`);
    return real;
  });
  const mcp = await sdkServers(options.mcpServers);
  let agents: AgentDefinition[] | undefined;
  try {
    agents = options.agents && agentsFromJson(options.agents, "sdk");
  } catch (e) {
    if (e instanceof AgentError) throw new UsageError(e.message, e.hint);
    throw e;
  }
  return {
    cwd,
    ...(agents && { agents }),
    ...(options.model !== undefined && { model: options.model }),
    ...(options.fallbackModel !== undefined && { fallbackModel: options.fallbackModel }),
    ...(typeof system === "string" && system.trim() !== "" && { systemPrompt: system }),
    ...(append.length && { appendSystemPrompt: append.join("\n\n") }),
    ...(options.maxTurns !== undefined && { maxTurns: options.maxTurns }),
    ...(options.maxBudgetUsd !== undefined && { maxBudgetUsd: options.maxBudgetUsd }),
    ...(options.resume !== undefined && { resume: options.resume }),
    ...(options.continue && { continue: true }),
    ...(options.sessionId !== undefined && { sessionId: options.sessionId }),
    ...(options.forkSession && { forkSession: true }),
    ...(options.persistSession === false && { noSessionPersistence: true }),
    ...(options.strictMcpConfig && { strictMcpConfig: true }),
    ...(mcp.config && { mcpConfig: [mcp.config] }),
    ...(mcp.inProcess && { sdkMcpServers: mcp.inProcess }),
    permissions: {
      // As the Agent SDK: without a mode, what is not allowed is refused (or asks canUseTool).
      // `acceptOffered` is print mode's own default: no mode given at all.
      ...(mode !== PRINT_DEFAULT_MODE && { permissionMode: (mode ?? "default") as Mode }),
      ...(options.allowedTools?.length && { allowedTools: options.allowedTools }),
      ...(options.disallowedTools?.length && { disallowedTools: options.disallowedTools }),
      ...(addDirs.length && { addDirs }),
      settingSources: options.settingSources ?? ["user", "project", "local"],
    },
    refuseMissingPermissions: true,
  };
}

/** The hook callbacks, registered on a bridge that calls them in this process. */
function hookBridge(
  hooks: Options["hooks"],
  signal: AbortSignal,
): SdkHookBridge | undefined {
  if (!hooks || !Object.keys(hooks).length) return undefined;
  const callbacks = new Map<string, HookCallback>();
  const bridge: SdkHookBridge = new SdkHookBridge((m) => {
    const id = String(m.request_id);
    const request = m.request as { callback_id: string; input: PrintJson; tool_use_id?: string };
    const callback = callbacks.get(request.callback_id)!;
    callback(request.input as Parameters<HookCallback>[0], request.tool_use_id, { signal })
      .then(
        (output) => ({ subtype: "success", request_id: id, response: output ?? {} }),
        (e) => ({ subtype: "error", request_id: id, error: e instanceof Error ? e.message : e }),
      )
      .then((response) => bridge.answer({ response }));
  });
  for (const [event, matchers] of Object.entries(hooks)) {
    for (const m of matchers ?? []) {
      for (const fn of m.hooks) {
        const id = `hook_${callbacks.size}`;
        callbacks.set(id, fn);
        bridge.hooks.push({
          event: event as CrabHookEvent,
          matcher: m.matcher ?? "",
          callbackId: id,
          timeout: m.timeout ?? 60,
        });
      }
    }
  }
  return bridge;
}

/** `canUseTool` as print mode's prompt tool, its control requests answered in this process. */
function canUseToolPrompt(options: Options, run: ClaudeRun): PromptTool | undefined {
  const canUseTool = options.canUseTool;
  // An explicit mode wins over canUseTool; acceptOffered approves every offered tool.
  if (!canUseTool || options.permissionMode === PRINT_DEFAULT_MODE) return undefined;
  const asking = new Map<string, AbortController>();
  const tool: PromptTool = new PromptTool("stdio", {
    send: (m) => {
      if (m.type === "control_cancel_request") {
        asking.get(String(m.request_id))?.abort();
        return;
      }
      const id = String(m.request_id);
      const r = m.request as Record<string, unknown>;
      const stop = new AbortController();
      asking.set(id, stop);
      const crabName = crabNameOf(String(r.tool_name)) ??
        run.rt?.registry.list().find((t) => t.alias === r.tool_name)?.name;
      canUseTool(String(r.tool_name), r.input as Record<string, unknown>, {
        signal: stop.signal,
        suggestions: r.permission_suggestions as never,
        toolUseID: String(r.tool_use_id),
        ...(typeof r.decision_reason === "string" && { decisionReason: r.decision_reason }),
        ...(typeof r.agent_id === "string" && { agentID: r.agent_id }),
        ...(crabName && { crab_tool_name: crabName }),
      }).then(
        (answer) => ({ subtype: "success", request_id: id, response: answer }),
        (e) => ({ subtype: "error", request_id: id, error: e instanceof Error ? e.message : e }),
      ).then((response) => {
        asking.delete(id);
        tool.answer({ response });
      });
    },
    notice: (m) => run.sink.notice(m),
    interrupt: () => run.controller.abort(),
    runtime: () => run.rt,
  });
  return tool;
}

/** The prompts of a query, one after another. */
async function* prompts(
  prompt: string | AsyncIterable<SDKUserMessage>,
): AsyncGenerator<string> {
  if (typeof prompt === "string") {
    yield prompt;
    return;
  }
  for await (const m of prompt) {
    const text = userText(m);
    if (text.trim() !== "") yield text;
  }
}

/**
 * Runs a query to its end, its messages pushed to `channel`. Rejects with a
 * {@link UsageError} (or another error) when the run cannot start.
 */
export async function runQuery(
  params: { prompt: string | AsyncIterable<SDKUserMessage>; options?: Options },
  channel: QueryChannel,
  closed: AbortSignal,
): Promise<void> {
  const options = params.options ?? {};
  const run = () => runScoped(params.prompt, options, channel, closed);
  return options.env ? await withEnv(options.env, run) : await run();
}

async function runScoped(
  prompt: string | AsyncIterable<SDKUserMessage>,
  options: Options,
  channel: QueryChannel,
  closed: AbortSignal,
): Promise<void> {
  const cwd = options.cwd ?? Deno.cwd();
  checkPermissions(cwd, options.env !== undefined);
  const flags = await runFlags(options, cwd);
  let schema: OutputSchema | undefined;
  if (options.outputFormat) {
    try {
      schema = await compileSchema(JSON.stringify(options.outputFormat.schema));
    } catch (e) {
      if (e instanceof SchemaError) throw new UsageError(e.message);
      throw e;
    }
  }
  const stderr = options.stderr;
  const claude = new ClaudeRun(
    { ...flags, includePartialMessages: options.includePartialMessages },
    {
      emit: (m) => channel.push(m as unknown as SDKMessage),
      notice: (m) => stderr?.(`crab: ${m}\n`),
    },
  );
  const hooksDone = new AbortController();
  const bridge = hookBridge(options.hooks, hooksDone.signal);
  const prompter = canUseToolPrompt(options, claude);
  const stop = () => {
    claude.stop ??= "interrupt";
    claude.controller.abort();
  };
  const abort = options.abortController?.signal;
  if (abort?.aborted) return;
  abort?.addEventListener("abort", stop);
  closed.addEventListener("abort", stop);
  let rt: Runtime | undefined;
  let status = "ok";
  try {
    rt = await claude.start(
      { ...flags, ...(bridge && { sdkHooks: bridge }) },
      schema,
      prompter && { ask: prompter.asker, askCallsOnly: true },
    );
    checkApiAccess(rt.provider.name, rt.apiBase);
    const started = rt;
    channel.started({
      interrupt: () => claude.controller.abort(),
      setPermissionMode: (mode) => {
        started.policy.mode = (mode === PRINT_DEFAULT_MODE ? "default" : mode) as Mode;
      },
      setModel: (model) => {
        started.agent.model = model
          ? resolveModel(started.provider.name, model)
          : started.provider.model;
      },
      supportedCommands: () => printCommands(started),
      mcpServerStatus: () =>
        started.mcpStatus().map((s) => ({
          name: s.name,
          status: s.state,
          ...(s.error && { error: s.error }),
        })),
    });
    claude.emitInit(rt);
    let first = true;
    for await (const text of prompts(prompt)) {
      if (abort?.aborted || closed.aborted) break;
      if (!first) claude.nextPrompt();
      first = false;
      const done = await claude.answer(rt, text, schema);
      if (done.kind === "refused") throw new UsageError(done.message);
      status = done.result.status;
      // One prompt given as a string: its jobs end with its answer, before its result.
      if (typeof prompt === "string") await rt.jobs.close();
      claude.report(rt, done);
      if (abort?.aborted || closed.aborted) break;
    }
  } finally {
    abort?.removeEventListener("abort", stop);
    closed.removeEventListener("abort", stop);
    hooksDone.abort();
    bridge?.close();
    prompter?.close();
    await rt?.finish(claude.stop ? "aborted" : status);
  }
}
