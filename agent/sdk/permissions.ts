/**
 * What crab needs of the script's Deno permissions, checked before a query
 * starts: a missing one is an error naming the flag, never a prompt on the
 * script's terminal. The tools' own needs (`--allow-run` for bash's sandbox)
 * are checked as the tools are chosen (`refuseMissingPermissions`).
 *
 * @module
 */

import { dataDir } from "../../tools/fs/data_dir.ts";
import { UsageError } from "../run/runtime.ts";

function granted(desc: Deno.PermissionDescriptor): boolean {
  try {
    return Deno.permissions.querySync(desc).state === "granted";
  } catch {
    return false;
  }
}

/**
 * Throws a {@link UsageError} naming each flag the script lacks: reading the
 * workspace, writing crab's store, and the environment unless `env` is given.
 */
export function checkPermissions(cwd: string, envGiven: boolean): void {
  const missing: string[] = [];
  if (!envGiven && !granted({ name: "env" })) missing.push("--allow-env (or give options.env)");
  if (!granted({ name: "read", path: cwd })) missing.push(`--allow-read (for ${cwd})`);
  if (!missing.length) {
    const store = dataDir();
    if (!granted({ name: "write", path: store })) missing.push(`--allow-write (for ${store})`);
  }
  if (!missing.length) return;
  throw new UsageError(
    `Cannot run crab in this process without ${missing.join(", ")}`,
    "add the flags to the script's deno run (or its deno task); crab never prompts for them",
  );
}

/** The host each provider's API is reached at when no base URL is set. */
const DEFAULT_HOSTS: Record<string, string> = {
  anthropic: "api.anthropic.com",
  openai: "api.openai.com",
};

/**
 * Throws a {@link UsageError} when the script may not reach the model's API,
 * before the first request (which would otherwise meet Deno's prompt).
 */
export function checkApiAccess(provider: string, apiBase: string | undefined): void {
  let host: string | undefined;
  try {
    host = apiBase ? new URL(apiBase).hostname : DEFAULT_HOSTS[provider];
  } catch {
    return; // a base URL that does not parse fails at the request, with its own error
  }
  if (!host || granted({ name: "net", host })) return;
  throw new UsageError(
    `Cannot run crab in this process without --allow-net (for ${host}, the model's API)`,
    "add the flag to the script's deno run (or its deno task); crab never prompts for it",
  );
}
