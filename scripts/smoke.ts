/**
 * Smoke test of a built crab binary, as the release workflow runs it on each
 * platform before publishing:
 *
 *   deno run -A scripts/smoke.ts BINARY [--preset full|no-web|read-only]
 *
 * Checks that `BINARY --version` names this checkout's version; that the fence
 * self-check (`crab tool`, which lists the tools this build can offer after
 * leaving out those its permission flags do not cover) offers exactly the
 * preset's tools; and that a read and a grep call work, which needs the store
 * (SQLite) and grep's embedded worker. Runs in a temp workspace with its own
 * data and config dirs. Exit 0 when all hold, 1 with the differences otherwise.
 *
 * @module
 */

import { join } from "node:path";
import { type Preset, PRESET_TOOLS, PRESETS } from "../tools/host/capabilities.ts";
import { CONVERSATION_TOOLS } from "../tools/table.ts";
import { VERSION } from "../version.ts";

function usage(message: string): never {
  console.error(`error: ${message}`);
  console.error("usage: deno run -A scripts/smoke.ts BINARY [--preset full|no-web|read-only]");
  Deno.exit(2);
}

const args = [...Deno.args];
const at = args.indexOf("--preset");
let preset: Preset = "full";
if (at !== -1) {
  const v = args[at + 1];
  if (!PRESETS.includes(v as Preset)) usage(`--preset must be one of ${PRESETS.join(", ")}`);
  preset = v as Preset;
  args.splice(at, 2);
}
if (args.length !== 1) usage(args.length ? `unknown argument "${args[1]}"` : "name the binary");
const binary = args[0].includes("/") ? args[0] : `./${args[0]}`;

const tmp = Deno.makeTempDirSync({ prefix: "crab-smoke-" });
const ws = join(tmp, "ws");
Deno.mkdirSync(ws);
Deno.writeTextFileSync(join(ws, "probe.txt"), "smoke probe\n");
const env = {
  PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  HOME: tmp,
  CRAB_HOME: join(tmp, "home"),
  XDG_CONFIG_HOME: join(tmp, "config"),
  NO_COLOR: "1",
};

async function run(...argv: string[]) {
  const out = await new Deno.Command(binary, {
    args: argv,
    cwd: ws,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** The tools `crab tool` offers of a preset: a conversation's own (`skill`) need a model's session. */
function oneShot(p: Preset): string[] {
  return PRESET_TOOLS[p].filter((t) => !(CONVERSATION_TOOLS as readonly string[]).includes(t));
}

const failures: string[] = [];
const check = (ok: boolean, what: string) => {
  if (!ok) failures.push(what);
};

try {
  const version = await run("--version");
  check(
    version.code === 0 && version.stdout === `crab ${VERSION}\n`,
    `--version printed ${JSON.stringify(version.stdout)} (exit ${version.code}), ` +
      `expected "crab ${VERSION}"`,
  );

  const list = await run("tool");
  const offered = list.stdout.trim().split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0]);
  const want = oneShot(preset);
  const missing = want.filter((t) => !offered.includes(t));
  const extra = offered.filter((t) => !want.includes(t));
  check(list.code === 0, `crab tool exited ${list.code}: ${list.stderr.trim()}`);
  check(missing.length === 0, `the build does not offer ${missing.join(", ")}`);
  check(extra.length === 0, `the build offers ${extra.join(", ")} beyond the ${preset} preset`);
  const leftOut = /this build leaves out/.test(list.stderr);
  check(
    leftOut === (want.length < oneShot("full").length),
    leftOut
      ? `crab tool says: ${list.stderr.trim()}`
      : "crab tool does not say which tools this build leaves out",
  );

  const read = await run("tool", "read", '{"path":"probe.txt"}');
  check(
    read.code === 0 && read.stdout === "1\tsmoke probe\n",
    `read printed ${JSON.stringify(read.stdout)} (exit ${read.code}): ${read.stderr.trim()}`,
  );
  const grep = await run("tool", "grep", '{"pattern":"smoke p[r]obe"}');
  check(
    grep.code === 0 && grep.stdout.includes("probe.txt"),
    `grep printed ${JSON.stringify(grep.stdout)} (exit ${grep.code}): ${grep.stderr.trim()}`,
  );
} finally {
  Deno.removeSync(tmp, { recursive: true });
}

if (failures.length) {
  console.error(`smoke: ${binary} (${preset}) failed:\n  ${failures.join("\n  ")}`);
  Deno.exit(1);
}
console.log(`smoke: ${binary} ok (crab ${VERSION}, ${preset}: ${oneShot(preset).join(", ")})`);
