// Differential tests: grep's output against ripgrep's on a real tree (crab's own sources, plus
// CRLF, non-ASCII, binary, hidden and ignored files).
import assert from "node:assert/strict";
import { until } from "../support/until.ts";
import { type GrepArgs, grepTool } from "../../tools/grep.ts";
import { poolReady, shutdownPool, warmPool } from "../../tools/search/grep_pool.ts";
import { harness } from "../support/harness.ts";

const REPO = new URL("../../", import.meta.url).pathname;

type H = ReturnType<typeof harness>;

/** Bytes of crab's sources copied: enough to be a real tree, few enough to stay under grep's cap. */
const SOURCE_BUDGET = 320 * 1024;

async function realTree(h: H): Promise<void> {
  // The first files of crab's sources in path order, up to a size budget, so the output stays
  // under grep's own output cap however the sources grow.
  let copied = 0;
  const copy = (d: string) => {
    const entries = [...Deno.readDirSync(`${REPO}${d}`)].sort((a, b) => a.name < b.name ? -1 : 1);
    for (const e of entries) {
      if (e.isDirectory) copy(`${d}/${e.name}`);
      if (!e.isFile) continue;
      const bytes = Deno.readFileSync(`${REPO}${d}/${e.name}`);
      if (copied + bytes.byteLength > SOURCE_BUDGET) continue;
      copied += bytes.byteLength;
      h.put(`${d}/${e.name}`, bytes);
    }
  };
  for (const d of ["mcp", "tools"]) copy(d);
  await new Deno.Command("git", { args: ["init", "-q"], cwd: h.dir }).output();
  h.put(".gitignore", "*.md\nscripts/bench/\n");
  // CRLF copy of a real source file, a non-ASCII file, a binary, hidden and ignored files.
  h.put(
    "crlf/walk.ts",
    Deno.readTextFileSync(`${REPO}tools/search/walk.ts`).replaceAll("\n", "\r\n"),
  );
  h.put("intl/notes.txt", "café walk; export\nnaïve return 42 ms;\nÜber function import\n");
  h.put("bin/blob.dat", new Uint8Array([102, 117, 110, 99, 116, 105, 111, 110, 0, 10, 59]));
  h.put(".hidden/secret.ts", "export function hidden() { return 1; }\n");
  h.put("ignored.md", "function in markdown;\n");
}

async function rg(dir: string, args: string[]): Promise<string[]> {
  const out = await new Deno.Command("rg", {
    args: ["--no-config", "--crlf", ...args],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.code === 0 || out.code === 1, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l !== "")
    .map((l) => l.replace(/\r$/, "")).sort();
}

/** Starts the worker pool and waits (bounded) until every worker is up. */
async function poolUp(): Promise<void> {
  warmPool();
  await until(() => poolReady(), "the worker pool started", { everyMs: 10 });
  assert.ok(poolReady(), "the worker pool started");
}

async function crab(h: H, args: GrepArgs): Promise<string[]> {
  const r = await h.call("grep", { max_results: 10000, ...args });
  assert.equal(r.ok, true, JSON.stringify(r));
  const out = r.ok ? r.output : "";
  if (out.startsWith("No matches found")) return [];
  // Result lines start with a path; only the truncation note starts with "[".
  assert.ok(!/\n\[Results truncated/.test(out), `raise max_results: ${JSON.stringify(args)}`);
  return out.split("\n").sort();
}

const PATTERNS: { name: string; pattern: string; ci?: boolean }[] = [
  { name: "common literal", pattern: "function" },
  { name: "rare literal", pattern: "formatResult" },
  { name: "word boundary", pattern: "\\bwalk" },
  { name: "start anchor", pattern: "^import" },
  { name: "end anchor", pattern: ";$" },
  { name: "alternation", pattern: "export|return" },
  { name: "case-insensitive", pattern: "toolerror", ci: true },
  { name: "classes and quantifiers", pattern: "\\d+ ms" },
];

Deno.test("grep() content output equals rg -n --no-heading --crlf on a real tree", async () => {
  await using h = harness([grepTool]);
  await realTree(h);
  for (const p of PATTERNS) {
    const expected = await rg(h.dir, [
      "-n",
      "--no-heading",
      ...(p.ci ? ["-i"] : []),
      "-e",
      p.pattern,
    ]);
    assert.ok(expected.length > 0, `${p.name}: rg finds something`);
    const args = { pattern: p.pattern, ...(p.ci ? { case_insensitive: true } : {}) };
    // The first search of a process (bounded patterns start on this thread), then the pool's.
    shutdownPool();
    assert.deepEqual(await crab(h, args), expected, `${p.name}, first search`);
    await poolUp();
    assert.deepEqual(await crab(h, args), expected, `${p.name}, on the running pool`);
  }
  // The CRLF file and the non-ASCII file took part.
  const fn = await crab(h, { pattern: "\\bwalk" });
  assert.ok(fn.some((l) => l.startsWith("crlf/walk.ts:")));
  assert.ok(fn.includes("intl/notes.txt:1:café walk; export"));
});

Deno.test("grep() files_with_matches equals rg -l and count equals rg -c", async () => {
  await using h = harness([grepTool]);
  await realTree(h);
  for (const p of PATTERNS) {
    const ci = p.ci ? ["-i"] : [];
    const opt = p.ci ? { case_insensitive: true } : {};
    assert.deepEqual(
      await crab(h, { pattern: p.pattern, output_mode: "files_with_matches", ...opt }),
      await rg(h.dir, ["-l", ...ci, "-e", p.pattern]),
      `${p.name} -l`,
    );
    assert.deepEqual(
      await crab(h, { pattern: p.pattern, output_mode: "count", ...opt }),
      await rg(h.dir, ["-c", ...ci, "-e", p.pattern]),
      `${p.name} -c`,
    );
  }
});

Deno.test("grep() with a path and a glob equals rg with the same path and -g", async () => {
  await using h = harness([grepTool]);
  await realTree(h);
  const expected = await rg(h.dir, [
    "-n",
    "--no-heading",
    "-g",
    "*.ts",
    "-e",
    "^export function",
    "tools",
  ]);
  assert.ok(expected.length > 20);
  assert.deepEqual(
    await crab(h, { pattern: "^export function", path: "tools", glob: "*.ts" }),
    expected,
  );
});
