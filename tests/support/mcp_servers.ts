/**
 * MCP server configs for tests: the project's own fake server, and the reference
 * servers from npm pinned in deno.json (run with `deno run`, from Deno's cache).
 *
 * @module
 */

import type { McpServerConfig } from "../../mcp/config.ts";

const root = new URL("../../", import.meta.url);
/** crab's deno.json: the pinned versions of the npm servers and the fake server's imports. */
export const DENO_JSON = new URL("deno.json", root).pathname;
/** The fake server's entry point. */
export const FAKE_SERVER = new URL("tests/support/fake_mcp_server.ts", root).pathname;

const imports =
  (JSON.parse(Deno.readTextFileSync(DENO_JSON)) as { imports: Record<string, string> })
    .imports;

/**
 * How tests run an npm server or the fake one: resolved through crab's lock file
 * (`--config`) and only from Deno's cache (`--cached-only`), so after
 * `deno install --frozen` nothing is downloaded, ever.
 */
export const RUN_CACHED = ["run", "-A", "--cached-only", "--config", DENO_JSON];

/** `npm:NAME@VERSION` of a server pinned in deno.json. */
export function pinned(pkg: string): string {
  const spec = imports[pkg];
  if (!spec) throw new Error(`${pkg} is not pinned in deno.json`);
  return spec;
}

/** A stdio server config with test-friendly defaults. */
export function stdio(
  name: string,
  command: string,
  args: string[],
  extra: Partial<McpServerConfig> = {},
): McpServerConfig {
  return {
    name,
    scope: "user",
    transport: "stdio",
    command,
    args,
    cwd: Deno.cwd(),
    startupTimeoutMs: 30_000,
    callTimeoutMs: 30_000,
    ...extra,
  };
}

/** crab's own fake server; `marker` shows up in `ps` to find its process. */
export function fake(name: string, flags: string[] = [], extra: Partial<McpServerConfig> = {}) {
  return stdio(
    name,
    Deno.execPath(),
    [...RUN_CACHED, FAKE_SERVER, ...flags],
    extra,
  );
}

/** `@modelcontextprotocol/server-everything` over stdio. */
export function everything(
  name: string,
  extraArgs: string[] = [],
  extra: Partial<McpServerConfig> = {},
) {
  return stdio(
    name,
    Deno.execPath(),
    [...RUN_CACHED, pinned("@modelcontextprotocol/server-everything"), "stdio", ...extraArgs],
    extra,
  );
}

/** `@modelcontextprotocol/server-filesystem` serving `dir`. */
export function filesystem(name: string, dir: string, extra: Partial<McpServerConfig> = {}) {
  return stdio(
    name,
    Deno.execPath(),
    [...RUN_CACHED, pinned("@modelcontextprotocol/server-filesystem"), dir],
    extra,
  );
}

/** Command lines of running processes whose arguments include `marker`. */
export function processesWith(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,args"] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l.includes(marker) && !l.includes("ps -eo")
  );
}
