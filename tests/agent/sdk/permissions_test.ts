/**
 * A script without the Deno permissions crab needs gets an error naming the
 * flag, before any request, never Deno's prompt.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { denoDir, sandbox } from "../../support/cli.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

Deno.test("query() in a script without --allow-net names the flag and the model's host, and sends nothing", async () => {
  using s = sandbox("crab-sdk-perm-");
  await using fake = await startFakeModel([{ text: "never" }]);
  const script = join(s.root, "script.ts");
  Deno.writeTextFileSync(
    script,
    `import { query } from ${JSON.stringify(join(ROOT, "sdk.ts"))};
const env = JSON.parse(Deno.args[0]);
try {
  for await (const _ of query({ prompt: "hi", options: { cwd: Deno.args[1], env } })) {
    // nothing expected
  }
  console.log("ran");
} catch (e) {
  console.log("error: " + (e as Error).message);
}
`,
  );
  const env = { ...s.env, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: fake.url };
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--cached-only",
      "--no-prompt",
      "--config",
      join(ROOT, "deno.json"),
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-run",
      "--allow-sys",
      script,
      JSON.stringify(env),
      s.ws,
    ],
    env: { ...s.env, DENO_DIR: denoDir() },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.match(
    stdout,
    /^error: Cannot run crab in this process without --allow-net \(for 127\.0\.0\.1, the model's API\)/,
    new TextDecoder().decode(out.stderr),
  );
  assert.equal(fake.modelRequests().length, 0);
});
