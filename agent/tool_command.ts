/**
 * `crab tool`: runs built-in tools from the command line through the one
 * dispatcher, recorded as a run of mode `tool`. Naming the tool is its approval.
 *
 * @module
 */

import { Dispatcher, type DispatchResult } from "../tools/dispatch.ts";
import { Registry } from "../tools/registry.ts";
import { Session } from "../tools/session.ts";
import { SessionPolicy } from "../tools/approval.ts";
import type { ApprovalClass } from "../tools/tool.ts";
import { builtinTools } from "../tools/builtins.ts";
import { withPermission } from "../tools/capabilities.ts";
import { createWebFetchTool } from "../tools/web_fetch.ts";
import { cleanSpillFiles } from "../tools/truncate.ts";
import { Store } from "./observe.ts";

/** Options of `crab tool`. */
export interface ToolCommandOptions {
  cwd: string;
  jsonl?: boolean;
  allowOutside?: boolean;
  /** Let web_fetch reach private addresses (`--web-allow-private`). */
  webAllowPrivate?: boolean;
}

/** A JSONL answer line. */
export type JsonlAnswer =
  | { tool: string; call_seq: number; ok: true; output: string }
  | {
    tool: string | null;
    call_seq: number | null;
    ok: false;
    error: { code: string; message: string; hint: string };
  };

function listing(registry: Registry): string {
  return registry.list().map((t) => `${t.name.padEnd(10)} ${t.class}`).join("\n");
}

/** Runs `crab tool`; resolves to the exit code. */
export async function toolCommand(
  name: string | undefined,
  argsJson: string | undefined,
  opts: ToolCommandOptions,
): Promise<number> {
  // web_fetch is offered here because naming a tool is what enables it in `crab tool`.
  const registry = new Registry([
    ...builtinTools(),
    createWebFetchTool({ allowPrivate: opts.webAllowPrivate }),
  ]);
  if (!opts.jsonl && name === undefined) {
    const present = withPermission(registry.list(), opts.cwd, (m) => console.error(`crab: ${m}`));
    console.log(listing(new Registry(present)));
    return 0;
  }
  if (!opts.jsonl && !registry.has(name!)) {
    console.error(`error: Cannot run tool "${name}": no such tool\nTools:\n${listing(registry)}`);
    return 1;
  }
  cleanSpillFiles();
  const session = new Session(opts.cwd);
  const allowed = new Set<ApprovalClass>();
  if (opts.allowOutside) allowed.add("outside");
  if (!opts.jsonl) allowed.add(registry.get(name!)!.class);
  else for (const t of registry.list()) allowed.add(t.class);
  const store = new Store();
  const runId = store.startRun({ mode: "tool", workspace: session.workspace });
  const dispatcher = new Dispatcher({
    registry,
    session,
    policy: new SessionPolicy({ allowed }),
    sink: store,
    runId,
  });
  let code = 0;
  try {
    if (!opts.jsonl) {
      const r = await dispatcher.dispatch(name!, argsJson ?? "{}");
      code = printResult(r);
    } else {
      code = await runJsonl(dispatcher);
    }
  } finally {
    store.endRun(runId, { status: code === 0 ? "ok" : "error" });
    store.close();
  }
  return code;
}

function printResult(r: DispatchResult): number {
  if (r.ok) {
    const out = r.output;
    Deno.stdout.writeSync(new TextEncoder().encode(out.endsWith("\n") ? out : out + "\n"));
    return 0;
  }
  console.error(`error [${r.error.code}]: ${r.error.message}\nhint: ${r.error.hint}`);
  return 1;
}

/** Exit code: 0 when every line was answered, whatever the calls returned. */
async function runJsonl(dispatcher: Dispatcher): Promise<number> {
  const encoder = new TextEncoder();
  const write = (a: JsonlAnswer) => Deno.stdout.writeSync(encoder.encode(JSON.stringify(a) + "\n"));
  for await (const line of stdinLines()) {
    if (line.trim() === "") continue;
    let call: unknown;
    try {
      call = JSON.parse(line);
    } catch (e) {
      write(invalid(`Cannot parse line as JSON: ${e instanceof Error ? e.message : e}`));
      continue;
    }
    const c = call as { tool?: unknown; args?: unknown };
    if (!c || typeof c !== "object" || Array.isArray(c) || typeof c.tool !== "string") {
      write(invalid('Cannot run line: expected {"tool": NAME, "args": {...}}'));
      continue;
    }
    const r = await dispatcher.dispatch(c.tool, c.args ?? {});
    write(
      r.ok
        ? { tool: r.tool, call_seq: r.callSeq, ok: true, output: r.output }
        : { tool: r.tool, call_seq: r.callSeq, ok: false, error: r.error },
    );
  }
  return 0;
}

function invalid(message: string): JsonlAnswer {
  return {
    tool: null,
    call_seq: null,
    ok: false,
    error: {
      code: "invalid_jsonl",
      message,
      hint: 'Send one JSON object per line: {"tool": "read", "args": {"path": "a.txt"}}',
    },
  };
}

async function* stdinLines(): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      yield buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
    }
  }
  if (buf !== "") yield buf;
}
