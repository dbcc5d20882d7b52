/**
 * web_fetch extraction quality over Mozilla Readability's real-world test pages:
 * each readerable page is served on loopback and fetched through the tool; it
 * passes when the title matches and the output holds 90% of the distinct words
 * (4+ letters) of Readability's expected article.
 *
 *   deno run -A scripts/bench/web_fetch_quality.ts [FIXTURES_DIR]
 *
 * The pages are not part of the repository: by default they are read from
 * `../shared/fixtures/readability/` beside the checkout (one folder per page with
 * `source.html`, `expected.html` and `expected-metadata.json`, as in
 * Readability's `test/test-pages`). Exits 1 when fewer than {@link MIN_PASSING}
 * pages pass (the bar this extractor reached: 80 of 82), 2 when the pages are
 * missing.
 *
 * @module
 */

import { harness } from "../../tests/support/harness.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";

const DEFAULT_FIXTURES = new URL("../../../shared/fixtures/readability/", import.meta.url);
/** Readerable pages that must pass; fewer is a quality drop. */
const MIN_PASSING = 80;
/** Share of the expected article's distinct words a page's output must contain. */
const WORD_SHARE = 0.9;

const fixtures = Deno.args[0]
  ? new URL(`${Deno.args[0].replace(/\/?$/, "/")}`, `file://${Deno.cwd()}/`)
  : DEFAULT_FIXTURES;

/** Distinct words of 4+ letters, lowercased. */
function words(text: string): Set<string> {
  const all = text.toLowerCase().match(/[\p{L}\p{M}]+/gu) ?? [];
  return new Set(all.filter((w) => [...w].length >= 4));
}

/** The text of Readability's expected article HTML, tags and entities resolved. */
async function expectedText(html: string): Promise<string> {
  const { parseHTML } = await import("linkedom");
  // linkedom's types describe a browser window; Deno's libraries have no DOM.
  const { document } = parseHTML(`<!DOCTYPE html><html><body>${html}</body></html>`) as unknown as {
    document: { body: { textContent: string | null } };
  };
  return document.body.textContent ?? "";
}

let names: string[];
try {
  names = [...Deno.readDirSync(fixtures)].filter((e) => e.isDirectory).map((e) => e.name).sort();
} catch (e) {
  console.error(
    `web_fetch quality: cannot read the Readability test pages at ${fixtures.pathname} (${e}).\n` +
      "They are expected in ../shared/fixtures/readability/ beside the checkout, or in the " +
      "folder given as the first argument.",
  );
  Deno.exit(2);
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const name = decodeURIComponent(new URL(req.url).pathname.split("/")[1]);
  if (!names.includes(name)) return new Response("no such page", { status: 404 });
  return new Response(await Deno.readFile(new URL(`${name}/source.html`, fixtures)), {
    headers: { "content-type": "text/html; charset=utf-8" },
  });
});
const failures: string[] = [];
let readerable = 0;
const t0 = performance.now();
try {
  await using h = harness([createWebFetchTool({ allowPrivate: true })]);
  for (const name of names) {
    let meta: { title?: string | null; readerable?: boolean };
    try {
      meta = JSON.parse(Deno.readTextFileSync(new URL(`${name}/expected-metadata.json`, fixtures)));
    } catch {
      continue;
    }
    if (meta.readerable !== true) continue;
    readerable++;
    const r = await h.call("web_fetch", {
      url: `http://127.0.0.1:${server.addr.port}/${encodeURIComponent(name)}/`,
      max_bytes: 1024 * 1024,
    });
    if (!r.ok) {
      failures.push(`${name}: error ${r.error.code}: ${r.error.message}`);
      continue;
    }
    const body = r.output.slice(r.output.indexOf("\n\n") + 2);
    const title = /^# (.*)$/m.exec(body)?.[1] ?? "";
    const wantTitle = (meta.title ?? "").replace(/\s+/g, " ").trim();
    const want = words(
      await expectedText(Deno.readTextFileSync(new URL(`${name}/expected.html`, fixtures))),
    );
    const got = words(body);
    const missing = [...want].filter((w) => !got.has(w));
    const share = want.size ? 1 - missing.length / want.size : 1;
    const problems: string[] = [];
    if (title !== wantTitle) {
      problems.push(`title ${JSON.stringify(title)} ≠ ${JSON.stringify(wantTitle)}`);
    }
    if (share < WORD_SHARE) {
      problems.push(
        `${(share * 100).toFixed(1)}% of ${want.size} words (missing e.g. ${
          missing.slice(0, 5).join(", ")
        })`,
      );
    }
    if (problems.length) failures.push(`${name}: ${problems.join("; ")}`);
  }
} finally {
  await server.shutdown();
}

const passed = readerable - failures.length;
console.log(
  `web_fetch quality: ${passed}/${readerable} readerable pages pass (bar: ${MIN_PASSING}) in ` +
    `${Math.round(performance.now() - t0)} ms` +
    (failures.length ? `; failing:\n  ${failures.join("\n  ")}` : ""),
);
if (passed < MIN_PASSING) {
  console.error(
    `web_fetch quality dropped: ${passed} pages pass, the bar is ${MIN_PASSING} ` +
      `(of ${readerable} readerable pages in ${fixtures.pathname})`,
  );
  Deno.exit(1);
}
