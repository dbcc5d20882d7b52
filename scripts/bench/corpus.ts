/**
 * Builds, once, the benchmark corpus: real code nobody here wrote. A fixed list
 * of npm packages at exact versions is fetched with `npm pack` (registry
 * tarballs never change once published) and unpacked into `.bench/corpus`
 * (gitignored) as `node_modules/<name>`, which is then made a git repository
 * with a `.gitignore`, so walker, glob and grep benchmarks run on ≥ 10,000 real
 * files with real ignore rules. The tarballs are kept in `.bench/tarballs`, so a
 * rebuild needs no network. Later runs reuse the corpus; delete `.bench/corpus`
 * to rebuild it.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The packages, each at an exact version (the dependency closure of a few
 * popular libraries, frozen). Changing this list changes every benchmark figure.
 */
export const CORPUS_PACKAGES = [
  "typescript@5.9.3",
  "rxjs@7.8.2",
  "tslib@2.9.1",
  "lodash@4.17.21",
  "core-js@3.46.0",
  "date-fns@4.1.0",
  "caniuse-lite@1.0.30001829",
  "@babel/core@7.28.5",
  "@babel/code-frame@7.29.7",
  "@babel/compat-data@7.29.7",
  "@babel/generator@7.29.16",
  "@babel/helper-compilation-targets@7.29.13",
  "@babel/helper-globals@7.29.7",
  "@babel/helper-module-imports@7.29.7",
  "@babel/helper-module-transforms@7.29.16",
  "@babel/helper-string-parser@7.29.15",
  "@babel/helper-validator-identifier@7.29.7",
  "@babel/helper-validator-option@7.29.7",
  "@babel/helpers@7.29.16",
  "@babel/parser@7.29.15",
  "@babel/template@7.29.7",
  "@babel/traverse@7.29.16",
  "@babel/types@7.29.15",
  "@jridgewell/gen-mapping@0.3.13",
  "@jridgewell/remapping@2.3.5",
  "@jridgewell/resolve-uri@3.1.3",
  "@jridgewell/sourcemap-codec@1.6.0",
  "@jridgewell/trace-mapping@0.3.31",
  "baseline-browser-mapping@2.11.41",
  "browserslist@4.29.6",
  "convert-source-map@2.0.0",
  "debug@4.4.3",
  "electron-to-chromium@1.5.496",
  "escalade@3.2.0",
  "gensync@1.0.0-beta.2",
  "js-tokens@4.0.0",
  "jsesc@3.1.0",
  "json5@2.2.3",
  "lru-cache@5.1.1",
  "ms@2.1.3",
  "node-releases@2.0.66",
  "picocolors@1.1.1",
  "semver@6.3.2",
  "update-browserslist-db@1.4.0",
  "yallist@3.1.1",
] as const;

/** The corpus's `.gitignore`: generated and vendored files, as a project would ignore them. */
const GITIGNORE = ["*.map", "*.min.js", "**/esm5/**", ""].join("\n");

const BENCH_DIR = join(fileURLToPath(new URL("../../", import.meta.url)), ".bench");

/** Absolute path of the corpus directory. */
export const CORPUS_DIR = join(BENCH_DIR, "corpus");
const TARBALLS = join(BENCH_DIR, "tarballs");

async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Counts regular files under `dir`, `.git` excluded. */
export function countFiles(dir: string): number {
  let n = 0;
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop()!;
    for (const e of Deno.readDirSync(d)) {
      if (e.name === ".git") continue;
      if (e.isDirectory) stack.push(join(d, e.name));
      else if (e.isFile) n++;
    }
  }
  return n;
}

/** `npm pack`'s file name for a spec: `@scope/name@1.0.0` → `scope-name-1.0.0.tgz`. */
function tarballName(spec: string): string {
  const at = spec.lastIndexOf("@");
  return `${spec.slice(0, at).replace(/^@/, "").replace("/", "-")}-${spec.slice(at + 1)}.tgz`;
}

/** Returns the corpus path, building it first when missing. */
export async function ensureCorpus(): Promise<string> {
  const done = join(CORPUS_DIR, ".corpus-ready");
  try {
    Deno.statSync(done);
    return CORPUS_DIR;
  } catch {
    // build below
  }
  Deno.mkdirSync(TARBALLS, { recursive: true });
  const missing = CORPUS_PACKAGES.filter((spec) => {
    try {
      Deno.statSync(join(TARBALLS, tarballName(spec)));
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length) {
    await run("npm", ["pack", "--pack-destination", TARBALLS, ...missing], TARBALLS);
  }
  await Deno.remove(CORPUS_DIR, { recursive: true }).catch(() => {});
  for (const spec of CORPUS_PACKAGES) {
    const name = spec.slice(0, spec.lastIndexOf("@"));
    const dest = join(CORPUS_DIR, "node_modules", name);
    Deno.mkdirSync(dest, { recursive: true });
    await run("tar", [
      "-xzf",
      join(TARBALLS, tarballName(spec)),
      "-C",
      dest,
      "--strip-components=1",
    ], dest);
  }
  await run("git", ["init", "-q"], CORPUS_DIR);
  Deno.writeTextFileSync(join(CORPUS_DIR, ".gitignore"), GITIGNORE);
  Deno.writeTextFileSync(done, new Date().toISOString() + "\n");
  return CORPUS_DIR;
}

/** Size of what the searches read: files rg would search, and their bytes. */
export async function corpusSize(
  dir: string,
): Promise<{ files: number; searched: number; bytes: number }> {
  const listed = (await run("rg", ["--files", "--no-config"], dir)).split("\n").filter(Boolean);
  let bytes = 0;
  for (const f of listed) bytes += Deno.statSync(join(dir, f)).size;
  return { files: countFiles(dir), searched: listed.length, bytes };
}

if (import.meta.main) {
  const dir = await ensureCorpus();
  const s = await corpusSize(dir);
  console.log(
    `${dir}: ${s.files} files, ${s.searched} not ignored (${(s.bytes / 1e6).toFixed(1)} MB)`,
  );
}
