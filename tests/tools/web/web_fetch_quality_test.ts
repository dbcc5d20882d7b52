import assert from "node:assert/strict";
import { harness } from "../../support/harness.ts";
import { createWebFetchTool } from "../../../tools/web/web_fetch.ts";

/**
 * Pages written for these tests (see their README): each has the clutter of a
 * real site around one article. The measurement over real-world pages is the
 * benchmark `scripts/bench/web_fetch_quality.ts`.
 */
const PAGES = new URL("../../testdata/readable/", import.meta.url);

interface Expected {
  title: string;
  includes: string[];
  excludes: string[];
}

/** Text with Markdown's escapes removed and every run of whitespace made one space. */
function flat(text: string): string {
  return text.replace(/\\([\\`*_{}[\]()#+\-.!|>~])/g, "$1").replace(/\s+/g, " ");
}

const names = [...Deno.readDirSync(PAGES)].filter((e) => e.isDirectory).map((e) => e.name).sort();

Deno.test("web_fetch() pages under test: at least four, each with its expectations", () => {
  assert.ok(names.length >= 4, `only ${names.length} pages in ${PAGES.pathname}`);
});

for (const name of names) {
  Deno.test(`web_fetch() extracts the title and article of the "${name}" page, without its clutter`, async () => {
    const want = JSON.parse(
      Deno.readTextFileSync(new URL(`${name}/expected.json`, PAGES)),
    ) as Expected;
    const html = Deno.readFileSync(new URL(`${name}/source.html`, PAGES));
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
    );
    await using h = harness([createWebFetchTool({ allowPrivate: true })]);
    const r = await h.call("web_fetch", { url: `http://127.0.0.1:${server.addr.port}/${name}/` });
    assert.ok(r.ok, JSON.stringify(r));
    const body = r.output.slice(r.output.indexOf("\n\n") + 2);
    assert.equal(/^# (.*)$/m.exec(body)?.[1], want.title, body);
    const text = flat(body);
    const missing = want.includes.filter((s) => !text.includes(flat(s)));
    assert.deepEqual(missing, [], `missing from:\n${body}`);
    const kept = want.excludes.filter((s) => text.includes(flat(s)));
    assert.deepEqual(kept, [], `clutter kept in:\n${body}`);
  });
}
