/**
 * The types of `sdk.ts`: the options `query()` takes and the messages it
 * yields, in the Agent SDK's shapes (`@anthropic-ai/claude-agent-sdk`), so a
 * script moves between the two by changing its import. They hold only what
 * crab does: an option crab does not support is not here, which makes it a
 * type error, and `query()` refuses it at run time too (`options.ts`).
 *
 * @module
 */

/** A JSON value. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * How calls are approved: Claude Code's modes, and crab's `acceptOffered`
 * (print mode's default: every offered tool approved, deny rules and protected
 * paths still refusing).
 */
export type PermissionMode =
  | "default"
  | "acceptEdits"
  | "bypassPermissions"
  | "plan"
  | "dontAsk"
  | "acceptOffered";

/** The settings files read: the user's, the project's, the project's local ones. */
export type SettingSource = "user" | "project" | "local";

/** A text block of a message. */
export interface TextBlock {
  /** The block's kind. */
  type: "text";
  /** The text. */
  text: string;
  /** The Messages API's citations: `null` on crab's messages, which cite nothing. */
  citations?: null;
}

/** A tool call of the model: `name` is the name the model sees (`bash`, `f__echo`). */
export interface ToolUseBlock {
  /** The block's kind. */
  type: "tool_use";
  /** The call's id: its result's `tool_use_id`. */
  id: string;
  /** The tool's name as the model called it: crab's (`read`, `server__tool`), not Claude Code's. */
  name: string;
  /** The arguments as the model gave them, in crab's shape (`path`, not `file_path`). */
  input: Record<string, unknown>;
}

/** A tool's result, sent back to the model. */
export interface ToolResultBlock {
  /** The block's kind. */
  type: "tool_result";
  /** The `id` of the `tool_use` block this result answers. */
  tool_use_id: string;
  /** What the model reads. */
  content: string;
  /** The call failed, or its command exited non-zero. */
  is_error: boolean;
}

/** Token counts, in the Messages API's `usage` shape. */
export interface Usage {
  /** Tokens of the prompt; crab counts cached prompt tokens here too. */
  input_tokens: number;
  /** Tokens of the answer. */
  output_tokens: number;
  /** Always 0 from crab: cached prompt tokens are in `input_tokens`. */
  cache_creation_input_tokens: number;
  /** Always 0 from crab: cached prompt tokens are in `input_tokens`. */
  cache_read_input_tokens: number;
  /** The Messages API's other fields (`service_tier`, `server_tool_use`, ...). */
  [key: string]: unknown;
}

/** A user message a script sends (streaming input): its text blocks are the prompt. */
export interface SDKUserMessage {
  /** The message's kind. */
  type: "user";
  /** The message: its text, or its blocks (a tool's result, on crab's messages). */
  message: { role: "user"; content: string | (TextBlock | ToolResultBlock)[] };
  /** The `task` call whose subagent the message belongs to; `null` for the main conversation. */
  parent_tool_use_id: string | null;
  /** The session's id: always set on crab's messages; a script may leave it out. */
  session_id?: string;
  /** The message's own id: always set on crab's messages; a script may leave it out. */
  uuid?: string;
  /** crab's facts about a tool call, on a tool result's message. */
  tool_use_result?: unknown;
}

/** The first message: the session, the model, the tools (Claude Code's names), the servers. */
export interface SDKSystemInitMessage {
  /** The message's kind. */
  type: "system";
  /** The system message's kind. */
  subtype: "init";
  /** The workspace, absolute. */
  cwd: string;
  /** The session's id. */
  session_id: string;
  /** The tools offered, by Claude Code's names (`Read`, `Bash`, `mcp__server__tool`). */
  tools: string[];
  /** The MCP servers of the run, each with its state (`connected`, `failed`, ...). */
  mcp_servers: { name: string; status: string }[];
  /** The model the run asks. */
  model: string;
  /** The permission mode in force, by name (one of {@link PermissionMode}). */
  permissionMode: string;
  /** `ANTHROPIC_API_KEY` when the `anthropic` provider has that variable, `none` otherwise. */
  apiKeySource: string;
  /** The slash commands a prompt may start with, without the slash. */
  slash_commands: string[];
  /** The skills of the run, by name. */
  skills: string[];
  /** Always `default`: crab has no output styles. */
  output_style: string;
  /** The message's own id. */
  uuid: string;
  /** crab's names of the tools, beside Claude Code's in `tools`. */
  crab_tools: string[];
  /** crab's id of the run, for `crab metrics RUN`. */
  run_id: string;
  /** crab's provider of the model (`anthropic`, ...). */
  provider: string;
  /** The sandbox mode bash runs in: `workspace-write`, `read-only` or `danger-full-access`. */
  sandbox: string;
  /** crab's version. */
  crab_version: string;
  /**
   * Where the permission mode comes from, as `crab -p` names it:
   * `--permission-mode` (what `permissionMode` sets), a settings file, or
   * `print mode` (for `acceptOffered`).
   */
  permission_mode_source: string;
}

/** What the run is doing: `requesting` a model answer, `compacting`, or done (`null`). */
export interface SDKStatusMessage {
  /** The message's kind. */
  type: "system";
  /** The system message's kind. */
  subtype: "status";
  /** `requesting` before a model request, `compacting` as compaction starts, `null` once it ended. */
  status: "requesting" | "compacting" | null;
  /** How compaction ended, on the `null` status that follows it. */
  compact_result?: "success" | "failed";
  /** Why compaction failed, with `compact_result: "failed"`. */
  compact_error?: string;
  /** The session's id. */
  session_id: string;
  /** The message's own id. */
  uuid: string;
}

/** Where the conversation was compacted: what started it, and the tokens before and after. */
export interface SDKCompactBoundaryMessage {
  /** The message's kind. */
  type: "system";
  /** The system message's kind. */
  subtype: "compact_boundary";
  /** What compaction did. */
  compact_metadata: {
    /** `auto` when the window was filling, `manual` for `/compact`. */
    trigger: "auto" | "manual";
    /** Estimated tokens of the conversation before compaction. */
    pre_tokens: number;
    /** Estimated tokens after. */
    post_tokens: number;
  };
  /** The session's id. */
  session_id: string;
  /** The message's own id. */
  uuid: string;
}

/** Something the user should know during a run (a retry, trimmed context, a refused prompt). */
export interface SDKInformationalMessage {
  /** The message's kind. */
  type: "system";
  /** The system message's kind. */
  subtype: "informational";
  /** What the user should know. */
  content: string;
  /** `warning` for a prompt a `UserPromptSubmit` hook refused, `notice` for the rest. */
  level: "notice" | "warning";
  /** `true` when the prompt was refused and does not go to the model. */
  prevent_continuation?: boolean;
  /** The session's id. */
  session_id: string;
  /** The message's own id. */
  uuid: string;
}

/** One block of the model's answer (Claude Code sends one message per block). */
export interface SDKAssistantMessage {
  /** The message's kind. */
  type: "assistant";
  /**
   * The model's response in the Messages API's shape, holding one block; the
   * messages of one response share its `id`. On crab's message telling of an
   * API error, `model` is `<synthetic>`.
   */
  message: {
    id: string;
    type: "message";
    role: "assistant";
    model: string;
    content: (TextBlock | ToolUseBlock)[];
    stop_reason: string | null;
    stop_sequence: string | null;
    usage: Usage;
  };
  /** The `task` call whose subagent gave this answer; `null` for the main conversation. */
  parent_tool_use_id: string | null;
  /** The session's id. */
  session_id: string;
  /** The message's own id. */
  uuid: string;
  /** Set on crab's own message telling of a model API error (`rate_limit`, `overloaded`, ...). */
  error?: string;
}

/** One event of the model's streamed answer (`includePartialMessages`). */
export interface SDKPartialAssistantMessage {
  /** The message's kind. */
  type: "stream_event";
  /**
   * A Messages API stream event (`message_start`, `content_block_delta`, ...);
   * a tool call's arguments come whole, in one `input_json_delta`.
   */
  event: { type: string; [key: string]: unknown };
  /** Always `null`: a subagent's answer is not streamed in parts, only whole. */
  parent_tool_use_id: null;
  /** The session's id. */
  session_id: string;
  /** The message's own id. */
  uuid: string;
}

/** A call that was refused, in Claude Code's names and input shapes, with crab's reasons. */
export interface SDKPermissionDenial {
  /** The tool by Claude Code's name (`Bash`, `Edit`, `mcp__server__tool`). */
  tool_name: string;
  /** The id of the refused call's `tool_use` block. */
  tool_use_id: string;
  /** The arguments in Claude Code's shape (`file_path` absolute). */
  tool_input: Record<string, unknown>;
  /** crab's: the message the model got. */
  reason: string;
  /** crab's: the rule that refused, when a rule did (`Bash(rm:*)`). */
  rule?: string;
  /** crab's: where that rule is written. */
  rule_source?: string;
  /** crab's: a host its proxy refused to a command the call ran (the call itself ran). */
  host?: string;
  /** crab's name of the tool (the model's), beside Claude Code's in `tool_name`. */
  crab_tool_name: string;
  /** The arguments as the model gave them, beside Claude Code's shape in `tool_input`. */
  crab_tool_input: Record<string, unknown>;
}

/** What the result of a prompt has, whatever its subtype. */
export interface ResultBase {
  /** The message's kind. */
  type: "result";
  /** The prompt did not end well (a model API error too, though its subtype is `success`). */
  is_error: boolean;
  /** How long the prompt took, in milliseconds. */
  duration_ms: number;
  /** The milliseconds of `duration_ms` not spent running tools. */
  duration_api_ms: number;
  /** The model turns the prompt took. */
  num_turns: number;
  /** `end_turn` when the prompt ended well, `null` otherwise. */
  stop_reason: string | null;
  /** The session's id. */
  session_id: string;
  /** Estimated cost in US dollars, at list prices (0 for a model crab has no price for). */
  total_cost_usd: number;
  /** Tokens used. */
  usage: Usage;
  /** Each model asked, by name: its tokens and estimated cost (`inputTokens`, `costUSD`, ...). */
  modelUsage: Record<string, unknown>;
  /** Every call that was refused. */
  permission_denials: SDKPermissionDenial[];
  /** The message's own id. */
  uuid: string;
  /** crab's status of the prompt: `ok`, `aborted`, `max_turns`, `provider_error`, ... */
  status: string;
  /** crab's id of the run, for `crab metrics RUN`. */
  run_id: string;
  /** The model the run asked. */
  model: string;
  /** crab's provider of the model (`anthropic`, ...). */
  provider: string;
  /** The sandbox mode bash ran in: `workspace-write`, `read-only` or `danger-full-access`. */
  sandbox: string;
  /** The session's background jobs as they stand, when it started any (crab's own). */
  background_jobs?: SDKBackgroundJob[];
}

/** A background job of the session, as a result lists it. */
export interface SDKBackgroundJob {
  /** `b1`, `b2`, … in the order the session started them. */
  id: string;
  /** The command, as bash was given it. */
  command: string;
  /** `running`, `exited`, `killed` or `failed`. */
  state: string;
  /** Its exit code once it exited; null while it runs, or when a signal ended it. */
  exit_code: number | null;
  /** crab stopped it: bash_kill, or the session's end (a print run's final answer). */
  killed: boolean;
  /** The signal that ended it, when one did. */
  signal?: string;
  /** The file that holds its output. */
  output_file: string;
}

/** The last message of a prompt: the answer, its cost and its denials, or what ended it. */
export type SDKResultMessage =
  | ResultBase & {
    subtype: "success";
    result: string;
    /** The answer parsed and checked against `outputFormat`'s schema. */
    structured_output?: unknown;
  }
  | ResultBase & {
    subtype:
      | "error_max_turns"
      | "error_during_execution"
      | "error_max_budget_usd"
      | "error_max_structured_output_retries";
    result: string;
    errors: string[];
  };

/** Every message `query()` yields. */
export type SDKMessage =
  | SDKSystemInitMessage
  | SDKStatusMessage
  | SDKCompactBoundaryMessage
  | SDKInformationalMessage
  | SDKAssistantMessage
  | SDKUserMessage
  | SDKPartialAssistantMessage
  | SDKResultMessage;

/** A rule of a permission update: `{toolName: "Bash", ruleContent: "npm test"}`. */
export interface PermissionRuleValue {
  /** The tool, by Claude Code's name (`Bash`, `Edit`, `mcp__server__tool`). */
  toolName: string;
  /** What the rule matches within the tool (a command, a path); none: every call of it. */
  ruleContent?: string;
}

/** A permission update `canUseTool` may return (crab applies `addRules`, for the session). */
export interface PermissionUpdate {
  /** The only kind crab applies: rules added. */
  type: "addRules";
  /** The rules to add. */
  rules: PermissionRuleValue[];
  /** What the rules do to a call they match. */
  behavior: "allow" | "deny" | "ask";
  /** Where the rules go; crab keeps them for this session only, whatever is named. */
  destination: "session" | "cliArg" | "userSettings" | "projectSettings" | "localSettings";
}

/** `canUseTool`'s answer: allow (maybe with the input changed), or deny with the model's message. */
export type PermissionResult =
  | {
    /** Run the call. */
    behavior: "allow";
    /** The input to run instead, in Claude Code's shape (as `canUseTool` got it). */
    updatedInput?: Record<string, unknown>;
    /** Rules to add for the rest of the session (`addRules`; `suggestions` offers one). */
    updatedPermissions?: PermissionUpdate[];
  }
  | {
    /** Refuse the call. */
    behavior: "deny";
    /** What the model reads. */
    message: string;
    /** Also stop the running prompt. */
    interrupt?: boolean;
  };

/**
 * Answers what would ask: `toolName` and `input` are Claude Code's (`Bash`,
 * `{command}`; `mcp__server__tool`), crab's beside them in `crab_tool_name`.
 */
export type CanUseTool = (
  toolName: string,
  input: Record<string, unknown>,
  options: {
    signal: AbortSignal;
    suggestions?: PermissionUpdate[];
    toolUseID: string;
    decisionReason?: string;
    /** The subagent that asks, when one does (crab's id of it). */
    agentID?: string;
    /** crab's name of the tool (the model's). */
    crab_tool_name?: string;
  },
) => Promise<PermissionResult>;

/** The hook events crab fires. */
export type HookEvent =
  | "PreToolUse"
  | "PostToolUse"
  | "PostToolUseFailure"
  | "Notification"
  | "UserPromptSubmit"
  | "SessionStart"
  | "SessionEnd"
  | "Stop"
  | "PreCompact"
  | "PostCompact"
  | "PermissionRequest";

/** What a hook callback gets: Claude Code's input for its event (`hook_event_name`, `tool_name`, ...). */
export type HookInput = { hook_event_name: string; session_id: string; [key: string]: unknown };

/** What a hook callback answers: Claude Code's hook JSON output. */
export interface HookJSONOutput {
  /** `false`: the call or prompt is refused (a `Stop` callback: the model is not sent back). */
  continue?: boolean;
  /** Why, with `continue: false`. */
  stopReason?: string;
  /** Claude Code's: hide the hook's output from the transcript; crab does not read it. */
  suppressOutput?: boolean;
  /**
   * `block`: a `PreToolUse` call is refused; after `PostToolUse` or `Stop`,
   * `reason` goes to the model. `approve` allows a `PreToolUse` call.
   */
  decision?: "approve" | "block";
  /** Why, with `decision`. */
  reason?: string;
  /** Shown to the user. */
  systemMessage?: string;
  /**
   * The event's own answer: `permissionDecision` (`allow`, `deny`, `ask`),
   * `permissionDecisionReason`, `updatedInput`, `additionalContext`.
   */
  hookSpecificOutput?: { hookEventName: string; [key: string]: unknown };
}

/** A hook callback. */
export type HookCallback = (
  input: HookInput,
  toolUseID: string | undefined,
  options: { signal: AbortSignal },
) => Promise<HookJSONOutput>;

/** Callbacks for the calls a matcher picks (`"Bash"`, `"Edit|Write"`; none: all). */
export interface HookCallbackMatcher {
  /** The tools whose calls fire the callbacks, by Claude Code's names; none: every call. */
  matcher?: string;
  /** The callbacks to run. */
  hooks: HookCallback[];
  /** Seconds each callback may take. */
  timeout?: number;
}

/** An MCP server crab starts as a process. */
export interface McpStdioServerConfig {
  /** The server's kind; none means `stdio`. */
  type?: "stdio";
  /** The program to start. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Variables added to its environment. */
  env?: Record<string, string>;
}

/** An MCP server over HTTP (streamable) or SSE. */
export interface McpRemoteServerConfig {
  /** `http` for streamable HTTP, `sse` for server-sent events. */
  type: "http" | "sse";
  /** The server's address. */
  url: string;
  /** HTTP headers sent with every request (`Authorization`). */
  headers?: Record<string, string>;
}

/**
 * A zod 4 schema, as far as crab's types need one: what it parses to. Crab
 * never imports zod for its types; a zod 3 schema (no `_zod`) does not fit.
 */
export interface ZodSchemaLike {
  /** The parsed value's type. */
  readonly _output: unknown;
  /** zod 4's internals: their presence tells a zod 4 schema from a zod 3 one. */
  readonly _zod: unknown;
}

/** A zod 4 raw shape, as `tool()` takes it: `{ a: z.number(), b: z.number() }`. */
export type ZodRawShapeLike = { readonly [key: string]: ZodSchemaLike };

/** The arguments a zod raw shape parses to. */
export type InferShape<S extends ZodRawShapeLike> = { [K in keyof S]: S[K]["_output"] };

/** A tool's input as plain JSON Schema: an object schema, given as is. */
export interface JsonSchemaObject {
  /** MCP's tool inputs are objects. */
  type: "object";
  /** Each argument's schema. */
  properties?: { [key: string]: JsonValue };
  /** The arguments the model must give. */
  required?: string[];
  /** Any other JSON Schema keyword, passed to the model as is. */
  [key: string]: JsonValue | undefined;
}

/** What an in-process tool's handler is given, by its input schema. */
export type ToolArgs<S> = S extends ZodRawShapeLike ? InferShape<S> : Record<string, unknown>;

/** Hints about a tool for the client (MCP's tool annotations); crab reads `readOnlyHint`. */
export interface ToolAnnotations {
  /** A name for people. */
  title?: string;
  /** The tool changes nothing: crab runs it beside other calls, without the workspace's turn. */
  readOnlyHint?: boolean;
  /** The tool may destroy data (passed on; crab's rules decide). */
  destructiveHint?: boolean;
  /** Calling it twice does what calling it once does (passed on). */
  idempotentHint?: boolean;
  /** The tool reaches the world outside (passed on). */
  openWorldHint?: boolean;
}

/** A tool of an in-process MCP server (`tool()`). */
export interface SdkMcpToolDefinition<
  S extends ZodRawShapeLike | JsonSchemaObject = ZodRawShapeLike | JsonSchemaObject,
> {
  /** The tool's name on its server: `<server>__<name>` to the model. */
  name: string;
  /** What the model reads about the tool. */
  description: string;
  /** A zod 4 raw shape (arguments checked with it), or plain JSON Schema. */
  inputSchema: S;
  /** Hints for crab: `readOnlyHint` lets the tool run beside changing calls. */
  annotations?: ToolAnnotations;
  /**
   * Runs the call in the script's process, with the script's permissions;
   * `extra` is MCP's request context (its `signal` aborts with the call). A
   * throw becomes a tool error the model reads.
   */
  handler(args: ToolArgs<S>, extra: unknown): Promise<CallToolResult>;
}

/** What an MCP tool returns. */
export interface CallToolResult {
  /** What the model reads: text, and images, audio or resources shown by their kind and size. */
  content: (
    | { type: "text"; text: string }
    | { type: "image"; data: string; mimeType: string }
    | { type: "audio"; data: string; mimeType: string }
    | {
      type: "resource";
      resource: { uri: string; mimeType?: string; text?: string; blob?: string };
    }
    | { type: "resource_link"; uri: string; name: string; mimeType?: string }
  )[];
  /** Typed content, given to the model as JSON when there is no text block. */
  structuredContent?: { [key: string]: JsonValue };
  /** The call failed: the content is the error the model reads. */
  isError?: boolean;
}

/** An MCP server in the script's own process (`createSdkMcpServer()`). */
export interface McpSdkServerConfig {
  /** A server in this process. */
  type: "sdk";
  /** The server's name (its key in `mcpServers` is what rules and the model use). */
  name: string;
  /** The server's version, told to crab's MCP client. */
  version: string;
  /** What the server tells the model in `initialize`. */
  instructions?: string;
  /** Longest a call of its tools may take, in ms, waiting for the workspace included (60 s). */
  timeout?: number;
  /** The tools, from `tool()`. */
  tools: SdkMcpToolDefinition[];
}

/** Any MCP server `query()` takes. */
export type McpServerConfig = McpStdioServerConfig | McpRemoteServerConfig | McpSdkServerConfig;

/** `outputFormat`: the final answer must be JSON valid for `schema` (`structured_output`). */
export interface JsonSchemaOutputFormat {
  /** The only format there is. */
  type: "json_schema";
  /** The JSON Schema the answer must be valid for. */
  schema: Record<string, unknown>;
}

/**
 * A subagent type, as the Agent SDK's `agents` option takes it: the model runs
 * it with the `task` tool (`subagent_type` is its key in `agents`).
 */
export interface AgentDefinition {
  /** When to use it: the model reads it in the task tool's list of types. */
  description: string;
  /** Its tools, Claude Code's names or crab's (`["Read", "Grep"]`); absent: the parent's but task. */
  tools?: string[];
  /** Tools taken out of that list. */
  disallowedTools?: string[];
  /** Its system prompt. */
  prompt: string;
  /** The model it asks; `inherit` (the default) asks the parent's. */
  model?: "sonnet" | "opus" | "haiku" | "inherit" | (string & Record<never, never>);
  /** Model turns it may take (else the `subagents.maxTurns` setting, 50). */
  maxTurns?: number;
}

/** The options of `query()` (see `docs/sdk.md` for those crab refuses, and why). */
export interface Options {
  /** Aborting it stops the run: running calls and their processes end, the iterator ends. */
  abortController?: AbortController;
  /** Directories whose reads and writes are approved besides the workspace (absolute). */
  additionalDirectories?: string[];
  /** Subagent types for this run, by name, besides crab's own (`explore`, `general-purpose`). */
  agents?: Record<string, AgentDefinition>;
  /** Rules that approve without asking: `"Read"`, `"Bash(deno test:*)"`. */
  allowedTools?: string[];
  /** crab's: text added at the end of the system prompt. */
  appendSystemPrompt?: string;
  /** Answers what would ask; without it (and without a mode or rules) what would ask is refused. */
  canUseTool?: CanUseTool;
  /** Go on with the workspace's most recent session. */
  continue?: boolean;
  /** The workspace (default: the process's working directory). */
  cwd?: string;
  /** Rules that refuse: `"WebFetch"`, `"Bash(rm:*)"`; a tool named whole is not offered. */
  disallowedTools?: string[];
  /** The run's whole environment (default: the process's); `Deno.env` is not changed. */
  env?: Record<string, string>;
  /** The model to go on with when the model is overloaded or not found. */
  fallbackModel?: string;
  /** With `resume` or `continue`: go on in a new session, a copy of the old. */
  forkSession?: boolean;
  /** Hook callbacks per event. */
  hooks?: Partial<Record<HookEvent, HookCallbackMatcher[]>>;
  /** Also yield the answer as it streams, as `stream_event` messages. */
  includePartialMessages?: boolean;
  /** Stop once the estimated cost passes this many dollars. */
  maxBudgetUsd?: number;
  /** Stop after this many model turns. */
  maxTurns?: number;
  /** MCP servers for this run, by name. */
  mcpServers?: Record<string, McpServerConfig>;
  /** The model to ask, as `crab -p --model` takes it (default: the one crab's config names). */
  model?: string;
  /** The final answer as JSON valid for a schema, in the result's `structured_output`. */
  outputFormat?: JsonSchemaOutputFormat;
  /** False: keep no transcript of the session. */
  persistSession?: boolean;
  /** How calls are approved; always wins over `canUseTool` and the default. */
  permissionMode?: PermissionMode;
  /** Set with `permissionMode: "bypassPermissions"`, as the Agent SDK asks. */
  allowDangerouslySkipPermissions?: boolean;
  /** Go on with this session id. */
  resume?: string;
  /** The new session's id (a UUID). */
  sessionId?: string;
  /** The settings files read (default: all three, as `crab -p`; `[]` reads none). */
  settingSources?: SettingSource[];
  /** Receives crab's notices (start-up, settings); nothing is written to stderr. */
  stderr?: (data: string) => void;
  /** Only the servers of `mcpServers`, none from settings files. */
  strictMcpConfig?: boolean;
  /** Replaces crab's system prompt, or (preset) appends to it. */
  systemPrompt?: string | { type: "preset"; preset: "claude_code"; append?: string };
}

/** What `query()` returns: its messages, and the run's controls. */
export interface Query extends AsyncGenerator<SDKMessage, void> {
  /** Stops the running prompt (its result says `aborted`); a streamed next message is answered. */
  interrupt(): Promise<void>;
  /** Changes the permission mode of the session from the next call on. */
  setPermissionMode(mode: PermissionMode): Promise<void>;
  /** Changes the model from the next request on. */
  setModel(model?: string): Promise<void>;
  /** The slash commands a prompt may start with. */
  supportedCommands(): Promise<{ name: string; description: string; argumentHint: string }[]>;
  /** The MCP servers of the run and their state. */
  mcpServerStatus(): Promise<{ name: string; status: string; error?: string }[]>;
  /** Ends the run now: what runs is stopped, the iterator ends. */
  close(): void;
}

/** Where a query's messages go, and how it is stopped. */
export interface QueryChannel {
  /** One message for the script. */
  push(message: SDKMessage): void;
  /** Set once the run started: what the returned object's methods act on. */
  started(controls: QueryControls): void;
}

/** What the returned object's methods reach (crab's own, not exported by `sdk.ts`). */
export interface QueryControls {
  interrupt(): void;
  setPermissionMode(mode: string): void;
  setModel(model: string | undefined): void;
  supportedCommands(): string[];
  mcpServerStatus(): { name: string; status: string; error?: string }[];
}
