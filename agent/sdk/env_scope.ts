/**
 * A run's own environment, carried by its async context: what `sdk.ts` gives a
 * query its `env` with. Loading this module loads `node:async_hooks` and makes
 * `tools/fs/run_env.ts`'s reads follow the scope.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { installEnvStore } from "../../tools/fs/run_env.ts";

const scope = new AsyncLocalStorage<Readonly<Record<string, string>>>();
installEnvStore(scope);

/**
 * Runs `fn` with `env` as the whole environment `runEnv` reads, for it and
 * everything it starts.
 *
 * @example
 * ```ts
 * withEnv({ HOME: "/tmp/h" }, () => runEnv.get("HOME")); // "/tmp/h"
 * ```
 */
export function withEnv<T>(env: Readonly<Record<string, string>>, fn: () => T): T {
  return scope.run(Object.freeze({ ...env }), fn);
}
