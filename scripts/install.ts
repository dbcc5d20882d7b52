/**
 * Puts `crab` on PATH from this checkout: a shell script that runs the
 * checkout's bundle (`scripts/refresh_bundle.ts`: a few files instead of some
 * hundred modules, so a start costs about half) with the `full` preset's
 * permission flags, read from `tools/host/capabilities.ts` when this runs so
 * they never drift from what the tests and `deno task crab` use.
 *
 *   deno task install [--root DIR] [--name NAME] [--print] [--source]
 *
 * The script goes to `$DENO_INSTALL_ROOT/bin` (default `~/.deno/bin`) unless
 * `--root` says otherwise. The bundle is built here; when a source file of the
 * checkout is newer than the bundle (a `git pull`, an edit), the script builds
 * it again before it starts crab (a few seconds, said on stderr), and runs
 * `main.ts` itself if the build fails. `--source` writes a script that always
 * runs `main.ts` with the checkout's `deno.json` and lock file. Run the task
 * again after moving the checkout. `--print` shows the script instead of
 * writing it.
 *
 * crab gets a Deno cache of its own, `.deno` in the checkout (`CRAB_DENO_DIR`
 * names another place), filled here
 * (`deno install --frozen`): the JavaScript Deno emits from crab's TypeScript,
 * V8's code cache and the npm packages crab loads all live there, where the
 * sandbox keeps them read-only (see `tools/host/own_roots.ts`), not in the Deno
 * cache the user's own projects share. The script names the user's `DENO_DIR`
 * in `CRAB_OUTER_DENO_DIR`, and crab gives it back to the commands it starts.
 *
 * @module
 */

import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { presetFlags, RUNTIME_FLAGS } from "../tools/host/capabilities.ts";
import { INSTALLED, refreshBundle, STAMP, WATCHED } from "./refresh_bundle.ts";
import {
  LAUNCHER_VAR,
  LAUNCHERS_FILE,
  OUTER_DENO_DIR_VAR,
  OWN_DENO_DIR,
  OWN_DENO_DIR_VAR,
} from "../tools/host/own_roots.ts";

function usage(message: string): never {
  console.error(`error: ${message}`);
  console.error("usage: deno task install [--root DIR] [--name NAME] [--print] [--source]");
  Deno.exit(2);
}

const args = [...Deno.args];
function take(flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i === -1) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith("--")) usage(`${flag} needs a value`);
  args.splice(i, 2);
  return v;
}
const root = take("--root");
const name = take("--name") ?? "crab";
const print = args.includes("--print");
const fromSource = args.includes("--source");
const rest = args.filter((a) => a !== "--print" && a !== "--source");
if (rest.length) usage(`unknown argument "${rest[0]}"`);
if (!/^[\w.-]+$/.test(name) || name.startsWith(".")) {
  usage(`Cannot name the command "${name}": use letters, digits, ".", "_" and "-"`);
}

/** `s` quoted for sh. */
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

const checkout = dirname(dirname(fileURLToPath(import.meta.url)));
const denoDir = resolve(Deno.env.get(OWN_DENO_DIR_VAR) || join(checkout, OWN_DENO_DIR));
const home = Deno.env.get("HOME") ?? "~";
const bin = join(root ?? Deno.env.get("DENO_INSTALL_ROOT") ?? join(home, ".deno"), "bin");
const path = join(bin, name);
const runSource = [
  "exec deno run",
  ...presetFlags("full"),
  ...RUNTIME_FLAGS,
  "--quiet",
  "--config",
  quote(join(checkout, "deno.json")),
  quote(new URL("../main.ts", import.meta.url).href),
  '"$@"',
].join(" ");
const installed = join(checkout, INSTALLED);
const stamp = join(checkout, STAMP);
/** The shell test that is true when the bundle is missing or older than a source file. */
const stale = `[ ! -f ${quote(join(installed, "main.js"))} ] || [ ! -f ${quote(stamp)} ] || ` +
  `[ -n "$(find ${WATCHED.map((w) => quote(join(checkout, w))).join(" ")} -newer ${
    quote(stamp)
  } -print -quit 2>/dev/null)" ]`;
const script = [
  "#!/bin/sh",
  `# crab from ${checkout}, written by \`deno task install\`. crab runs with a Deno cache of`,
  "# its own, which its sandbox keeps out of reach of commands; the commands it starts get",
  "# the DENO_DIR set here.",
  `export ${OUTER_DENO_DIR_VAR}="\${DENO_DIR-}" ${LAUNCHER_VAR}=${quote(path)} DENO_DIR=${
    quote(denoDir)
  }`,
  ...(fromSource ? [runSource] : [
    "# The bundle of the checkout, built again when a source file is newer; the source if that fails.",
    `if ${stale}; then`,
    `  deno run --allow-read --allow-write --allow-run --allow-env --no-prompt --quiet --config ${
      quote(join(checkout, "deno.json"))
    } ${quote(join(checkout, "scripts", "refresh_bundle.ts"))} >&2 ||`,
    `    ${runSource}`,
    "fi",
    [
      "exec deno run",
      ...presetFlags("full"),
      ...RUNTIME_FLAGS,
      "--quiet",
      quote(join(installed, "main.js")),
      '"$@"',
    ].join(" "),
  ]),
  "",
].join("\n");
if (print) {
  Deno.stdout.writeSync(new TextEncoder().encode(script));
  Deno.exit(0);
}

// crab's npm packages into its own cache, so that its first start needs no download.
const fill = await new Deno.Command(Deno.execPath(), {
  args: ["install", "--frozen", "--quiet", "--config", join(checkout, "deno.json")],
  cwd: checkout,
  env: { DENO_DIR: denoDir },
  stdout: "inherit",
  stderr: "inherit",
}).spawn().status;
if (!fill.success) {
  console.error(`deno install --frozen failed with exit code ${fill.code}`);
  Deno.exit(1);
}
if (!fromSource) {
  try {
    // Built with crab's own cache, as the installed script builds it again (the bundler too).
    Deno.env.set("DENO_DIR", denoDir);
    await refreshBundle(checkout);
  } catch (e) {
    console.error(`error: Cannot build the bundle: ${e instanceof Error ? e.message : e}`);
    console.error("hint: deno task install --source installs a crab that runs the source");
    Deno.exit(1);
  }
}
Deno.mkdirSync(bin, { recursive: true });
Deno.writeTextFileSync(path, script, { mode: 0o755 });
Deno.chmodSync(path, 0o755);
// The crab started another way (`deno task crab`) protects this script as well.
const list = join(denoDir, LAUNCHERS_FILE);
let listed: string[] = [];
try {
  listed = Deno.readTextFileSync(list).split("\n").filter(Boolean);
} catch {
  // The first one.
}
if (!listed.includes(path)) Deno.writeTextFileSync(list, [...listed, path, ""].join("\n"));
// `deno install -g`, used before, kept a copy of deno.json and node_modules here: unused now.
const leftover = join(bin, `.${name}`);
try {
  if (Deno.statSync(join(leftover, "deno.json")).isFile) {
    Deno.removeSync(leftover, { recursive: true });
  }
} catch {
  // Nothing left over.
}
console.log(`installed ${path} (${presetFlags("full").join(" ")})`);
const onPath = (Deno.env.get("PATH") ?? "").split(":").includes(bin);
if (!onPath) console.log(`add it to PATH: export PATH="${bin}:$PATH"`);
