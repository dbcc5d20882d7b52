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
  readonly #send: (message: Record<string, unknown>) => void;
  readonly #pending = new Map<string, (answer: SdkAnswer) => void>();
  #seq = 0;
  #closed = false;

  /** `send` writes one control request to the SDK (a line on stdout). */
  constructor(send: (message: Record<string, unknown>) => void) {
    this.#send = send;
  }

  /** Calls callback `id` with `input`; an answer that does not come in `timeoutMs` is an error. */
  call(
    id: string,
    input: Record<string, unknown>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<SdkAnswer> {
    if (this.#closed) {
      return Promise.resolve({ ok: false, error: "the SDK's input has ended" });
    }
    const requestId = `crab_hook_${++this.#seq}`;
    return new Promise<SdkAnswer>((resolve) => {
      const done = (answer: SdkAnswer) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", aborted);
        this.#pending.delete(requestId);
        resolve(answer);
      };
      const timer = setTimeout(
        () => done({ ok: false, error: `no answer in ${timeoutMs / 1000} s` }),
        timeoutMs,
      );
      const aborted = () => done({ ok: false, error: "stopped" });
      signal?.addEventListener("abort", aborted, { once: true });
      this.#pending.set(requestId, done);
      this.#send({
        type: "control_request",
        request_id: requestId,
        request: {
          subtype: "hook_callback",
          callback_id: id,
          input,
          ...(typeof input.tool_use_id === "string" ? { tool_use_id: input.tool_use_id } : {}),
        },
      });
    });
  }

  /** Takes a `control_response` from the SDK; false when it answers nothing crab asked. */
  answer(message: Record<string, unknown>): boolean {
    const response = isObject(message.response) ? message.response : {};
    const done = this.#pending.get(String(response.request_id));
    if (!done) return false;
    if (response.subtype === "success") done({ ok: true, output: response.response ?? {} });
    else done({ ok: false, error: String(response.error ?? "the SDK reported an error") });
    return true;
  }

  /** The SDK's input ended: what waits for an answer gets none. */
  close(): void {
    this.#closed = true;
    for (const done of [...this.#pending.values()]) {
      done({ ok: false, error: "the SDK's input has ended" });
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
