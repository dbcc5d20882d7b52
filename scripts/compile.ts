/**
 * Builds the standalone crab binary with the permission flags of a preset:
 * `deno task compile [--preset full|no-web|read-only] [--print-flags] [--output PATH]`.
 * `deno compile` needs its `denort` runtime: reachable download, or `DENORT_BIN`.
 *
 * @module
 */

import { type Preset, presetFlags, PRESETS } from "../tools/capabilities.ts";

const args = [...Deno.args];
function take(flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i === -1) return undefined;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
}
const preset = (take("--preset") ?? "full") as Preset;
const output = take("--output") ?? `dist/crab${preset === "full" ? "" : `-${preset}`}`;
if (!PRESETS.includes(preset)) {
  console.error(`Cannot build preset "${preset}": use one of ${PRESETS.join(", ")}`);
  Deno.exit(2);
}
const flags = presetFlags(preset, ["api.anthropic.com", "api.openai.com"]);
if (args.includes("--print-flags")) {
  console.log(flags.join(" "));
  Deno.exit(0);
}
const root = new URL("..", import.meta.url).pathname;
const cmd = new Deno.Command(Deno.execPath(), {
  args: [
    "compile",
    ...flags,
    "--include",
    "tools",
    "--output",
    output,
    "main.ts",
  ],
  cwd: root,
  stdout: "inherit",
  stderr: "piped",
});
const out = await cmd.output();
const err = new TextDecoder().decode(out.stderr);
if (!out.success) {
  Deno.stderr.writeSync(new TextEncoder().encode(err));
  if (/denort|download|dl\.deno\.land|network/i.test(err) && !Deno.env.get("DENORT_BIN")) {
    console.error(
      "\ndeno compile could not get its denort runtime. Make the Deno download reachable, " +
        "or set DENORT_BIN to a denort binary of the same Deno version.",
    );
  }
  Deno.exit(1);
}
console.log(`built ${output} (${preset}: ${flags.join(" ")})`);
