// The bundle is a build output of the source: it must answer exactly as the source does, load
// only what a command needs, and start no Node compatibility layer before it is needed.
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildBundle } from "../../scripts/bundle.ts";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { sandbox, SOURCE_MAIN } from "../support/cli.ts";

type Bundle = Awaited<ReturnType<typeof buildBundle>>;

/** Runs `entry` (the source's main.ts or the bundle's main.js) with crab's flags in `s`. */
async function run(
  s: ReturnType<typeof sandbox>,
  entry: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...presetFlags("full"), entry, ...args],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function hidesDynamicImports(b: Bundle, dir: string): Promise<void> {
  for (const f of b.files.filter((f) => f.endsWith(".js"))) {
    const code = Deno.readTextFileSync(join(dir, f));
    // A literal alone is what Deno's graph walk follows.
    assert.doesNotMatch(code, /\bimport\(\s*"\.\.?\/[^"]*"\s*\)/, `${f}: a visible dynamic import`);
    assert.doesNotMatch(code, /from\s*"node:module"/, `${f} imports node:module at load time`);
  }
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", b.main],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(info.code, 0, new TextDecoder().decode(info.stderr));
  const modules = (JSON.parse(new TextDecoder().decode(info.stdout)) as {
    modules: { specifier: string }[];
  }).modules.map((m) => m.specifier);
  // main.js and the few chunks `--version` needs; every command's code is loaded on demand.
  assert.ok(modules.length <= 4, `start-up graph: ${modules.join(", ")}`);
  assert.ok(modules.every((m) => m.startsWith("file:")), modules.join(", "));
}

async function answersAsTheSource(b: Bundle): Promise<void> {
  using s = sandbox();
  s.put("README.md", "# title\n\ncrab here\n");
  for (let i = 0; i < 30; i++) s.put(`src/f${String(i).padStart(2, "0")}.ts`, `x\nhit ${i}\n`);
  s.put(".gitignore", "src/f2*.ts\n");
  const cases = [
    ["--version"],
    ["tool", "read", '{"path":"README.md"}'],
    ["tool", "glob", '{"pattern":"src/**/*.ts"}'],
    // A bounded pattern starts on the main thread; a quantifier runs on the workers.
    ["tool", "grep", '{"pattern":"hit"}'],
    ["tool", "grep", '{"pattern":"hi+t \\\\d","glob":"f1*"}'],
    ["tool", "grep", '{"pattern":"(?:a|a){29}c"}'],
  ];
  for (const args of cases) {
    const source = await run(s, SOURCE_MAIN, args);
    const bundled = await run(s, b.main, args);
    assert.equal(source.code, 0, `${args.join(" ")}: ${source.stderr}`);
    assert.deepEqual(bundled, source, args.join(" "));
  }
}

Deno.test("buildBundle() builds a bundle that loads lazily and answers as the source", async (t) => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-bundle-" });
  try {
    const b = await buildBundle(join(dir, "bundle"));
    await t.step(
      "every relative dynamic import is hidden from the start-up graph",
      () => hidesDynamicImports(b, join(dir, "bundle")),
    );
    await t.step(
      "--version, read, glob and grep answer exactly as from the source",
      () => answersAsTheSource(b),
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
