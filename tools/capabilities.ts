/**
 * Capability classes mapped onto Deno permission flags: the single source of the
 * flag lists that the `crab` task and compiled binaries run with.
 *
 * @module
 */

/** A named build preset. */
export type Preset = "full" | "no-web" | "read-only";

/** Every preset, in the order help texts show them. */
export const PRESETS: readonly Preset[] = ["full", "no-web", "read-only"];

/**
 * The Deno flags of a preset. Every list carries `--no-prompt` (Deno must never
 * prompt over crab) and unscoped `--allow-env` (the child-environment scrub reads
 * the whole environment).
 */
export function presetFlags(preset: Preset, providerHosts: readonly string[] = []): string[] {
  switch (preset) {
    case "full":
      return [
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        "--allow-net",
        "--no-prompt",
      ];
    case "no-web":
      return [
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        ...(providerHosts.length ? [`--allow-net=${providerHosts.join(",")}`] : []),
        "--no-prompt",
      ];
    case "read-only":
      return [
        "--allow-read",
        "--allow-env",
        ...(providerHosts.length ? [`--allow-net=${providerHosts.join(",")}`] : []),
        "--no-prompt",
      ];
  }
}
