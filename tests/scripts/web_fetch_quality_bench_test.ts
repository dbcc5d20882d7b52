import assert from "node:assert/strict";

const BENCH = new URL("../../scripts/bench/web_fetch_quality.ts", import.meta.url).pathname;

async function bench(dir: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-prompt", BENCH, dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("web_fetch_quality.ts says where it expects its pages and exits 2 without them", async () => {
  const r = await bench("/nonexistent/readability");
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^web_fetch quality: cannot read the Readability test pages at \/nonexistent\/readability\/ .*\nThey are expected in \.\.\/shared\/fixtures\/readability\/ beside the checkout/,
  );
});

Deno.test("web_fetch_quality.ts exits 1 when fewer pages than the bar pass", async () => {
  // One readerable page in Readability's layout, which passes: still below the bar of 80.
  const dir = Deno.makeTempDirSync({ prefix: "crab-quality-" });
  try {
    Deno.mkdirSync(`${dir}/page`);
    const article = "<p>Lighthouses guided ships along dangerous coastlines for centuries.</p>";
    Deno.writeTextFileSync(
      `${dir}/page/source.html`,
      `<html><head><title>Lighthouses</title></head><body><article><h1>Lighthouses</h1>` +
        `${article.repeat(5)}</article></body></html>`,
    );
    Deno.writeTextFileSync(`${dir}/page/expected.html`, `<div>${article}</div>`);
    Deno.writeTextFileSync(
      `${dir}/page/expected-metadata.json`,
      JSON.stringify({ title: "Lighthouses", readerable: true }),
    );
    const r = await bench(dir);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stdout,
      /^web_fetch quality: 1\/1 readerable pages pass \(bar: 80\) in \d+ ms\n$/,
    );
    assert.match(r.stderr, /^web_fetch quality dropped: 1 pages pass, the bar is 80 \(of 1 /);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
