/**
 * `crab mcp serve` as seen by the MCP Inspector's CLI, an independent client
 * (fetched from npm by `npx`, pinned; `.ci/run` fetches the same version).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type Sandbox, sandbox } from "../support/cli.ts";
import { serveArgs } from "../support/mcp_serve.ts";

/** Keep in step with `.ci/run`. */
export const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0";

async function inspect(
  s: Sandbox,
  inspectorArgs: string[],
  extra: string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = ["CRAB_HOME", "XDG_CONFIG_HOME", "DENO_DIR"].flatMap((
    k,
  ) => ["-e", `${k}=${s.env[k]}`]);
  const out = await new Deno.Command("npx", {
    args: [
      "--prefer-offline",
      "-y",
      INSPECTOR,
      "--cli",
      ...env,
      ...inspectorArgs,
      "--",
      Deno.execPath(),
      ...serveArgs(s, extra),
    ],
    cwd: s.ws,
    // npx keeps its real HOME (its cache); the Inspector's own catalog stays in the sandbox.
    env: { MCP_CATALOG_PATH: join(s.root, "inspector.json"), NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("MCP Inspector CLI lists crab's tools with annotations and no schema problems", async () => {
  using s = sandbox();
  const r = await inspect(s, ["--method", "tools/list", "--strict"], ["--tools", "read,edit,bash"]);
  assert.equal(r.code, 0, r.stderr);
  const { tools } = JSON.parse(r.stdout);
  assert.deepEqual(
    tools.map((t: { name: string; annotations: unknown }) => [t.name, t.annotations]),
    [
      ["read", { readOnlyHint: true, openWorldHint: false }],
      [
        "edit",
        { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      ],
      [
        "bash",
        { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      ],
      // Offered with bash, for its background jobs.
      ["bash_output", { readOnlyHint: true, openWorldHint: false }],
      ["bash_kill", { readOnlyHint: true, openWorldHint: false }],
    ],
  );
});

Deno.test("MCP Inspector CLI calls read, and sees a refused outside read as isError", async () => {
  using s = sandbox();
  s.put("a.txt", "hello\n");
  const ok = await inspect(s, [
    "--method",
    "tools/call",
    "--tool-name",
    "read",
    "--tool-arg",
    "path=a.txt",
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { content: [{ type: "text", text: "1\thello\n" }] });

  const outside = join(s.root, "secret.txt");
  Deno.writeTextFileSync(outside, "secret\n");
  const refused = await inspect(s, [
    "--method",
    "tools/call",
    "--tool-name",
    "read",
    "--tool-arg",
    `path=${outside}`,
  ]);
  // The Inspector's exit code for a tool result with isError.
  assert.equal(refused.code, 5, refused.stderr);
  const result = JSON.parse(refused.stdout);
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /^Error \[refused\]: .*--allow outside-read/);
});
