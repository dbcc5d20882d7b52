/**
 * `--fallback-model`: a provider that goes on with a second model when the first
 * is overloaded (HTTP 529, or an `overloaded_error` in the stream) or not found
 * (404), once the request's own retries are spent. The switch is for the rest of
 * the run, said once, and only before anything of the answer was streamed.
 *
 * @module
 */

import { type Provider, ProviderError, type StreamEvent, type StreamRequest } from "./types.ts";

export { resolveModel } from "./models.ts";

/** True for the failures a fallback model answers: overloaded, or no such model. */
export function wantsFallback(e: unknown): boolean {
  if (!(e instanceof ProviderError)) return false;
  if (e.status === 529 || e.status === 404) return true;
  return e.code === "overloaded_error" || (e.kind === "server" && /overloaded/i.test(e.message));
}

/**
 * Wraps `provider` so that a request failing as {@link wantsFallback} says is
 * asked again of `fallback`, and every later request too; `model` then names it.
 */
export function withFallback(
  provider: Provider,
  fallback: string,
  notice: (message: string) => void,
): Provider {
  const primary = provider.model;
  let fellBack = false;
  async function* stream(req: StreamRequest): AsyncGenerator<StreamEvent> {
    if (fellBack) {
      yield* provider.stream({ ...req, model: req.model === primary ? fallback : req.model });
      return;
    }
    let yielded = false;
    try {
      for await (const ev of provider.stream(req)) {
        yielded = true;
        yield ev;
      }
      return;
    } catch (e) {
      if (yielded || req.model === fallback || !wantsFallback(e)) throw e;
      fellBack = true;
      notice(
        `model "${req.model}" failed (${(e as ProviderError).message.split("\n")[0]}); ` +
          `going on with the fallback model "${fallback}"`,
      );
    }
    yield* provider.stream({ ...req, model: fallback });
  }
  return {
    name: provider.name,
    get model() {
      return fellBack ? fallback : primary;
    },
    stream,
    ...(provider.listModels && { listModels: provider.listModels.bind(provider) }),
    // A lazy provider still loads its SDK ahead of the first request.
    ...("load" in provider && { load: (provider as { load: () => unknown }).load }),
  };
}
