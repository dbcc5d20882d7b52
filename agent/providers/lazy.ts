/**
 * A provider whose SDK is loaded on first use (or when `load` is called), so
 * interactive mode can draw its prompt before the SDK's modules are evaluated.
 *
 * @module
 */

import type { Provider, StreamEvent, StreamRequest } from "./types.ts";

/** A {@link Provider} built by `create` the first time it is needed. */
export interface LazyProvider extends Provider {
  /** Builds the provider now (idempotent); resolves when it is ready. */
  load(): Promise<Provider>;
}

/** Wraps `create` so the provider is built on first use. */
export function lazyProvider(
  name: Provider["name"],
  model: string,
  create: () => Promise<Provider>,
): LazyProvider {
  let built: Promise<Provider> | undefined;
  const load = () => built ??= create();
  return {
    name,
    model,
    load,
    async *stream(req: StreamRequest): AsyncIterable<StreamEvent> {
      yield* (await load()).stream(req);
    },
    async listModels(): Promise<string[]> {
      const p = await load();
      if (!p.listModels) throw new Error("this provider cannot list its models");
      return await p.listModels();
    },
  };
}
