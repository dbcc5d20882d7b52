/**
 * Memory given back after a large task, before the next part of it: the V8
 * heap's garbage, collected now (every way crab starts runs V8 with
 * `--expose-gc`; a process that embeds crab without it collects when V8
 * decides), and the pages the C allocator holds free, returned to the system
 * (glibc's `malloc_trim`, where the process may call native code on Linux).
 *
 * Undo's first snapshot of 100,000 files calls it between its phases: each
 * phase leaves tens of MB of garbage and freed pages that V8 and glibc would
 * keep until much later, so the process's peak is the sum of the phases, not
 * the largest. A full collection of a heap of 50 MB takes about 30 ms.
 *
 * @module
 */

import { mayCallLibc } from "../fs/exists.ts";

let trim: (() => void) | null | undefined;

/** glibc's `malloc_trim(0)`, or null where it cannot be called (not Linux, no `--allow-ffi`, no glibc). */
function mallocTrim(): (() => void) | null {
  if (trim !== undefined) return trim;
  trim = null;
  if (!mayCallLibc(false)) return null;
  try {
    const { malloc_trim } = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32" },
    }).symbols;
    trim = () => void malloc_trim(0n);
  } catch {
    // Another C library: its free pages stay with it.
  }
  return trim;
}

/** Collects the V8 heap's garbage and returns the allocator's free pages, where this process can. */
export function releaseMemory(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc === "function") gc();
  mallocTrim()?.();
}

/** Whether {@link releaseMemory} can collect garbage in this process (V8 runs with `--expose-gc`). */
export function collectsGarbage(): boolean {
  return typeof (globalThis as { gc?: () => void }).gc === "function";
}
