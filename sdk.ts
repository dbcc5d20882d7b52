/**
 * crab as a library: `query()` runs crab in the calling process and yields its
 * messages in the shapes of Anthropic's Agent SDK (`@anthropic-ai/claude-agent-sdk`),
 * so a script written for one runs on the other by changing its import.
 *
 * ```ts
 * import { query } from "@crab/crab/sdk";
 * for await (const m of query({ prompt: "fix the failing test", options: { cwd: "." } })) {
 *   if (m.type === "result") console.log(m.result, m.total_cost_usd);
 * }
 * ```
 *
 * A run goes through the same path as `crab -p`: the same settings layers,
 * policy, sandbox, undo, hooks and observations. Importing this module loads
 * nothing a script does not use; crab's run is loaded when a query starts.
 * See `docs/sdk.md` for every option, and what fences crab in-process.
 *
 * @module
 */

import { checkOptions } from "./agent/sdk/options.ts";
export { createSdkMcpServer, tool } from "./agent/sdk/tool.ts";

import type {
  Options,
  PermissionMode,
  Query,
  QueryControls,
  SDKMessage,
  SDKUserMessage,
} from "./agent/sdk/types.ts";

export type {
  AgentDefinition,
  CallToolResult,
  CanUseTool,
  HookCallback,
  HookCallbackMatcher,
  HookEvent,
  HookInput,
  HookJSONOutput,
  InferShape,
  JsonSchemaObject,
  JsonSchemaOutputFormat,
  JsonValue,
  McpRemoteServerConfig,
  McpSdkServerConfig,
  McpServerConfig,
  McpStdioServerConfig,
  Options,
  PermissionMode,
  PermissionResult,
  PermissionRuleValue,
  PermissionUpdate,
  Query,
  ResultBase,
  SDKAssistantMessage,
  SDKBackgroundJob,
  SDKCompactBoundaryMessage,
  SDKInformationalMessage,
  SdkMcpToolDefinition,
  SDKMessage,
  SDKPartialAssistantMessage,
  SDKPermissionDenial,
  SDKResultMessage,
  SDKStatusMessage,
  SDKSystemInitMessage,
  SDKUserMessage,
  SettingSource,
  TextBlock,
  ToolAnnotations,
  ToolArgs,
  ToolResultBlock,
  ToolUseBlock,
  Usage,
  ZodRawShapeLike,
  ZodSchemaLike,
} from "./agent/sdk/types.ts";

/** A query's messages as they come, and the run's end. */
class QueryRun implements Query {
  readonly #params: { prompt: string | AsyncIterable<SDKUserMessage>; options?: Options };
  readonly #queue: SDKMessage[] = [];
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #ended = false;
  #failure: { error: unknown } | undefined;
  readonly #closed = new AbortController();
  #controls: QueryControls | undefined;
  #ready: Promise<QueryControls | undefined> | undefined;
  #readyResolve: ((c: QueryControls | undefined) => void) | undefined;

  constructor(params: { prompt: string | AsyncIterable<SDKUserMessage>; options?: Options }) {
    this.#params = params;
  }

  #start(): void {
    if (this.#running) return;
    this.#running = (async () => {
      const { runQuery } = await import("./agent/sdk/run.ts");
      await runQuery(this.#params, {
        push: (m) => {
          this.#queue.push(m);
          this.#signal();
        },
        started: (controls) => {
          this.#controls = controls;
          this.#readyResolve?.(controls);
        },
      }, this.#closed.signal);
    })().catch((error) => {
      this.#failure = { error };
    }).finally(() => {
      this.#ended = true;
      this.#readyResolve?.(undefined);
      this.#signal();
    });
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async next(): Promise<IteratorResult<SDKMessage, void>> {
    this.#start();
    for (;;) {
      const m = this.#queue.shift();
      if (m) return { value: m, done: false };
      if (this.#ended) {
        const failure = this.#failure;
        this.#failure = undefined;
        if (failure) throw failure.error;
        return { value: undefined, done: true };
      }
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
  }

  /** Stops the run and waits for it to wind down: nothing of it is left. */
  async return(): Promise<IteratorResult<SDKMessage, void>> {
    this.close();
    await this.#running?.catch(() => {});
    this.#queue.length = 0;
    return { value: undefined, done: true };
  }

  async throw(e: unknown): Promise<IteratorResult<SDKMessage, void>> {
    await this.return();
    throw e;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  /** The run's controls once it started; undefined when it ended first. */
  #whenStarted(): Promise<QueryControls | undefined> {
    if (this.#controls) return Promise.resolve(this.#controls);
    if (this.#ended) return Promise.resolve(undefined);
    this.#start();
    return this.#ready ??= new Promise((resolve) => this.#readyResolve = resolve);
  }

  async interrupt(): Promise<void> {
    (await this.#whenStarted())?.interrupt();
  }

  async setPermissionMode(mode: PermissionMode): Promise<void> {
    (await this.#whenStarted())?.setPermissionMode(mode);
  }

  async setModel(model?: string): Promise<void> {
    (await this.#whenStarted())?.setModel(model);
  }

  async supportedCommands(): Promise<
    { name: string; description: string; argumentHint: string }[]
  > {
    const names = (await this.#whenStarted())?.supportedCommands() ?? [];
    return names.map((name) => ({ name, description: "", argumentHint: "" }));
  }

  async mcpServerStatus(): Promise<{ name: string; status: string; error?: string }[]> {
    return (await this.#whenStarted())?.mcpServerStatus() ?? [];
  }

  close(): void {
    this.#closed.abort();
  }
}

/**
 * Runs crab on a prompt, in this process, and yields its messages: `system`
 * `init` first, the model's `assistant` messages and the tools' results as
 * `user` messages, and a `result` for each prompt.
 *
 * Options crab does not support are refused by name (a `TypeError`).
 *
 * @example
 * ```ts
 * import { query } from "@crab/crab/sdk";
 * const q = query({ prompt: "What does main.ts do?", options: { allowedTools: ["Read"] } });
 * for await (const m of q) if (m.type === "result") console.log(m.result);
 * ```
 */
export function query(params: {
  prompt: string | AsyncIterable<SDKUserMessage>;
  options?: Options;
}): Query {
  checkOptions((params.options ?? {}) as Record<string, unknown>);
  return new QueryRun(params);
}
