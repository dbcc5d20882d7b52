/** The REPL's question about a host no list names, in a real terminal, with bash's network off. */

import assert from "node:assert/strict";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst } from "../../support/tmux.ts";

Deno.test("repl: with the network off a proxy-aware client is asked about once per call: n refuses, y lets the call through; the timeout waits; metadata is never asked about", async () => {
  using s = sandbox();
  // A test host on a loopback address outside NO_PROXY, so curl goes through crab's proxy.
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.2", port: 0, onListen() {} }, (req) => {
    paths.push(new URL(req.url).pathname);
    return new Response("hello from the test\n");
  });
  const host = `${server.addr.hostname}:${server.addr.port}`;
  const curl = (url: string, timeout_ms?: number) => ({
    name: "bash",
    args: {
      command: `curl -sS -i --max-time 20 ${url} 2>&1`,
      ...(timeout_ms ? { timeout_ms } : {}),
    },
  });
  try {
    await using fake = await startFakeModel([
      { calls: [curl(`http://${host}/no`)] },
      { calls: [curl(`http://${host}/x`, 3000)] },
      { calls: [curl("http://169.254.169.254/latest/meta-data/")] },
      { text: "All fetched." },
    ]);
    // --yolo answers no host question: the question is put all the same.
    await using t = await replAgainst(s, fake, ["--yolo"]);
    let screen = await t.waitFor("› ");
    // The footer says bash has no network, and how to give it.
    assert.match(screen, /sandbox workspace-write · bash: no network \(--allow net\)/);
    await t.type("fetch it");
    await t.keys("Enter");
    // A loopback address: said so, and answered for this call only (no "all", no "permanently").
    const question = "allow? [y]es/[n]o: ";
    screen = await t.waitFor(question);
    assert.match(screen, /⚠ bash — connect to 127\.0\.0\.2 \(a command asked crab's proxy/);
    assert.match(
      screen,
      /why: 127\.0\.0\.2 is a loopback \(127\.0\.0\.0\/8\) address: this machine/,
    );
    await t.keys("n");
    await t.waitFor(/allow\? [\s\S]*allow\? /);
    // The call's 3 s timeout does not run while the question is open.
    await new Promise((r) => setTimeout(r, 4000));
    await t.keys("y");
    screen = await t.waitFor("All fetched.");
    // Two questions: none for the metadata address.
    assert.equal(screen.match(/allow\? \[y\]es/g)?.length, 2, screen);
    const results = fake.modelRequests().slice(1).map((r) => toolResults(r)[0].text);
    assert.match(results[0], /^HTTP\/1\.1 403 Forbidden[\s\S]*"127\.0\.0\.2": the user said no/);
    assert.match(results[1], /^HTTP\/1\.1 200 OK[\s\S]*hello from the test\n/);
    assert.doesNotMatch(results[1], /Timed out/);
    assert.match(
      results[2],
      /^HTTP\/1\.1 403 Forbidden[\s\S]*"169\.254\.169\.254": a cloud metadata address/,
    );
    // The server got the call the user let through, and only that one.
    assert.deepEqual(paths, ["/x"]);
    // The first call that failed for want of network says so, once.
    const said = results.map((r) => r.includes("bash has no network in this session"));
    assert.deepEqual(said, [true, false, false]);
  } finally {
    await server.shutdown();
  }
});
