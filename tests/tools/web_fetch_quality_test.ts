import assert from "node:assert/strict";
import { harness } from "../_harness.ts";
import { createWebFetchTool } from "../../tools/web_fetch.ts";

/** Mozilla Readability's test pages, kept beside the repository (see their README). */
const FIXTURES = new URL("../../../shared/fixtures/readability/", import.meta.url);

/** Pages that must pass: title and words of the expected article. */
const TARGET_SHARE = 0.95;
/** Share of the expected article's distinct words a page's output must contain. */
const WORD_SHARE = 0.9;

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

Deno.test("web_fetch() extracts the title and text of Readability's test pages", async () => {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(FIXTURES)];
  } catch (e) {
    throw new Error(
      `Cannot read the Readability test pages at ${FIXTURES.pathname} (${e}): they live in ` +
        "the shared folder beside the checkout (../shared/fixtures/readability)",
    );
  }
  const names = entries.filter((e) => e.isDirectory).map((e) => e.name).sort();
  assert.ok(names.length >= 80, `only ${names.length} fixture pages in ${FIXTURES.pathname}`);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const name = decodeURIComponent(new URL(req.url).pathname.split("/")[1]);
    if (!names.includes(name)) return new Response("no such page", { status: 404 });
    return new Response(await Deno.readFile(new URL(`${name}/source.html`, FIXTURES)), {
      headers: { "content-type": "text/html; charset=utf-8" },
    });
  });
  await using h = harness([createWebFetchTool({ allowPrivate: true })]);
  const failures: string[] = [];
  let readerable = 0;
  try {
    for (const name of names) {
      const meta = JSON.parse(
        Deno.readTextFileSync(new URL(`${name}/expected-metadata.json`, FIXTURES)),
      ) as { title?: string | null; readerable?: boolean };
      if (meta.readerable !== true) continue;
      readerable++;
      const r = await h.call("web_fetch", {
        url: `http://127.0.0.1:${server.addr.port}/${name}/`,
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
        await expectedText(Deno.readTextFileSync(new URL(`${name}/expected.html`, FIXTURES))),
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
  const share = passed / readerable;
  console.log(
    `web_fetch quality: ${passed}/${readerable} readerable pages pass ` +
      `(${(share * 100).toFixed(1)}%, target ${TARGET_SHARE * 100}%)` +
      (failures.length ? `; failing:\n  ${failures.join("\n  ")}` : ""),
  );
  assert.ok(share >= TARGET_SHARE, `only ${(share * 100).toFixed(1)}% of the pages pass`);
});
