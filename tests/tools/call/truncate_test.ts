import assert from "node:assert/strict";
import { entryExists as existsSync } from "../../../tools/fs/exists.ts";
import {
  cleanSpillFiles,
  countNewlines,
  OutputCollector,
  SPILL_MAX_AGE_MS,
  SPILL_SWEEP_EVERY_MS,
  truncateText,
} from "../../../tools/call/truncate.ts";

/** Runs `fn` with a temp data dir `home` and the environment that names it (CRAB_HOME). */
function withCrabHome<T>(fn: (home: string, env: Pick<Deno.Env, "get">) => T): T {
  const home = Deno.makeTempDirSync({ prefix: "crab-home-" });
  try {
    return fn(home, { get: (k) => k === "CRAB_HOME" ? home : undefined });
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
}

Deno.test("truncateText() keeps short text whole", () => {
  const t = truncateText("a\nb\n", { headBytes: 100, tailBytes: 100 });
  assert.deepEqual(
    { text: t.text, truncated: t.truncated, totalLines: t.totalLines, totalBytes: t.totalBytes },
    { text: "a\nb\n", truncated: false, totalLines: 2, totalBytes: 4 },
  );
});

Deno.test("truncateText() keeps head and tail and counts what was cut", () => {
  const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join("\n") + "\n";
  const t = truncateText(lines, { headBytes: 50, tailBytes: 50 });
  assert.equal(t.truncated, true);
  assert.ok(t.text.startsWith("line 0\nline 1\n"));
  assert.ok(t.text.endsWith("line 999\n"));
  assert.equal(t.totalLines, 1000);
  assert.equal(t.totalBytes, new TextEncoder().encode(lines).byteLength);
  assert.equal(t.elidedBytes, t.totalBytes - 100);
  assert.match(
    t.text,
    new RegExp(`\\[… ${t.elidedBytes} bytes \\(${t.elidedLines} lines\\) elided`),
  );
  assert.ok(t.elidedLines > 980 && t.elidedLines < 1000);
});

Deno.test("truncateText() head-only mode drops the tail and appends the hint", () => {
  const t = truncateText("x".repeat(500), { headBytes: 100, hint: "Continue with offset=7." });
  assert.equal(t.text.split("\n")[0], "x".repeat(100));
  assert.match(t.text, /400 bytes .* elided .*Continue with offset=7\.$/);
});

Deno.test("truncateText() never splits a multi-byte character", () => {
  const t = truncateText("€".repeat(1000), { headBytes: 100, tailBytes: 100 });
  assert.ok(!t.text.includes("\uFFFD"));
  assert.equal(
    t.elidedBytes + new TextEncoder().encode(t.text.replace(/\n?\[….*\]\n?/, "")).byteLength,
    3000,
  );
});

Deno.test("OutputCollector spills the full stream to a file named in the marker", () => {
  withCrabHome((home, env) => {
    const c = new OutputCollector({
      headBytes: 10,
      tailBytes: 10,
      spill: true,
      label: "test",
      env,
    });
    const chunk = new TextEncoder().encode("0123456789\n");
    for (let i = 0; i < 100; i++) c.push(chunk);
    const t = c.finish();
    // In this run's own folder, which the sandbox shows commands alone.
    assert.match(t.spillPath!, new RegExp(`^${home}/spill/run-${Deno.pid}-[0-9a-f]{8}/test-`));
    assert.equal(Deno.readTextFileSync(t.spillPath!), "0123456789\n".repeat(100));
    assert.ok(t.text.includes(t.spillPath!));
  });
});

Deno.test("OutputCollector writes no spill file for output that fits", () => {
  withCrabHome((home, env) => {
    const c = new OutputCollector({ headBytes: 100, tailBytes: 100, spill: true, env });
    c.push(new TextEncoder().encode("small"));
    assert.equal(c.finish().spillPath, undefined);
    assert.deepEqual([...Deno.readDirSync(home)].filter((e) => e.name === "spill"), []);
  });
});

Deno.test("OutputCollector tail is right across many small chunks", () => {
  const c = new OutputCollector({ headBytes: 4, tailBytes: 7 });
  for (const s of ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]) {
    c.push(new TextEncoder().encode(s));
  }
  const t = c.finish();
  assert.ok(t.text.startsWith("abcd\n"));
  assert.ok(t.text.endsWith("\njklmnop"));
  assert.equal(t.elidedBytes, 16 - 11);
});

Deno.test("cleanSpillFiles() removes files older than seven days only", () => {
  withCrabHome((home, env) => {
    Deno.mkdirSync(`${home}/spill`);
    Deno.writeTextFileSync(`${home}/spill/old.txt`, "old");
    Deno.writeTextFileSync(`${home}/spill/new.txt`, "new");
    const old = new Date(Date.now() - SPILL_MAX_AGE_MS - 60_000);
    Deno.utimeSync(`${home}/spill/old.txt`, old, old);
    assert.equal(cleanSpillFiles(Date.now(), env), 1);
    assert.deepEqual([...Deno.readDirSync(`${home}/spill`)].map((e) => e.name), ["new.txt"]);
  });
});

Deno.test("cleanSpillFiles() removes an old background job's folder in a run's folder", () => {
  withCrabHome((home, env) => {
    const run = `${home}/spill/run-1-abcd`;
    const job = `${run}/job-b1-abcd`;
    Deno.mkdirSync(`${job}/ports`, { recursive: true });
    Deno.writeTextFileSync(`${job}/output.txt`, "old output");
    const old = new Date(Date.now() - SPILL_MAX_AGE_MS - 60_000);
    for (const p of [`${job}/output.txt`, `${job}/ports`, job, run]) Deno.utimeSync(p, old, old);
    assert.equal(cleanSpillFiles(Date.now(), env), 1);
    assert.deepEqual([...Deno.readDirSync(`${home}/spill`)], []);
  });
});

Deno.test("cleanSpillFiles() walks the spill folder at most once an hour", () => {
  withCrabHome((home, env) => {
    Deno.mkdirSync(`${home}/spill`);
    const now = Date.now();
    assert.equal(cleanSpillFiles(now, env), 0);
    Deno.writeTextFileSync(`${home}/spill/old.txt`, "old");
    const old = new Date(now - SPILL_MAX_AGE_MS - 60_000);
    Deno.utimeSync(`${home}/spill/old.txt`, old, old);
    // Within the hour: the folder is not walked again.
    assert.equal(cleanSpillFiles(now + SPILL_SWEEP_EVERY_MS - 1000, env), 0);
    assert.ok(existsSync(`${home}/spill/old.txt`));
    // An hour on: it is.
    assert.equal(cleanSpillFiles(now + SPILL_SWEEP_EVERY_MS + 1000, env), 1);
    assert.ok(!existsSync(`${home}/spill/old.txt`));
  });
});

Deno.test("truncateText() keeps text exactly at the limit whole", () => {
  const t = truncateText("a".repeat(20), { headBytes: 10, tailBytes: 10 });
  assert.deepEqual([t.text, t.truncated, t.elidedBytes], ["a".repeat(20), false, 0]);
  const over = truncateText("a".repeat(21), { headBytes: 10, tailBytes: 10 });
  assert.equal(over.truncated, true);
  assert.equal(over.elidedBytes, 1);
});

Deno.test("truncateText() counts a last line without a newline", () => {
  assert.equal(truncateText("a\nb", { headBytes: 100 }).totalLines, 2);
  assert.equal(truncateText("a\nb\n", { headBytes: 100 }).totalLines, 2);
  assert.equal(truncateText("", { headBytes: 100 }).totalLines, 0);
});

Deno.test("truncateText() with no head keeps only the tail", () => {
  const t = truncateText("0123456789abcdef", { headBytes: 0, tailBytes: 4 });
  assert.equal(t.truncated, true);
  assert.equal(t.text, "[… 12 bytes (0 lines) elided of 16 bytes (1 lines) …]\ncdef");
});

Deno.test("OutputCollector drops a partial character at the tail's start", () => {
  const c = new OutputCollector({ headBytes: 3, tailBytes: 4 });
  // "€" is 3 bytes; a 4-byte tail of "abc€€" starts inside the first "€".
  c.push(new TextEncoder().encode("abc€€"));
  const t = c.finish();
  assert.ok(t.text.endsWith("\n€"), t.text);
  assert.ok(!t.text.includes("\uFFFD"));
  assert.equal(t.elidedBytes, 9 - 3 - 3);
});

Deno.test("countNewlines() equals a byte-by-byte count at every alignment and length", () => {
  const buf = new Uint8Array(300);
  for (let i = 0; i < buf.length; i++) {
    // Newlines next to bytes that differ from 0x0a in one bit, and 0x8a, 0x0b, 0x00.
    buf[i] = [10, 10, 0x0b, 0x8a, 0x0a, 0x00, 0x2a, 0x0e, 0x1a, 10][(i * 7) % 10];
  }
  const naive = (b: Uint8Array) => b.reduce((n, x) => n + (x === 10 ? 1 : 0), 0);
  for (let start = 0; start < 9; start++) {
    for (let len = 0; len <= 40; len++) {
      const view = buf.subarray(start, start + len);
      assert.equal(countNewlines(view), naive(view), `start ${start}, length ${len}`);
    }
  }
  assert.equal(countNewlines(buf), naive(buf));
  assert.equal(countNewlines(new Uint8Array(4096).fill(10)), 4096);
  assert.equal(countNewlines(new Uint8Array(4097).fill(0xff)), 0);
});
