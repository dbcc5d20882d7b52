import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, readSettings } from "../../../agent/settings/crab.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";

function file(text: string): { path: string } & Disposable {
  const dir = Deno.makeTempDirSync({ prefix: "crab-config-" });
  const path = join(dir, "config.json");
  Deno.writeTextFileSync(path, text);
  return { path, [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }) };
}

Deno.test("readSettings() keeps known fields and warns about unknown ones by name", () => {
  using f = file(JSON.stringify({ model: "m", maxturns: 3, fancy: true, constructor: 1 }));
  const { settings, warnings } = readSettings(f.path);
  assert.deepEqual(settings, { model: "m" });
  assert.equal(warnings.length, 3);
  assert.equal(
    warnings[0],
    `ignoring unknown field "maxturns" in config "${f.path}" (did you mean "maxTurns"?)`,
  );
  // Settings added later extend the list of known fields; its start stays.
  const known =
    /\(known fields: provider, model, baseUrl, tools, web, webAllowPrivate, allow, (.+, )?maxTurns, contextWindow(, .+)?\)$/;
  assert.ok(warnings[1].startsWith(`ignoring unknown field "fancy" in config "${f.path}" (`));
  assert.match(warnings[1], known);
  assert.ok(warnings[2].startsWith(`ignoring unknown field "constructor" in config "${f.path}" (`));
  assert.match(warnings[2], known);
});

Deno.test("readSettings() suggests a field whose letters were swapped twice", () => {
  using f = file(JSON.stringify({ ocntextWidnow: 1000 }));
  assert.deepEqual(readSettings(f.path).warnings, [
    `ignoring unknown field "ocntextWidnow" in config "${f.path}" (did you mean "contextWindow"?)`,
  ]);
});

Deno.test("readSettings() still refuses a known field of the wrong type", () => {
  using f = file(JSON.stringify({ maxTurns: "many" }));
  assert.throws(() => readSettings(f.path), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(
      e.message,
      `Cannot use config "${f.path}": field "maxTurns" must be a positive integer`,
    );
    return true;
  });
});

Deno.test("readSettings() of a missing file is empty", () => {
  assert.deepEqual(readSettings("/nonexistent/crab/config.json"), { settings: {}, warnings: [] });
});

Deno.test("crab -p runs with an unknown config field and names it once on stderr", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "done" }]);
  Deno.mkdirSync(join(s.config, "crab"));
  const path = join(s.config, "crab", "config.json");
  Deno.writeTextFileSync(
    path,
    JSON.stringify({ provider: "openai", baseUrl: fake.baseUrlFor("openai"), colour: "red" }),
  );
  const r = await s.crab(["-p", "hi"], { env: { OPENAI_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "done\n");
  const lines = r.stderr.split("\n").filter((l) => l.includes("colour"));
  assert.equal(lines.length, 1, r.stderr);
  assert.ok(
    lines[0].startsWith(
      `crab: ignoring unknown field "colour" in config "${path}" (known fields: `,
    ),
    lines[0],
  );
});

Deno.test("readSettings() takes jobs.max as a positive integer, and nothing else under jobs", () => {
  using ok = file(JSON.stringify({ jobs: { max: 3 } }));
  assert.deepEqual(readSettings(ok.path).settings, { jobs: { max: 3 } });
  for (const jobs of [{ max: 0 }, { max: 2.5 }, { most: 3 }, [3]]) {
    using bad = file(JSON.stringify({ jobs }));
    assert.throws(
      () => readSettings(bad.path),
      (e: Error) =>
        e instanceof ConfigError &&
        e.message === `Cannot use config "${bad.path}": field "jobs" must be an object with max, ` +
            "a positive integer",
    );
  }
});
