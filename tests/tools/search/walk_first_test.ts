// The walker's listing cache costs one stat per directory; a process's first walk skips it.
import assert from "node:assert/strict";

Deno.test("walkSync() makes no stat check on a process's first walk and caches from the second", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-walk-first-" }));
  try {
    for (const rel of ["ws/a/one.txt", "ws/a/b/two.txt", "ws/c/three.txt"]) {
      Deno.mkdirSync(`${dir}/${rel.slice(0, rel.lastIndexOf("/"))}`, { recursive: true });
      Deno.writeTextFileSync(`${dir}/${rel}`, "x\n");
    }
    // Listings changed in the last two seconds are never cached; let these age.
    await new Promise((r) => setTimeout(r, 2200));
    const walk = new URL("../../../tools/search/walk.ts", import.meta.url).href;
    const script = `${dir}/run.ts`;
    Deno.writeTextFileSync(
      script,
      [
        `import { walkCacheStats, walkSync } from "${walk}";`,
        `const ws = ${JSON.stringify(`${dir}/ws`)};`,
        "const rows = [];",
        "for (let i = 0; i < 3; i++) {",
        "  const before = walkCacheStats();",
        "  const files = [...walkSync({ root: ws, workspace: ws })].map((e) => e.rel);",
        "  const after = walkCacheStats();",
        "  rows.push({ files, checks: after.checks - before.checks, reads: after.reads - before.reads, hits: after.hits - before.hits });",
        "}",
        "console.log(JSON.stringify(rows));",
        "",
      ].join("\n"),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--no-prompt", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const files = ["a/b/two.txt", "a/one.txt", "c/three.txt"];
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), [
      { files, checks: 0, reads: 4, hits: 0 },
      { files, checks: 4, reads: 4, hits: 0 },
      { files, checks: 4, reads: 0, hits: 4 },
    ]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
