/**
 * The sandbox's resource limits: how many processes a command may have, how
 * much memory it may use, and how large its private /tmp may grow. Defaults
 * that a normal build never meets (4096 processes, half the RAM, 1 GiB of
 * /tmp); the user config may change them (`sandbox.limits`), a project file
 * never. Sizes are written as bytes or with a binary suffix: `512M`, `8G`.
 *
 * @module
 */

import type { SandboxLimits } from "../policy/sandbox.ts";

export type { SandboxLimits };

/** Every limit, with the defaults filled in. */
export type ResolvedLimits = Required<SandboxLimits>;

export const DEFAULT_PROCESSES = 4096;
export const DEFAULT_TMP_BYTES = 1024 ** 3;

/** The smallest values that still run a shell: below them nothing would start. */
const MINIMUM = { processes: 16, memory: 32 * 1024 ** 2, tmp: 1024 ** 2 } as const;

const UNITS: Record<string, number> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
const SIZE = /^(\d+)\s*([KMGT]?)(?:i?B)?$/i;

/**
 * Bytes in `value`: a non-negative integer, or a string such as `"512M"`, `"8G"`,
 * `"8GiB"` (binary units); undefined when it is neither.
 *
 * @example parseSize("1G") === 1073741824
 */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  }
  if (typeof value !== "string") return undefined;
  const m = SIZE.exec(value.trim());
  if (!m) return undefined;
  const bytes = Number(m[1]) * UNITS[m[2].toUpperCase()];
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** `bytes` for people: `8 GiB`, `512 MiB`, `1536 KiB`. */
export function formatSize(bytes: number): string {
  for (const unit of ["T", "G", "M", "K"]) {
    if (bytes >= UNITS[unit] && bytes % UNITS[unit] === 0) {
      return `${bytes / UNITS[unit]} ${unit}iB`;
    }
  }
  return bytes >= UNITS.G
    ? `${(bytes / UNITS.G).toFixed(1)} GiB`
    : bytes >= UNITS.M
    ? `${(bytes / UNITS.M).toFixed(1)} MiB`
    : `${bytes} bytes`;
}

/** Why a `sandbox.limits` value of the user config is malformed, or undefined when it is fine. */
export function limitsProblem(value: unknown): string | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    return 'field "sandbox.limits" must be an object such as {"processes": 4096, "memory": "8G", "tmp": "1G"}';
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === "processes") {
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < MINIMUM.processes) {
        return `field "sandbox.limits.processes" must be a whole number of at least ${MINIMUM.processes}`;
      }
    } else if (k === "memory" || k === "tmp") {
      const bytes = parseSize(v);
      if (bytes === undefined) {
        return `field "sandbox.limits.${k}" must be a size such as "512M" or "8G" (or a number of bytes), not ${
          JSON.stringify(v)
        }`;
      }
      if (bytes < MINIMUM[k]) {
        return `field "sandbox.limits.${k}" must be at least ${formatSize(MINIMUM[k])}`;
      }
    } else return `unknown field "sandbox.limits.${k}" (known: processes, memory, tmp)`;
  }
  return undefined;
}

/** The limits of a user config's `sandbox.limits` (already checked by {@link limitsProblem}). */
export function limitsFromConfig(value: Record<string, unknown> | undefined): SandboxLimits {
  const out: SandboxLimits = {};
  if (!value) return out;
  if (typeof value.processes === "number") out.processes = value.processes;
  const memory = parseSize(value.memory);
  if (memory !== undefined) out.memory = memory;
  const tmp = parseSize(value.tmp);
  if (tmp !== undefined) out.tmp = tmp;
  return out;
}

/**
 * `limits` with the defaults filled in; `memTotal` is the machine's RAM in
 * bytes (0 when unknown: the memory default is then 8 GiB).
 */
export function resolveLimits(limits: SandboxLimits = {}, memTotal = 0): ResolvedLimits {
  // Whole pages, so that the kernel keeps the value as written.
  const half = memTotal > 0 ? Math.floor(memTotal / 2 / 4096) * 4096 : 8 * 1024 ** 3;
  return {
    processes: limits.processes ?? DEFAULT_PROCESSES,
    memory: limits.memory ?? half,
    tmp: limits.tmp ?? DEFAULT_TMP_BYTES,
  };
}
