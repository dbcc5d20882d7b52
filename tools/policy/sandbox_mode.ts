/**
 * Sandbox modes for commands crab runs, named as Codex CLI names them.
 *
 * @module
 */

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
