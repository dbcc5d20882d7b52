/**
 * Waiting for a condition instead of for a fixed time: a test that sleeps
 * "long enough" is slow on an idle machine and wrong on a loaded one.
 *
 * @module
 */

/** Options of {@link until}. */
export interface UntilOptions {
  /** Give up after this many ms; default 30 s, which only a hang reaches. */
  timeoutMs?: number;
  /** Pause between two checks; default 20 ms. */
  everyMs?: number;
}

/**
 * Checks `check` until it holds, pausing between tries; throws an error naming
 * `what` when the time runs out first.
 *
 * @example
 * ```ts
 * await until(() => existsSync(marker), "the hook wrote its marker");
 * ```
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  opts: UntilOptions = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 20));
  }
}

/**
 * Reads `stream` as text until `pattern` matches what came so far, and returns
 * that text; `rest` reads what follows, to the end. Throws when the stream ends
 * or `timeoutMs` passes first.
 */
export async function readUntil(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp | string,
  timeoutMs = 30_000,
): Promise<{ text: string; rest: () => Promise<string> }> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  const found = (t: string) => typeof pattern === "string" ? t.includes(pattern) : pattern.test(t);
  let text = "";
  let timedOut = false;
  const timer = setTimeout(() => (timedOut = true, reader.cancel()), timeoutMs);
  try {
    while (!found(text)) {
      const { value, done } = await reader.read();
      if (done) {
        const why = timedOut ? `nothing matched within ${timeoutMs} ms` : "the output ended";
        throw new Error(`Cannot find ${pattern}: ${why}; the output was:\n${text}`);
      }
      text += value;
    }
  } finally {
    clearTimeout(timer);
  }
  const rest = async () => {
    let more = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return more;
      more += value;
    }
  };
  return { text, rest };
}
