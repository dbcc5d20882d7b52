/**
 * The sandbox a run's commands get: the mode from `--sandbox`, else the user's
 * config, else workspace-write; the network when the run grants the `net`
 * class on the command line or in the user's config; extra writable paths and
 * the caps of a command (processes, memory, /tmp) from the user's config; the
 * hosts commands reach through crab's proxy from `--allow-domain` and the
 * user's `sandbox.network`; the credential stores commands may read from the
 * user's `sandbox.credentials.allow` (none by default); whether a background
 * job's ports reach the host too from `--job-ports-on-host` or the user's
 * `sandbox.jobPortsOnHost`. A project file never decides any of it.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { join } from "../../tools/fs/path.ts";
import {
  DEFAULT_SANDBOX_MODE,
  type SandboxGrant,
  type SandboxMode,
} from "../../tools/policy/sandbox.ts";
import { limitsFromConfig } from "../../tools/sandbox/limits.ts";
import { type DomainLists, type DomainRule, normalizePattern } from "../../tools/policy/domains.ts";
import type { AllowedClass } from "../../tools/policy/policy.ts";
import { configPaths, type CrabSettings } from "./crab.ts";
import { UsageError } from "./usage_error.ts";

/** Where the parts of a policy come from. */
export interface SandboxSources {
  /** `--sandbox MODE`. */
  flag?: SandboxMode;
  /** The user's config file alone. */
  user: CrabSettings;
  /** Classes the command line approves (`--allow`). */
  allow?: readonly string[];
  /** Directories the command line adds (`--add-dir`): writable too. */
  addDirs?: readonly string[];
  /** Hosts the command line allows (`--allow-domain`), checked by the option parser. */
  domains?: readonly string[];
  /** `--job-ports-on-host`. */
  jobPortsOnHost?: boolean;
}

/** The hosts of `--allow-domain` and the user's `sandbox.network`. */
function domainLists(src: SandboxSources): DomainLists | undefined {
  const file = configPaths("").user;
  const net = src.user.sandbox?.network;
  const rules = (list: readonly string[] | undefined, source: string): DomainRule[] =>
    (list ?? []).map((d) => ({ pattern: normalizePattern(d), source }));
  const allow = [
    ...rules(src.domains, "--allow-domain"),
    ...rules(net?.allowedDomains, `sandbox.network.allowedDomains in ${file}`),
  ];
  const deny = rules(net?.deniedDomains, `sandbox.network.deniedDomains in ${file}`);
  return allow.length || deny.length ? { allow, deny } : undefined;
}

function expandHome(path: string): string {
  const home = runEnv.get("HOME") ?? "/";
  return path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** The policy of a run. */
export function sandboxPolicy(src: SandboxSources): SandboxGrant {
  const allow = [...(src.allow ?? []), ...(src.user.allow ?? [])].map((c) => c.trim());
  const domains = domainLists(src);
  const credentials = src.user.sandbox?.credentials?.allow;
  const onHost = src.jobPortsOnHost || src.user.sandbox?.jobPortsOnHost === true;
  return {
    mode: src.flag ?? src.user.sandbox?.mode ?? DEFAULT_SANDBOX_MODE,
    net: allow.includes("net"),
    writable: [...(src.user.sandbox?.writable ?? []).map(expandHome), ...(src.addDirs ?? [])],
    ...(src.user.sandbox?.limits ? { limits: limitsFromConfig(src.user.sandbox.limits) } : {}),
    ...(domains ? { domains } : {}),
    ...(credentials?.length ? { credentials } : {}),
    ...(onHost ? { jobPortsOnHost: true } : {}),
  };
}

/** Classes `crab tool` and `crab mcp serve` accept in `--allow`. */
const EXTRA_CLASSES = new Set(["protected", "net", "outside", "outside-read", "outside-write"]);

/** The `--allow` list of `crab tool` and `crab mcp serve`; throws on an unknown class. */
export function extraClasses(list: readonly string[] | undefined): AllowedClass[] {
  const out: AllowedClass[] = [];
  for (const c of (list ?? []).map((x) => x.trim()).filter(Boolean)) {
    if (!EXTRA_CLASSES.has(c)) {
      throw new UsageError(
        `Cannot allow class "${c}": use protected, net, outside, outside-read or outside-write`,
      );
    }
    out.push(c as AllowedClass);
  }
  return out;
}
