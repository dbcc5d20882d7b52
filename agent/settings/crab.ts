/**
 * CrabSettings from `~/.config/crab/config.json` (user) and `.crab/config.json`
 * (project); command-line flags win over both. A project file comes with the
 * repository, so only harmless keys apply from it until the user trusted the
 * workspace: a cloned repository must not pick the API host, pre-approve a
 * shell, or widen what crab may do.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { osaDistance } from "./suggest.ts";
import { SAFE_PROJECT_KEYS } from "./gates.ts";

export { SAFE_PROJECT_KEYS } from "./gates.ts";
import { fileOf, settingsFileTable, settingsReader } from "./files.ts";
import { isSandboxMode, SANDBOX_MODES, type SandboxMode } from "../../tools/policy/sandbox.ts";
import { limitsProblem } from "../../tools/sandbox/limits.ts";
import { domainPatternProblem } from "../../tools/policy/domains.ts";
import { credentialEntryProblem } from "../../tools/policy/credentials.ts";

/** The `sandbox` setting: how far bash reaches. User config only. */
export interface SandboxSettings {
  mode?: SandboxMode;
  /** Paths outside the workspace that commands may write (`~/` allowed). */
  writable?: string[];
  /** Caps of one command: `{"processes": 4096, "memory": "8G", "tmp": "1G"}`. */
  limits?: { processes?: number; memory?: string | number; tmp?: string | number };
  /** Hosts commands may reach through crab's proxy, as Claude Code names the fields. */
  network?: { allowedDomains?: string[]; deniedDomains?: string[] };
  /** Credential stores commands may read (all are hidden by default): `{"allow": [".aws"]}`. */
  credentials?: { allow?: string[] };
  /** Put a background job's ports on the host's 127.0.0.1 too (later calls reach them anyway). */
  jobPortsOnHost?: boolean;
}

/** Every setting a config file may hold. */
export interface CrabSettings {
  provider?: string;
  model?: string;
  baseUrl?: string;
  /** Tools offered to the model (built-in and `<server>__<tool>` names). */
  tools?: string[];
  /** Offer web_fetch. */
  web?: boolean;
  /** Let web_fetch reach private addresses (local dev servers). */
  webAllowPrivate?: boolean;
  /** Classes approved up front, like `--allow`. */
  allow?: string[];
  maxTurns?: number;
  /** The model's context window in tokens, when crab does not know it. */
  contextWindow?: number;
  /** How many exchanges (a prompt and what followed) the REPL shows of a resumed session. */
  resumeExchanges?: number;
  /** The model takes images (over crab's table of models, `agent/providers/media.ts`). */
  images?: boolean;
  /** The model takes PDFs as documents (Anthropic's API only). */
  pdf?: boolean;
  /** Export traces and metrics over OpenTelemetry (sends data off the machine: never a safe key). */
  telemetry?: boolean;
  /** bash's sandbox; never taken from a project file. */
  sandbox?: SandboxSettings;
  /** Permission rules and mode, as Claude Code writes them; read by `settings.ts`, trusted or not. */
  permissions?: Record<string, unknown>;
  /** Claude Code's hooks object; read by `agent/hooks/config.ts` (a project's after trust). */
  hooks?: Record<string, unknown>;
  /** How long undo keeps snapshots, per workspace (default 30 days, 2048 MB). */
  undo?: { retentionDays?: number; maxStoreMB?: number };
  /**
   * Bounds of subagents (`agent/subagents/`): running at once (default 4), started
   * per session (50), model turns each (50), how deep they nest (1: none start more).
   */
  subagents?: { maxRunning?: number; maxPerSession?: number; maxTurns?: number; maxDepth?: number };
  /** Background jobs (bash's `run_in_background`): how many run at once per session (default 8). */
  jobs?: { max?: number };
}

/** A field's check: the type it must have, said the way an error names it. */
export interface FieldKind {
  /** What the value must be, e.g. "a positive integer". */
  want: string;
  ok: (value: unknown) => boolean;
  /** What exactly is wrong with a value `ok` refused, when there is more to say than `want`. */
  problem?: (value: unknown) => string | undefined;
}

const STRING: FieldKind = { want: "a string", ok: (v) => typeof v === "string" };
const BOOLEAN: FieldKind = { want: "a boolean", ok: (v) => typeof v === "boolean" };
const POSITIVE_INT: FieldKind = {
  want: "a positive integer",
  ok: (v) => typeof v === "number" && Number.isInteger(v) && v > 0,
};
const STRINGS: FieldKind = {
  want: "an array of strings",
  ok: (v) => Array.isArray(v) && v.every((x) => typeof x === "string"),
};

/** Every field a config file may hold and its check; a new setting adds one line here. */
const KINDS: Record<keyof CrabSettings, FieldKind> = {
  provider: STRING,
  model: STRING,
  baseUrl: STRING,
  tools: STRINGS,
  web: BOOLEAN,
  webAllowPrivate: BOOLEAN,
  allow: STRINGS,
  maxTurns: POSITIVE_INT,
  contextWindow: POSITIVE_INT,
  resumeExchanges: POSITIVE_INT,
  images: BOOLEAN,
  pdf: BOOLEAN,
  telemetry: BOOLEAN,
  permissions: {
    want: "an object with allow, ask, deny and defaultMode",
    ok: (v) => !!v && typeof v === "object" && !Array.isArray(v),
  },
  hooks: {
    want: "an object of hook event names",
    ok: (v) => !!v && typeof v === "object" && !Array.isArray(v),
  },
  undo: {
    want: "an object with retentionDays and maxStoreMB, positive integers",
    ok: (v) =>
      !!v && typeof v === "object" && !Array.isArray(v) &&
      Object.entries(v).every(([k, n]) =>
        (k === "retentionDays" || k === "maxStoreMB") && POSITIVE_INT.ok(n)
      ),
  },
  subagents: {
    want: "an object with maxRunning, maxPerSession, maxTurns and maxDepth, positive integers",
    ok: (v) =>
      !!v && typeof v === "object" && !Array.isArray(v) &&
      Object.entries(v).every(([k, n]) =>
        ["maxRunning", "maxPerSession", "maxTurns", "maxDepth"].includes(k) && POSITIVE_INT.ok(n)
      ),
  },
  jobs: {
    want: "an object with max, a positive integer",
    ok: (v) =>
      !!v && typeof v === "object" && !Array.isArray(v) &&
      Object.entries(v).every(([k, n]) => k === "max" && POSITIVE_INT.ok(n)),
  },
  sandbox: {
    want: "an object with mode, writable, limits, network, credentials and jobPortsOnHost",
    ok: (v) => sandboxProblem(v) === undefined,
    problem: (v) => sandboxProblem(v),
  },
};

/** Why a `sandbox` value is malformed, or undefined when it is fine. */
function sandboxProblem(value: unknown): string | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) return "must be an object";
  for (const [k, v] of Object.entries(value)) {
    if (k === "mode") {
      if (!isSandboxMode(v)) {
        return `field "sandbox.mode" must be one of ${SANDBOX_MODES.join(", ")}`;
      }
    } else if (k === "writable") {
      if (!Array.isArray(v) || !v.every((p) => typeof p === "string" && /^(\/|~\/|~$)/.test(p))) {
        return 'field "sandbox.writable" must be an array of absolute paths (or ~/...)';
      }
    } else if (k === "limits") {
      const problem = limitsProblem(v);
      if (problem) return problem;
    } else if (k === "network") {
      const problem = networkProblem(v);
      if (problem) return problem;
    } else if (k === "credentials") {
      const problem = credentialsProblem(v);
      if (problem) return problem;
    } else if (k === "jobPortsOnHost") {
      if (typeof v !== "boolean") return 'field "sandbox.jobPortsOnHost" must be a boolean';
    } else {
      return `unknown field "sandbox.${k}" ` +
        "(known: mode, writable, limits, network, credentials, jobPortsOnHost)";
    }
  }
  return undefined;
}

/** Why a `sandbox.credentials` value is malformed, or undefined when it is fine. */
function credentialsProblem(value: unknown): string | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    return 'field "sandbox.credentials" must be an object with allow';
  }
  for (const [k, v] of Object.entries(value)) {
    if (k !== "allow") return `unknown field "sandbox.credentials.${k}" (known: allow)`;
    if (!Array.isArray(v) || !v.every((e) => typeof e === "string")) {
      return 'field "sandbox.credentials.allow" must be an array of credential stores, e.g. [".aws"]';
    }
    for (const e of v) {
      const problem = credentialEntryProblem(e);
      if (problem) return `field "sandbox.credentials.allow": ${problem}`;
    }
  }
  return undefined;
}

/** Why a `sandbox.network` value is malformed, or undefined when it is fine. */
function networkProblem(value: unknown): string | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    return 'field "sandbox.network" must be an object with allowedDomains and deniedDomains';
  }
  for (const [k, v] of Object.entries(value)) {
    if (k !== "allowedDomains" && k !== "deniedDomains") {
      return `unknown field "sandbox.network.${k}" (known: allowedDomains, deniedDomains)`;
    }
    if (!Array.isArray(v) || !v.every((d) => typeof d === "string")) {
      return `field "sandbox.network.${k}" must be an array of host names`;
    }
    for (const d of v) {
      const problem = domainPatternProblem(d);
      if (problem) return `field "sandbox.network.${k}": ${problem}`;
    }
  }
  return undefined;
}

/** A config file that cannot be used; the message names the file and the field. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** What one file holds, and what in it was ignored. */
export interface FileSettings {
  settings: CrabSettings;
  /** One line per ignored field (an unknown name), naming the file and the field. */
  warnings: string[];
}

/**
 * The settings of one file; missing file → empty. Unknown fields are ignored
 * with a warning (a newer crab's file, or a typo, must not stop the run); a
 * known field of the wrong type throws {@link ConfigError}.
 */
export function readSettings(path: string, reader = settingsReader()): FileSettings {
  const file = reader.read(path);
  if (!file.found) return { settings: {}, warnings: [] };
  if (file.readError !== undefined) {
    throw new ConfigError(`Cannot read config "${path}": ${file.readError}`);
  }
  if (file.parseError !== undefined) {
    throw new ConfigError(`Cannot parse config "${path}": ${file.parseError}\nhint: fix the JSON`);
  }
  const raw = file.json;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`Cannot use config "${path}": expected a JSON object`);
  }
  const out: Record<string, unknown> = {};
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const kind = Object.hasOwn(KINDS, key) ? KINDS[key as keyof CrabSettings] : undefined;
    if (!kind) {
      warnings.push(unknownField(path, key));
      continue;
    }
    if (!kind.ok(value)) {
      const problem = kind.problem?.(value);
      throw new ConfigError(
        `Cannot use config "${path}": ${
          problem?.startsWith("field")
            ? problem
            : `field "${key}" ${problem ?? `must be ${kind.want}`}`
        }`,
      );
    }
    out[key] = value;
  }
  return { settings: out as CrabSettings, warnings };
}

function unknownField(path: string, key: string): string {
  const known = Object.keys(KINDS);
  const near = known.find((k) => k.toLowerCase() === key.toLowerCase()) ??
    known.find((k) => osaDistance(k.toLowerCase(), key.toLowerCase()) <= 2);
  return `ignoring unknown field "${key}" in config "${path}" (` +
    (near ? `did you mean "${near}"?` : `known fields: ${known.join(", ")}`) + ")";
}

/** Paths of the two config files; the user's is found with `env`. */
export function configPaths(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): { user: string; project: string } {
  const table = settingsFileTable(workspace, env);
  return {
    user: fileOf(table, "user", "crab")!.path,
    project: fileOf(table, "project", "crab")!.path,
  };
}

/** The merged settings and what was left out of an untrusted project file. */
export interface LoadedSettings {
  settings: CrabSettings;
  /** Unknown fields of either file, one line each (see {@link readSettings}). */
  warnings: string[];
  /** Project keys ignored because the workspace is not trusted. */
  ignored: string[];
  projectPath: string;
  /** The user file alone (what only the user may decide: the sandbox, bash's network). */
  user: CrabSettings;
  /** The project file tried to set the sandbox, which it never may. */
  sandboxRefused: boolean;
  /** Where each key of {@link LoadedSettings.settings} came from: the file that set it. */
  sources: Partial<Record<keyof CrabSettings, string>>;
}

/**
 * User settings, then project settings over them (only safe keys unless
 * `trusted`; none when not `withProject`, as under `--bare`).
 */
export function loadSettings(
  workspace: string,
  trusted: boolean,
  reader = settingsReader(),
  env: Pick<Deno.Env, "get"> = runEnv,
  withProject = true,
): LoadedSettings {
  const paths = configPaths(workspace, env);
  const user = readSettings(paths.user, reader);
  const project: FileSettings = withProject
    ? readSettings(paths.project, reader)
    : { settings: {}, warnings: [] };
  const ignored: string[] = [];
  const merged: Record<string, unknown> = { ...user.settings };
  const sources: Record<string, string> = {};
  for (const key of Object.keys(user.settings)) sources[key] = paths.user;
  let sandboxRefused = false;
  for (const [key, value] of Object.entries(project.settings)) {
    // A repository must not loosen the sandbox its own commands run in, trusted or not.
    if (key === "sandbox") sandboxRefused = true;
    // Its deny and ask rules apply before trust, its allow rules after: `settings.ts` reads them.
    else if (key === "permissions" || key === "hooks") continue;
    else if (trusted || (SAFE_PROJECT_KEYS as readonly string[]).includes(key)) {
      merged[key] = value;
      sources[key] = paths.project;
    } else ignored.push(key);
  }
  return {
    settings: merged as CrabSettings,
    warnings: [...user.warnings, ...project.warnings],
    ignored,
    projectPath: paths.project,
    user: user.settings,
    sandboxRefused,
    sources,
  };
}
