/**
 * The model each request names when the session's model depends on its
 * permission mode: Claude Code's `opusplan` asks Opus while the session is in
 * plan mode and Sonnet otherwise, switching as Shift-Tab or
 * `--permission-mode` changes the mode.
 *
 * @module
 */

import { requestModel } from "./models.ts";
import type { Provider, StreamEvent, StreamRequest } from "./types.ts";

/** Wraps `provider` so that each request names {@link requestModel}'s model for `mode()`. */
export function withModeModel(provider: Provider, mode: () => string): Provider {
  function stream(req: StreamRequest): AsyncIterable<StreamEvent> {
    return provider.stream({ ...req, model: requestModel(provider.name, req.model, mode()) });
  }
  return {
    name: provider.name,
    get model() {
      return provider.model;
    },
    stream,
    ...(provider.listModels && { listModels: provider.listModels.bind(provider) }),
    // A lazy provider still loads its SDK ahead of the first request.
    ...("load" in provider && { load: (provider as { load: () => unknown }).load }),
  };
}
