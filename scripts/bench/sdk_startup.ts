/**
 * Time from a `query()` call (`sdk.ts`, crab in this process) to its
 * `system/init` message, against the fake model, no MCP servers configured:
 * the median of 20 calls after one warm-up (which loads crab's run once, as a
 * script's first query does). Each query is then closed before it asks the
 * model. Target: ≤ 50 ms.
 *
 * Run: `deno run -A scripts/bench/sdk_startup.ts [RUNS]`
 *
 * @module
 */

import { join } from "node:path";
import { query } from "../../sdk.ts";
import { startFakeModel } from "../../tests/support/fake_model.ts";
import { median, reportRow } from "./_table.ts";

const RUNS = Number(Deno.args[0] ?? 20);
const dir = Deno.makeTempDirSync({ prefix: "crab-sdk-startup-" });
const ws = join(dir, "ws");
const home = join(dir, "home");
const config = join(dir, "config");
for (const d of [ws, home, config]) Deno.mkdirSync(d);

await using fake = await startFakeModel([], { models: ["fake-model"] });
const env = {
  PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  HOME: dir,
  CRAB_HOME: home,
  XDG_CONFIG_HOME: config,
  ANTHROPIC_API_KEY: "bench-key",
  ANTHROPIC_BASE_URL: fake.url,
};

/** Milliseconds from the call to `system/init`. */
async function initMs(): Promise<number> {
  const t0 = performance.now();
  const q = query({ prompt: "hi", options: { cwd: ws, env, model: "fake-model" } });
  let ms = NaN;
  for await (const m of q) {
    if (m.type === "system" && m.subtype === "init") {
      ms = performance.now() - t0;
      break;
    }
  }
  return ms;
}

const warm = await initMs();
const times: number[] = [];
for (let i = 0; i < RUNS; i++) times.push(await initMs());
const med = median(times);
reportRow({
  measure: "sdk_init",
  value: med,
  detail: `median of ${RUNS}: ${med.toFixed(1)} ms (warm-up ${warm.toFixed(1)} ms, min ${
    Math.min(...times).toFixed(1)
  }, max ${Math.max(...times).toFixed(1)})`,
});
Deno.removeSync(dir, { recursive: true });
