/**
 * `sdk.ts`'s exported types as a script uses them: a script written against
 * them passes `deno check`, and the mistakes they exist to catch (an option
 * crab does not take, a handler reading an argument its shape lacks) fail it.
 * Every exported symbol and member is documented: `deno doc --lint` passes.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox } from "../../support/cli.ts";

const ROOT = new URL("../../../", import.meta.url);
const SDK = new URL("sdk.ts", ROOT).href;

/**
 * A script using the exported types; each `@ts-expect-error` must be an error,
 * or the check fails on the unused directive.
 */
const SCRIPT = `
import {
  type CanUseTool,
  createSdkMcpServer,
  type HookCallback,
  type Options,
  query,
  type SDKMessage,
  type SDKResultMessage,
  tool,
} from "${SDK}";
import { z } from "zod";

const add = tool("add", "Adds", { a: z.number(), b: z.number().optional() }, (args) => {
  const sum: number = args.a + (args.b ?? 0);
  // @ts-expect-error: the shape has no c.
  args.c;
  return Promise.resolve({ content: [{ type: "text", text: String(sum) }] });
});
const plain = tool(
  "hello",
  "Greets",
  { type: "object", properties: { who: { type: "string" } } },
  (args) => Promise.resolve({ content: [{ type: "text", text: String(args.who) }] }),
);
const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add, plain] });

const canUseTool: CanUseTool = (name, input, { signal }) =>
  Promise.resolve(
    signal.aborted || name === "Write"
      ? { behavior: "deny", message: "no writes", interrupt: false }
      : { behavior: "allow", updatedInput: input },
  );
const audit: HookCallback = (input) =>
  Promise.resolve(input.hook_event_name === "PreToolUse" ? { continue: true } : {});

const options: Options = {
  cwd: ".",
  mcpServers: { calc },
  allowedTools: ["mcp__calc__add"],
  canUseTool,
  hooks: { PreToolUse: [{ matcher: "Bash", hooks: [audit] }] },
  outputFormat: { type: "json_schema", schema: { type: "object" } },
};
// @ts-expect-error: crab runs in-process; there is no executable.
const bad: Options = { pathToClaudeCodeExecutable: "/bin/claude" };

export async function run(): Promise<number | undefined> {
  const q = query({ prompt: "add 2 and 3", options });
  for await (const m of q satisfies AsyncIterable<SDKMessage>) {
    if (m.type === "result") {
      const r: SDKResultMessage = m;
      if (r.subtype === "success") return r.total_cost_usd;
    }
    if (m.type === "system" && m.subtype === "init") console.log(m.tools.join(", "));
  }
  await q.interrupt();
  return bad.cwd === undefined ? 0 : undefined;
}
`;

/** `deno check` of `text` as a script in the sandbox's workspace, with crab's config. */
async function check(s: ReturnType<typeof sandbox>, text: string) {
  const path = join(s.ws, "script.ts");
  Deno.writeTextFileSync(path, text);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--cached-only", "--config", new URL("deno.json", ROOT).pathname, path],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("sdk.ts's types check a script that uses them, and catch its mistakes", async () => {
  using s = sandbox("crab-sdk-types-");
  const ok = await check(s, SCRIPT);
  assert.equal(ok.code, 0, ok.stderr);
});

Deno.test("sdk.ts documents every exported symbol and member (deno doc --lint)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", "--config", new URL("deno.json", ROOT).pathname, "sdk.ts"],
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
});
