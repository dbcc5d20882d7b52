/**
 * What the policy grants bash's sandbox: the mode (named as Codex CLI names
 * them), whether the network is on, the extra writable paths, the caps of one
 * command, the hosts it may reach through crab's proxy, the credential stores
 * the user opened, and — read at each call, so that rules added during a
 * session count — the permission rules whose denials hold below the shell, the
 * paths commands never see, and the question about a host in no list. The
 * sandbox (`../sandbox/`) renders this; it decides none of it.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { join } from "../fs/path.ts";
import type { Rule } from "./rules.ts";
import type { DomainLists } from "./domains.ts";
import { CREDENTIAL_STORES, opensStore } from "./credentials.ts";
import { dataDir, ownSpillDirIfMade } from "../fs/data_dir.ts";

/** How far a command run by bash may reach. */
export type SandboxMode = "workspace-write" | "read-only" | "danger-full-access";

/** Every mode, in the order help texts show them. */
export const SANDBOX_MODES: readonly SandboxMode[] = [
  "workspace-write",
  "read-only",
  "danger-full-access",
];

/** The mode used when neither a flag nor the user config chooses one. */
export const DEFAULT_SANDBOX_MODE: SandboxMode = "workspace-write";

/** True for a known mode name. */
export function isSandboxMode(value: unknown): value is SandboxMode {
  return typeof value === "string" && (SANDBOX_MODES as readonly string[]).includes(value);
}

/** Caps of one command as configured (`sandbox.limits`); a missing field takes its default. */
export interface SandboxLimits {
  /** Processes and threads at once (a cgroup's pids.max). */
  processes?: number;
  /** Bytes of memory (a cgroup's memory limit); default half the RAM. */
  memory?: number;
  /** Bytes of the private /tmp (bwrap's `--size` for its tmpfs). */
  tmp?: number;
}

/** What the user's settings and the command line grant bash's sandbox, as plain data. */
export interface SandboxGrant {
  readonly mode: SandboxMode;
  /** Commands may use the network (the run granted the `net` class). */
  readonly net: boolean;
  /** Absolute paths outside the workspace that commands may write (`sandbox.writable`, `--add-dir`). */
  readonly writable: readonly string[];
  /** Processes, memory and /tmp of one command (`sandbox.limits`); absent ones take the defaults. */
  readonly limits?: SandboxLimits;
  /**
   * Hosts commands may reach through crab's proxy when `net` is off
   * (`sandbox.network` in the user's config, `--allow-domain`); the rules'
   * `WebFetch(domain:…)` join them at each call (`domains.ts`).
   */
  readonly domains?: DomainLists;
  /**
   * Credential stores commands may read (`sandbox.credentials.allow` in the
   * user's config): entries of `CREDENTIAL_STORES`, e.g. `.aws`, or a folder
   * that holds some (`.ssh`). The others are hidden.
   */
  readonly credentials?: readonly string[];
  /**
   * The user lets a background job's ports onto the host's 127.0.0.1
   * (`sandbox.jobPortsOnHost`, `--job-ports-on-host`); without it they reach
   * the session's later calls only (`../sandbox/net/ports.ts`).
   */
  readonly jobPortsOnHost?: boolean;
}

/** A path commands never see, and why. */
export interface UnseenPath {
  /** Absolute; a `*` in its last name stands for any characters but `/`. */
  readonly path: string;
  /** The credential store it is (an entry of `CREDENTIAL_STORES`), which the user may open. */
  readonly store?: string;
}

/**
 * What commands never see, whatever the rules say: crab's data directory (the
 * store and its key, transcripts, undo's copies of files, quarantine, other
 * runs' spill files, other calls' proxy sockets) and the credential stores the
 * user did not open; and what is shown again, read-only, inside them.
 */
export interface UnseenPaths {
  readonly hidden: readonly UnseenPath[];
  /** This run's own spill folder: bash results point the model at its files. */
  readonly shown: readonly string[];
}

/** What the sandbox reads for one call: the grant, and the policy's live answers. */
export interface SandboxPolicy extends SandboxGrant {
  /**
   * Permission rules whose denials hold below the shell too: `Read(…)` deny
   * rules hide paths, `Edit(…)`/`Write(…)` deny rules make them read-only
   * (`../sandbox/denials.ts`). Other rules are ignored there.
   */
  readonly rules?: readonly Rule[];
  /**
   * Asks about a host in no list (where someone can answer): true lets this
   * call's connections to it through. Without it such a host is refused.
   */
  readonly askHost?: HostAsker;
  /**
   * Whether an entry of a git directory (`entry`: a file name, or a state
   * directory with a trailing `/`) that git changed in the sandbox's private
   * view may replace the real one (`../sandbox/git/view.ts`, after its own checks).
   */
  readonly mayGiveBack?: (gitDir: string, entry: string) => boolean;
  /**
   * Paths protected besides the workspace's own list (`../fs/protected.ts`):
   * the files hooks run, read-only for commands, asked for by write and edit.
   */
  readonly protect?: readonly { readonly path: string; readonly reason: string }[];
  /**
   * What commands never see, asked at each call; without it, {@link unseenPaths}
   * of this grant and `$HOME`.
   */
  readonly unseen?: () => UnseenPaths;
}

/**
 * The paths commands never see under `grant`, for the home directory `home`
 * (crab's data dir found with `env`):
 * crab's data directory but this run's spill folder, and every credential
 * store (`credentials.ts`) but those `grant.credentials` opens.
 *
 * @example
 * ```ts
 * unseenPaths({ ...DEFAULT_SANDBOX_POLICY, credentials: [".aws"] }, "/home/u").hidden;
 * // [{ path: "/home/u/.local/share/crab" }, { path: "/home/u/.ssh/id_*", store: ".ssh/id_*" }, …]
 * ```
 */
export function unseenPaths(
  grant: SandboxGrant,
  home: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): UnseenPaths {
  const open = grant.credentials ?? [];
  return {
    hidden: [
      { path: dataDir(env) },
      ...CREDENTIAL_STORES.filter((s) => !opensStore(open, s)).map((store) => ({
        path: join(home, store),
        store,
      })),
    ],
    shown: [ownSpillDirIfMade(env)].filter((d) => d !== undefined),
  };
}

/** A question about one host a command asked crab's proxy for. */
export type HostAsker = (host: string, signal: AbortSignal) => Promise<boolean>;

/** The grant of a session nobody configured: workspace-write, no network. */
export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = {
  mode: DEFAULT_SANDBOX_MODE,
  net: false,
  writable: [],
};
