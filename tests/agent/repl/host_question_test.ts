/** The REPL's question about a host no list names, in a real terminal. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst } from "../../support/tmux.ts";

Deno.test("repl: a host in no list is asked about once per call: n refuses, a allows it for the session, p saves it; the timeout waits", async () => {
  using s = sandbox();
  // Test hosts on loopback addresses outside NO_PROXY, so curl goes through crab's proxy.
  const servers = ["127.0.0.2", "127.0.0.3"].map((hostname) =>
    Deno.serve({ hostname, port: 0, onListen() {} }, () => new Response("hello from the test\n"))
  );
  const [a, b] = servers.map((srv) => `${srv.addr.hostname}:${srv.addr.port}`);
  const curl = (host: string, timeout_ms?: number) => ({
    name: "bash",
    args: {
      command: `curl -sS -i --max-time 20 http://${host}/ 2>&1`,
      ...(timeout_ms ? { timeout_ms } : {}),
    },
  });
  try {
    await using fake = await startFakeModel([
      { calls: [curl(a)] },
      { calls: [curl(a, 3000)] },
      { calls: [curl(a)] },
      { calls: [curl(b)] },
      { text: "All fetched." },
    ]);
    await using t = await replAgainst(s, fake, ["--yolo", "--allow-domain", "listed.test"]);
    await t.waitFor("› ");
    await t.type("fetch them");
    await t.keys("Enter");
    const question = (host: string) =>
      `allow? [y]es/[n]o/[a]ll connections to ${host} this session/[p]ermanently: `;
    let screen = await t.waitFor(question("127.0.0.2"));
    assert.match(screen, /⚠ bash — connect to 127\.0\.0\.2 \(a command asked crab's proxy/);
    await t.keys("n");
    await t.waitFor(/allow\? [\s\S]*allow\? /);
    // The call's 3 s timeout does not run while the question is open.
    await new Promise((r) => setTimeout(r, 4000));
    await t.keys("a");
    screen = await t.waitFor(question("127.0.0.3"));
    await t.keys("p");
    await t.waitFor("save to? [l]ocal/[u]ser");
    await t.keys("u");
    screen = await t.waitFor("All fetched.");
    // Three questions: the third call ran under the session's answer.
    assert.equal(screen.match(/allow\? \[y\]es/g)?.length, 3, screen);
    const results = fake.modelRequests().slice(1).map((r) => toolResults(r)[0].text);
    assert.match(results[0], /^HTTP\/1\.1 403 Forbidden[\s\S]*"127\.0\.0\.2": the user said no/);
    for (const r of results.slice(1)) {
      assert.match(r, /^HTTP\/1\.1 200 OK[\s\S]*hello from the test\n/);
      assert.doesNotMatch(r, /Timed out/);
    }
    const user = JSON.parse(
      Deno.readTextFileSync(join(s.env.XDG_CONFIG_HOME, "crab", "config.json")),
    );
    assert.deepEqual(user.permissions.allow, ["WebFetch(domain:127.0.0.3)"]);
  } finally {
    await Promise.all(servers.map((srv) => srv.shutdown()));
  }
});
