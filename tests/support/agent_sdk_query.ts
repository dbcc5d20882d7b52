/**
 * Runs the Agent SDK's `query()` against a crab command, in a process of its
 * own: the SDK writes to its process's environment and holds child processes,
 * which a test process must not inherit. The options come as JSON in the first
 * argument; each SDK message and each `canUseTool` question is printed as one
 * JSON line (`{"message"}`, `{"asked"}`), and a failure as `{"error"}` (exit 1).
 *
 * Run: `deno run -A --config deno.json tests/support/agent_sdk_query.ts JSON`,
 * or from a test with {@link runAgentSdk}.
 *
 * @module
 */

import { join } from "node:path";
import type { PermissionResult } from "@anthropic-ai/claude-agent-sdk";
import { crabArgs } from "./cli.ts";
import { RUN_CACHED } from "./mcp_servers.ts";
import { writeExecutable } from "./executable.ts";

/** What the test asks for. */
export interface SdkQuery {
  prompt: string;
  /** The executable the SDK starts as Claude Code. */
  crab: string;
  cwd: string;
  env: Record<string, string>;
  mcpServers?: Record<string, { type: "stdio"; command: string; args: string[] }>;
  /** canUseTool's answers, in the order it is asked. */
  answers: PermissionResult[];
  /** More of query()'s options, as JSON: `permissionMode`, `settingSources`, ... */
  options?: Record<string, unknown>;
}

/** An executable in `dir` that runs this checkout's crab, as the SDK wants a command. */
export function crabCommand(dir: string): string {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const path = join(dir, "crab");
  const words = [Deno.execPath(), ...crabArgs()].map(quote).join(" ");
  writeExecutable(path, `#!/bin/sh\nexec ${words} "$@"\n`);
  return path;
}

/** One line the driver printed. */
// deno-lint-ignore no-explicit-any
export type Line = { message?: any; asked?: any; error?: string };

/** Runs the driver on `config` in a process of its own; its lines and stderr. */
export async function runAgentSdk(
  config: SdkQuery,
): Promise<{ code: number; lines: Line[]; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...RUN_CACHED, new URL(import.meta.url).pathname, JSON.stringify(config)],
    env: config.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const lines = text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Line);
  return { code: out.code, lines, stderr: new TextDecoder().decode(out.stderr) };
}

const print = (line: unknown) => console.log(JSON.stringify(line));

if (import.meta.main) {
  // Loaded here only: the SDK reads the home directory as it loads, which a test process
  // importing the helpers above is not allowed to.
  const { query } = await import("@anthropic-ai/claude-agent-sdk");
  const config = JSON.parse(Deno.args[0]) as SdkQuery;
  let asked = 0;
  try {
    const q = query({
      prompt: config.prompt,
      options: {
        ...config.options,
        pathToClaudeCodeExecutable: config.crab,
        cwd: config.cwd,
        env: config.env,
        ...(config.mcpServers ? { mcpServers: config.mcpServers } : {}),
        canUseTool: (toolName, input, options) => {
          print({ asked: { toolName, input, toolUseID: options.toolUseID } });
          return Promise.resolve(
            config.answers[asked++] ?? { behavior: "deny", message: "no answer was scripted" },
          );
        },
        stderr: (text) => Deno.stderr.writeSync(new TextEncoder().encode(text)),
      },
    });
    for await (const message of q) print({ message });
  } catch (e) {
    print({ error: e instanceof Error ? e.message : String(e) });
    Deno.exit(1);
  }
}
