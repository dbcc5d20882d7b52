/**
 * Builds crab as a bundle: `deno bundle` with code splitting, so start-up
 * loads a few files instead of some hundred modules, and each command's code
 * (print mode, the REPL, MCP, the SDKs) sits in a chunk of its own, loaded only
 * when that command runs. `deno task crab` runs the source, the installed
 * command and the end-to-end tests run a bundle (`tests/support/bundled.ts`),
 * and `tests/scripts/bundle_test.ts` checks that the bundle answers as the
 * source does. Output goes to `dist/bundle/` (ignored by git):
 *
 *   deno run -A scripts/bundle.ts [OUTDIR]
 *   deno run <crab's flags> --quiet dist/bundle/main.js ...
 *
 * Three rewrites follow the bundler, each checked (a build that cannot apply
 * one fails):
 *
 * - A relative dynamic import (`import("./print-X.js")`) becomes one Deno
 *   cannot see before run time. Deno loads every statically visible dynamic
 *   import when a program starts, so without this `crab --version` would read
 *   every chunk.
 * - A module the source loads by a specifier Deno cannot see at start-up (the
 *   grep worker's URL beside the pool, the command tree and the telemetry
 *   switch and the settings reader that `main.ts` imports by a variable) is an entry of its own, and
 *   that specifier names its bundle entry.
 * - The bundler's CommonJS `require`, made at load time from `node:module`,
 *   becomes one made on first call: importing `node:module` starts Deno's Node
 *   compatibility layer, 15-20 ms of every start-up, and only a CommonJS
 *   package's rare `require` of a Node module needs it.
 *
 * A CommonJS package the source loads with `import()` comes out as a chunk
 * whose one export is `default`, the package's `module.exports`; Deno also
 * names each of its exports, the bundle does not. The source takes such a
 * package's exports from `default` (`(await import("ajv")).default`), which
 * both have, and `tests/scripts/installed_test.ts` runs print mode through
 * the installed bundle beside the source.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;

/**
 * Sources loaded by a specifier the graph walk does not follow (a worker's URL, an
 * import by a variable): each is a bundle entry, and the string the source loads
 * it by is rewritten to name that entry.
 */
const HIDDEN_ENTRIES = [
  { source: "tools/search/grep_worker.ts", specifier: "./grep_worker.ts" },
  { source: "tools/jobs/_filter_worker.ts", specifier: "./_filter_worker.ts" },
  { source: "agent/cli/mod.ts", specifier: "./agent/cli/mod.ts" },
  { source: "agent/telemetry/restart.ts", specifier: "./agent/telemetry/restart.ts" },
  { source: "agent/settings/files.ts", specifier: "./agent/settings/files.ts" },
];

/**
 * Workers left out of the bundle and loaded from the source beside it: they
 * load WebAssembly and npm packages by URLs a bundle would break (the image
 * codecs, pdf.js), and they run only when an image is shrunk or a PDF opened.
 * The string the source loads each by is rewritten to the source file's path.
 */
const SOURCE_WORKERS = [
  { source: "tools/fs/media/_image_worker.ts", specifier: "./_image_worker.ts" },
  { source: "tools/fs/media/_pdf_worker.ts", specifier: "./_pdf_worker.ts" },
];

/** The default output directory. */
export const BUNDLE_DIR = join(ROOT, "dist", "bundle");

/** What {@link buildBundle} made. */
export interface Bundle {
  /** Absolute path of the entry to run (`main.js`). */
  main: string;
  /** Every file written, relative to the output directory. */
  files: string[];
}

/** Files under `dir`, relative to it. */
function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...listFiles(p, base));
    else if (e.isFile) out.push(relative(base, p));
  }
  return out.sort();
}

/** A relative dynamic import with a literal specifier, as the bundler writes them. */
const DYNAMIC_IMPORT = /\bimport\(\s*("\.\.?\/[^"]+\.js")\s*\)/g;

/** The bundler's `require` for CommonJS packages, made when the chunk loads. */
const REQUIRE_AT_LOAD = new RegExp(
  String.raw`import\s*\{\s*createRequire as (__deno_internal_createRequire)\s*\}\s*from\s*` +
    String.raw`"node:module";\s*var (\w+)\s*=\s*\1\(import\.meta\.url\);`,
);
/** The same `require`, made on its first call. */
const REQUIRE_ON_CALL = "var $2=(id)=>globalThis.process.getBuiltinModule(" +
  '"node:module").createRequire(import.meta.url)(id);';

/** Builds the bundle into `outDir` (emptied first). Throws when a step fails. */
export async function buildBundle(outDir = BUNDLE_DIR): Promise<Bundle> {
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "deno",
      "--code-splitting",
      "--minify",
      "--outdir",
      outDir,
      "main.ts",
      ...HIDDEN_ENTRIES.map((w) => w.source),
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`deno bundle failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
  const files = listFiles(outDir);
  let hidden = 0;
  const workerUrls = new Map(
    [...HIDDEN_ENTRIES, ...SOURCE_WORKERS].map((w) => [w.specifier, 0]),
  );
  let requireRewritten = 0;
  for (const file of files.filter((f) => f.endsWith(".js"))) {
    const path = join(outDir, file);
    let code = Deno.readTextFileSync(path);
    const before = code;
    code = code.replace(DYNAMIC_IMPORT, (_m, spec: string) => {
      hidden++;
      return `import(${spec}+"")`;
    });
    for (const w of HIDDEN_ENTRIES) {
      const entry = w.source.replace(/\.ts$/, ".js");
      let target = relative(dirname(path), join(outDir, entry));
      if (!target.startsWith(".")) target = `./${target}`;
      const literal = JSON.stringify(w.specifier);
      const parts = code.split(literal);
      if (parts.length > 1) {
        workerUrls.set(w.specifier, workerUrls.get(w.specifier)! + parts.length - 1);
        code = parts.join(JSON.stringify(target));
      }
    }
    for (const w of SOURCE_WORKERS) {
      let target = relative(dirname(path), join(ROOT, w.source));
      if (!target.startsWith(".")) target = `./${target}`;
      const parts = code.split(JSON.stringify(w.specifier));
      if (parts.length > 1) {
        workerUrls.set(w.specifier, (workerUrls.get(w.specifier) ?? 0) + parts.length - 1);
        code = parts.join(JSON.stringify(target));
      }
    }
    if (REQUIRE_AT_LOAD.test(code)) {
      code = code.replace(REQUIRE_AT_LOAD, REQUIRE_ON_CALL);
      requireRewritten++;
    }
    if (code !== before) Deno.writeTextFileSync(path, code);
  }
  if (hidden === 0) {
    throw new Error("bundle: no dynamic import found to hide (bundler output changed?)");
  }
  for (const [specifier, n] of workerUrls) {
    if (n === 0) {
      throw new Error(`bundle: the hidden specifier ${specifier} was not found in the output`);
    }
  }
  const leftover = files.filter((f) => f.endsWith(".js")).filter((f) =>
    /from\s*"node:module"/.test(Deno.readTextFileSync(join(outDir, f)))
  );
  if (leftover.length) {
    throw new Error(`bundle: node:module still imported at load time by ${leftover.join(", ")}`);
  }
  if (requireRewritten > 1) throw new Error("bundle: more than one CommonJS runtime chunk");
  return { main: join(outDir, "main.js"), files };
}

if (import.meta.main) {
  const outDir = Deno.args[0] ?? BUNDLE_DIR;
  const t0 = performance.now();
  const bundle = await buildBundle(outDir);
  let bytes = 0;
  for (const f of bundle.files) bytes += Deno.statSync(join(outDir, f)).size;
  console.log(
    `built ${bundle.main}: ${bundle.files.length} files, ${(bytes / 1024).toFixed(0)} KiB, ` +
      `${(performance.now() - t0).toFixed(0)} ms`,
  );
}
