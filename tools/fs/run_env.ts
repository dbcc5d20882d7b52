/**
 * The environment a run reads: the process's, or the one a caller gave for its
 * own run (`query({ options: { env } })` in `sdk.ts`). Two runs in one process
 * may each have their own, so it is carried by the async context of the run
 * rather than written to `Deno.env`: everything the run starts, awaits or
 * schedules reads the same one, and bash and MCP servers get it as theirs.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";

const scope = new AsyncLocalStorage<Readonly<Record<string, string>>>();

/** Reads like `Deno.env`: the scoped environment inside {@link withEnv}, the process's outside. */
export const runEnv: Pick<Deno.Env, "get" | "has" | "toObject"> = {
  get(name: string): string | undefined {
    const env = scope.getStore();
    return env ? (Object.hasOwn(env, name) ? env[name] : undefined) : Deno.env.get(name);
  },
  has(name: string): boolean {
    const env = scope.getStore();
    return env ? Object.hasOwn(env, name) : Deno.env.has(name);
  },
  toObject(): { [key: string]: string } {
    const env = scope.getStore();
    return env ? { ...env } : Deno.env.toObject();
  },
};

/**
 * Runs `fn` with `env` as the whole environment {@link runEnv} reads, for it
 * and everything it starts.
 *
 * @example
 * ```ts
 * withEnv({ HOME: "/tmp/h" }, () => runEnv.get("HOME")); // "/tmp/h"
 * ```
 */
export function withEnv<T>(env: Readonly<Record<string, string>>, fn: () => T): T {
  return scope.run(Object.freeze({ ...env }), fn);
}

/** Whether the code running now has an environment of its own (not the process's). */
export function scopedEnv(): boolean {
  return scope.getStore() !== undefined;
}
