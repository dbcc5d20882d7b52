/**
 * `--include-partial-messages`: the model's answer as it streams, in Claude
 * Code's `stream_event` lines, each carrying one event of the Messages API's
 * server-sent stream (`message_start`, `content_block_start`,
 * `content_block_delta` with a `text_delta` or an `input_json_delta`,
 * `content_block_stop`, `message_delta`, `message_stop`).
 *
 * They are made from crab's provider-neutral stream, the same for every
 * provider: text comes in the deltas the provider sent, while a tool call's
 * arguments come whole, in one `input_json_delta`, because providers hand crab
 * a call once its arguments are complete.
 *
 * @module
 */

import type { StopReason, StreamEvent } from "../providers/types.ts";
import { apiUsage, type PrintJson } from "./events.ts";

/** The stop reasons of the Messages API, for crab's. */
function apiStopReason(r: StopReason): string | null {
  return r === "other" ? null : r;
}

/** Turns one model response's stream into `stream_event` lines. */
export class PartialMessages {
  #index = -1;
  #open: "text" | undefined;
  #usage = { inputTokens: 0, outputTokens: 0 };

  constructor(
    private readonly emit: (line: PrintJson) => void,
    private readonly ctx: { model: () => string; sessionId: () => string },
  ) {}

  #send(event: PrintJson): void {
    this.emit({
      type: "stream_event",
      event,
      session_id: this.ctx.sessionId(),
      parent_tool_use_id: null,
      uuid: crypto.randomUUID(),
    });
  }

  #close(): void {
    if (this.#open) this.#send({ type: "content_block_stop", index: this.#index });
    this.#open = undefined;
  }

  /** A model request is about to be sent: a new message starts, `id` its id. */
  start(id: string): void {
    this.#index = -1;
    this.#open = undefined;
    this.#usage = { inputTokens: 0, outputTokens: 0 };
    this.#send({
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: this.ctx.model(),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: apiUsage(0, 0),
      },
    });
  }

  /** One event of the provider's stream. */
  on(ev: StreamEvent): void {
    if (ev.type === "text_delta") {
      if (this.#open !== "text") {
        this.#close();
        this.#open = "text";
        this.#send({
          type: "content_block_start",
          index: ++this.#index,
          content_block: { type: "text", text: "" },
        });
      }
      this.#send({
        type: "content_block_delta",
        index: this.#index,
        delta: { type: "text_delta", text: ev.text },
      });
    } else if (ev.type === "tool_call") {
      this.#close();
      const index = ++this.#index;
      this.#send({
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: ev.id, name: ev.name, input: {} },
      });
      this.#send({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: ev.argsJson },
      });
      this.#send({ type: "content_block_stop", index });
    } else if (ev.type === "usage") {
      this.#usage = { inputTokens: ev.inputTokens, outputTokens: ev.outputTokens };
    } else if (ev.type === "done") {
      this.#close();
      this.#send({
        type: "message_delta",
        delta: { stop_reason: apiStopReason(ev.stopReason), stop_sequence: null },
        usage: apiUsage(this.#usage.inputTokens, this.#usage.outputTokens),
      });
      this.#send({ type: "message_stop" });
    }
  }
}
