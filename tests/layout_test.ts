/**
 * The house rules of the source tree, checked on the tree itself:
 * - a `_` file is private to its folder: nothing outside the folder imports it
 *   (a test may import the `_` files of the folder it mirrors);
 * - commands are leaves: only `agent/cli/` loads a module of `agent/commands/`;
 * - a room (a folder of source) stays small enough to read: at most
 *   {@link MAX_ENTRIES} entries (a `.ts` and its `.md` count as one) and
 *   {@link MAX_LINES} lines of its own files.
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;
const SOURCE_ROOTS = ["main.ts", "tools", "agent", "mcp", "scripts"];
const ROOMS = ["tools", "agent", "mcp"];
const MAX_ENTRIES = 20;
const MAX_LINES = 4000;

function filesUnder(rel: string): string[] {
  const abs = join(ROOT, rel);
  if (Deno.statSync(abs).isFile) return [rel];
  const out: string[] = [];
  for (const e of Deno.readDirSync(abs)) {
    const child = join(rel, e.name);
    if (e.isDirectory) {
      if (e.name === "testdata" || e.name === "__snapshots__") continue;
      out.push(...filesUnder(child));
    } else if (e.isFile && e.name.endsWith(".ts")) out.push(child);
  }
  return out;
}

/** One relative module a file refers to, and whether only its types are used. */
interface Ref {
  target: string;
  typeOnly: boolean;
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
    refs.push({ target: join(dirname(file), spec), typeOnly, line });
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
    referencesOf("x/f.ts", text).map((r) => [r.target, r.typeOnly]),
    [
      ["x/_a.ts", false],
      ["b/_b.ts", true],
      ["x/c.ts", false],
      ["x/d.ts", false],
      ["x/_e.ts", true],
      ["x/_w.ts", false],
    ],
  );
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
