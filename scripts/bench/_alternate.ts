/**
 * Per-call time of `bash true` through two dispatchers, measured in alternating
 * rounds so that the machine's drift falls on both alike.
 *
 * @module
 */

import { join } from "node:path";
import { Policy } from "../../tools/policy/policy.ts";
import { bashTool } from "../../tools/bash.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { SandboxPolicy } from "../../tools/policy/sandbox.ts";
import { median } from "./_table.ts";

/** A fresh git repository to run calls in, with crab's data dir beside it (`CRAB_HOME`); remove its parent when done. */
export function benchWorkspace(prefix: string): string {
  const root = Deno.makeTempDirSync({ prefix });
  Deno.env.set("CRAB_HOME", join(root, "home"));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  new Deno.Command("git", { args: ["init", "-q"], cwd: ws }).outputSync();
  return ws;
}

/** A dispatcher of bash alone in `ws` under `sandbox`, approving everything. */
export function bashDispatcher(ws: string, sandbox: SandboxPolicy): Dispatcher {
  const session = new Session(ws);
  session.sandbox = sandbox;
  return new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bench",
  });
}

/** Medians of each side's mean per call, and of what `b` adds over `a` round by round. */
export interface Alternated {
  a: number;
  b: number;
  added: number;
}

async function round(d: Dispatcher, perRound: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < perRound; i++) {
    const r = await d.dispatch("bash", { command: "true" });
    if (!r.ok) throw new Error(JSON.stringify(r));
  }
  return (performance.now() - t0) / perRound;
}

/** One warm-up round each, then `rounds` rounds of `perRound` calls, `a` then `b`. */
export async function alternateBashTrue(
  a: Dispatcher,
  b: Dispatcher,
  rounds: number,
  perRound: number,
): Promise<Alternated> {
  await round(a, perRound);
  await round(b, perRound);
  const as: number[] = [], bs: number[] = [], added: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const x = await round(a, perRound);
    const y = await round(b, perRound);
    as.push(x);
    bs.push(y);
    added.push(y - x);
  }
  return { a: median(as), b: median(bs), added: median(added) };
}
