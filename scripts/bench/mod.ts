/**
 * Runs every benchmark in this folder in turn; each prints its own figures and
 * ratios against the peer tool measured in the same run.
 *
 * @module
 */

const here = new URL(".", import.meta.url);
const benches = [
  "startup.ts",
  "dispatch.ts",
  "walk.ts",
  "glob.ts",
  "grep.ts",
  "bash_memory.ts",
  "sandbox.ts",
  "mcp_serve.ts",
  "print_startup.ts",
  "web_fetch.ts",
  "web_fetch_quality.ts",
  "mcp_startup.ts",
  "repl_startup.ts",
  "confinement.ts",
];
for (const name of benches) {
  const url = new URL(name, here);
  try {
    Deno.statSync(url);
  } catch {
    continue;
  }
  console.log(`\n== ${name}`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-prompt", url.pathname],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  if (!status.success) console.log(`${name} failed with exit code ${status.code}`);
}
