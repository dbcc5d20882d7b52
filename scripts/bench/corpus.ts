/**
 * Builds, once, the benchmark corpus: a fixed list of pinned npm packages
 * installed into `.bench/corpus` (gitignored), turned into a git repository with
 * a `.gitignore`, so walker, glob and grep benchmarks run on ≥ 10,000 real files.
 * Later runs reuse it; delete `.bench/corpus` to rebuild.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The pinned packages; changing this list changes every benchmark figure. */
export const CORPUS_PACKAGES = [
  "typescript@5.9.3",
  "rxjs@7.8.2",
  "lodash@4.17.21",
  "@babel/core@7.28.5",
  "core-js@3.46.0",
  "date-fns@4.1.0",
] as const;

const GITIGNORE = ["*.map", "*.min.js", "**/esm5/**", "node_modules/.package-lock.json", ""].join(
  "\n",
);

/** Absolute path of the corpus directory. */
export const CORPUS_DIR = join(
  fileURLToPath(new URL("../../", import.meta.url)),
  ".bench",
  "corpus",
);

async function run(cmd: string, args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
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

/** Returns the corpus path, building it first when missing. */
export async function ensureCorpus(): Promise<string> {
  const done = join(CORPUS_DIR, ".corpus-ready");
  try {
    Deno.statSync(done);
    return CORPUS_DIR;
  } catch {
    // build below
  }
  await Deno.remove(CORPUS_DIR, { recursive: true }).catch(() => {});
  Deno.mkdirSync(CORPUS_DIR, { recursive: true });
  Deno.writeTextFileSync(
    join(CORPUS_DIR, "package.json"),
    JSON.stringify({ name: "crab-bench-corpus", private: true }),
  );
  await run("npm", [
    "install",
    "--prefix",
    CORPUS_DIR,
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    "--save-exact",
    ...CORPUS_PACKAGES,
  ], CORPUS_DIR);
  await run("git", ["init", "-q"], CORPUS_DIR);
  Deno.writeTextFileSync(join(CORPUS_DIR, ".gitignore"), GITIGNORE);
  Deno.writeTextFileSync(done, new Date().toISOString() + "\n");
  return CORPUS_DIR;
}

if (import.meta.main) {
  const dir = await ensureCorpus();
  console.log(`${dir}: ${countFiles(dir)} files`);
}
