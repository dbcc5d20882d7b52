/**
 * Puts `crab` on PATH from this checkout: `deno install -g` of `main.ts` with the
 * `full` preset's permission flags, read from `tools/host/capabilities.ts` when this
 * runs so they never drift from what the tests and `deno task crab` use.
 *
 *   deno task install [--root DIR] [--name NAME] [--print]
 *
 * Deno puts the command in `$DENO_INSTALL_ROOT/bin` (default `~/.deno/bin`)
 * unless `--root` says otherwise. The command runs this checkout's code with its
 * `deno.json` and lock file, so a `git pull` here updates it; run the task again
 * after moving the checkout. `--print` shows the `deno install` command instead.
 *
 * @module
 */

import { join } from "node:path";
import { presetFlags } from "../tools/host/capabilities.ts";

function usage(message: string): never {
  console.error(`error: ${message}`);
  console.error("usage: deno task install [--root DIR] [--name NAME] [--print]");
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
const rest = args.filter((a) => a !== "--print");
if (rest.length) usage(`unknown argument "${rest[0]}"`);

const checkout = new URL("..", import.meta.url).pathname;
const command = [
  "install",
  "--global",
  "--force",
  "--quiet",
  "--name",
  name,
  ...(root ? ["--root", root] : []),
  "--config",
  join(checkout, "deno.json"),
  ...presetFlags("full"),
  join(checkout, "main.ts"),
];
if (print) {
  console.log(["deno", ...command].join(" "));
  Deno.exit(0);
}
const status = await new Deno.Command(Deno.execPath(), {
  args: command,
  stdout: "inherit",
  stderr: "inherit",
}).spawn().status;
if (!status.success) {
  console.error(`deno install failed with exit code ${status.code}`);
  Deno.exit(1);
}
const home = Deno.env.get("HOME") ?? "~";
const bin = join(root ?? Deno.env.get("DENO_INSTALL_ROOT") ?? join(home, ".deno"), "bin");
console.log(`installed ${join(bin, name)} (${presetFlags("full").join(" ")})`);
const onPath = (Deno.env.get("PATH") ?? "").split(":").includes(bin);
if (!onPath) console.log(`add it to PATH: export PATH="${bin}:$PATH"`);
