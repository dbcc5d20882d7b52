/**
 * The error codes a built-in tool declares in the Errors section its description
 * ends with, and the codes its source can raise, must agree.
 *
 * What a tool can raise is found by reading source text, not by trusting the
 * declaration: starting from every declaration of `tools/<name>.ts`, the scan
 * follows the names each reached declaration mentions — functions and constants
 * of its own module, names it imports (through re-exports) within `tools/`, the
 * methods of classes in those modules (`.method`), and whole modules loaded with
 * `import()` or `new URL()` (workers) — and collects the code of every
 * `new ToolError(...)` on the way. Following names rather than whole modules keeps
 * a helper module's other functions out: read imports `fs/confine.ts` to open a
 * file, which does not make it raise the write path's `no_space`. The few codes the
 * scan reaches but a tool still cannot raise are listed in {@link NOT_RAISED},
 * each with the reason.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { builtinTools } from "../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import { DISPATCH_ERROR_CODES } from "../../tools/call/dispatch.ts";
import { type AnyTool, TOOL_ERROR_CODES, type ToolErrorCode } from "../../tools/tool.ts";

const ROOT = resolve(new URL("../../", import.meta.url).pathname);
const TOOLS = join(ROOT, "tools");
const KNOWN = new Set<string>(Object.keys(TOOL_ERROR_CODES));

/**
 * Codes the scan reaches through a helper that raises them only for arguments
 * this tool never passes.
 */
const NOT_RAISED: Record<string, Partial<Record<ToolErrorCode, string>>> = {
  bash: {
    job_not_found: "reached through `.read` (a stream reader's), the job table's method's name; " +
      "bash starts jobs and looks none up",
  },
  read: { read_only: "guardPath raises it only for write access" },
  glob: { read_only: "guardPath raises it only for write access" },
  grep: { read_only: "guardPath raises it only for write access" },
};

// --- The source scan ---------------------------------------------------------

/** A top-level declaration of a module, or one method of a class. */
interface Unit {
  module: string;
  name: string;
  /** A class method, reached through `.name` (or `.#name`) from any module. */
  method: boolean;
  text: string;
  /** 1-based line of its first line. */
  line: number;
}

/** Where an imported or re-exported name comes from. */
interface Binding {
  module: string;
  name: string;
}

interface Module {
  path: string;
  units: Unit[];
  /** Local name → the binding it imports. `*` imports bind every member of the module. */
  imports: Map<string, Binding>;
  /** Exported name → where a re-export takes it from. */
  reexports: Map<string, Binding>;
  /** Modules whose every export this one re-exports (`export * from`). */
  star: string[];
  /** Modules this one loads by any means, for the module closure. */
  deps: string[];
}

const DECLARATION =
  /^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|const|let|var|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/;
const METHOD =
  /^ {2}(?:(?:static|async|get|set|override|private|public|protected|readonly)\s+)*\*?(#?[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\(/;
const CLASS = /^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s/;
const CONTROL = new Set(["if", "for", "while", "switch", "catch", "return", "function"]);

/** The source with comment lines blanked, line numbers kept (JSDoc shows `new ToolError`). */
function withoutComments(src: string): string[] {
  let inBlock = false;
  return src.split("\n").map((line) => {
    const t = line.trim();
    if (inBlock) {
      if (t.includes("*/")) inBlock = false;
      return "";
    }
    if (t.startsWith("//")) return "";
    if (t.startsWith("/*")) {
      inBlock = !t.includes("*/");
      return "";
    }
    return line;
  });
}

/** The module `spec` names from `from`, when it is a TypeScript file inside `scope`. */
function localSpecifier(scope: string, from: string, spec: string): string | undefined {
  if (!spec.startsWith(".") || !spec.endsWith(".ts")) return undefined;
  const path = resolve(dirname(from), spec);
  return path.startsWith(scope + "/") ? path : undefined;
}

/** Modules a piece of code loads as a whole: `import("./x.ts")`, `new URL("./x.ts", ...)`. */
function wholeLoads(scope: string, from: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:import|new URL)\(\s*"([^"]+)"/g)) {
    const path = localSpecifier(scope, from, m[1]);
    if (path) out.push(path);
  }
  return out;
}

function parseModule(scope: string, path: string): Module {
  const lines = withoutComments(Deno.readTextFileSync(path));
  const text = lines.join("\n");
  const imports = new Map<string, Binding>();
  const reexports = new Map<string, Binding>();
  const star: string[] = [];
  const deps = wholeLoads(scope, path, text);
  for (const m of text.matchAll(/^import\s+(?:type\s+)?([\s\S]*?)\s+from\s+"([^"]+)"/gm)) {
    const from = localSpecifier(scope, path, m[2]);
    if (!from) continue;
    deps.push(from);
    const clause = m[1];
    const ns = clause.match(/\*\s+as\s+([\w$]+)/);
    if (ns) imports.set(ns[1], { module: from, name: "*" });
    for (const item of clause.match(/\{([^}]*)\}/)?.[1].split(",") ?? []) {
      const [name, local] = item.replace(/^\s*type\s+/, "").split(/\s+as\s+/).map((s) => s.trim());
      if (name) imports.set(local ?? name, { module: from, name });
    }
  }
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"([^"]+)"/gm)) {
    const from = localSpecifier(scope, path, m[2]);
    if (!from) continue;
    deps.push(from);
    for (const item of m[1].split(",")) {
      const [name, exported] = item.replace(/^\s*type\s+/, "").split(/\s+as\s+/).map((s) =>
        s.trim()
      );
      if (name) reexports.set(exported ?? name, { module: from, name });
    }
  }
  for (const m of text.matchAll(/^export\s+\*\s+from\s+"([^"]+)"/gm)) {
    const from = localSpecifier(scope, path, m[1]);
    if (from) star.push(from), deps.push(from);
  }

  const units: Unit[] = [];
  let current: Unit | undefined;
  let classUnit: Unit | undefined;
  const start = (name: string, method: boolean, i: number) => {
    current = { module: path, name, method, text: "", line: i + 1 };
    units.push(current);
  };
  lines.forEach((line, i) => {
    const decl = line.match(DECLARATION);
    if (decl) {
      start(decl[1], false, i);
      classUnit = CLASS.test(line) ? current : undefined;
    } else if (classUnit) {
      const method = line.match(METHOD);
      if (method && !CONTROL.has(method[1])) start(method[1], true, i);
      else if (line === "}") [current, classUnit] = [classUnit, undefined];
    } else if (/^[^\s})\]]/.test(line) && !/^(?:import|export)\b/.test(line)) {
      // A statement of the module itself, unnamed: it runs whenever the module is used.
      start("", false, i);
    }
    if (current) current.text += line + "\n";
  });
  return { path, units, imports, reexports, star, deps };
}

/** Parses `entry` and every module it loads within `scope`. */
function moduleClosure(scope: string, entry: string): Map<string, Module> {
  const modules = new Map<string, Module>();
  const todo = [entry];
  while (todo.length > 0) {
    const path = todo.pop()!;
    if (modules.has(path)) continue;
    const m = parseModule(scope, path);
    modules.set(path, m);
    todo.push(...m.deps);
  }
  return modules;
}

/** A `new ToolError(...)` found in a reached declaration. */
interface Raise {
  code: string;
  where: string;
}

/** The codes of every `new ToolError(...)` in `text`; a code that is not a literal is an error. */
function raisesIn(unit: Unit): Raise[] {
  const out: Raise[] = [];
  for (const m of unit.text.matchAll(/new ToolError\(\s*([^,]*?)\s*,/g)) {
    const at = unit.line + unit.text.slice(0, m.index).split("\n").length - 1;
    const where = `${relative(ROOT, unit.module)}:${at}`;
    const codes = [...m[1].matchAll(/"([^"]*)"/g)].map((c) => c[1]);
    if (codes.length === 0) {
      throw new Error(`Cannot read the code of the ToolError at ${where}: write it as a literal`);
    }
    for (const code of codes) out.push({ code, where });
  }
  return out;
}

/** Every `new ToolError(...)` reachable from the declarations of `entry`, within `scope`. */
function reachableRaises(entry: string, scope = TOOLS): Raise[] {
  const modules = moduleClosure(scope, entry);
  const methods = new Map<string, Unit[]>();
  for (const m of modules.values()) {
    for (const u of m.units) if (u.method) methods.set(u.name, [...methods.get(u.name) ?? [], u]);
  }
  const reached = new Set<Unit>();
  const todo: Unit[] = [];
  const reach = (u: Unit) => {
    if (reached.has(u)) return;
    reached.add(u);
    todo.push(u);
    for (const top of modules.get(u.module)!.units) if (top.name === "") reach(top);
  };
  const reachAll = (path: string) => {
    for (const u of modules.get(path)?.units ?? []) reach(u);
  };
  /** Reaches export `name` of `path`, following re-exports. */
  const reachExport = (path: string, name: string, seen = new Set<string>()) => {
    if (seen.has(`${path}#${name}`)) return;
    seen.add(`${path}#${name}`);
    const m = modules.get(path);
    if (!m) return;
    if (name === "*") return reachAll(path);
    for (const u of m.units) if (!u.method && u.name === name) reach(u);
    const re = m.reexports.get(name);
    if (re) reachExport(re.module, re.name, seen);
    for (const s of m.star) reachExport(s, name, seen);
  };
  reachAll(entry);
  while (todo.length > 0) {
    const unit = todo.pop()!;
    const m = modules.get(unit.module)!;
    const names = new Set(unit.text.match(/[A-Za-z_$][\w$]*/g));
    for (const u of m.units) if (!u.method && u !== unit && names.has(u.name)) reach(u);
    for (const [local, b] of m.imports) if (names.has(local)) reachExport(b.module, b.name);
    for (const [, member] of unit.text.matchAll(/\.(#?[A-Za-z_$][\w$]*)/g)) {
      for (const u of methods.get(member) ?? []) {
        // A private member (`this.#seen`) can only be its own class's.
        if (!member.startsWith("#") || u.module === unit.module) reach(u);
      }
    }
    for (const path of wholeLoads(scope, unit.module, unit.text)) reachAll(path);
  }
  return [...reached].flatMap(raisesIn);
}

function codesOf(raises: Raise[]): string[] {
  return [...new Set(raises.map((r) => r.code))].sort();
}

// --- The descriptions --------------------------------------------------------

/** The codes the description's final `Errors:` section lists, in order. */
function documentedErrors(tool: AnyTool): string[] {
  const lines = tool.description.trimEnd().split("\n");
  const start = lines.lastIndexOf("Errors:");
  assert.ok(start >= 0, `${tool.name}'s description has no final "Errors:" section`);
  const codes: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line === "" || line.startsWith("  ")) continue;
    const item = line.match(/^- `([a-z0-9_]+)`: \S/);
    assert.ok(item, `${tool.name}: the Errors section must end the description; found "${line}"`);
    codes.push(item[1]);
  }
  return codes;
}

function allBuiltins(): AnyTool[] {
  return [...builtinTools(), createWebFetchTool({})];
}

/** A tool's own file: `tools/NAME.ts`, or `NAME.ts` in the folder of its kind (`tools/web/`). */
function sourceOf(tool: AnyTool): string {
  const find = (dir: string): string | undefined => {
    for (const e of Deno.readDirSync(dir)) {
      const path = join(dir, e.name);
      if (e.isFile && e.name === `${tool.name}.ts`) return path;
      const below = e.isDirectory ? find(path) : undefined;
      if (below) return below;
    }
    return undefined;
  };
  const found = find(TOOLS);
  assert.ok(found, `no file ${tool.name}.ts under tools/`);
  return found;
}

function difference(a: Iterable<string>, b: Iterable<string>): string[] {
  const drop = new Set(b);
  return [...new Set(a)].filter((x) => !drop.has(x)).sort();
}

// --- Tests -------------------------------------------------------------------

Deno.test("the scan follows names, re-exports, methods and loaded modules, and nothing else", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const files: Record<string, string> = {
      "tool.ts": [
        'import { helper } from "./lib/mod.ts";',
        'import { Box } from "./box.ts";',
        '/** new ToolError("symlink_loop", ...) in a comment raises nothing. */',
        "export const tool = {",
        "  async run() {",
        "    helper();",
        "    new Box().open();",
        '    await import("./late.ts");',
        '    new Worker(new URL("./worker.ts", import.meta.url));',
        "  },",
        "};",
      ].join("\n"),
      "lib/mod.ts": 'export { helper } from "./_impl.ts";\n',
      "lib/_impl.ts": [
        "function noSpace() {",
        '  return new ToolError("no_space", "m", "h");',
        "}",
        "export function helper() {",
        "  other.#seal();",
        "  throw noSpace();",
        "}",
        "export function unused() {",
        '  throw new ToolError("read_only", "m", "h");',
        "}",
      ].join("\n"),
      "box.ts": [
        "export class Box {",
        "  open() {",
        '    throw new ToolError(this.ok ? "path_changed" : "is_directory", "m", "h");',
        "  }",
        "  #seal() {",
        '    throw new ToolError("invalid_utf8", "m", "h");',
        "  }",
        "}",
      ].join("\n"),
      "late.ts": 'export function late() {\n  throw new ToolError("fetch_failed", "m", "h");\n}\n',
      "worker.ts":
        'self.onmessage = () => {\n  throw new ToolError("regex_timeout", "m", "h");\n};\n',
    };
    for (const [name, text] of Object.entries(files)) {
      Deno.mkdirSync(dirname(join(dir, name)), { recursive: true });
      Deno.writeTextFileSync(join(dir, name), text);
    }
    assert.deepEqual(codesOf(reachableRaises(join(dir, "tool.ts"), dir)), [
      "fetch_failed",
      "is_directory",
      "no_space",
      "path_changed",
      "regex_timeout",
    ]);
    Deno.writeTextFileSync(
      join(dir, "late.ts"),
      'const code = "no_space";\nnew ToolError(code, "m", "h");\n',
    );
    assert.throws(() => reachableRaises(join(dir, "tool.ts"), dir), /write it as a literal/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

for (const tool of allBuiltins()) {
  Deno.test(`${tool.name}'s declared errors are the codes its source can raise`, () => {
    const raises = reachableRaises(sourceOf(tool));
    const excused = Object.keys(NOT_RAISED[tool.name] ?? {});
    const declared = documentedErrors(tool);
    const where = (code: string) =>
      `${code} (${raises.filter((r) => r.code === code).map((r) => r.where).join(", ")})`;
    const undeclared = difference(codesOf(raises), [...declared, ...excused]);
    assert.deepEqual(
      undeclared.map(where),
      [],
      `${tool.name} can raise codes missing from the Errors section of tools/${tool.name}.md`,
    );
    assert.deepEqual(
      difference(declared, codesOf(raises)),
      [],
      `${tool.name} declares codes nothing it runs raises`,
    );
    assert.deepEqual(
      difference(excused, codesOf(raises)),
      [],
      `NOT_RAISED names codes the scan no longer finds for ${tool.name}: drop them`,
    );
    assert.deepEqual(
      declared.filter((c) => excused.includes(c)),
      [],
      `${tool.name} both declares and excuses a code`,
    );
  });

  Deno.test(`${tool.name}'s description ends with its errors, and names no other code`, () => {
    const documented = documentedErrors(tool);
    assert.deepEqual(
      documented.filter((c, i) => !KNOWN.has(c) || documented.indexOf(c) !== i),
      [],
      `the Errors section of tools/${tool.name}.md must list codes of TOOL_ERROR_CODES, each once`,
    );
    const mayName = new Set<string>([...documented, ...DISPATCH_ERROR_CODES]);
    const named = [...tool.description.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]);
    assert.deepEqual(
      named.filter((c) => KNOWN.has(c) && !mayName.has(c)),
      [],
      `tools/${tool.name}.md names codes ${tool.name} cannot fail with`,
    );
  });
}

Deno.test("DISPATCH_ERROR_CODES are the codes dispatch itself raises", () => {
  assert.deepEqual(
    codesOf(reachableRaises(join(TOOLS, "call", "dispatch.ts"))),
    [...DISPATCH_ERROR_CODES].sort(),
  );
});

Deno.test("every code of TOOL_ERROR_CODES is produced somewhere, as a literal", async () => {
  const produced = new Set<string>();
  for (const dir of ["tools", "mcp", "agent"]) {
    for await (const path of tsFiles(join(ROOT, dir))) {
      const text = withoutComments(Deno.readTextFileSync(path)).join("\n");
      const unit = { module: path, name: "", method: false, text, line: 1 };
      for (const r of raisesIn(unit)) produced.add(r.code);
      for (const m of text.matchAll(/\bcode: "([a-z0-9_]+)"/g)) produced.add(m[1]);
    }
  }
  assert.deepEqual(difference(KNOWN, produced), [], "TOOL_ERROR_CODES has codes nothing produces");
});

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* tsFiles(path);
    else if (e.name.endsWith(".ts")) yield path;
  }
}
