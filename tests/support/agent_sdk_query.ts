/**
 * Runs the Agent SDK's `query()` against a crab command, in a process of its
 * own: the SDK writes to its process's environment and holds child processes,
 * which a test process must not inherit. The options come as JSON in the first
 * argument; each SDK message and each `canUseTool` question is printed as one
 * JSON line (`{"message"}`, `{"asked"}`), and a failure as `{"error"}` (exit 1).
 *
 * Run: `deno run -A --config deno.json tests/support/agent_sdk_query.ts JSON`
 *
 * @module
 */

import { type PermissionResult, query } from "@anthropic-ai/claude-agent-sdk";

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

const print = (line: unknown) => console.log(JSON.stringify(line));

if (import.meta.main) {
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
