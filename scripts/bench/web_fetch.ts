/**
 * web_fetch extraction time (HTML → Markdown, no network) over the Readability
 * test pages, against the peer a plain implementation would run: linkedom's
 * parse plus Readability's own parse to HTML. Prints p50 and max of the per-page
 * medians. Targets: p50 ≤ 15 ms, max ≤ 250 ms. It runs under crab's own
 * flags (`_as_crab.ts`): V8's decide what a big page's DOM costs.
 *
 * @module
 */

import { htmlToMarkdown } from "../../tools/web/html_markdown.ts";
import { reportRow } from "./_table.ts";
import { runAsCrab } from "./_as_crab.ts";

console.log(`flags: ${await runAsCrab(new URL(import.meta.url))}`);

const RUNS = Number(Deno.args[0] ?? 5);
const FIXTURES = new URL("../../../shared/fixtures/readability/", import.meta.url);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const pages = [...Deno.readDirSync(FIXTURES)]
  .filter((e) => e.isDirectory)
  .map((e) => e.name)
  .sort()
  .map((name) => ({
    name,
    html: Deno.readTextFileSync(new URL(`${name}/source.html`, FIXTURES)),
  }));

const { parseHTML } = await import("linkedom");
const { Readability } = await import("@mozilla/readability");
// linkedom's types describe a browser window and Readability's a browser Document;
// Deno's libraries have no DOM, so the peer goes through `unknown`.
type Doc = ConstructorParameters<typeof Readability>[0];

/** The peer: what a plain Readability-over-linkedom extraction costs. */
function peer(html: string): number {
  const t0 = performance.now();
  const { document } = parseHTML(html) as unknown as { document: Doc };
  new Readability(document).parse();
  return performance.now() - t0;
}

async function crab(html: string): Promise<number> {
  const t0 = performance.now();
  await htmlToMarkdown(html, "https://example.com/articles/page.html");
  return performance.now() - t0;
}

// Warm up module loading and the JIT on a mid-sized page.
for (let i = 0; i < 3; i++) {
  await crab(pages[0].html);
  peer(pages[0].html);
}

const rows: Array<{ name: string; crab: number; peer: number; kib: number }> = [];
for (const page of pages) {
  const c: number[] = [];
  const p: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    c.push(await crab(page.html));
    p.push(peer(page.html));
  }
  rows.push({ name: page.name, crab: median(c), peer: median(p), kib: page.html.length / 1024 });
}

const crabMs = rows.map((r) => r.crab);
const peerMs = rows.map((r) => r.peer);
const slowest = [...rows].sort((a, b) => b.crab - a.crab).slice(0, 5);
console.log(`pages: ${rows.length}, runs per page: ${RUNS} (per-page medians)`);
for (const [label, q] of [["p50", 0.5], ["p90", 0.9], ["max", 1]] as const) {
  const c = quantile(crabMs, q);
  const p = quantile(peerMs, q);
  console.log(
    `${label.padEnd(4)} crab ${c.toFixed(1).padStart(7)} ms  readability+linkedom ${
      p.toFixed(1).padStart(7)
    } ms  ratio ${(c / p).toFixed(2)}×`,
  );
}
console.log(`targets: p50 ≤ 15 ms, max ≤ 250 ms`);
const worst = [...rows].sort((a, b) => b.crab - a.crab)[0];
reportRow({
  measure: "web_fetch_max",
  value: worst.crab,
  detail: `slowest page ${worst.name} (${worst.kib.toFixed(0)} KiB; Readability over linkedom ` +
    `alone ${worst.peer.toFixed(0)} ms); p50 ${quantile(crabMs, 0.5).toFixed(1)} ms`,
});
console.log("slowest pages:");
for (const r of slowest) {
  console.log(
    `  ${r.name.padEnd(32)} ${r.crab.toFixed(1).padStart(7)} ms (peer ${
      r.peer.toFixed(1).padStart(7)
    } ms, ${r.kib.toFixed(0)} KiB)`,
  );
}
