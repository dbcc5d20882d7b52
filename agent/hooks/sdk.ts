/**
 * The Agent SDK's hooks: callbacks the SDK registers in its `initialize`
 * request (`hooks: {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds":
 * ["hook_0"], "timeout": 30}]}`) and crab calls over the stream-json control
 * channel, as Claude Code does: a `hook_callback` control request with the
 * event's input, answered by a `control_response` whose `response` is the
 * hook's JSON output. They fire for the same events, are read by the same
 * protocol as command hooks, and are recorded as `sdk:ID`.
 *
 * @module
 */

import { DEFAULT_TIMEOUT_S, HOOK_EVENTS, type HookEvent } from "../settings/hooks.ts";
import { ControlRequests } from "./control_requests.ts";

/** One registered callback. */
export interface SdkHook {
  event: HookEvent;
  matcher: string;
  callbackId: string;
  /** Seconds. */
  timeout: number;
}

/** What a callback answered: its JSON output, or why there is none. */
export type SdkAnswer = { ok: true; output: unknown } | { ok: false; error: string };

/**
 * The callbacks of an `initialize` request's `hooks`, or why they cannot be
 * used (the request is then refused).
 *
 * @example
 * ```ts
 * parseSdkHooks({ Stop: [{ hookCallbackIds: ["hook_0"] }] });
 * // [{ event: "Stop", matcher: "", callbackId: "hook_0", timeout: 60 }]
 * ```
 */
export function parseSdkHooks(raw: unknown): SdkHook[] | string {
  if (!isObject(raw)) return "Cannot register the SDK's hooks: hooks must be an object";
  const out: SdkHook[] = [];
  for (const [event, groups] of Object.entries(raw)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      return `Cannot register the SDK's hooks for ${JSON.stringify(event)}: crab fires ${
        HOOK_EVENTS.join(", ")
      }`;
    }
    if (!Array.isArray(groups)) return `Cannot register the SDK's hooks: ${event} must be a list`;
    for (const g of groups) {
      const ids = isObject(g) ? g.hookCallbackIds : undefined;
      const matcher = isObject(g) ? g.matcher ?? "" : "";
      const timeout = isObject(g) ? g.timeout ?? DEFAULT_TIMEOUT_S : DEFAULT_TIMEOUT_S;
      if (
        !Array.isArray(ids) || !ids.every((id) => typeof id === "string") ||
        typeof matcher !== "string" || typeof timeout !== "number" || !(timeout > 0)
      ) {
        return `Cannot register the SDK's hooks for ${event}: each entry needs ` +
          "hookCallbackIds (strings), and may have a matcher and a timeout in seconds";
      }
      for (const id of ids) {
        out.push({ event: event as HookEvent, matcher, callbackId: id, timeout });
      }
    }
  }
  return out;
}

/** Calls the SDK's callbacks over the control channel and routes their answers back. */
export class SdkHookBridge {
  readonly hooks: SdkHook[] = [];
  readonly #requests: ControlRequests;

  /** `send` writes one control request to the SDK (a line on stdout). */
  constructor(send: (message: Record<string, unknown>) => void) {
    this.#requests = new ControlRequests(send, "crab_hook");
  }

  /** Calls callback `id` with `input`; an answer that does not come in `timeoutMs` is an error. */
  async call(
    id: string,
    input: Record<string, unknown>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<SdkAnswer> {
    const answer = await this.#requests.request({
      subtype: "hook_callback",
      callback_id: id,
      input,
      ...(typeof input.tool_use_id === "string" ? { tool_use_id: input.tool_use_id } : {}),
    }, { timeoutMs, ...(signal ? { signal } : {}) });
    return answer.ok ? { ok: true, output: answer.response ?? {} } : answer;
  }

  /** Takes a `control_response` from the SDK; false when it answers nothing crab asked. */
  answer(message: Record<string, unknown>): boolean {
    return this.#requests.answer(message);
  }

  /** The SDK's input ended: what waits for an answer gets none. */
  close(): void {
    this.#requests.close();
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
