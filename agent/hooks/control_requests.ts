/**
 * Requests crab sends the Agent SDK over the stream-json control channel, and
 * their answers: each a `control_request` line with an id of crab's, answered
 * by a `control_response` naming that id. A request waits for its answer, its
 * time limit, the caller's signal or the end of the SDK's input, whichever
 * comes first; each ends exactly once.
 *
 * ```
 * → {"type": "control_request", "request_id": "crab_hook_1", "request": {...}}
 * ← {"type": "control_response", "response": {"subtype": "success", "request_id": "crab_hook_1",
 *    "response": {...}}}
 * ```
 *
 * @module
 */

/** An answer: the `response` of a success, or why there is none. */
export type ControlAnswer = { ok: true; response: unknown } | { ok: false; error: string };

/** How one request waits. */
export interface ControlWait {
  /** Stops the wait: the answer is `{ok: false, error: "stopped"}` or `cancelled`'s text. */
  signal?: AbortSignal;
  /** Milliseconds before the answer is an error. */
  timeoutMs?: number;
  /** Tells the SDK the request is withdrawn when `signal` stops it, with this error. */
  cancelled?: string;
}

const ENDED = "the SDK's input has ended";

/** The requests of one kind (`prefix` names their ids) and the answers that come back. */
export class ControlRequests {
  readonly #send: (message: Record<string, unknown>) => void;
  readonly #prefix: string;
  readonly #pending = new Map<string, (answer: ControlAnswer) => void>();
  #seq = 0;
  #closed = false;

  /** `send` writes one message to the SDK (a line on stdout). */
  constructor(send: (message: Record<string, unknown>) => void, prefix: string) {
    this.#send = send;
    this.#prefix = prefix;
  }

  /** Sends `request` and waits for its answer. */
  request(request: Record<string, unknown>, wait: ControlWait = {}): Promise<ControlAnswer> {
    if (this.#closed) return Promise.resolve({ ok: false, error: ENDED });
    const id = `${this.#prefix}_${++this.#seq}`;
    const { signal, timeoutMs, cancelled } = wait;
    return new Promise<ControlAnswer>((resolve) => {
      const done = (answer: ControlAnswer) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", aborted);
        this.#pending.delete(id);
        resolve(answer);
      };
      const aborted = () => {
        if (cancelled !== undefined) {
          this.#send({ type: "control_cancel_request", request_id: id });
        }
        done({ ok: false, error: cancelled ?? "stopped" });
      };
      const timer = timeoutMs === undefined ? undefined : setTimeout(
        () => done({ ok: false, error: `no answer in ${timeoutMs / 1000} s` }),
        timeoutMs,
      );
      if (signal?.aborted) return aborted();
      signal?.addEventListener("abort", aborted, { once: true });
      this.#pending.set(id, done);
      this.#send({ type: "control_request", request_id: id, request });
    });
  }

  /** Takes a `control_response`; false when it answers nothing asked here. */
  answer(message: Record<string, unknown>): boolean {
    const response = isObject(message.response) ? message.response : {};
    const done = this.#pending.get(String(response.request_id));
    if (!done) return false;
    if (response.subtype === "success") done({ ok: true, response: response.response });
    else done({ ok: false, error: String(response.error ?? "the SDK reported an error") });
    return true;
  }

  /** The SDK's input ended: what waits for an answer gets none, and nothing more is sent. */
  close(): void {
    this.#closed = true;
    for (const done of [...this.#pending.values()]) done({ ok: false, error: ENDED });
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
