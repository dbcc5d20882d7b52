/**
 * Everything a model-driven run needs, put together once for both front ends:
 * settings (flags over config files, project files only when trusted), the
 * provider, the tools offered, the approval policy, the store, the run record,
 * the session transcript and the agent itself.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { mediaSupport } from "../providers/media.ts";
import { errorText } from "../../tools/call/dispatch.ts";
import type { Dispatcher } from "../../tools/call/dispatch.ts";
import { Registry, withCompanions } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { AllowedClass, Asker, Policy } from "../../tools/policy/policy.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import { ruleAppliesTo } from "../../tools/policy/rules.ts";
import { skillRuleMatches } from "../../tools/policy/decide.ts";
import type { AnyTool, ApprovalRequest } from "../../tools/tool.ts";
import { builtinTools } from "../../tools/call/builtins.ts";
import { withPermission } from "../../tools/host/capabilities.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import type { SandboxGrant, SandboxMode } from "../../tools/policy/sandbox.ts";
import { cleanSpillFiles } from "../../tools/call/truncate.ts";
import { RunMcp } from "./mcp_startup.ts";
import { chooseTools, flagServers, parseClasses, type RunFlags, splitList } from "./run_flags.ts";
import type { McpServerStatus } from "../../mcp/hub.ts";
import { Agent, type AgentEvents, hookContext, isNote } from "../loop/loop.ts";
import type { CrabSettings } from "../settings/crab.ts";
import { Settings } from "../settings/mod.ts";
import type { Permissions } from "../settings/permissions.ts";
import { UsageError } from "../settings/usage_error.ts";
import { spentOf, totalCost } from "../providers/prices.ts";
import { Store } from "../store/observe.ts";
import { effectiveUid } from "./effective_uid.ts";
import { Transcripts } from "../store/sessions.ts";
import { systemPrompt } from "./system_prompt.ts";
import { findSkills, type Skill } from "../skills/catalog.ts";
import { skillListing } from "../skills/listing.ts";
import { SkillSession } from "../skills/session.ts";
import { createSkillTool } from "../skills/skill_tool.ts";
import { loadTelemetry, type Telemetry } from "../telemetry/mod.ts";
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
import { jobsFor, type JobTable } from "../../tools/jobs/table.ts";
import type { HookCommand, HookOutput } from "../hooks/mod.ts";
import { TranscriptFile } from "../hooks/transcript.ts";
import { resolveModel, withFallback } from "../providers/fallback.ts";
import { modelsBehind } from "../providers/models.ts";
import { withModeModel } from "../providers/plan_model.ts";
import { budgetCheck, checkBudgetModel } from "./budget.ts";
import { type OpenedSession, openSession, SessionFlagError } from "./session_start.ts";
import { loadAgents } from "../subagents/definitions.ts";
import { capsOf, Subagents, type SubagentStart, type SubagentView } from "../subagents/runner.ts";
import { createTaskTool } from "../subagents/task.ts";
import { homeDir } from "../settings/permissions.ts";
import {
  type PolicyChoice,
  undoFor,
  type Workbench,
  workbench,
  type WorkbenchOptions,
} from "./workbench.ts";

export { UsageError } from "../settings/usage_error.ts";
export { chooseTools, DEFAULT_TOOLS, parseClasses, type RunFlags } from "./run_flags.ts";

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

/** What a front end provides to a run. */
export interface RuntimeHooks {
  mode: "print" | "interactive";
  /** One line for the user (stderr in print mode). */
  notice(message: string): void;
  /**
   * Who answers what would ask: the interactive prompt, or print mode's
   * permission prompt tool (then print mode approves nothing up front).
   */
  ask?: Asker;
  /** `ask` answers tool calls only (a permission prompt tool), not hook scripts or hosts. */
  askCallsOnly?: boolean;
  /** Told of each call allowed without asking. */
  approved?: (request: ApprovalRequest) => void;
  /** A hook's plain stdout (the REPL shows it in the call's detail view). */
  hookOutput?: (out: HookOutput) => void;
  events?: AgentEvents;
  /** What the front end does with a subagent that starts (its messages, its running line). */
  subagent?: (start: SubagentStart) => SubagentView | undefined;
}

/** A ready run. */
export interface Runtime {
  agent: Agent;
  provider: Provider;
  /** The model API's base URL when one was set (flag, config or environment); else the provider's own. */
  apiBase?: string;
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
  /** The skills of the run, and what loading one grants (`/skills`, `/NAME`, the `skill` tool). */
  skills: SkillSession;
  /** The run's subagents: their types (`/agents`), caps and count. */
  subagents: Subagents;
  /** `--bare`: no hooks, instruction files, custom commands, MCP lists or workspace files. */
  bare: boolean;
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
  /**
   * The session's background jobs (`tools/jobs/table.ts`): what front ends
   * list and stop; {@link Runtime.finish} ends those still running.
   */
  jobs: JobTable;
  /**
   * Ends the session's background jobs, records the end of the run (after the
   * SessionEnd hooks) and closes the store.
   */
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
    bare: flags.bare,
    flags: { ...flags.permissions, yolo: flags.yolo || flags.permissions?.yolo },
  });
  if (!settings.trusted && settings.trustState === "changed") {
    notice(
      "this workspace's settings changed since you trusted it (hooks, allow rules, MCP " +
        "servers, skills or subagents): they are not used until you trust it again (pass " +
        "--trust-project for one run)",
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
  skills: SkillSession,
  notice: (m: string) => void,
  task: AnyTool,
): { offered: AnyTool[]; mcpPicks: string[] | undefined } {
  const crab = settings.crab().settings;
  const toolNames = splitList(flags.tools) ?? crab.tools;
  const webFetch = createWebFetchTool({
    allowPrivate: flags.webAllowPrivate ?? crab.webAllowPrivate ?? false,
  });
  // A tool a deny rule names whole (`--disallowedTools Bash`) is not offered, as in Claude Code:
  // the model never sees a tool every call of which would be refused.
  const { rules } = settings.permissions();
  const deniedWhole = (t: AnyTool) =>
    rules.some((r) => r.effect === "deny" && r.matcher.kind === "any" && ruleAppliesTo(r, t.name));
  const available = [...builtinTools(), webFetch, createSkillTool(skills), task];
  // The skill tool is offered where there is a skill for the model to load.
  const loadable = skills.skills.some((s) => s.modelInvocable);
  // bash's companions (bash_output, bash_kill) are offered where bash is, and nowhere else.
  const chosen = chooseTools(
    available,
    toolNames?.filter((n) => !n.includes("__")),
    flags.web ?? crab.web ?? false,
  );
  const permitted = withPermission(
    withCompanions(chosen, available).filter((t) =>
      !deniedWhole(t) && (t.name !== "skill" || loadable)
    ),
    settings.workspace,
    flags.refuseMissingPermissions
      ? (m) => {
        throw new UsageError(
          `Cannot run crab in this process: ${m.replace(/^this build /, "it ")}`,
          "add the flag to the script's deno run, or leave the tool out with disallowedTools",
        );
      }
      : notice,
    sandboxMode,
  );
  const offered = withCompanions(permitted, []);
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
 * With a permission prompt tool (`answered`) someone is there to answer: nothing
 * is approved up front, and what would ask asks it.
 */
function choosePolicy(
  flags: RunFlags,
  settings: Settings,
  mode: RuntimeHooks["mode"],
  answered: boolean,
  offered: readonly AnyTool[],
  mcpServers: readonly string[],
  notice: (m: string) => void,
): { mode: Mode; allowed: AllowedClass[]; printDefault: boolean } {
  const permissions = settings.permissions();
  // A mode a settings file chose (the user's, `--settings`, or a workspace's as far as trust lets
  // it) is an answer: it wins over print mode's own default, as with `claude -p`.
  const fileMode = permissions.modeFromSettings;
  const printDefault = mode === "print" && !answered && !permissions.fromCommandLine &&
    !fileMode;
  const allowed = parseClasses([
    ...(settings.crab().settings.allow ?? []),
    ...(splitList(flags.allow) ?? []),
  ]);
  if (printDefault) {
    // Nobody is there to answer: every offered tool is approved (the tool list is the limit).
    for (const t of offered) allowed.push(t.class);
    for (const server of mcpServers) allowed.push(`mcp:${server}`);
  }
  const chosen = printDefault ? (flags.yolo ? "bypassPermissions" : "default") : permissions.mode;
  if (mode === "print" && fileMode && !permissions.fromCommandLine) {
    notice(`print mode runs in ${permissions.mode} mode, from ${permissions.modeSource}`);
  }
  return { mode: chosen, allowed, printDefault };
}

/** The flag, or rule, that would approve a class: the refusal's hint. */
function flagFor(cls: string): string {
  const rule = cls.startsWith("mcp:") ? `mcp__${cls.slice(4)}` : RULE_FOR[cls];
  return `--allow ${cls}` + (rule ? `, or --allowedTools "${rule}"` : "");
}

/** The run's skills (none under `--bare`); what was left out, and what waits for trust, said. */
function runSkills(
  settings: Settings,
  policy: () => Policy,
  notice: (m: string) => void,
): SkillSession {
  const catalog = findSkills(settings.workspace, {
    trusted: settings.trusted,
    bare: settings.bare,
    env: settings.env,
  });
  for (const n of catalog.notes) notice(n);
  if (catalog.waiting.length) {
    notice(
      `ignoring the skills of this workspace (${
        catalog.waiting.map((s) => s.name).join(", ")
      }): it is not trusted (pass --trust-project to use them)`,
    );
  }
  return new SkillSession(catalog, { policy, workspace: settings.workspace });
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
    config = await selectProvider(runEnv.toObject(), {
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

/** The store, the run's record and its session's transcript, opened. */
interface OpenedRun {
  store: Store;
  transcripts: Transcripts;
  runId: string;
  session: OpenedSession;
}

/** Opens the store, the session (`--resume`, `--continue`, a new one) and the run's record. */
function openRun(
  flags: RunFlags,
  workspace: string,
  mode: RuntimeHooks["mode"],
  provider: Provider,
  notice: (m: string) => void,
): OpenedRun {
  const store = new Store();
  store.onProblem = notice;
  cleanSpillFiles();
  const transcripts = new Transcripts(store);
  let session: OpenedSession;
  try {
    session = openSession(transcripts, workspace, flags, {
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
  const runId = store.startRun({
    mode,
    workspace,
    model: provider.model,
    provider: provider.name,
    sessionId: session.id,
  });
  return { store, transcripts, runId, session };
}

/** The run's context window: known, asked of the server (print mode waits), or the default. */
async function runWindow(
  flags: RunFlags,
  settings: Settings,
  config: ProviderConfig,
  mode: RuntimeHooks["mode"],
  notice: (m: string) => void,
): Promise<{ tokens: number; later?: Promise<number> }> {
  const win = chooseWindow(config, flags.contextWindow ?? settings.crab().settings.contextWindow);
  const apply = (w: WindowChoice) => {
    if (w.notice) notice(w.notice);
    return w.tokens;
  };
  if (win.known !== undefined) return { tokens: win.known };
  // Interactive mode does not wait for the server's answer; it applies when it comes.
  if (mode === "print") return { tokens: apply(await win.asked) };
  return { tokens: DEFAULT_CONTEXT_WINDOW, later: win.asked.then(apply) };
}

/** Builds a run from flags; throws {@link UsageError} or {@link SetupError}. */
export async function startRuntime(flags: RunFlags, hooks: RuntimeHooks): Promise<Runtime> {
  const workspace = workspaceOf(flags.cwd);
  const mcpFlag = flagServers(flags, workspace);
  const settings = runSettings(flags, workspace, hooks.notice);
  // The sandbox comes from the flag and the user's own file, never from the project.
  const sandbox = settings.sandbox({
    mode: flags.sandbox,
    allow: splitList(flags.allow),
    addDirs: flags.permissions?.addDirs,
    domains: flags.permissions?.allowDomain,
    jobPortsOnHost: flags.permissions?.jobPortsOnHost,
  });

  // The session's policy is made with its dispatcher (below); until then nothing asks it.
  const made: { policy?: Policy } = {};
  const skills = runSkills(settings, () => made.policy!, hooks.notice);
  const subagents = runSubagents(flags, settings, workspace, hooks.notice);
  const { offered, mcpPicks } = offeredTools(
    flags,
    settings,
    sandbox.mode,
    skills,
    hooks.notice,
    createTaskTool(subagents),
  );
  const probe = sandboxProbe(offered, workspace, sandbox, hooks);
  // MCP servers connect while the provider loads; the first request waits for both. Print
  // mode starts them now; interactive mode once its prompt is drawn (`warmUp`), so loading
  // the MCP SDK does not hold the prompt back.
  const mcp = new RunMcp({
    workspace,
    trusted: settings.trusted,
    picks: mcpPicks,
    notice: hooks.notice,
    ...(mcpFlag ? { flag: mcpFlag } : {}),
    forget: (cls) => made.policy?.forget(cls) ?? false,
  });
  const choice = runPolicy(flags, settings, hooks, offered, mcp);
  const { provider, config: providerConfig } = await runProviderOrAbandon(
    flags,
    settings,
    hooks,
    mcp,
    () => made.policy?.mode ?? choice.mode,
  );

  // The server is asked for an unknown model's window while the SDK loads.
  const windowing = runWindow(flags, settings, providerConfig, hooks.mode, hooks.notice);
  if (hooks.mode === "print") await mcp.connect();
  const window = await windowing;

  const opened = openRun(flags, workspace, hooks.mode, provider, hooks.notice);
  const registry = runRegistry(offered, mcp);
  const telemetry = await loadTelemetry();
  const run = new RunSession({
    flags,
    settings,
    hooks,
    opened,
    registry,
    telemetry,
    mcp,
    skills,
    subagents,
    ...(probe ? { probe } : {}),
    policy: policyChoice(choice, sandbox, hooks),
  });

  made.policy = run.policy;
  const agent = await run.startAgent(provider, window.tokens);
  window.later?.then((tokens) => agent.contextWindow = tokens, () => {});
  telemetry?.instrument({
    runId: opened.runId,
    sessionId: () => run.sessionId,
    mode: hooks.mode,
    agent,
    provider,
    baseUrl: providerConfig.baseUrl,
  });
  const rt = run.runtime(provider, choice.printDefault, sandbox.mode);
  if (providerConfig.baseUrl) rt.apiBase = providerConfig.baseUrl;
  return rt;
}

/**
 * The session's mode and the classes approved up front, from the flags, the
 * settings and the tools offered (print mode's MCP servers start here, so their
 * tools count); running as root under `--yolo` is said once.
 */
function runPolicy(
  flags: RunFlags,
  settings: Settings,
  hooks: RuntimeHooks,
  offered: readonly AnyTool[],
  mcp: RunMcp,
): ReturnType<typeof choosePolicy> {
  const servers = hooks.mode === "print" ? mcp.start().servers : [];
  const choice = choosePolicy(
    flags,
    settings,
    hooks.mode,
    hooks.ask !== undefined,
    offered,
    servers,
    hooks.notice,
  );
  if (choice.mode === "bypassPermissions" && effectiveUid() === 0) {
    hooks.notice("warning: --yolo as root: every call runs without asking, with root's rights");
  }
  return choice;
}

/** The tools of the run: those offered and the MCP servers' as they come. */
function runRegistry(offered: readonly AnyTool[], mcp: RunMcp): Registry {
  const registry = new Registry(offered);
  mcp.sync(registry);
  // A model that calls a tool of a server waiting for trust is told so.
  registry.explainMissing((name) => mcp.missing(name));
  return registry;
}

/** The subagent types of the run, read once; a workspace's only once it is trusted. */
function runSubagents(
  flags: RunFlags,
  settings: Settings,
  workspace: string,
  notice: (m: string) => void,
): Subagents {
  return new Subagents(
    loadAgents({
      workspace,
      trusted: settings.trusted,
      bare: settings.bare,
      ...(flags.agents ? { given: flags.agents } : {}),
      notice,
    }),
    capsOf(settings.crab().settings.subagents),
  );
}

/**
 * The sandbox's probe (a keeper and one real sandbox start), when bash is offered
 * and sandboxed. It never holds the first request back: interactive mode starts it
 * now, while the user types; print mode at its first bash call, so a run that never
 * calls bash never pays for it. What it finds is said when it comes.
 */
function sandboxProbe(
  offered: readonly AnyTool[],
  workspace: string,
  sandbox: SandboxGrant,
  hooks: RuntimeHooks,
): WorkbenchOptions["probe"] {
  const sandboxed = offered.some((t) => t.class === "exec") &&
    sandbox.mode !== "danger-full-access";
  if (!sandboxed) return undefined;
  let probing: Promise<void> | undefined;
  const probe = {
    started: () => probing,
    start: () =>
      probing ??= import("../../tools/sandbox/mod.ts").then(({ sandboxStatus }) =>
        sandboxStatus(workspace, sandbox)
      ).then((status) => {
        if (!status.ok) hooks.notice(`bash cannot run: ${status.reason}. ${status.hint}`);
      }, () => {}),
  };
  if (hooks.mode !== "print") probe.start();
  return probe;
}

/**
 * The run's provider (see {@link runProvider}); when it cannot be made, the MCP
 * servers already starting are stopped before the error goes on.
 */
async function runProviderOrAbandon(
  flags: RunFlags,
  settings: Settings,
  hooks: RuntimeHooks,
  mcp: RunMcp,
  mode: () => Mode,
): ReturnType<typeof runProvider> {
  try {
    return await runProvider(flags, settings, hooks.mode, mode, hooks.notice);
  } catch (e) {
    await mcp.abandon();
    throw e;
  }
}

/** What the session's policy is made of: the mode and classes chosen, and who answers an ask. */
function policyChoice(
  choice: ReturnType<typeof choosePolicy>,
  sandbox: SandboxGrant,
  hooks: RuntimeHooks,
): PolicyChoice {
  return {
    mode: choice.mode,
    allowed: choice.allowed,
    sandbox,
    ...(hooks.ask ? { ask: hooks.ask } : {}),
    ...(hooks.askCallsOnly ? { askCallsOnly: true } : {}),
    ...(hooks.approved ? { notify: hooks.approved } : {}),
    flagFor,
  };
}

/** What a {@link RunSession} is made of. */
interface RunSessionParts {
  flags: RunFlags;
  settings: Settings;
  hooks: RuntimeHooks;
  opened: OpenedRun;
  registry: Registry;
  telemetry: Telemetry | undefined;
  mcp: RunMcp;
  skills: SkillSession;
  subagents: Subagents;
  policy: PolicyChoice;
  /** The sandbox's probe, when bash runs in one (`WorkbenchOptions.probe`). */
  probe?: WorkbenchOptions["probe"];
}

/**
 * A run's conversation and what it acts through: the session (which `/clear`
 * and `/resume` change), its transcript and the Claude Code-format copy hooks
 * read, the workbench's policy, hooks and dispatcher, and the agent.
 */
class RunSession {
  readonly #parts: RunSessionParts;
  sessionId: string;
  readonly #persist: boolean;
  readonly #messages: Message[];
  #transcript: TranscriptFile | undefined;
  readonly bench: Workbench;
  #agent: Agent | undefined;
  #system = "";
  /** Settles at the first model request, or when interactive mode's prompt is drawn. */
  readonly #settled = Promise.withResolvers<void>();

  constructor(parts: RunSessionParts) {
    this.#parts = parts;
    const { opened, settings, hooks, flags } = parts;
    this.sessionId = opened.session.id;
    this.#persist = opened.session.persist;
    this.#messages = repairTranscript(opened.session.messages);
    this.#transcript = this.#transcriptFile(this.sessionId, this.#messages);
    const hookConfig = settings.hooks();
    this.bench = workbench({
      settings,
      registry: parts.registry,
      store: opened.store,
      runId: opened.runId,
      telemetry: parts.telemetry,
      policy: parts.policy,
      hooks: {
        commands: hookConfig.hooks,
        untrusted: hookConfig.untrusted,
        ...(flags.sdkHooks ? { sdk: flags.sdkHooks } : {}),
        sessionId: () => this.sessionId,
        transcriptPath: () => this.#transcript?.path ?? null,
        notice: hooks.notice,
        ...(hooks.hookOutput ? { output: hooks.hookOutput } : {}),
      },
      // Undo looks ahead once the process has settled: never while the first request is made.
      undo: (p) =>
        undoFor(settings, opened.store, {
          sessionId: () => this.sessionId,
          policy: p,
          settled: this.#settled.promise,
        }),
      // A tool-list refresh in flight may void an MCP grant: let it land before deciding.
      beforeApproval: (request) => parts.mcp.settled(request.class),
      ...(parts.probe ? { probe: parts.probe } : {}),
    });
  }

  get policy(): Policy {
    return this.bench.policy;
  }

  /**
   * The Claude Code-format copy of a kept transcript, for hooks (`transcript_path`):
   * written only when the run has hooks, which alone read it (a resumed session's
   * is written whole).
   */
  #transcriptFile(id: string, soFar: readonly Message[]): TranscriptFile | undefined {
    const { settings, flags, hooks, registry } = this.#parts;
    const hasHooks = settings.hooks().hooks.length > 0 || (flags.sdkHooks?.hooks.length ?? 0) > 0;
    if (!this.#persist || !hasHooks) return undefined;
    return TranscriptFile.open({
      sessionId: id,
      cwd: settings.workspace,
      alias: (name) => registry.get(name)?.alias,
      onProblem: hooks.notice,
    }, soFar);
  }

  /** Fires SessionStart, builds the system prompt and starts the agent. */
  async startAgent(provider: Provider, window: number): Promise<Agent> {
    const { flags, hooks, registry, mcp, opened, settings, skills } = this.#parts;
    const { transcripts } = opened;
    const userHooks = this.bench.hooks;
    const { images, pdf } = settings.crab().settings;
    this.bench.session.media = mediaSupport(provider.name, provider.model, { images, pdf });
    // SessionStart hooks' output is context for the model, at the end of the system prompt.
    const started = await userHooks.sessionStart(this.#messages.length ? "resume" : "startup");
    this.#system = systemPrompt(settings.workspace, {
      // A bare run reads no instruction file.
      ...(settings.bare ? { files: [] } : {}),
      replace: flags.systemPrompt,
      append: flags.appendSystemPrompt,
      policy: this.policy,
      notice: hooks.notice,
      // The skills the model may load, where it is offered the tool that loads them.
      ...(registry.get("skill") ? { skills: skillListing(this.#listed(skills), window) } : {}),
    });
    const agent: Agent = new Agent({
      provider,
      dispatcher: this.bench.dispatcher,
      system: this.#withStarted(started),
      tools: () => {
        mcp.sync(registry);
        return registry.list();
      },
      maxTurns: flags.maxTurns ?? settings.crab().settings.maxTurns,
      contextWindow: window,
      messages: this.#messages,
      events: {
        ...hooks.events,
        onRequest: () => {
          this.#settled.resolve();
          hooks.events?.onRequest?.();
        },
      },
      onMessage: (m, i) => {
        if (!this.#persist) return;
        transcripts.append(this.sessionId, i, [m]);
        this.#transcript?.put(m, i);
      },
      onRewrite: (all) => {
        if (!this.#persist) return;
        transcripts.truncate(this.sessionId, 0);
        transcripts.append(this.sessionId, 0, all);
        this.#transcript?.replace(all);
      },
      ...(userHooks.forLoop ? { hooks: userHooks.loopHooks() } : {}),
      // A background job that ended on its own is told with the next message.
      notes: () => jobsFor(this.bench.session)!.takeNotes(),
      // Each request priced as the model that answered it (opusplan's two, a fallback).
      budget: budgetCheck(flags.maxBudgetUsd, () => agent.spent.costUsd()),
      // What a skill the model loaded allows holds for that turn only.
      afterPrompt: () => skills.endTurn(),
    });
    this.#attachSubagents(provider, agent);
    return this.#agent = agent;
  }

  /** The skills the model is told of: all but those a deny rule refuses by name. */
  #listed(skills: SkillSession): Skill[] {
    const denies = this.policy.rules.filter((r) =>
      r.effect === "deny" && ruleAppliesTo(r, "skill")
    );
    return skills.skills.filter((s) => !denies.some((r) => skillRuleMatches(r, s.name)));
  }

  /** What the run's subagents run with: this run's provider, dispatcher, policy and hooks. */
  #attachSubagents(provider: Provider, agent: Agent): void {
    const { settings, hooks, registry, mcp, subagents, flags } = this.#parts;
    subagents.attach({
      provider,
      dispatcher: this.bench.dispatcher,
      tools: () => {
        mcp.sync(registry);
        return registry.list();
      },
      parent: () => agent,
      mode: () => this.policy.mode,
      budget: budgetCheck(flags.maxBudgetUsd, () => agent.spent.costUsd()),
      hooks: this.bench.hooks,
      // A subagent's sidechain is kept beside the session's transcript, where hooks read it.
      transcript: (agentId) =>
        this.#transcript
          ? TranscriptFile.open({
            sessionId: this.sessionId,
            cwd: settings.workspace,
            alias: (name) => registry.get(name)?.alias,
            onProblem: hooks.notice,
            agentId,
          }, [])
          : undefined,
      ...(hooks.subagent ? { view: hooks.subagent } : {}),
      notice: hooks.notice,
      base: { project: settings.workspace, home: homeDir() },
    });
  }

  #withStarted(context: string[]): string {
    return this.#system + context.map((c) => "\n\n" + hookContext("SessionStart", c)).join("");
  }

  /** The run as its front end drives it. */
  runtime(provider: Provider, printDefault: boolean, sandbox: SandboxMode): Runtime {
    const { settings, opened, registry, mcp, skills } = this.#parts;
    const { store, transcripts, runId } = opened;
    const { dispatcher, session, hooks: userHooks } = this.bench;
    // The session's jobs are shown and listed from the start: its table opens now.
    const jobs = jobsFor(session)!;
    const agent = this.#agent!;
    const policy = this.policy;
    const hookConfig = settings.hooks();
    // How many exchanges a resumed session shows (`resumeExchanges`).
    const exchanges = settings.crab().settings.resumeExchanges ?? RESUME_EXCHANGES;
    // deno-lint-ignore no-this-alias
    const run = this;
    let finished = false;
    return {
      get sessionId() {
        return run.sessionId;
      },
      async newSession() {
        await userHooks.sessionEnd("clear");
        agent.clear();
        run.#parts.subagents.reset();
        session.files.clear();
        run.sessionId = run.#persist
          ? transcripts.create(settings.workspace, provider.name, agent.model)
          : crypto.randomUUID();
        run.#transcript = run.#transcriptFile(run.sessionId, []);
        agent.system = run.#withStarted(await userHooks.sessionStart("clear"));
      },
      mcpStatus: () => mcp.status(),
      warmUp: () => {
        // The prompt is drawn: undo may look ahead while the user types.
        this.#settled.resolve();
        if ("load" in provider) (provider as LazyProvider).load().catch(() => {});
        return mcp.connect();
      },
      trusted: settings.trusted,
      skills,
      subagents: this.#parts.subagents,
      bare: settings.bare,
      permissions: settings.permissions(),
      permissionMode: () =>
        printDefault && policy.mode === "default" ? PRINT_DEFAULT_MODE : policy.mode,
      rewindTo(index) {
        agent.messages.length = index;
        transcripts.truncate(run.sessionId, index);
        run.#transcript?.truncate(index);
      },
      resumeSession(id) {
        const stored = repairTranscript(transcripts.load(id));
        agent.clear();
        agent.messages.push(...stored);
        session.files.clear();
        run.sessionId = id;
        run.#transcript = run.#transcriptFile(id, stored);
        return lastExchange(stored, exchanges);
      },
      agent,
      provider,
      registry,
      policy,
      dispatcher,
      jobs,
      store,
      transcripts,
      runId,
      settings: settings.crab().settings,
      sandbox,
      resumed: lastExchange(this.#messages, exchanges),
      hooks: {
        active: hookConfig.hooks,
        untrusted: hookConfig.untrusted,
        notification: (message, type) => userHooks.notification(message, type),
      },
      async finish(status) {
        if (finished) return;
        finished = true;
        // Closing asks the servers to stop; their groups die with crab in any case.
        mcp.close();
        // Every job still running is stopped now (at an exit, before crab kills its groups).
        const ending = jobs.close();
        // Recorded at once: crab may be exiting (a signal) and not wait for what follows.
        store.endRun(runId, {
          status,
          turns: agent.turns,
          inputTokens: agent.usage.inputTokens,
          outputTokens: agent.usage.outputTokens,
          ...runCost(agent, provider.model),
        });
        // A probe under way finishes (and says what it found) before the run ends.
        await run.#parts.probe?.started();
        await ending;
        // What the stages hold ends with the run, not the process (an SDK host's goes on).
        await dispatcher.close();
        await userHooks.sessionEnd(status === "aborted" ? "other" : "exit");
        store.close();
      },
    };
  }
}

/** The run's cost as its result gives it (`total_cost_usd`, `cost_note`), to record at its end. */
function runCost(agent: Agent, model: string): { costUsd: number; costNote: string | null } {
  const cost = totalCost(spentOf(agent.spent, model, agent.usage));
  return { costUsd: cost.usd, costNote: cost.note };
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

/** Exchanges (a prompt and what followed) a resumed session shows, unless `resumeExchanges` says. */
const RESUME_EXCHANGES = 3;

/** The last `count` user prompts and everything after them. */
function lastExchange(messages: Message[], count = RESUME_EXCHANGES): Message[] {
  let start = -1;
  let left = count;
  for (let i = messages.length - 1; i >= 0 && left > 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    const hasPrompt = typeof m.content === "string" ||
      m.content.some((b) => b.type === "text" && !isNote(b.text));
    if (hasPrompt) {
      start = i;
      left--;
    }
  }
  return start === -1 ? [] : messages.slice(start);
}
