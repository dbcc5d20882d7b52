/**
 * The turn loop's public shapes: the events front ends hear, the options of an
 * agent, and how a prompt or a compaction ended.
 *
 * @module
 */

import type { Dispatcher, DispatchResult } from "../../tools/call/dispatch.ts";
import type { CallScope } from "../../tools/call/stages.ts";
import type { AnyTool } from "../../tools/tool.ts";
import type { CompactInfo } from "./compact.ts";
import type {
  Message,
  Provider,
  ProviderError,
  StreamEvent,
  ToolCallBlock,
} from "../providers/types.ts";

/** What the front ends hear while a turn runs. */
export interface AgentEvents {
  /** A piece of the model's answer text. */
  onText?(delta: string): void;
  /** Each event of the provider's stream, as it comes (print mode's partial messages). */
  onStreamEvent?(event: StreamEvent): void;
  /** A tool call is about to run. */
  onToolCall?(call: ToolCallBlock): void;
  /** Output of a running call as it is produced (bash). */
  onToolOutput?(call: ToolCallBlock, chunk: string): void;
  /** A tool call finished. */
  onToolResult?(call: ToolCallBlock, result: DispatchResult): void;
  /** Something the user should know: a retry, trimmed context, a loop warning. */
  onNotice?(message: string): void;
  /** Token usage of one model response. */
  onUsage?(usage: { inputTokens: number; outputTokens: number }): void;
  /** A model request is about to be sent (the front end shows that it waits). */
  onRequest?(): void;
  /** Compaction starts (by `/compact` or because the window was filling), before PreCompact hooks. */
  onCompactStart?(reason: "auto" | "manual"): void;
  /** Compaction ended: what it did, or why it failed. */
  onCompact?(result: CompactResult): void;
}

/** How a request to the agent ended (`blocked`: a UserPromptSubmit hook refused the prompt). */
export type TurnStatus =
  | "ok"
  | "max_turns"
  | "max_budget"
  | "aborted"
  | "context_full"
  | "provider_error"
  | "blocked";

/** The outcome of {@link Agent.send}. */
export interface TurnResult {
  status: TurnStatus;
  /** The model's last answer text (its final answer when `status` is `ok`). */
  text: string;
  /** Model requests made for this prompt. */
  turns: number;
  /** What went wrong, for every status but `ok`. */
  error?: string;
  /** The provider error behind `provider_error`. */
  providerError?: ProviderError;
  /** What refused a `blocked` prompt. */
  blocked?: BlockedPrompt;
}

/** A prompt UserPromptSubmit refused. */
export interface BlockedPrompt {
  /** The prompt as given. */
  prompt: string;
  /** What the hooks said, one line per hook: `[COMMAND]: REASON`, or why crab refused for a hook. */
  reason: string;
  /** True when crab refused because a hook that must check the prompt could not run. */
  failClosed: boolean;
}

/** Options of an {@link Agent}. */
export interface AgentOptions {
  provider: Provider;
  dispatcher: Dispatcher;
  system: string;
  /** The tools offered, asked before each model request (MCP lists can change). */
  tools(): AnyTool[];
  /** Most model requests per prompt; unbounded when absent. */
  maxTurns?: number;
  /** The model's context window in tokens. */
  contextWindow: number;
  /** Output tokens requested per response; the provider's default for the model when absent. */
  maxTokens?: number;
  /** A conversation to continue. */
  messages?: Message[];
  events?: AgentEvents;
  /** Called with every message added, and its index, so a transcript can be kept. */
  onMessage?(message: Message, index: number): void;
  /** Called when the whole history was replaced (compaction), so a transcript can be rewritten. */
  onRewrite?(messages: readonly Message[]): void;
  /** Asked before each model request: why to stop (a spending limit was passed), or undefined. */
  budget?(): string | undefined;
  /** Retries of a response cut off mid-stream before the turn fails. */
  incompleteRetries?: number;
  /** The user's hooks around prompts, stops and compaction (`agent/hooks/`). */
  hooks?: LoopHooks;
  /** Called when a prompt has ended, however it ended (a skill's rules for the turn end with it). */
  afterPrompt?(): void;
  /** A subagent's conversation: the frame every call it makes is dispatched in. */
  scope?: CallScope;
  /** Told of the tokens of each response, with the model that answered (a parent's roll-up). */
  usageTo?(
    model: string,
    usage: {
      inputTokens: number;
      outputTokens: number;
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
    },
  ): void;
  /**
   * Lines the model reads with the next message it gets, asked each time one
   * is added (a prompt, a turn's tool results): background jobs that ended.
   */
  notes?(): string[];
}

/** Hooks the turn loop calls (Claude Code's UserPromptSubmit, Stop and PreCompact). */
export interface LoopHooks {
  /**
   * Before a prompt is sent: refuse it (`block`, shown to the user; `failClosed`
   * when a hook that must check it could not run), or add context for the model.
   */
  promptSubmitted?(
    prompt: string,
    signal: AbortSignal,
  ): Promise<{ block?: string; failClosed?: boolean; context?: string }>;
  /**
   * When the model answered without calling a tool: a reason makes it go on
   * (the reason is its next instruction). `active` is true when a Stop hook
   * already made it go on during this prompt. `lastMessage`: the model's last
   * answer text (Claude Code's `last_assistant_message`).
   */
  stopping?(active: boolean, signal: AbortSignal, lastMessage: string): Promise<string | undefined>;
  /** Before the conversation is compacted. */
  compacting?(trigger: "manual" | "auto", focus: string | undefined): Promise<void>;
}

/** How a compaction ended. */
export type CompactResult =
  | { ok: true; info: CompactInfo }
  | { ok: false; error: string };
