/**
 * A report's HTML as a browser shows it: print runs against the fake model
 * write `--report r.html`, and Debian's headless Chromium opens the file, takes
 * a screenshot and dumps the page it built. The page shows the summary, and
 * markup a run wrote (an image, a script, a Markdown image, a terminal escape)
 * makes no request to the loopback server it names, where a page with the
 * same image as a live element does.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, type Sandbox, sandbox } from "../../support/cli.ts";
import { killProcessGroup } from "../../../tools/host/processes.ts";
import { on, userHooks } from "../../support/hooks.ts";
import { fake as fakeServer } from "../../support/mcp_servers.ts";

/** How long Chromium may take to open one page before it is killed. */
const CHROMIUM_TIMEOUT_MS = 60_000;

/**
 * Opens `file` in headless Chromium in a process group of its own with `mode`
 * (`--screenshot=PATH` or `--dump-dom`); resolves to what it printed. The group
 * is killed at the end, whatever happened.
 */
async function chromium(file: string, mode: string, dir: string): Promise<string> {
  const profile = Deno.makeTempDirSync({ dir, prefix: "profile-" });
  const child = new Deno.Command("setsid", {
    args: [
      "chromium",
      "--headless",
      // As root Chromium refuses its own sandbox; the page's CSP is what is tested.
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      `--user-data-dir=${profile}`,
      "--window-size=1024,1400",
      "--virtual-time-budget=3000",
      mode,
      `file://${file}`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { HOME: dir },
  }).spawn();
  const timer = setTimeout(() => killProcessGroup(child.pid), CHROMIUM_TIMEOUT_MS);
  try {
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    return stdout;
  } finally {
    clearTimeout(timer);
    // Its renderer and GPU helpers too.
    killProcessGroup(child.pid);
  }
}

/** A print run whose model makes `calls`, then answers "Done.", writing `r.html`; its path. */
async function reportOf(
  s: Sandbox,
  calls: { name: string; args: Record<string, unknown> }[],
): Promise<string> {
  await using fake = await startFakeModel([...calls.map((c) => ({ calls: [c] })), {
    text: "Done.",
  }]);
  const r = await printAgainst(s, fake, ["--report", "r.html"]);
  assert.equal(r.code, 0, r.stderr);
  return join(s.ws, "r.html");
}

Deno.test("a report's HTML renders in headless Chromium: a screenshot, and the summary shown", async () => {
  using s = sandbox();
  const html = await reportOf(s, [
    { name: "write", args: { path: "notes.txt", content: "one\ntwo\n" } },
    { name: "bash", args: { command: "echo hi; exit 2" } },
  ]);
  const png = join(s.root, "shot.png");
  await chromium(html, `--screenshot=${png}`, s.root);
  const bytes = Deno.readFileSync(png);
  assert.ok(bytes.length > 1000, `a screenshot of ${bytes.length} bytes`);
  assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const dom = await chromium(html, "--dump-dom", s.root);
  assert.match(
    dom,
    /<p id="summary"><strong>Summary:<\/strong> 1 file\(s\) changed, 1 command\(s\), 1 failure\(s\), 0 refusal\(s\), 2 tool call\(s\)\.<\/p>/,
  );
  assert.match(dom, /echo hi; exit 2/);
});

Deno.test("a report's HTML makes no request for the markup, links and escapes a run wrote", async () => {
  using s = sandbox();
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seen.push(new URL(req.url).pathname);
    return new Response("", { headers: { "content-type": "image/png" } });
  });
  try {
    const port = server.addr.port;
    const attack =
      `<img src=http://127.0.0.1:${port}/x> <script>fetch("http://127.0.0.1:${port}/s")` +
      `</script> ![x](http://127.0.0.1:${port}/y) \x1b]8;;http://127.0.0.1:${port}/z\x07link`;
    const html = await reportOf(s, [
      { name: "bash", args: { command: `printf '%s\\n' ${JSON.stringify(attack)}` } },
    ]);
    const dom = await chromium(html, "--dump-dom", s.root);
    assert.deepEqual(seen, []);
    // Only the page's own elements: what the run wrote is text.
    const tags = new Set([...dom.matchAll(/<([a-z0-9]+)/gi)].map((m) => m[1].toLowerCase()));
    assert.ok(!tags.has("img") && !tags.has("script") && !tags.has("a"), [...tags].join(" "));
    assert.match(dom, /&lt;img src=http:\/\/127\.0\.0\.1:\d+\/x&gt;/);
    // The same image as a live element is fetched: the check above can fail.
    const control = join(s.root, "control.html");
    Deno.writeTextFileSync(control, `<!doctype html><img src="http://127.0.0.1:${port}/control">`);
    await chromium(control, "--dump-dom", s.root);
    assert.deepEqual(seen, ["/control"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("crab report's HTML of a whole run opens in Chromium: files, commands, refusals, hooks and MCP calls", async () => {
  using s = sandbox();
  s.put("notes.txt", "one\n");
  userHooks(s, on("PreToolUse", "Bash", "true"));
  const server = fakeServer("f");
  const config = JSON.stringify({
    mcpServers: { f: { command: server.command, args: server.args } },
  });
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "notes.txt" } }] },
    { calls: [{ name: "edit", args: { path: "notes.txt", edits: [{ old: "one", new: "two" }] } }] },
    { calls: [{ name: "bash", args: { command: "echo made > made.txt; echo x > /etc/x" } }] },
    { calls: [{ name: "bash", args: { command: "rm -f notes.txt" } }] },
    { calls: [{ name: "f__echo", args: { text: "over MCP" } }] },
    { text: "Done." },
  ]);
  const r = await printAgainst(s, fake, [
    "--output-format",
    "json",
    "--mcp-config",
    config,
    "--disallowedTools",
    "Bash(rm:*)",
    "--permission-mode",
    "bypassPermissions",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const run = JSON.parse(r.stdout).run_id;
  const html = await s.crab(["report", run, "--format", "html"]);
  assert.equal(html.code, 0, html.stderr);
  const file = join(s.root, "run.html");
  Deno.writeTextFileSync(file, html.stdout);
  const png = join(s.root, "run.png");
  await chromium(file, `--screenshot=${png}`, s.root);
  assert.ok(Deno.readFileSync(png).length > 1000);
  const dom = await chromium(file, "--dump-dom", s.root);
  assert.match(
    dom,
    /<p id="summary"><strong>Summary:<\/strong> 2 file\(s\) changed, 2 command\(s\), 1 failure\(s\), 2 refusal\(s\), 5 tool call\(s\)\.<\/p>/,
  );
  // The files with their change, the command that ran, both refusals with their layers.
  assert.match(dom, /<td>notes\.txt<\/td><td>modified<\/td><td>\+1 -1<\/td><td>[^<]+:2<\/td>/);
  assert.match(dom, /<td>made\.txt<\/td><td>added<\/td>/);
  assert.match(dom, /echo made &gt; made\.txt; echo x &gt; \/etc\/x/);
  assert.match(dom, /<td>bash<\/td><td>sandbox-fs<\/td><td>\/etc\/x<\/td>/);
  assert.match(
    dom,
    /<td>rule<\/td><td>rm -f notes\.txt<\/td><td>Bash\(rm:\*\)<\/td><td>command line/,
  );
  // The hook that ran and the MCP call.
  assert.match(dom, /<h2>Hooks<\/h2>[^]*PreToolUse[^]*<h2>MCP calls<\/h2>/);
  assert.match(dom, /<h2>MCP calls<\/h2>[^]*<td>f<\/td><td>echo<\/td><td>ok<\/td>/);
});
