/**
 * What a session's sandbox allows bash: the mode, whether the network is on,
 * the extra writable paths and the resource limits from the user's config. Set on the session by
 * the front end; the tool layer only reads it.
 *
 * @module
 */

import type { Rule } from "../policy/rules.ts";
import { DEFAULT_SANDBOX_MODE, type SandboxMode } from "../policy/sandbox_mode.ts";
import type { SandboxLimits } from "./limits.ts";
import type { DomainLists } from "../policy/domains.ts";
import type { CgroupPlan } from "./linux/cgroup.ts";

/** The sandbox settings of one session. */
export interface SandboxPolicy {
  readonly mode: SandboxMode;
  /** Commands may use the network (the run granted the `net` class). */
  readonly net: boolean;
  /** Absolute paths outside the workspace that commands may write (`sandbox.writable`). */
  readonly writable: readonly string[];
  /** Processes, memory and /tmp of one command (`sandbox.limits`); absent ones take the defaults. */
  readonly limits?: SandboxLimits;
  /**
   * Permission rules whose denials hold below the shell too: `Read(…)` deny
   * rules hide paths, `Edit(…)`/`Write(…)` deny rules make them read-only
   * (`denials.ts`). Other rules are ignored here.
   */
  readonly rules?: readonly Rule[];
  /**
   * Hosts commands may reach through crab's proxy when `net` is off
   * (`sandbox.network` in the user's config, `--allow-domain`); the rules'
   * `WebFetch(domain:…)` join them at each call (`net/allowlist.ts`).
   */
  readonly domains?: DomainLists;
  /**
   * Asks the user about a host in no list (the REPL): true lets this call's
   * connections to it through. The answer may also add a rule for the session
   * or save one (the front end's business). Without it such a host is refused.
   */
  readonly askHost?: HostAsker;
}

/** A question to the user about one host a command asked crab's proxy for. */
export type HostAsker = (host: string, signal: AbortSignal) => Promise<boolean>;

/** The policy of a session nobody configured: workspace-write, no network. */
export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = {
  mode: DEFAULT_SANDBOX_MODE,
  net: false,
  writable: [],
};

/** `policy` with `ask` as its question about hosts in no list (live rules stay live). */
export function withHostAsker(policy: SandboxPolicy, ask: HostAsker): SandboxPolicy {
  const copy = Object.defineProperties(
    {},
    Object.getOwnPropertyDescriptors(policy),
  ) as SandboxPolicy;
  return Object.defineProperty(copy, "askHost", { value: ask, enumerable: true });
}

/**
 * `policy` with the permission rules `rules()` returns at each call: rules added
 * during a session (`/permissions`, a remembered approval) reach the sandbox too.
 */
export function withRules(policy: SandboxPolicy, rules: () => readonly Rule[]): SandboxPolicy {
  return Object.defineProperty({ ...policy }, "rules", { get: rules, enumerable: true });
}

/** Whether the sandbox works here, as the probe (`probe.ts`) found it. */
export type SandboxStatus =
  | {
    ok: true;
    /** Absolute path of bwrap (on macOS, of sandbox-exec). */
    bwrap: string;
    /** Absolute path of perl, when there is one (exact exit statuses); else bash supervises. */
    perl?: string;
    /** bwrap knows `--disable-userns` (0.8.0 and later). */
    disableUserns: boolean;
    /** bwrap knows `--size`: the private /tmp has a size. */
    tmpSize: boolean;
    /** Where the process and memory caps' cgroups go; absent when none can be made. */
    cgroups?: CgroupPlan;
    /** What is not capped here and how to change that (one notice), when something is not. */
    uncapped?: string;
  }
  | { ok: false; reason: string; hint: string };
