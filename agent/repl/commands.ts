/**
 * The REPL's slash commands: /help, /tools, /metrics, /model, /compact, /cost,
 * /init, /mcp, /resume, /permissions, /hooks, /skills, /agents, /status, /config, /memory,
 * /trust, /undo, /rewind, /bashes (/jobs), /clear, /exit, a skill's /NAME, and custom commands
 * (see `../run/slash_commands.ts`, which print mode shares).
 *
 * @module
 */

import { mediaSupport } from "../providers/media.ts";
import { hooksListing } from "../hooks/listing.ts";
import { countOf } from "../terminal.ts";
import { printable } from "../../tools/fs/printable.ts";
import { formatBytes } from "../../tools/tool.ts";
import { knownContextWindow, modelsBehind, resolveModel } from "../providers/models.ts";
import type { Message } from "../providers/types.ts";
import type { Runtime } from "../run/runtime.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import type { SandboxPolicy } from "../../tools/policy/sandbox.ts";
import { withFetchRules } from "../../tools/policy/domains.ts";
import { permissionsCommand } from "./slash/permissions_command.ts";
import { costLine, findCommand, initCommand, runCommands } from "../run/slash_commands.ts";
import { commandFront, type CustomCommand, splitFront } from "../settings/commands.ts";
import { commandTurn, skillTurn } from "../run/command_turn.ts";
import { skillsLines } from "./slash/skills_command.ts";
import { ToolError } from "../../tools/tool.ts";
import { rewind, undoLast } from "./slash/undo_command.ts";
import { trustCommand } from "./slash/trust_command.ts";
import { memoryCommand } from "./slash/memory_command.ts";
import { agentsLines } from "./slash/agents_command.ts";
import { configLines, statusLines } from "./slash/status_command.ts";
import { jobCount, jobsCommand, offerToStop, stricterRules } from "./slash/jobs_command.ts";
import type { Colors } from "../terminal.ts";
import { readText } from "./approval_prompt.ts";
import type { KeyReader } from "./keys.ts";
import type { Screen } from "./screen.ts";

/** What a command may use. */
export interface CommandContext {
  rt: Runtime;
  screen: Screen;
  keys: KeyReader;
  /** Sends a prompt to the model as a normal turn. */
  send(prompt: string): Promise<void>;
  /** Compacts the conversation, with the spinner and the interrupt keys of a turn. */
  compact(focus: string | undefined): Promise<void>;
  /** Shows the last exchange of a resumed session. */
  showExchange(messages: Message[]): void;
  /** Aborted by Ctrl-C while the command runs: what it waits for stops. */
  signal?: AbortSignal;
}

const BUILTIN_HELP: [string, string][] = [
  ["/help", "this help"],
  ["/model [id]", "switch the model for the next turn; without an id, list the models"],
  ["/compact [focus]", "summarise the conversation and go on from the summary"],
  ["/cost", "tokens used in this session and their estimated price"],
  ["/init", "look at the project and write a starter AGENTS.md"],
  ["/mcp", "MCP servers, their state and their tools"],
  ["/resume", "go on with a past session of this workspace"],
  ["/tools", "the tools offered, which run without asking, and the sandbox"],
  [
    "/permissions",
    "the permission rules and their files; add allow|ask|deny RULE [--user], remove RULE",
  ],
  ["/hooks", "the hooks that run, by event, and the files they come from"],
  ["/skills", "the skills, where each comes from, and those waiting for trust"],
  ["/agents", "the subagent types the model may run, and where each is defined"],
  [
    "/trust [status|revoke]",
    "trust this workspace (its settings, hooks, servers), or say or undo it",
  ],
  ["/metrics", "calls, errors, bytes and time of this session"],
  ["/undo [turn]", "put back the files the last call (or the last turn) of this session changed"],
  ["/rewind", "pick a prompt: restore the files, the conversation, or both (also Esc Esc)"],
  [
    "/bashes [kill ID]",
    "the background jobs: each one's state and last line; pick one and press k, or kill ID, to " +
    "stop it (also /jobs)",
  ],
  ["/clear", "clear the screen and start a new conversation"],
  ["/exit", "leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)"],
];

const KEYS_HELP = "Keys: Enter sends; a line ending in \\, Alt-Enter or Ctrl-J adds a line; " +
  "Up/Down walk the history, Ctrl-R searches it;\n@path attaches a file (Tab completes it); " +
  "Esc or Ctrl-C interrupts a turn; Ctrl-O shows every call's full result;\n" +
  "Ctrl-B moves a running command to the background (in tmux: Ctrl-B twice);\n" +
  "Shift-Tab switches the mode: default, accept edits (writes in the workspace run), " +
  "plan (only reads run);\n! first on an empty line runs a command yourself (bash mode); " +
  "# note saves a note to CLAUDE.md, CLAUDE.local.md or ~/.claude/CLAUDE.md.";

/** `/help`'s row for a custom command: name and argument hint; where it is from and what it does. */
function customRow(c: CustomCommand): [string, string] {
  let text = "";
  try {
    text = Deno.readTextFileSync(c.path);
  } catch {
    // Gone since it was listed: the row says only where it was.
  }
  const info = commandFront(text);
  const first = splitFront(text).body.trim().split("\n")[0];
  const where = c.namespace ? `${c.scope}:${c.namespace}` : c.scope;
  return [
    `/${c.name}${info.argumentHint ? ` ${info.argumentHint}` : ""}`,
    `(${where}) ${info.description ?? first.slice(0, 70)}`,
  ];
}

function help(ctx: CommandContext): string {
  const custom = runCommands(ctx.rt);
  const rows = [
    ...BUILTIN_HELP,
    // A command's name and description come from a file, maybe the workspace's.
    ...[
      ...ctx.rt.skills.skills.filter((k) => k.userInvocable).map((k): [string, string] => [
        `/${k.name}${k.argumentHint ? ` ${k.argumentHint}` : ""}`,
        `(skill, ${k.scope}) ${k.description.slice(0, 70)}`,
      ]),
      ...custom.map(customRow),
    ].map(([a, b]): [string, string] => [printable(a, "strict"), printable(b, "prose")]),
  ];
  const w = Math.max(...rows.map(([a]) => a.length)) + 2;
  return "Commands:\n" + rows.map(([a, b]) => `  ${a.padEnd(w)}${b}`).join("\n") +
    "\n" + KEYS_HELP;
}

function compactTokens(n: number): string {
  return n < 1000
    ? String(n)
    : n < 1_000_000
    ? `${(n / 1000).toFixed(1)}k`
    : `${(n / 1e6).toFixed(2)}M`;
}

/** How the footer shows a mode other than `default`. */
const MODE_LABELS: Record<Mode, string> = {
  default: "",
  acceptEdits: "⏵⏵ accept edits on",
  plan: "⏸ plan mode on",
  dontAsk: "dontAsk on",
  bypassPermissions: "yolo ON",
};

/** The modes Shift-Tab steps through; the run's own mode joins them when it is another. */
const MODE_CYCLE: readonly Mode[] = ["default", "acceptEdits", "plan"];

/**
 * The mode after `mode` on Shift-Tab: default → acceptEdits → plan → default,
 * with `start` (the run's mode, e.g. bypassPermissions under `--yolo`) after
 * plan when it is none of those.
 */
export function nextMode(mode: Mode, start: Mode): Mode {
  const cycle = MODE_CYCLE.includes(start) ? MODE_CYCLE : [...MODE_CYCLE, start];
  return cycle[(cycle.indexOf(mode) + 1) % cycle.length];
}

/** Whether bash's commands have a network: all of it, or some hosts by name. */
function hasNetwork(policy: SandboxPolicy): boolean {
  return policy.net || withFetchRules(policy.domains, policy.rules ?? []).allow.length > 0;
}

/**
 * The footer: model, workspace, tokens, the mode (`yolo ON`, `⏸ plan mode on`),
 * sandbox, that bash has no network when it has none, and the background jobs
 * running (`2 jobs`).
 */
export function footer(rt: Runtime, c: Colors): string {
  // A resumed conversation has used no tokens in this run yet, but fills the context all the same.
  const spent = rt.agent.usage.inputTokens + rt.agent.usage.outputTokens;
  const used = spent === 0 && rt.agent.messages.length ? rt.agent.estimateTokens() : spent;
  const home = Deno.env.get("HOME");
  const ws = rt.dispatcher.session.workspace;
  const where = home && (ws === home || ws.startsWith(home + "/"))
    ? "~" + ws.slice(home.length)
    : ws;
  const named = [rt.agent.model, where].map((s) => printable(s, "strict"));
  let text = c.dim([...named, `${compactTokens(used)} tokens`].join(" · "));
  const mode = rt.policy.yolo ? MODE_LABELS.bypassPermissions : MODE_LABELS[rt.policy.mode];
  if (mode) text += c.dim(" · ") + c.yellow(mode);
  text += c.dim(` · sandbox ${rt.sandbox}`);
  if (rt.sandbox !== "danger-full-access" && !hasNetwork(rt.policy.sandbox)) {
    text += c.dim(" · bash: no network (--allow net)");
  }
  const jobs = jobCount(rt.jobs);
  if (jobs) text += c.dim(" · ") + c.cyan(jobs);
  return text;
}

/** Runs a slash command; "exit" asks the REPL to leave, "unknown" means no such command. */
export async function runCommand(
  text: string,
  ctx: CommandContext,
): Promise<"exit" | "unknown" | undefined> {
  const { rt, screen } = ctx;
  const line = (s: string) => screen.line(s);
  const [cmd] = text.trim().split(/\s+/);
  const args = text.trim().slice(cmd.length).trim();
  const workspace = rt.dispatcher.session.workspace;
  switch (cmd) {
    case "/exit":
    case "/quit":
      return "exit";
    case "/permissions":
      await permissions(ctx, args);
      return;
    case "/bashes":
    case "/jobs":
      await jobsCommand(args, { jobs: rt.jobs, screen, keys: ctx.keys });
      return;
    case "/help":
      line(help(ctx));
      return;
    case "/clear":
      await clear(ctx);
      return;
    case "/tools":
      toolsListing(ctx);
      return;
    case "/agents":
      for (const l of agentsLines(rt.subagents, workspace, screen.c)) line(l);
      return;
    case "/hooks":
      for (const l of hooksListing(rt.hooks.active, rt.hooks.untrusted, workspace)) {
        line(printable(l, "strict"));
      }
      return;
    case "/metrics":
      metrics(rt, line);
      return;
    case "/cost":
      line(costLine(rt.agent.usage, rt.agent.model, rt.agent.spent));
      return;
    case "/model":
      if (args) switchModel(ctx, args);
      else await modelListing(ctx);
      return;
    case "/compact":
      await ctx.compact(args || undefined);
      return;
    case "/mcp":
      await mcpListing(ctx);
      return;
    case "/resume":
      await resume(ctx);
      return;
    case "/undo":
      await undoLast(ctx, args);
      return;
    case "/rewind":
      await rewind(ctx);
      return;
    case "/status":
      for (const l of statusLines(rt)) line(l);
      return;
    case "/config":
      for (const l of configLines(rt)) line(l);
      return;
    case "/memory":
      await memoryCommand({ rt, screen, keys: ctx.keys });
      return;
    case "/skills":
      for (const l of skillsLines(rt.skills, workspace)) line(l);
      return;
    case "/trust":
      await trustCommand(args, workspace, screen, ctx.keys);
      return;
    case "/init": {
      const init = initCommand(workspace, rt.bare);
      line(screen.c.dim(init.note));
      await ctx.send(init.prompt);
      return;
    }
  }
  return await skillOrCustom(ctx, cmd, args);
}

/** /permissions: the rules, or a change of them (jobs started under looser ones may be stopped). */
async function permissions(ctx: CommandContext, args: string): Promise<void> {
  const { rt, screen } = ctx;
  const before = [...rt.policy.rules];
  screen.line(
    permissionsCommand(
      args,
      { policy: rt.policy, workspace: rt.dispatcher.session.workspace },
      screen.c,
    ),
  );
  if (stricterRules(before, rt.policy.rules)) {
    await offerToStop({ jobs: rt.jobs, screen, keys: ctx.keys }, "the rules as they are now");
  }
}

/** /clear: a new conversation, on a clear screen. */
async function clear(ctx: CommandContext): Promise<void> {
  const { rt, screen } = ctx;
  await rt.newSession();
  rt.agent.resetUsage();
  screen.raw("\x1b[H\x1b[2J\x1b[3J");
  screen.line(screen.c.dim("(new conversation; files must be read again before editing)"));
}

/** /tools: each tool, its class and whether it asks. */
function toolsListing(ctx: CommandContext): void {
  const { rt, screen } = ctx;
  const c = screen.c;
  for (const t of rt.registry.list()) {
    const allowed = rt.policy.isAllowed(t.class) ? c.green("runs without asking") : "asks";
    screen.line(`${t.name.padEnd(24)} ${t.class.padEnd(10)} ${allowed}`);
  }
  screen.line(c.dim(
    `outside the workspace: ${rt.policy.isAllowed("outside") ? "runs without asking" : "asks"}`,
  ));
  screen.line(c.dim(`bash runs in the sandbox mode ${rt.sandbox}`));
}

/** /model ID: the model of the next turn, what it may be sent and its window. */
function switchModel(ctx: CommandContext, id: string): void {
  const { rt, screen } = ctx;
  rt.agent.model = resolveModel(rt.provider.name, id);
  const { images, pdf } = rt.settings;
  rt.dispatcher.session.media = mediaSupport(rt.provider.name, rt.agent.model, { images, pdf });
  const window = knownContextWindow(rt.agent.model);
  if (window) rt.agent.contextWindow = window;
  screen.line(
    screen.c.dim(
      `model for the next turn: ${
        printable(rt.agent.model, "strict")
      } (window ${rt.agent.contextWindow} tokens)`,
    ),
  );
}

/** /model: the model now, those behind it, and the provider's list (5 s at most). */
async function modelListing(ctx: CommandContext): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c, line = (s: string) => screen.line(s);
  line(
    `model: ${
      printable(rt.agent.model, "strict")
    } (${rt.provider.name}, window ${rt.agent.contextWindow} tokens)`,
  );
  const behind = modelsBehind(rt.provider.name, rt.agent.model);
  if (behind.length === 2) {
    line(c.dim(`  asks ${behind[0]} in plan mode, ${behind[1]} in the others (Shift-Tab)`));
  }
  if (!rt.provider.listModels) return;
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ids = await Promise.race([
      rt.provider.listModels(),
      new Promise<never>((_, no) => {
        timer = setTimeout(() => no(new Error("no answer in 5 s")), 5000);
        ctx.signal?.addEventListener("abort", () => no(new Error("interrupted")), {
          once: true,
        });
      }),
    ]).finally(() => clearTimeout(timer));
    for (const id of ids) {
      line(`  ${id === rt.agent.model ? "●" : " "} ${printable(id, "strict")}`);
    }
    line(c.dim("/model ID switches"));
  } catch (e) {
    // Ctrl-C: the prompt says it was interrupted.
    if (ctx.signal?.aborted) return;
    line(
      c.dim(
        `(the provider did not list its models: ${
          printable(e instanceof Error ? e.message : String(e), "prose")
        })`,
      ),
    );
  }
}

/** /mcp: each server, its state and tools (or that they are still starting). */
async function mcpListing(ctx: CommandContext): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c, line = (s: string) => screen.line(s);
  const servers = rt.mcpStatus();
  let settled = false;
  await Promise.race([
    rt.warmUp().then(() => settled = true),
    new Promise((r) => setTimeout(r, 0)),
  ]);
  if (!settled && servers.length === 0) {
    line(c.dim("MCP servers are still starting; /mcp again in a moment."));
    return;
  }
  if (servers.length === 0) {
    line("No MCP servers in this session (crab mcp add NAME -- COMMAND adds one).");
    return;
  }
  for (const s of servers) {
    const state = s.state === "connected" ? c.green(s.state) : c.red(s.state);
    line(
      `${printable(s.name, "strict")} (${s.scope}, ${s.transport}) ${state}` +
        (s.error ? c.dim(` · ${printable(s.error, "prose")}`) : "") +
        c.dim(` · ${s.tools.length} tool${s.tools.length === 1 ? "" : "s"}`),
    );
    for (const t of s.tools) line(c.dim(`  ${printable(t, "strict")}`));
  }
}

/**
 * A command crab does not have: a skill's name (which wins, as in Claude
 * Code) or a custom command's sends its turn; else "unknown".
 */
async function skillOrCustom(
  ctx: CommandContext,
  cmd: string,
  args: string,
): Promise<"unknown" | undefined> {
  const { rt, screen } = ctx;
  const c = screen.c, line = (s: string) => screen.line(s);
  const skill = cmd.startsWith("/") ? rt.skills.forUser(cmd.slice(1)) : undefined;
  const custom = cmd.startsWith("/") && !skill
    ? findCommand(runCommands(rt), cmd.slice(1))
    : undefined;
  if (!custom && !skill) return "unknown";
  let turn;
  try {
    turn = skill ? skillTurn(rt, skill, args) : commandTurn(rt, custom!, args);
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    line(c.red(printable(e.message, "prose")));
    return undefined;
  }
  const named = skill?.name ?? custom!.name;
  for (const note of turn.notes) line(c.dim(printable(note, "prose")));
  if (turn.model) {
    line(c.dim(`/${printable(named, "strict")} asks ${printable(turn.model, "strict")}`));
  }
  try {
    await ctx.send(await turn.begin(new AbortController().signal));
  } finally {
    turn.end();
  }
  return undefined;
}

function metrics(rt: Runtime, line: (s: string) => void): void {
  const run = rt.store.run(rt.runId);
  const obs = rt.store.observations(rt.runId);
  if (!run || obs.length === 0) {
    line("No tool calls in this session yet.");
    return;
  }
  line(
    `${countOf(run.calls, "call")} · ${countOf(run.toolErrors, "tool error")} · ` +
      `${run.refused} refused · ${run.aborted} aborted · ${formatBytes(run.bytesOut)} out · ${
        Math.round(run.durationMs)
      } ms in tools · ${countOf(rt.agent.turns, "model turn")}`,
  );
  const by = new Map<string, { calls: number; errors: number; ms: number }>();
  for (const o of obs) {
    const t = by.get(o.tool) ?? { calls: 0, errors: 0, ms: 0 };
    t.calls++;
    if (["error", "timeout", "denied"].includes(o.outcome)) t.errors++;
    t.ms += o.durationMs;
    by.set(o.tool, t);
  }
  for (const [tool, t] of by) {
    line(
      `  ${printable(tool, "strict").padEnd(22)} ${countOf(t.calls, "call").padStart(10)}  ${
        String(t.errors).padStart(3)
      } err  ${Math.round(t.ms)} ms`,
    );
  }
}

/** Lists this workspace's past sessions and goes on with the one picked. */
export async function resume(ctx: CommandContext): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c;
  const ws = rt.dispatcher.session.workspace;
  const sessions = rt.transcripts.list(20, ws).filter((s) => s.id !== rt.sessionId && s.messages);
  if (sessions.length === 0) {
    screen.line("No earlier session in this workspace.");
    return;
  }
  sessions.forEach((s, i) => {
    const when = new Date(s.updatedAt).toISOString().slice(0, 16).replace("T", " ");
    screen.line(
      `${String(i + 1).padStart(3)}. ${when}  ${c.dim(`${s.messages} messages`)}  ${
        printable(s.title || "(no prompt)", "prose")
      }`,
    );
  });
  const answer = await readText(screen, ctx.keys, "session number (Enter cancels): ");
  const n = Number(answer?.trim());
  if (!answer?.trim() || !Number.isInteger(n) || n < 1 || n > sessions.length) {
    screen.line(c.dim("(not resumed)"));
    return;
  }
  ctx.showExchange(rt.resumeSession(sessions[n - 1].id));
}
