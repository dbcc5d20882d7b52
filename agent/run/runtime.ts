/**
 * Everything a model-driven run needs, put together once for both front ends:
 * settings (flags over config files, project files only when trusted), the
 * provider, the tools offered, the approval policy, the store, the run record,
 * the session transcript and the agent itself.
 *
 * @module
 */

import { errorText } from "../../tools/call/dispatch.ts";
import type { Dispatcher } from "../../tools/call/dispatch.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import {
  ALLOW_CLASSES,
  type AllowedClass,
  type Asker,
  type Policy,
} from "../../tools/policy/policy.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import type { AnyTool, ApprovalRequest } from "../../tools/tool.ts";
import { builtinTools } from "../../tools/call/builtins.ts";
import { DEFAULT_TOOLS as DEFAULT_TOOL_LISTS } from "../../tools/table.ts";
import { withPermission } from "../../tools/host/capabilities.ts";
import { createWebFetchTool } from "../../tools/web_fetch.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import { cleanSpillFiles } from "../../tools/call/truncate.ts";
import { type McpStart, startMcp } from "./mcp_startup.ts";
import { type FlagServers, McpFlagError, readFlagConfigs } from "../../mcp/config.ts";
import type { McpHub, McpServerStatus } from "../../mcp/hub.ts";
import { Agent, type AgentEvents, hookContext } from "../loop/loop.ts";
import type { CrabSettings } from "../settings/crab.ts";
import { Settings } from "../settings/mod.ts";
import type { PermissionFlags, Permissions } from "../settings/permissions.ts";
import { UsageError } from "../settings/usage_error.ts";
import { Store } from "../store/observe.ts";
import { effectiveUid } from "./effective_uid.ts";
import { Transcripts } from "../store/sessions.ts";
import { systemPrompt } from "./system_prompt.ts";
import { loadTelemetry } from "../telemetry/mod.ts";
import { anthropicTelemetry } from "../telemetry/sdk_tracing.ts";
import {
  createProvider,
  DEFAULT_CONTEXT_WINDOW,
  type Message,
  type Provider,
  type ProviderConfig,
  selectProvider,
} from "../providers/mod.ts";
import { chooseWindow, type WindowChoice } from "../providers/context_window.ts";
import { type LazyProvider, lazyProvider } from "../providers/lazy.ts";
import type { HookCommand, HookOutput } from "../hooks/mod.ts";
import { TranscriptFile } from "../hooks/transcript.ts";
import type { SdkHookBridge } from "../hooks/sdk.ts";
import { resolveModel, withFallback } from "../providers/fallback.ts";
import { modelsBehind } from "../providers/models.ts";
import { withModeModel } from "../providers/plan_model.ts";
import { budgetCheck, checkBudgetModel } from "./budget.ts";
import { type OpenedSession, openSession, SessionFlagError } from "./session_start.ts";
import { undoFor, workbench } from "./workbench.ts";

export { UsageError } from "../settings/usage_error.ts";

/** Command-line flags that shape a run. */
export interface RunFlags {
  cwd: string;
  provider?: string;
  model?: string;
  baseUrl?: string;
  /** Comma-separated tool names offered to the model. */
  tools?: string;
  web?: boolean;
  webAllowPrivate?: boolean;
  /** Comma-separated classes approved up front. */
  allow?: string;
  yolo?: boolean;
  maxTurns?: number;
  contextWindow?: number;
  trustProject?: boolean;
  continue?: boolean;
  resume?: string;
  /** How far bash may reach (`--sandbox`); never taken from a project file. */
  sandbox?: SandboxMode;
  /** Replaces crab's own system prompt (`--system-prompt`); instruction files still follow it. */
  systemPrompt?: string;
  /** Goes at the end of the system prompt (`--append-system-prompt`). */
  appendSystemPrompt?: string;
  /** MCP configs given on the command line (`--mcp-config`): files or JSON texts. */
  mcpConfig?: string[];
  /** Only the servers of {@link RunFlags.mcpConfig} (`--strict-mcp-config`). */
  strictMcpConfig?: boolean;
  /** `--permission-mode`, `--allowedTools`, `--disallowedTools`, `--settings` (and `--yolo`). */
  permissions?: PermissionFlags;
  /** The Agent SDK's hook callbacks (stream-json input's `initialize`). */
  sdkHooks?: SdkHookBridge;
  /** `--session-id`, `--fork-session`, `--no-session-persistence` (see `session_start.ts`). */
  sessionId?: string;
  forkSession?: boolean;
  noSessionPersistence?: boolean;
  /** The model to go on with when the model is overloaded or not found (`--fallback-model`). */
  fallbackModel?: string;
  /** Stop once the estimated cost passes this many dollars (`--max-budget-usd`). */
  maxBudgetUsd?: number;
}

/**
 * The name print mode's own default goes by, where no permission flag was
 * given: every offered tool approved, deny and ask rules from files denying.
 */
export const PRINT_DEFAULT_MODE = "acceptOffered";

/** A rule that approves what a class covers, for the refusal's hint. */
const RULE_FOR: Record<string, string> = {
  write: "Edit",
  exec: "Bash(COMMAND *)",
  net: "WebFetch",
  "outside-read": "Read(//PATH/**)",
  "outside-write": "Edit(//PATH/**)",
};

/** A provider that cannot be chosen or built: exit code 3. */
export class SetupError extends Error {
  override name = "SetupError";
}

/** The built-ins a run offers when no list names them: all but web_fetch. */
export const DEFAULT_TOOLS = DEFAULT_TOOL_LISTS.run;

const CLASSES = new Set<string>(ALLOW_CLASSES);

/** Parses `--allow write,exec,mcp:github`; `outside` stands for outside-read and outside-write. */
export function parseClasses(list: readonly string[]): AllowedClass[] {
  const out: AllowedClass[] = [];
  for (const raw of list) {
    const c = raw.trim();
    if (!c) continue;
    if (!CLASSES.has(c) && !/^mcp:[A-Za-z0-9_-]+$/.test(c)) {
      throw new UsageError(
        `Cannot allow class "${c}": use ${ALLOW_CLASSES.join(", ")} or mcp:SERVER`,
      );
    }
    out.push(c as AllowedClass);
  }
  return out;
}

function splitList(s: string | undefined): string[] | undefined {
  return s === undefined ? undefined : s.split(",").map((x) => x.trim()).filter(Boolean);
}

/**
 * Chooses the tools offered: `--tools` (or config) names them; the default is the
 * six non-network built-ins; `--web` adds web_fetch.
 */
export function chooseTools(
  available: readonly AnyTool[],
  names: readonly string[] | undefined,
  web: boolean,
): AnyTool[] {
  const byName = new Map(available.map((t) => [t.name, t]));
  const wanted = names ? [...names] : [...DEFAULT_TOOLS];
  if (web && !wanted.includes("web_fetch")) wanted.push("web_fetch");
  const out: AnyTool[] = [];
  for (const n of wanted) {
    const tool = byName.get(n);
    if (!tool) {
      throw new UsageError(
        `Cannot offer tool "${n}": no such tool in this build\nhint: available: ${
          [...byName.keys()].join(", ")
        }`,
      );
    }
    if (!out.includes(tool)) out.push(tool);
  }
  return out;
}

/** The servers `--mcp-config` gives, read now: a broken one is a usage error before anything starts. */
function flagServers(flags: RunFlags, workspace: string): FlagServers | undefined {
  if (!flags.mcpConfig?.length && !flags.strictMcpConfig) return undefined;
  try {
    return {
      servers: readFlagConfigs(flags.mcpConfig ?? [], workspace),
      strict: flags.strictMcpConfig === true,
    };
  } catch (e) {
    if (e instanceof McpFlagError) throw new UsageError(e.message);
    throw e;
  }
}

/** What a front end provides to a run. */
export interface RuntimeHooks {
  mode: "print" | "interactive";
  /** One line for the user (stderr in print mode). */
  notice(message: string): void;
  /** The interactive prompt; absent in print mode. */
  ask?: Asker;
  /** Told of each call allowed without asking. */
  approved?: (request: ApprovalRequest) => void;
  /** A hook's plain stdout (the REPL shows it in the call's detail view). */
  hookOutput?: (out: HookOutput) => void;
  events?: AgentEvents;
}

/** A ready run. */
export interface Runtime {
  agent: Agent;
  provider: Provider;
  registry: Registry;
  policy: Policy;
  dispatcher: Dispatcher;
  store: Store;
  transcripts: Transcripts;
  runId: string;
  /** The transcript the conversation is kept in (changes on {@link Runtime.newSession}). */
  readonly sessionId: string;
  settings: CrabSettings;
  /** The sandbox mode bash runs in. */
  sandbox: SandboxMode;
  /** The previous exchange of a resumed session (for the REPL to show). */
  resumed: Message[];
  /**
   * Starts a new conversation in a new transcript (`/clear`); files must be read
   * again. SessionEnd hooks (reason `clear`) see the old session, SessionStart
   * hooks (source `clear`) the new one.
   */
  newSession(): Promise<void>;
  /**
   * Starts what interactive mode's prompt did not wait for: the provider's SDK
   * and the MCP servers (print mode had both before the run began). Resolves once
   * every server connected or failed; calling it again returns the same promise.
   */
  warmUp(): Promise<void>;
  /** The MCP servers of this run: state and tools (`/mcp`). */
  mcpStatus(): McpServerStatus[];
  /** Whether the workspace's own settings, servers and commands are in use. */
  trusted: boolean;
  /** The permission rules and mode as loaded, with their sources (the session's live ones are `policy`'s). */
  permissions: Permissions;
  /** The mode by name, as print mode's init event reports it (`acceptOffered`: print mode's default). */
  permissionMode(): string;
  /** Drops the conversation from message `index` on (`/rewind`), from the transcript too. */
  rewindTo(index: number): void;
  /** Goes on with a stored session (`/resume`); returns its last exchange, to show. */
  resumeSession(id: string): Message[];
  /** The hooks in effect, and the workspace's that wait for trust (`/hooks`). */
  hooks: {
    active: readonly HookCommand[];
    untrusted: readonly HookCommand[];
    /** Fires the Notification hooks (`idle_prompt`: the prompt waits for the user). */
    notification(message: string, type: string): Promise<void>;
  };
  /** Records the end of the run (after the SessionEnd hooks) and closes the store. */
  finish(status: string): Promise<void>;
}

/** The workspace of a run, a real path; a folder that cannot be used is a usage error. */
function workspaceOf(cwd: string): string {
  try {
    return new Session(cwd).workspace;
  } catch (e) {
    throw new UsageError(`Cannot use workspace "${cwd}": ${e instanceof Error ? e.message : e}`);
  }
}

/** The run's settings, each file read once, with every notice they have said. */
function runSettings(flags: RunFlags, workspace: string, notice: (m: string) => void): Settings {
  const settings = new Settings({
    workspace,
    trustProject: flags.trustProject,
    flags: { ...flags.permissions, yolo: flags.yolo || flags.permissions?.yolo },
  });
  if (!settings.trusted && settings.trustState === "changed") {
    notice(
      "this workspace's settings changed since you trusted it (hooks, allow rules or MCP " +
        "servers): they are not used until you trust it again (pass --trust-project for one run)",
    );
  }
  const loaded = settings.crab();
  for (const w of loaded.warnings) notice(w);
  for (const n of settings.permissions().notices) notice(n);
  for (const n of settings.hooks().notices) notice(n);
  if (loaded.ignored.length) {
    notice(
      `ignoring ${loaded.ignored.join(", ")} from ${loaded.projectPath}: this workspace is not ` +
        "trusted (pass --trust-project to use them)",
    );
  }
  if (loaded.sandboxRefused) {
    notice(
      `ignoring sandbox from ${loaded.projectPath}: only --sandbox or the user config chooses it`,
    );
  }
  for (const n of settings.notices()) notice(n);
  return settings;
}

/** The tools a run offers the model, and the MCP tools it picks by name. */
function offeredTools(
  flags: RunFlags,
  settings: Settings,
  sandboxMode: SandboxMode,
  notice: (m: string) => void,
): { offered: AnyTool[]; mcpPicks: string[] | undefined } {
  const crab = settings.crab().settings;
  const toolNames = splitList(flags.tools) ?? crab.tools;
  const webFetch = createWebFetchTool({
    allowPrivate: flags.webAllowPrivate ?? crab.webAllowPrivate ?? false,
  });
  const offered = withPermission(
    chooseTools(
      [...builtinTools(), webFetch],
      toolNames?.filter((n) => !n.includes("__")),
      flags.web ?? crab.web ?? false,
    ),
    settings.workspace,
    notice,
    sandboxMode,
  );
  if (flags.webAllowPrivate && !offered.some((t) => t.name === "web_fetch")) {
    throw new UsageError(
      "Cannot use --web-allow-private without web_fetch: it is not offered in this run",
      "add --web",
    );
  }
  // Names with `__` pick MCP tools (`server__tool`, or `server__*` for all of a server's).
  return { offered, mcpPicks: toolNames?.filter((n) => n.includes("__")) };
}

/**
 * The mode and the classes approved up front. Print mode without permission
 * flags keeps its own default: the offered tools approved, rules from files
 * adding denials; with them it acts as `claude -p` (what is not allowed is denied).
 */
function choosePolicy(
  flags: RunFlags,
  settings: Settings,
  mode: RuntimeHooks["mode"],
  offered: readonly AnyTool[],
  mcpServers: readonly string[],
  notice: (m: string) => void,
): { mode: Mode; allowed: AllowedClass[]; printDefault: boolean } {
  const permissions = settings.permissions();
  const printDefault = mode === "print" && !permissions.fromCommandLine;
  const allowed = parseClasses([
    ...(settings.crab().settings.allow ?? []),
    ...(splitList(flags.allow) ?? []),
  ]);
  if (printDefault) {
    // Nobody is there to answer: every offered tool is approved (the tool list is the limit).
    for (const t of offered) allowed.push(t.class);
    for (const server of mcpServers) allowed.push(`mcp:${server}`);
  }
  // Print mode's default takes no mode from files: they add denials, never flip a script's default.
  const chosen = printDefault ? (flags.yolo ? "bypassPermissions" : "default") : permissions.mode;
  if (printDefault && permissions.mode !== chosen && permissions.modeSource !== "--yolo") {
    notice(
      `print mode ignores defaultMode ${permissions.mode} from ${permissions.modeSource} ` +
        "(give --permission-mode to choose one)",
    );
  }
  return { mode: chosen, allowed, printDefault };
}

/** The flag, or rule, that would approve a class: the refusal's hint. */
function flagFor(cls: string): string {
  const rule = cls.startsWith("mcp:") ? `mcp__${cls.slice(4)}` : RULE_FOR[cls];
  return `--allow ${cls}` + (rule ? `, or --allowedTools "${rule}"` : "");
}

/** The provider a run asks: chosen by flags, settings and the environment, wrapped for opusplan and a fallback. */
async function runProvider(
  flags: RunFlags,
  settings: Settings,
  mode: RuntimeHooks["mode"],
  modeNow: () => Mode,
  notice: (m: string) => void,
): Promise<{ provider: Provider; config: ProviderConfig }> {
  const crab = settings.crab().settings;
  const providerName = flags.provider ?? crab.provider;
  if (providerName !== undefined && providerName !== "anthropic" && providerName !== "openai") {
    throw new UsageError(`Cannot use provider "${providerName}": expected anthropic or openai`);
  }
  let config: ProviderConfig;
  try {
    config = await selectProvider(Deno.env.toObject(), {
      provider: providerName,
      model: flags.model ?? crab.model,
      baseUrl: flags.baseUrl ?? crab.baseUrl,
    });
  } catch (e) {
    throw new SetupError(e instanceof Error ? e.message : String(e));
  }
  const model = config.model ?? "";
  try {
    checkBudgetModel(flags.maxBudgetUsd, [
      ...modelsBehind(config.provider, model),
      ...(flags.fallbackModel ? [resolveModel(config.provider, flags.fallbackModel)] : []),
    ]);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // Interactive mode loads the SDK once its prompt is drawn (`warmUp`), or at the first request.
  const create = () => createProvider(config, { tracing: anthropicTelemetry() });
  const built: Provider = mode === "print"
    ? await create()
    : lazyProvider(config.provider, model, create);
  // opusplan's model follows the session's mode; a fallback replaces either.
  const planned = withModeModel(built, modeNow);
  const provider = flags.fallbackModel
    ? withFallback(planned, resolveModel(built.name, flags.fallbackModel), notice)
    : planned;
  return { provider, config };
}

/** Builds a run from flags; throws {@link UsageError} or {@link SetupError}. */
export async function startRuntime(flags: RunFlags, hooks: RuntimeHooks): Promise<Runtime> {
  const workspace = workspaceOf(flags.cwd);
  const mcpFlag = flagServers(flags, workspace);
  const settings = runSettings(flags, workspace, hooks.notice);
  const crab = settings.crab().settings;
  const trusted = settings.trusted;
  const permissions = settings.permissions();
  const hookConfig = settings.hooks();
  // The sandbox comes from the flag and the user's own file, never from the project.
  const sandbox = settings.sandbox({
    mode: flags.sandbox,
    allow: splitList(flags.allow),
    addDirs: flags.permissions?.addDirs,
    domains: flags.permissions?.allowDomain,
  });
  const { offered, mcpPicks } = offeredTools(flags, settings, sandbox.mode, hooks.notice);
  const sandboxed = offered.some((t) => t.class === "exec") &&
    sandbox.mode !== "danger-full-access";
  const probe = sandboxed ? sandboxStatus(workspace, sandbox) : undefined;

  // MCP servers connect while the provider loads; the first request waits for both.
  // Print mode starts them now; interactive mode once its prompt is drawn (`connectMcp`),
  // so loading the MCP SDK does not hold the prompt back.
  let mcpStart: McpStart | undefined;
  const connectMcp = () =>
    mcpStart ??= startMcp(workspace, trusted, mcpPicks, hooks.notice, mcpFlag);
  if (hooks.mode === "print") connectMcp();
  const choice = choosePolicy(
    flags,
    settings,
    hooks.mode,
    offered,
    hooks.mode === "print" ? mcpStart!.servers : [],
    hooks.notice,
  );
  const printDefault = choice.printDefault;
  if (choice.mode === "bypassPermissions" && effectiveUid() === 0) {
    hooks.notice("warning: --yolo as root: every call runs without asking, with root's rights");
  }

  // The session's policy is made with its dispatcher (below); until then nothing asks it.
  const made: { policy?: Policy } = {};
  let provider: Provider;
  let providerConfig: ProviderConfig;
  try {
    ({ provider, config: providerConfig } = await runProvider(
      flags,
      settings,
      hooks.mode,
      () => made.policy?.mode ?? choice.mode,
      hooks.notice,
    ));
  } catch (e) {
    await (await mcpStart?.hub)?.close();
    throw e;
  }
  // The server is asked for an unknown model's window while the SDK loads.
  const win = chooseWindow(providerConfig, flags.contextWindow ?? crab.contextWindow);
  const applyWindow = (w: WindowChoice) => {
    if (w.notice) hooks.notice(w.notice);
    return w.tokens;
  };
  // Interactive mode draws its prompt while the servers connect; the first request waits for them.
  let hub: McpHub | undefined;
  let mcpStale = true;
  let mcpReady: Promise<void> | undefined;
  const connect = () =>
    mcpReady ??= connectMcp().hub.then((h) => {
      hub = h;
      hub?.onToolsChanged((change) => {
        mcpStale = true;
        // An 'a' answer covered the tools as they were described then.
        const touched = [...change.changed, ...change.added];
        if (touched.length && made.policy?.forget(`mcp:${change.server}`)) {
          hooks.notice(
            `MCP server "${change.server}" changed its tools (${touched.join(", ")}); ` +
              "its calls ask for approval again",
          );
        }
      });
      mcpStale = true;
    }, () => {});
  if (hooks.mode === "print") await connect();
  // Interactive mode does not wait for the server's answer; it applies when it comes.
  const window = win.known ??
    (hooks.mode === "print" ? applyWindow(await win.asked) : DEFAULT_CONTEXT_WINDOW);
  const status = await probe?.catch(() => undefined);
  if (status && !status.ok) hooks.notice(`bash cannot run: ${status.reason}. ${status.hint}`);

  const store = new Store();
  store.onProblem = hooks.notice;
  cleanSpillFiles();
  const transcripts = new Transcripts(store);
  let opened: OpenedSession;
  try {
    opened = openSession(transcripts, workspace, flags, {
      provider: provider.name,
      model: provider.model,
    });
  } catch (e) {
    store.close();
    if (e instanceof SessionFlagError || (e instanceof Error && e.message.startsWith("Cannot"))) {
      throw new UsageError(e.message);
    }
    throw e;
  }
  let sessionId = opened.id;
  const messages = repairTranscript(opened.messages);
  const persist = opened.persist;
  const runId = store.startRun({
    mode: hooks.mode,
    workspace,
    model: provider.model,
    provider: provider.name,
    sessionId,
  });
  const registry = new Registry(offered);
  // MCP tools join the registry, and follow the servers' list changes at the next request.
  const syncMcp = () => {
    if (!hub || !mcpStale) return;
    mcpStale = false;
    for (const t of registry.list()) if (t.class.startsWith("mcp:")) registry.remove(t.name);
    for (const t of hub.tools()) if (mcpStart?.wanted(t)) registry.add(t);
  };
  syncMcp();
  // The Claude Code-format copy of a kept transcript, for hooks (`transcript_path`): written
  // only when the run has hooks, which alone read it (a resumed session's is written whole).
  const hasHooks = hookConfig.hooks.length > 0 || (flags.sdkHooks?.hooks.length ?? 0) > 0;
  const transcriptFile = (id: string, soFar: readonly Message[]) =>
    persist && hasHooks
      ? TranscriptFile.open({
        sessionId: id,
        cwd: workspace,
        alias: (name) => registry.get(name)?.alias,
        onProblem: hooks.notice,
      }, soFar)
      : undefined;
  let transcript = transcriptFile(sessionId, messages);
  const telemetry = await loadTelemetry();
  const bench = workbench({
    settings,
    registry,
    store,
    runId,
    telemetry,
    policy: {
      mode: choice.mode,
      allowed: choice.allowed,
      sandbox,
      ...(hooks.ask ? { ask: hooks.ask } : {}),
      ...(hooks.approved ? { notify: hooks.approved } : {}),
      flagFor,
    },
    hooks: {
      commands: hookConfig.hooks,
      ...(flags.sdkHooks ? { sdk: flags.sdkHooks } : {}),
      sessionId: () => sessionId,
      transcriptPath: () => transcript?.path ?? null,
      notice: hooks.notice,
      ...(hooks.hookOutput ? { output: hooks.hookOutput } : {}),
    },
    undo: (p) => undoFor(settings, store, { sessionId: () => sessionId, policy: p }),
    // A tool-list refresh in flight may void an MCP grant: let it land before deciding.
    beforeApproval: async (request) => {
      if (hub && request.class.startsWith("mcp:")) await hub.settled();
    },
  });
  const { policy, dispatcher, session, hooks: userHooks } = bench;
  made.policy = policy;
  // SessionStart hooks' output is context for the model, at the end of the system prompt.
  const started = await userHooks.sessionStart(messages.length ? "resume" : "startup");
  const system = systemPrompt(workspace, {
    replace: flags.systemPrompt,
    append: flags.appendSystemPrompt,
    policy,
  });
  const withStarted = (context: string[]) =>
    system + context.map((c) => "\n\n" + hookContext("SessionStart", c)).join("");
  const agent: Agent = new Agent({
    provider,
    dispatcher,
    system: withStarted(started),
    tools: () => {
      syncMcp();
      return registry.list();
    },
    maxTurns: flags.maxTurns ?? crab.maxTurns,
    contextWindow: window,
    messages,
    events: hooks.events,
    onMessage: (m, i) => {
      if (!persist) return;
      transcripts.append(sessionId, i, [m]);
      transcript?.put(m, i);
    },
    onRewrite: (all) => {
      if (!persist) return;
      transcripts.truncate(sessionId, 0);
      transcripts.append(sessionId, 0, all);
      transcript?.replace(all);
    },
    ...(userHooks.commands.length ? { hooks: userHooks.loopHooks() } : {}),
    // Each request priced as the model that answered it (opusplan's two, a fallback).
    budget: budgetCheck(flags.maxBudgetUsd, () => agent.spent.costUsd()),
  });
  if (win.known === undefined && hooks.mode !== "print") {
    win.asked.then((w) => agent.contextWindow = applyWindow(w), () => {});
  }
  telemetry?.instrument({
    runId,
    sessionId: () => sessionId,
    mode: hooks.mode,
    agent,
    provider,
    baseUrl: providerConfig.baseUrl,
  });
  let finished = false;
  return {
    get sessionId() {
      return sessionId;
    },
    async newSession() {
      await userHooks.sessionEnd("clear");
      agent.clear();
      session.files.clear();
      sessionId = persist
        ? transcripts.create(workspace, provider.name, agent.model)
        : crypto.randomUUID();
      transcript = transcriptFile(sessionId, []);
      agent.system = withStarted(await userHooks.sessionStart("clear"));
    },
    mcpStatus: () => hub?.status() ?? [],
    warmUp: () => {
      if ("load" in provider) (provider as LazyProvider).load().catch(() => {});
      return connect();
    },
    trusted,
    permissions,
    permissionMode: () =>
      printDefault && policy.mode === "default" ? PRINT_DEFAULT_MODE : policy.mode,
    rewindTo(index) {
      agent.messages.length = index;
      transcripts.truncate(sessionId, index);
      transcript?.truncate(index);
    },
    resumeSession(id) {
      const stored = repairTranscript(transcripts.load(id));
      agent.clear();
      agent.messages.push(...stored);
      session.files.clear();
      sessionId = id;
      transcript = transcriptFile(id, stored);
      return lastExchange(stored);
    },
    agent,
    provider,
    registry,
    policy,
    dispatcher,
    store,
    transcripts,
    runId,
    settings: crab,
    sandbox: sandbox.mode,
    resumed: lastExchange(messages),
    hooks: {
      active: hookConfig.hooks,
      untrusted: hookConfig.untrusted,
      notification: (message, type) => userHooks.notification(message, type),
    },
    async finish(status) {
      if (finished) return;
      finished = true;
      // Closing asks the servers to stop; their groups die with crab in any case.
      mcpReady?.then(() => hub?.close()).catch(() => {});
      // Recorded at once: crab may be exiting (a signal) and not wait for what follows.
      store.endRun(runId, {
        status,
        turns: agent.turns,
        inputTokens: agent.usage.inputTokens,
        outputTokens: agent.usage.outputTokens,
      });
      await userHooks.sessionEnd(status === "aborted" ? "other" : "exit");
      store.close();
    },
  };
}

/**
 * Makes a stored conversation sendable again: a response whose tool calls never
 * got results (the process ended mid-call) gets results saying so.
 */
export function repairTranscript(messages: Message[]): Message[] {
  const out = [...messages];
  const last = out[out.length - 1];
  if (last?.role === "assistant") {
    const calls = last.content.filter((b) => b.type === "tool_call");
    if (calls.length) {
      out.push({
        role: "user",
        content: calls.map((c) => ({
          type: "tool_result" as const,
          callId: c.type === "tool_call" ? c.id : "",
          text: errorText({
            code: "not_run",
            message: "the previous session ended before this call ran",
            hint: "Run it again if it is still needed.",
          }),
          isError: true,
        })),
      });
    }
  }
  return out;
}

/** The last user prompt and everything after it. */
function lastExchange(messages: Message[]): Message[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    const hasPrompt = typeof m.content === "string" || m.content.some((b) => b.type === "text");
    if (hasPrompt) return messages.slice(i);
  }
  return [];
}
