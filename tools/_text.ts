/** Shared internals of read, write and edit: atomic writes, UTF-8 checks, diffs. */

import { dirname, join } from "node:path";
import { ToolError } from "./tool.ts";

/** Writes `data` to `real` atomically (temp in the same directory, fsync, rename), keeping mode. */
export async function atomicWrite(real: string, data: Uint8Array, mode?: number): Promise<void> {
  const dir = dirname(real);
  const tmp = join(dir, `.crab-tmp-${crypto.randomUUID()}`);
  let renamed = false;
  try {
    const f = await Deno.open(tmp, { write: true, createNew: true, mode: mode ?? 0o644 });
    try {
      let off = 0;
      while (off < data.byteLength) off += await f.write(data.subarray(off));
      await f.sync();
    } finally {
      f.close();
    }
    if (mode !== undefined) await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, real);
    renamed = true;
  } finally {
    if (!renamed) await Deno.remove(tmp).catch(() => {});
  }
}

/** Decodes UTF-8 strictly; refuses anything else. */
export function decodeUtf8(bytes: Uint8Array, display: string, verb: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ToolError(
      "invalid_utf8",
      `Cannot ${verb} "${display}": file is not valid UTF-8`,
      "Only UTF-8 text files can be edited; use write to replace it wholesale.",
    );
  }
}

/** A minimal line diff of `a` vs `b` (common prefix/suffix trimmed), unified style. */
export function unifiedDiff(a: string, b: string, name: string): string {
  const x = a.split("\n"), y = b.split("\n");
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let s = 0;
  while (s < x.length - p && s < y.length - p && x[x.length - 1 - s] === y[y.length - 1 - s]) s++;
  const out = [`--- ${name}`, `+++ ${name}`, `@@ -${p + 1} +${p + 1} @@`];
  for (const l of x.slice(p, x.length - s)) out.push(`-${l}`);
  for (const l of y.slice(p, y.length - s)) out.push(`+${l}`);
  return out.join("\n");
}
