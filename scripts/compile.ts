/**
 * Builds the standalone crab binary with exactly the permission flags of a
 * preset or tool list (from `tools/host/capabilities.ts`, the one source of them):
 *
 *   deno task compile [--preset full|no-web|read-only | --tools read,grep,...]
 *                     [--provider-host HOST]... [--mcp-host HOST]... [--mcp-command CMD]...
 *                     [--no-mcp-config] [--output PATH] [--target TRIPLE] [--print-flags]
 *                     [--print-command] [--bundle]
 *
 * `--bundle` compiles the bundle (`scripts/bundle.ts`, built first into
 * `dist/bundle/`) instead of the source: its lazily loaded chunks are embedded.
 *
 * The hosts and commands of the MCP servers configured for this directory (the
 * user's mcp.json and ./.mcp.json) are added unless `--no-mcp-config`.
 *
 * bash needs only `--allow-run=bwrap` (it runs inside bubblewrap), or on macOS
 * (a `--target` ending in `apple-darwin`, or built on a Mac)
 * `--allow-run=/usr/bin/sandbox-exec` (Seatbelt). The `full`
 * preset is the binary people download and configure MCP servers for later, so
 * it keeps an unscoped `--allow-run`; with `--no-mcp-config` it is scoped to
 * bwrap and the `--mcp-command`s given.
 *
 * `deno compile` needs its `denort` runtime: a reachable Deno download, or
 * `DENORT_BIN` pointing at a denort of the same Deno version.
 *
 * @module
 */

import {
  type BuildSpec,
  COMPILED_RUNTIME_FLAGS,
  DEFAULT_PROVIDER_HOSTS,
  fenceFlags,
  type Preset,
  PRESETS,
  presetSpec,
} from "../tools/host/capabilities.ts";
import { loadMcpConfig } from "../mcp/config.ts";

function usage(message: string): never {
  console.error(`error: ${message}`);
  console.error(
    "usage: deno task compile [--preset full|no-web|read-only | --tools LIST] " +
      "[--provider-host HOST]... [--mcp-host HOST]... [--mcp-command CMD]... [--no-mcp-config] " +
      "[--output PATH] [--target TRIPLE] [--print-flags] [--print-command] [--bundle]",
  );
  Deno.exit(2);
}

const args = [...Deno.args];
function takeAll(flag: string): string[] {
  const out: string[] = [];
  for (let i = args.indexOf(flag); i !== -1; i = args.indexOf(flag)) {
    const v = args[i + 1];
    if (v === undefined || v.startsWith("--")) usage(`${flag} needs a value`);
    out.push(v);
    args.splice(i, 2);
  }
  return out;
}
function takeOne(flag: string): string | undefined {
  const all = takeAll(flag);
  if (all.length > 1) usage(`${flag} given twice`);
  return all[0];
}

const presetArg = takeOne("--preset");
const toolsArg = takeOne("--tools");
const output = takeOne("--output");
// Another platform's binary (`deno compile --target`, e.g. aarch64-apple-darwin).
const target = takeOne("--target");
const providerHosts = takeAll("--provider-host");
const mcpHosts = takeAll("--mcp-host");
const mcpCommands = takeAll("--mcp-command");
const printOnly = args.includes("--print-flags");
const printCommand = args.includes("--print-command");
const useConfig = !args.includes("--no-mcp-config");
const fromBundle = args.includes("--bundle");
const rest = args.filter((a) =>
  !["--print-flags", "--print-command", "--no-mcp-config", "--bundle"].includes(a)
);
if (rest.length) usage(`unknown argument "${rest[0]}"`);
if (presetArg && toolsArg) usage("give --preset or --tools, not both");
if (presetArg && !PRESETS.includes(presetArg as Preset)) {
  usage(`Cannot build preset "${presetArg}": use one of ${PRESETS.join(", ")}`);
}

const hosts = providerHosts.length ? providerHosts : DEFAULT_PROVIDER_HOSTS;
if (useConfig) {
  // The MCP servers configured here (user file and this directory's .mcp.json) must stay reachable.
  const { servers, problems } = loadMcpConfig(Deno.cwd());
  for (const p of problems) console.error(`note: ${p}`);
  for (const server of servers) {
    if (server.url) mcpHosts.push(new URL(server.url).host);
    else if (server.command) mcpCommands.push(server.command);
  }
}
// The OS the binary runs on picks bash's sandbox program.
const os = target ? (target.endsWith("apple-darwin") ? "darwin" : "linux") : Deno.build.os;
const spec: BuildSpec = toolsArg
  ? {
    tools: toolsArg.split(",").map((t) => t.trim()).filter(Boolean),
    providerHosts: hosts,
    mcpHosts,
    mcpCommands,
    os,
  }
  : {
    ...presetSpec((presetArg ?? "full") as Preset, hosts, {
      hosts: mcpHosts,
      commands: mcpCommands,
      anyCommand: (presetArg ?? "full") === "full" && useConfig,
    }),
    os,
  };

let fence;
try {
  fence = fenceFlags(spec);
} catch (e) {
  usage(e instanceof Error ? e.message : String(e));
}
if (printOnly) {
  console.log(fence.flags.join(" "));
  for (const n of fence.notes) console.error(`note: ${n}`);
  Deno.exit(0);
}

const name = toolsArg ? "custom" : presetArg ?? "full";
const out = output ?? `dist/crab${name === "full" ? "" : `-${name}`}`;
const root = new URL("..", import.meta.url).pathname;
// grep's, bash_output's filter's, the image decoder's and the PDF reader's workers are loaded by
// URL at run time, and the bundle's chunks by hidden imports: both must be embedded explicitly. So
// is the command tree, which main.ts may import by a specifier Deno does not follow at start-up.
let entry = [
  "--include",
  "tools/search/grep_worker.ts",
  "--include",
  "tools/jobs/_filter_worker.ts",
  "--include",
  "tools/fs/media/_image_worker.ts",
  "--include",
  "tools/fs/media/_pdf_worker.ts",
  "--include",
  "agent/cli/mod.ts",
  "--include",
  "agent/telemetry/restart.ts",
  "--include",
  "agent/settings/files.ts",
  "main.ts",
];
if (fromBundle) {
  // Built here, unless the command is only printed.
  const { buildBundle, BUNDLE_DIR } = await import("./bundle.ts");
  const main = printCommand ? `${BUNDLE_DIR}/main.js` : (await buildBundle()).main;
  entry = ["--include", BUNDLE_DIR, main];
}
const compileArgs = [
  "compile",
  ...fence.flags,
  ...COMPILED_RUNTIME_FLAGS,
  ...(target ? ["--target", target] : []),
  "--output",
  out,
  ...entry,
];
if (printCommand) {
  // What would run, in the checkout's folder.
  console.log(["deno", ...compileArgs].join(" "));
  Deno.exit(0);
}
const child = new Deno.Command(Deno.execPath(), {
  args: compileArgs,
  cwd: root,
  stdout: "inherit",
  stderr: "piped",
});
const result = await child.output();
const err = new TextDecoder().decode(result.stderr);
if (!result.success) {
  Deno.stderr.writeSync(new TextEncoder().encode(err));
  if (/denort|download|dl\.deno\.land|network|dns|connect/i.test(err)) {
    console.error(
      Deno.env.get("DENORT_BIN")
        ? `\ndeno compile failed with DENORT_BIN=${
          Deno.env.get("DENORT_BIN")
        }: it must be a denort of this Deno version (${Deno.version.deno}).`
        : `\ndeno compile could not get its denort runtime (it downloads it from dl.deno.land). ` +
          `Make that download reachable, or set DENORT_BIN to a denort binary of Deno ${Deno.version.deno}.`,
    );
  }
  Deno.exit(1);
}
for (const n of fence.notes) console.error(`note: ${n}`);
console.log(`built ${out} (${name}: ${fence.flags.join(" ")})`);
