import assert from "node:assert/strict";
import { unifiedDiff } from "../../../tools/fs/text.ts";

/** GNU diff's hunks for the same change (headers dropped). */
function gnuDiff(a: string, b: string): string {
  const dir = Deno.makeTempDirSync({ prefix: "crab-diff-" });
  try {
    Deno.writeTextFileSync(`${dir}/a`, a);
    Deno.writeTextFileSync(`${dir}/b`, b);
    const out = new Deno.Command("diff", { args: ["-u", `${dir}/a`, `${dir}/b`] }).outputSync();
    return new TextDecoder().decode(out.stdout).split("\n").slice(2).join("\n").replace(/\n$/, "");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("unifiedDiff() gives the same hunks as diff -u on random edits of unique lines", () => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let round = 0; round < 40; round++) {
    const lines = Array.from({ length: 5 + rand(60) }, (_, i) => `line ${i}`);
    const changed: string[] = [];
    for (const l of lines) {
      const r = rand(12);
      if (r === 0) continue; // deleted
      if (r === 1) changed.push(`${l} changed`);
      else changed.push(l);
      if (r === 2) changed.push(`inserted after ${l}`);
    }
    // Files end with a newline, as most do.
    const a = lines.join("\n") + "\n";
    // Some files end without a newline.
    const b = changed.join("\n") + (round % 5 === 0 ? "" : "\n");
    const ours = unifiedDiff(a, b, "f").split("\n").slice(2).join("\n");
    assert.equal(ours, gnuDiff(a, b), `round ${round}`);
  }
});

function gnuDiffWhole(a: string, b: string): string {
  return "--- t\n+++ t\n" + gnuDiff(a, b);
}

Deno.test("unifiedDiff() names the file and shows an unchanged file as headers only", () => {
  assert.equal(unifiedDiff("a\nb\n", "a\nb\n", "x.txt"), "--- x.txt\n+++ x.txt");
  assert.equal(unifiedDiff("", "new\n", "n.txt"), "--- n.txt\n+++ n.txt\n@@ -0,0 +1,1 @@\n+new");
  assert.equal(unifiedDiff("a\nb", "a\nc", "t"), gnuDiffWhole("a\nb", "a\nc"));
});
