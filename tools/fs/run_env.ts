/**
 * The environment a run reads: the process's, or the one a caller gave for its
 * own run (`query({ options: { env } })` in `sdk.ts`). Two runs in one process
 * may each have their own, so it is carried by the async context of the run
 * rather than written to `Deno.env`: everything the run starts, awaits or
 * schedules reads the same one, and bash and MCP servers get it as theirs.
 *
 * The async context (`node:async_hooks`) is loaded only by what gives a run an
 * environment of its own (`agent/sdk/env_scope.ts`'s `withEnv`), never on crab's start
 * path: until then every read is the process's.
 *
 * @module
 */

/** Where the current run's own environment is kept, once `agent/sdk/env_scope.ts` is loaded. */
export interface EnvStore {
  getStore(): Readonly<Record<string, string>> | undefined;
}

let store: EnvStore | undefined;

/** Makes `s` the store {@link runEnv} reads; `agent/sdk/env_scope.ts` calls it as it loads. */
export function installEnvStore(s: EnvStore): void {
  store = s;
}

/** Reads like `Deno.env`: the scoped environment inside `withEnv`, the process's outside. */
export const runEnv: Pick<Deno.Env, "get" | "has" | "toObject"> = {
  get(name: string): string | undefined {
    const env = store?.getStore();
    return env ? (Object.hasOwn(env, name) ? env[name] : undefined) : Deno.env.get(name);
  },
  has(name: string): boolean {
    const env = store?.getStore();
    return env ? Object.hasOwn(env, name) : Deno.env.has(name);
  },
  toObject(): { [key: string]: string } {
    const env = store?.getStore();
    return env ? { ...env } : Deno.env.toObject();
  },
};

/** Whether the code running now has an environment of its own (not the process's). */
export function scopedEnv(): boolean {
  return store?.getStore() !== undefined;
}
