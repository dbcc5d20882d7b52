/**
 * The house rules of the source tree, checked on the tree itself:
 * - a `_` file is private to its folder: nothing outside the folder imports it
 *   (a test may import the `_` files of the folder it mirrors);
 * - commands are leaves: only `agent/cli/` loads a module of `agent/commands/`;
 * - what a one-shot call (`crab tool`) and print mode load up front holds no
 *   code they load when used: other tools, the job table, undo, the shell
 *   analysis, the differ, the page reader, the report;
 * - a room (a folder of source) stays small enough to read: at most
 *   {@link MAX_ENTRIES} entries (a `.ts` and its `.md` count as one) and
 *   {@link MAX_LINES} lines of its own files; `tools/` and `tools/sandbox/`
 *   keep room for new work ({@link ROOMY});
 * - no file imports itself back, through any chain (type-only imports count),
 *   and no two rooms (`tools/X`, `agent/X`, `mcp`) import each other;
 * - the tool contract (`tools/tool.ts`) imports only types, and only from the
 *   tool layer;
 * - tests follow the modules they test: at least {@link MIRRORED_SHARE} of the
 *   test files sit at the mirrored path (`tests/<path>_test.ts`).
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { filesUnder } from "./support/source_files.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const SOURCE_ROOTS = ["main.ts", "tools", "agent", "mcp", "scripts"];
const ROOMS = ["tools", "agent", "mcp"];
const MAX_ENTRIES = 20;
const MAX_LINES = 4000;
/** Rooms kept below the limit, so the next features fit. */
const ROOMY: Record<string, number> = { tools: 16, "tools/sandbox": 16 };
const MIRRORED_SHARE = 0.75;

/** One relative module a file refers to, and whether only its types are used. */
interface Ref {
  target: string;
  typeOnly: boolean;
  /** Not loaded with the file: `import("…")`, or a worker's `new URL("…", import.meta.url)`. */
  later: boolean;
  line: number;
}

// Static imports and re-exports, `import("…")`, `typeof import("…")` and
// `new URL("…", import.meta.url)`: every way a file here names another.
const REFERENCE =
  /(?:^\s*(import\s+type|import|export)\b[^;"'`]*?from\s*|import\(\s*|new URL\(\s*)(["'])(\.{1,2}\/[^"']+)\2/gm;

/** The relative modules `file` (repository-relative) refers to. */
export function referencesOf(file: string, text: string): Ref[] {
  const refs: Ref[] = [];
  for (const m of text.matchAll(REFERENCE)) {
    const spec = m[3];
    if (!/\.(ts|md|js)$/.test(spec)) continue;
    const before = text.slice(0, m.index);
    const line = before.split("\n").length;
    const typeOnly = m[1] === "import type" || /typeof\s+$/.test(before);
    refs.push({ target: join(dirname(file), spec), typeOnly, later: m[1] === undefined, line });
  }
  return refs;
}

/** The source folder a test file mirrors: `tests/tools/web/x_test.ts` → `tools/web`. */
function mirroredFolder(testFile: string): string {
  return dirname(relative("tests", testFile));
}

const isPrivate = (path: string) => path.split("/").pop()!.startsWith("_");

Deno.test("referencesOf() finds static, dynamic, type-only and URL references", () => {
  const text = [
    `import { a } from "./_a.ts";`,
    `import type { B } from "../b/_b.ts";`,
    `export { c } from "./c.ts";`,
    `const d = await import("./d.ts");`,
    `type E = typeof import("./_e.ts");`,
    `const w = new Worker(new URL("./_w.ts", import.meta.url).href);`,
    `const s = "./not_a_reference.ts";`,
  ].join("\n");
  assert.deepEqual(
    referencesOf("x/f.ts", text).map((r) => [r.target, r.typeOnly, r.later]),
    [
      ["x/_a.ts", false, false],
      ["b/_b.ts", true, false],
      ["x/c.ts", false, false],
      ["x/d.ts", false, true],
      ["x/_e.ts", true, true],
      ["x/_w.ts", false, true],
    ],
  );
});

/** The files loading `file` loads: its static imports and theirs, not types nor `import()`. */
function loadedWith(file: string): Set<string> {
  const seen = new Set<string>();
  const next = [file];
  while (next.length) {
    const f = next.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    let text: string;
    try {
      text = Deno.readTextFileSync(join(ROOT, f));
    } catch {
      continue; // a text asset (`.md`) or a package: nothing of ours below it
    }
    if (!f.endsWith(".ts")) continue;
    for (const r of referencesOf(f, text)) if (!r.typeOnly && !r.later) next.push(r.target);
  }
  return seen;
}

Deno.test("a run loads the code of a tool, a job table, undo or a page reader only when it needs it", () => {
  // `crab tool NAME` loads NAME's module by name; a print run loads each piece at first use.
  const lazy = [
    "agent/undo/snapshot.ts",
    "agent/undo/store.ts",
    "agent/report/mod.ts",
    "tools/policy/bash/unwrap.ts",
    "tools/call/diff.ts",
    "tools/web/html_markdown.ts",
    "tools/web/pinned_fetch.ts",
  ];
  const tool = loadedWith("agent/commands/tool.ts");
  assert.deepEqual(
    [
      ...lazy,
      "tools/read.ts",
      "tools/bash.ts",
      "tools/grep.ts",
      "tools/glob.ts",
      "tools/write.ts",
      "tools/edit.ts",
      "tools/web/web_fetch.ts",
      "tools/jobs/table.ts",
      "tools/sandbox/linux/supervisor.ts",
    ].filter((f) => tool.has(f)),
    [],
  );
  const print = loadedWith("agent/print/mod.ts");
  assert.deepEqual(lazy.filter((f) => print.has(f)), []);
  // The walk is real: both paths load the dispatcher, and print mode the tools it offers.
  assert.ok(tool.has("tools/call/dispatch.ts") && print.has("tools/bash.ts"));
});

Deno.test("a _ file is imported from its own folder only (a test: from the folder it mirrors)", () => {
  const files = [...SOURCE_ROOTS.flatMap(filesUnder), ...filesUnder("tests")];
  const wrong: string[] = [];
  for (const file of files) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    for (const ref of referencesOf(file, text)) {
      if (!isPrivate(ref.target)) continue;
      const home = dirname(ref.target);
      if (home === dirname(file)) continue;
      if (file.startsWith("tests/") && home === mirroredFolder(file)) continue;
      wrong.push(`${file}:${ref.line} imports ${ref.target}`);
    }
  }
  assert.deepEqual(wrong, [], "a file another folder needs is part of its room's face: drop its _");
});

Deno.test("only agent/cli/ loads a command module, and commands do not load each other", () => {
  const wrong: string[] = [];
  for (const file of SOURCE_ROOTS.flatMap(filesUnder)) {
    if (file.startsWith("agent/cli/")) continue;
    const text = Deno.readTextFileSync(join(ROOT, file));
    for (const ref of referencesOf(file, text)) {
      if (!ref.target.startsWith("agent/commands/") || ref.typeOnly) continue;
      wrong.push(`${file}:${ref.line} imports ${ref.target}`);
    }
  }
  assert.deepEqual(
    wrong,
    [],
    "move what two commands share into agent/run/ or a room they both use",
  );
});

Deno.test(`every room has at most ${MAX_ENTRIES} entries and ${MAX_LINES} lines of its own`, () => {
  const rooms: string[] = [];
  const walkRooms = (rel: string) => {
    rooms.push(rel);
    for (const e of Deno.readDirSync(join(ROOT, rel))) {
      if (e.isDirectory) walkRooms(join(rel, e.name));
    }
  };
  ROOMS.forEach(walkRooms);
  const tooBig: string[] = [];
  for (const room of rooms) {
    const entries = new Set<string>();
    let lines = 0;
    for (const e of Deno.readDirSync(join(ROOT, room))) {
      entries.add(e.isDirectory ? e.name : e.name.replace(/\.(ts|md)$/, ""));
      if (e.isFile && e.name.endsWith(".ts")) {
        lines += Deno.readTextFileSync(join(ROOT, room, e.name)).split("\n").length - 1;
      }
    }
    if (entries.size > MAX_ENTRIES || lines > MAX_LINES) {
      tooBig.push(`${room}: ${entries.size} entries, ${lines} lines`);
    }
  }
  assert.deepEqual(tooBig, [], "split the room by job");
});

Deno.test(`tools/ and tools/sandbox/ keep room: at most ${ROOMY.tools} entries each`, () => {
  const over: string[] = [];
  for (const [room, max] of Object.entries(ROOMY)) {
    const entries = new Set<string>();
    for (const e of Deno.readDirSync(join(ROOT, room))) {
      entries.add(e.isDirectory ? e.name : e.name.replace(/\.(ts|md)$/, ""));
    }
    if (entries.size > max) over.push(`${room}: ${entries.size} entries (at most ${max})`);
  }
  assert.deepEqual(over, [], "group the room's files by job");
});

/** Every source file's relative references, as resolved paths. */
function importGraph(): Map<string, Ref[]> {
  const graph = new Map<string, Ref[]>();
  for (const file of SOURCE_ROOTS.flatMap(filesUnder)) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    graph.set(file, referencesOf(file, text).filter((r) => r.target.endsWith(".ts")));
  }
  return graph;
}

/** The groups of files that reach each other (strongly connected components of size > 1). */
export function cyclesOf(graph: ReadonlyMap<string, readonly { target: string }[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const { target: w } of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) out.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

Deno.test("cyclesOf() finds a chain that comes back, through type-only imports too", () => {
  const ref = (target: string) => ({ target });
  const graph = new Map([
    ["a.ts", [ref("b.ts")]],
    ["b.ts", [ref("c.ts")]],
    ["c.ts", [ref("a.ts")]],
    ["d.ts", [ref("a.ts")]],
  ]);
  assert.deepEqual(cyclesOf(graph), [["a.ts", "b.ts", "c.ts"]]);
  assert.deepEqual(cyclesOf(new Map([["a.ts", [ref("b.ts")]], ["b.ts", []]])), []);
});

Deno.test("no file imports itself back through a chain of imports (type-only ones count)", () => {
  const cycles = cyclesOf(importGraph()).map((c) => c.join(" → "));
  assert.deepEqual(cycles, [], "move what both sides need into a file below them");
});

/**
 * The room a source file belongs to: `tools/X`, `agent/X` for a file in such a
 * folder (or below it), `mcp`; the files right in `tools/` (the contract and the
 * tools) and the entry files are no room.
 */
export function roomOf(file: string): string | undefined {
  const parts = file.split("/");
  if (parts[0] === "mcp") return "mcp";
  if ((parts[0] === "tools" || parts[0] === "agent") && parts.length > 2) {
    return `${parts[0]}/${parts[1]}`;
  }
  return undefined;
}

Deno.test("roomOf() names the room of a file at any depth", () => {
  assert.equal(roomOf("tools/sandbox/net/proxy.ts"), "tools/sandbox");
  assert.equal(roomOf("agent/run/runtime.ts"), "agent/run");
  assert.equal(roomOf("mcp/client.ts"), "mcp");
  assert.equal(roomOf("tools/bash.ts"), undefined);
  assert.equal(roomOf("main.ts"), undefined);
});

Deno.test("no two rooms import each other", () => {
  const edges = new Map<string, string>();
  for (const [file, refs] of importGraph()) {
    const from = roomOf(file);
    for (const r of refs) {
      const to = roomOf(r.target);
      if (!from || !to || from === to) continue;
      const key = `${from} → ${to}`;
      if (!edges.has(key)) edges.set(key, `${file}:${r.line} imports ${r.target}`);
    }
  }
  const both: string[] = [];
  for (const [key, example] of edges) {
    const [from, to] = key.split(" → ");
    const back = edges.get(`${to} → ${from}`);
    if (back && from < to) both.push(`${from} ↔ ${to}: ${example}; ${back}`);
  }
  assert.deepEqual(both, [], "one of the two rooms must be the lower one: move what it takes up");
});

Deno.test("the tool contract imports only types, and only from the tool layer", () => {
  const file = "tools/tool.ts";
  const text = Deno.readTextFileSync(join(ROOT, file));
  const wrong = referencesOf(file, text)
    .filter((r) => !r.typeOnly || !r.target.startsWith("tools/"))
    .map((r) => `${file}:${r.line} imports ${r.target}`);
  const external = [
    ...text.matchAll(/^\s*import\s+(?!type\b)[^;]*?from\s*["']([^."'][^"']*)["']/gm),
  ]
    .map((m) => `${file} imports ${m[1]}`);
  assert.deepEqual([...wrong, ...external], []);
});

Deno.test(`at least ${MIRRORED_SHARE * 100}% of test files sit at the path of the module they test`, () => {
  const tests = filesUnder("tests").filter((t) => t.endsWith("_test.ts"));
  const mirrored = tests.filter((t) => {
    const source = relative("tests", t).replace(/_test\.ts$/, ".ts");
    try {
      return Deno.statSync(join(ROOT, source)).isFile;
    } catch {
      return false;
    }
  });
  const share = mirrored.length / tests.length;
  assert.ok(
    share >= MIRRORED_SHARE,
    `${mirrored.length} of ${tests.length} test files (${
      (share * 100).toFixed(1)
    }%) mirror a module`,
  );
});
