/**
 * Settings from `~/.config/crab/config.json` (user) and `.crab/config.json`
 * (project); command-line flags win over both. A project file comes with the
 * repository, so only harmless keys apply from it until the user trusted the
 * workspace: a cloned repository must not pick the API host, pre-approve a
 * shell, or widen what crab may do.
 *
 * @module
 */

import { join } from "node:path";
import { configDir } from "../tools/data_dir.ts";
import { isSandboxMode, SANDBOX_MODES, type SandboxMode } from "../tools/sandbox/mode.ts";

/** The `sandbox` setting: how far bash reaches. User config only. */
export interface SandboxSettings {
  mode?: SandboxMode;
  /** Paths outside the workspace that commands may write (`~/` allowed). */
  writable?: string[];
}

/** Every setting a config file may hold. */
export interface Settings {
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
  /** bash's sandbox; never taken from a project file. */
  sandbox?: SandboxSettings;
}

/** Keys a project file may set before the workspace is trusted. */
export const SAFE_PROJECT_KEYS: readonly (keyof Settings)[] = [
  "model",
  "maxTurns",
  "contextWindow",
];

const KINDS: Record<keyof Settings, "string" | "boolean" | "number" | "strings" | "sandbox"> = {
  provider: "string",
  model: "string",
  baseUrl: "string",
  tools: "strings",
  web: "boolean",
  webAllowPrivate: "boolean",
  allow: "strings",
  maxTurns: "number",
  contextWindow: "number",
  sandbox: "sandbox",
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
    } else return `unknown field "sandbox.${k}" (known: mode, writable)`;
  }
  return undefined;
}

/** A config file that cannot be used; the message names the file and the field. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The settings of one file; missing file → empty. Throws {@link ConfigError} when malformed. */
export function readSettings(path: string): Settings {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    throw new ConfigError(`Cannot read config "${path}": ${e instanceof Error ? e.message : e}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(
      `Cannot parse config "${path}": ${e instanceof Error ? e.message : e}\nhint: fix the JSON`,
    );
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(`Cannot use config "${path}": expected a JSON object`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const kind = KINDS[key as keyof Settings];
    if (!kind) {
      throw new ConfigError(
        `Cannot use config "${path}": unknown field "${key}"\nhint: known fields are ${
          Object.keys(KINDS).join(", ")
        }`,
      );
    }
    if (kind === "sandbox") {
      const problem = sandboxProblem(value);
      if (problem) {
        throw new ConfigError(
          `Cannot use config "${path}": ${
            problem.startsWith("field") ? problem : `field "sandbox" ${problem}`
          }`,
        );
      }
      out[key] = value;
      continue;
    }
    const ok = kind === "strings"
      ? Array.isArray(value) && value.every((v) => typeof v === "string")
      : kind === "number"
      ? typeof value === "number" && Number.isInteger(value) && value > 0
      : kind === "boolean"
      ? typeof value === "boolean"
      : typeof value === "string";
    if (!ok) {
      const want = kind === "strings"
        ? "an array of strings"
        : kind === "number"
        ? "a positive integer"
        : `a ${kind}`;
      throw new ConfigError(`Cannot use config "${path}": field "${key}" must be ${want}`);
    }
    out[key] = value;
  }
  return out as Settings;
}

/** Paths of the two config files. */
export function configPaths(workspace: string): { user: string; project: string } {
  return {
    user: join(configDir(), "config.json"),
    project: join(workspace, ".crab", "config.json"),
  };
}

/** The merged settings and what was left out of an untrusted project file. */
export interface LoadedSettings {
  settings: Settings;
  /** Project keys ignored because the workspace is not trusted. */
  ignored: string[];
  projectPath: string;
  /** The user file alone (what only the user may decide: the sandbox, bash's network). */
  user: Settings;
  /** The project file tried to set the sandbox, which it never may. */
  sandboxRefused: boolean;
}

/** User settings, then project settings over them (only safe keys unless `trusted`). */
export function loadSettings(workspace: string, trusted: boolean): LoadedSettings {
  const paths = configPaths(workspace);
  const user = readSettings(paths.user);
  const project = readSettings(paths.project);
  const ignored: string[] = [];
  const merged: Record<string, unknown> = { ...user };
  let sandboxRefused = false;
  for (const [key, value] of Object.entries(project)) {
    // A repository must not loosen the sandbox its own commands run in, trusted or not.
    if (key === "sandbox") sandboxRefused = true;
    else if (trusted || SAFE_PROJECT_KEYS.includes(key as keyof Settings)) merged[key] = value;
    else ignored.push(key);
  }
  return {
    settings: merged as Settings,
    ignored,
    projectPath: paths.project,
    user,
    sandboxRefused,
  };
}
