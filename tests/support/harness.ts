/**
 * A tool-layer harness for tests: a temp workspace, a session, a dispatcher with
 * an in-memory observation sink, and a `call` shortcut.
 *
 * @module
 */

import { Dispatcher, type DispatchResult } from "../../tools/call/dispatch.ts";
import { Policy, type PolicyOptions } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { AnyTool } from "../../tools/tool.ts";

/** What {@link harness} returns. */
export interface Harness {
  /** Real path of the temp workspace. */
  dir: string;
  session: Session;
  sink: MemorySink;
  dispatcher: Dispatcher;
  /** Dispatches one call. */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<DispatchResult>;
  /** Writes a file relative to the workspace (parents created). */
  put(rel: string, content: string | Uint8Array): string;
  /** Reads a file relative to the workspace as text. */
  get(rel: string): string;
  /** Removes the temp workspace. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A fresh temp workspace with `tools` registered; by default every class is approved. */
export function harness(
  tools: AnyTool[],
  policy: PolicyOptions = { yolo: true },
): Harness {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-test-" }));
  // A harness made once for a whole file is removed when the file's tests end.
  const leave = () => Deno.removeSync(dir, { recursive: true });
  globalThis.addEventListener("unload", leave);
  const session = new Session(dir);
  const sink = new MemorySink();
  const dispatcher = new Dispatcher({
    registry: new Registry(tools),
    session,
    policy: new Policy(policy),
    sink,
    runId: "test-run",
  });
  return {
    dir,
    session,
    sink,
    dispatcher,
    call: (name, args, signal) => dispatcher.dispatch(name, args, signal),
    put(rel, content) {
      const p = `${dir}/${rel}`;
      Deno.mkdirSync(p.slice(0, p.lastIndexOf("/")), { recursive: true });
      if (typeof content === "string") Deno.writeTextFileSync(p, content);
      else Deno.writeFileSync(p, content);
      return p;
    },
    get: (rel) => Deno.readTextFileSync(`${dir}/${rel}`),
    async [Symbol.asyncDispose]() {
      globalThis.removeEventListener("unload", leave);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
