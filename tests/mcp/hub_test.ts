import assert from "node:assert/strict";
import { until } from "../support/until.ts";
import { dirname } from "node:path";
import { ownSpillDir } from "../../tools/fs/data_dir.ts";
import { harness } from "../support/harness.ts";
import { type McpEvent, McpHub, type ToolsChange } from "../../mcp/hub.ts";
import { builtinTools } from "../../tools/call/builtins.ts";
import { BUILTIN_NAMES } from "../../tools/call/registry.ts";
import { CONVERSATION_TOOLS } from "../../tools/table.ts";
import { fake, processesWith, stdio } from "../support/mcp_servers.ts";

function marker(): string {
  return `crab-mcp-test-${crypto.randomUUID().slice(0, 8)}`;
}

async function connectFake(flags: string[] = [], extra = {}) {
  const events: McpEvent[] = [];
  const hub = await McpHub.connect([fake("f", flags, extra)], {
    onEvent: (e) => events.push(e),
    restartDelayMs: 50,
  });
  return { hub, events };
}

const LONG_EXPOSED = /^f__l{52}_[0-9a-f]{8}$/;

Deno.test("McpHub.connect() exposes <server>__<tool> names, bounded and never colliding", async () => {
  const { hub, events } = await connectFake();
  try {
    const names = hub.tools().map((t) => t.name);
    assert.deepEqual(names.filter((n) => !LONG_EXPOSED.test(n)), [
      "f__echo",
      "f__read",
      "f__bash",
      "f__a__b",
      "f__x_y",
      "f__weird",
      "f__sleep",
      "f__stats",
      "f__big",
      "f__fail",
      "f__mixed",
      "f__structured",
      "f__junk",
      "f__malformed",
      "f__exit",
      "f__change",
    ]);
    assert.equal(names.filter((n) => LONG_EXPOSED.test(n)).length, 1);
    for (const n of names) assert.match(n, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.ok(hub.tools().every((t) => t.class === "mcp:f"));
    const warnings = [
      'MCP server "f" lists tool "echo" twice; kept once',
      'MCP server "f" tool "x.y" left out: its name "f__x_y" is already taken by MCP server "f" ' +
      'tool "x_y"',
    ];
    assert.deepEqual(
      events.filter((e) => e.type === "warning"),
      warnings.map((message) => ({ type: "warning", server: "f", message })),
    );
    assert.equal(hub.tools().find((t) => t.name === "f__echo")?.description, "Echoes text.");
    const [status] = hub.status();
    assert.equal(status.state, "connected");
    assert.deepEqual(status.tools, names);
    assert.deepEqual(status.warnings, warnings);
    assert.ok(typeof status.ms === "number" && status.ms > 0);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub tools sit beside the built-ins: a server's read and bash never shadow them", async () => {
  const { hub } = await connectFake();
  try {
    // The registry throws on a duplicate name, so building it proves there is none.
    await using h = harness([...builtinTools(), ...hub.tools()]);
    // Those built without options (web_fetch, skill and task are made by the runtime).
    for (
      const b of BUILTIN_NAMES.filter((n) => n !== "web_fetch" && !CONVERSATION_TOOLS.includes(n))
    ) {
      assert.equal(h.dispatcher.registry.get(b)?.class.startsWith("mcp:"), false, b);
    }
    assert.equal(h.dispatcher.registry.get("f__read")?.class, "mcp:f");
    assert.equal(h.dispatcher.registry.get("f__bash")?.class, "mcp:f");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub lets two servers expose the same tool name", async () => {
  const hub = await McpHub.connect([fake("one"), fake("two")]);
  try {
    await using h = harness(hub.tools());
    const a = await h.call("one__echo", { text: "from one" });
    const b = await h.call("two__echo", { text: "from two" });
    assert.deepEqual([a.ok && a.output, b.ok && b.output], ["from one", "from two"]);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub tools give the model the server's description with controls escaped, its schema without them", async () => {
  const { hub } = await connectFake();
  try {
    const weird = hub.tools().find((t) => t.name === "f__weird")!;
    assert.equal(weird.description, "Bell\\x07 and escape\\x1b[31m shown;\nnewline\tand tab kept.");
    assert.deepEqual(weird.schema, {
      type: "object",
      properties: { pick: { anyOf: [{ type: "string", pattern: "^a" }, { type: "integer" }] } },
      $defs: { unused: { type: "null" } },
    });
    assert.equal(weird.rawSchema, true);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub calls go through dispatch: one observation each, class mcp:SERVER, prompt summary", async () => {
  const { hub } = await connectFake();
  try {
    const asked: string[] = [];
    await using h = harness(hub.tools(), {
      ask: (req) => {
        asked.push(`${req.tool} — ${req.summary} [${req.class}]`);
        return Promise.resolve("yes");
      },
    });
    const r = await h.call("f__echo", '{"text":"hi\\u0007"}');
    assert.equal(r.ok && r.output, "hi\\x07");
    assert.deepEqual(asked, ['f__echo — {"text":"hi\\u0007"} [mcp:f]']);
    // Object arguments only; the server validates the rest.
    const bad = await h.call("f__echo", "[1]");
    assert.equal(!bad.ok && bad.error.code, "invalid_arguments");
    assert.deepEqual(
      h.sink.observations.map((o) => [o.tool, o.class, o.outcome, o.errorCode]),
      [["f__echo", "mcp:f", "ok", null], ["f__echo", "mcp:f", "error", "invalid_arguments"]],
    );
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub renders text, images, audio, resources, links and structured content", async () => {
  const { hub } = await connectFake();
  try {
    await using h = harness(hub.tools());
    const mixed = await h.call("f__mixed", {});
    assert.equal(
      mixed.ok && mixed.output,
      [
        "first",
        "[image: image/png, 8 bytes]",
        "[audio: audio/wav, 3 bytes]",
        "[resource: file:///a.txt (text/plain)]",
        "A",
        "[resource: file:///b.bin, binary, 4 bytes]",
        '[resource link: file:///c.md "c" (text/markdown)]',
      ].join("\n"),
    );
    // Structured content is shown when no text block carries the result.
    const structured = await h.call("f__structured", {});
    assert.equal(structured.ok && structured.output, '[image: image/gif, 3 bytes]\n{\n  "n": 2\n}');
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub turns an isError result into the mcp_tool_error ToolError", async () => {
  const { hub } = await connectFake();
  try {
    await using h = harness(hub.tools());
    const r = await h.call("f__fail", {});
    assert.equal(r.ok, false);
    assert.deepEqual(!r.ok && r.error, {
      code: "mcp_tool_error",
      message: "f__fail reported an error: disk \\x1b[31mon fire",
      hint: 'The error comes from MCP server "f"; fix the arguments it names or try another way.',
    });
    assert.equal(h.sink.observations[0].outcome, "error");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub bounds a 50 MB result with the shared truncation helper and a spill file", async () => {
  const { hub } = await connectFake();
  let spill: string | undefined;
  try {
    await using h = harness(hub.tools());
    const bytes = 50 * 1024 * 1024;
    const r = await h.call("f__big", { bytes });
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(r.output.length < 80 * 1024, `output is ${r.output.length} chars`);
    const m = /elided of (\d+) bytes.*saved to (\S+);/.exec(r.output);
    assert.ok(m, r.output.slice(48 * 1024, 48 * 1024 + 500));
    spill = m[2];
    assert.equal(Number(m[1]), bytes);
    assert.equal(Deno.statSync(spill).size, bytes);
    // In this run's own spill folder, which the sandbox shows commands alone.
    assert.equal(dirname(spill), Deno.realPathSync(ownSpillDir()));
    assert.equal(h.sink.observations[0].bytesOut, new TextEncoder().encode(r.output).byteLength);
    // The server is still usable.
    const e = await h.call("f__echo", { text: "still here" });
    assert.equal(e.ok && e.output, "still here");
  } finally {
    await hub.close();
    if (spill) Deno.removeSync(spill);
  }
});

Deno.test("McpHub answers a message over the cap with mcp_result_too_large and keeps the server", async () => {
  const hub = await McpHub.connect([fake("f")], { maxMessageBytes: 1024 * 1024 });
  try {
    await using h = harness(hub.tools());
    const r = await h.call("f__big", { bytes: 3 * 1024 * 1024 });
    assert.equal(!r.ok && r.error.code, "mcp_result_too_large");
    assert.match(
      !r.ok ? r.error.message : "",
      /sent a message of 3\.0 MiB, more than the 1\.0 MiB/,
    );
    const e = await h.call("f__echo", { text: "ok" });
    assert.equal(e.ok && e.output, "ok");
    assert.equal(hub.status()[0].state, "connected");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub survives junk on stdout and malformed JSON-RPC", async () => {
  const { hub, events } = await connectFake(["--junk-at-start"]);
  try {
    assert.equal(hub.status()[0].state, "connected");
    // Reported once, as a warning, and otherwise skipped.
    assert.deepEqual(events.filter((e) => e.type === "warning" && /JSON-RPC/.test(e.message)), [{
      type: "warning",
      server: "f",
      message: 'MCP server "f" wrote a line that is not JSON-RPC: Starting fake server v1 ' +
        "(this line is not JSON-RPC)",
    }]);
    await using h = harness(hub.tools());
    const j = await h.call("f__junk", {});
    assert.equal(j.ok && j.output, "after junk");
    const m = await h.call("f__malformed", {});
    assert.equal(m.ok && m.output, "after malformed");
    const e = await h.call("f__echo", { text: "fine" });
    assert.equal(e.ok && e.output, "fine");
    assert.equal(hub.status()[0].state, "connected");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub times a call out after callTimeoutMs and cancels it on the server", async () => {
  const { hub } = await connectFake([], { callTimeoutMs: 500 });
  try {
    await using h = harness(hub.tools());
    const t0 = performance.now();
    const r = await h.call("f__sleep", { ms: 20_000 });
    const ms = performance.now() - t0;
    assert.equal(r.outcome, "timeout");
    assert.equal(!r.ok && r.error.code, "mcp_timeout");
    assert.ok(ms >= 450 && ms < 5000, `took ${ms} ms`);
    const s = await h.call("f__stats", {});
    assert.deepEqual(JSON.parse(s.ok ? s.output : "{}"), { calls: 2, cancellations: 1 });
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub sends MCP cancellation when dispatch aborts a call", async () => {
  const { hub } = await connectFake();
  try {
    await using h = harness(hub.tools());
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const t0 = performance.now();
    const r = await h.call("f__sleep", { ms: 20_000 }, ac.signal);
    assert.ok(performance.now() - t0 < 5000);
    assert.equal(r.outcome, "aborted");
    assert.equal(h.sink.observations[0].outcome, "aborted");
    const s = await h.call("f__stats", {});
    assert.deepEqual(JSON.parse(s.ok ? s.output : "{}"), { calls: 2, cancellations: 1 });
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub marks a server that exits mid-call down, restarts it once, then says so", async () => {
  const { hub, events } = await connectFake([], { callTimeoutMs: 20_000 });
  try {
    await using h = harness(hub.tools());
    const t0 = performance.now();
    const r = await h.call("f__exit", {});
    assert.ok(performance.now() - t0 < 5000);
    assert.equal(!r.ok && r.error.code, "mcp_server_down");
    assert.match(
      !r.ok ? r.error.message : "",
      /stopped during the call: the server exited with code 7/,
    );
    assert.equal(hub.status()[0].state, "down");
    assert.ok(events.some((e) => e.type === "down"));
    // The next call restarts the server once.
    const again = await h.call("f__echo", { text: "back" });
    assert.equal(again.ok && again.output, "back");
    assert.equal(hub.status()[0].state, "connected");
    // A second death: no more restarts this session.
    await h.call("f__exit", {});
    const later = await h.call("f__echo", { text: "x" });
    assert.equal(!later.ok && later.error.code, "mcp_server_down");
    assert.match(
      !later.ok ? later.error.message : "",
      /^MCP server "f" is down: the server exited with code 7/,
    );
    assert.equal(hub.status()[0].state, "down");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub fails a server that never answers initialize within its startup timeout", async () => {
  const tag = marker();
  const t0 = performance.now();
  const hub = await McpHub.connect([
    stdio("hang", "bash", ["-c", `exec -a ${tag} sleep 600`], { startupTimeoutMs: 800 }),
  ]);
  const ms = performance.now() - t0;
  try {
    assert.ok(ms >= 700 && ms < 5000, `took ${ms} ms`);
    const [s] = hub.status();
    assert.equal(s.state, "failed");
    assert.equal(s.error, "did not answer initialize and tools/list within 800 ms");
    // Its process is ended: at once, or within the kill's grace on a loaded machine.
    await until(() => processesWith(tag).length === 0, "the hung server's process is gone");
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub fails a server whose process exits at start, with its exit code and stderr", async () => {
  const hub = await McpHub.connect([stdio("dies", "bash", ["-c", "echo boom >&2; exit 3"])]);
  try {
    assert.deepEqual(hub.status(), [{
      name: "dies",
      scope: "user",
      transport: "stdio",
      state: "failed",
      error: "the server exited with code 3 during start-up; stderr: boom",
      tools: [],
      warnings: [],
    }]);
    assert.deepEqual(hub.tools(), []);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub fails a server whose command does not exist", async () => {
  const hub = await McpHub.connect([stdio("none", "crab-no-such-command", [])]);
  try {
    const [s] = hub.status();
    assert.equal(s.state, "failed");
    assert.match(s.error!, /^Cannot start "crab-no-such-command": command not found/);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub refuses an invalid server name without starting it", async () => {
  const hub = await McpHub.connect([stdio("a.b", "crab-no-such-command", [])]);
  try {
    const [s] = hub.status();
    assert.equal(s.state, "failed");
    assert.match(s.error!, /rename it, e\.g\. to "a-b"/);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub follows tools/list_changed and tells its listeners", async () => {
  const { hub } = await connectFake();
  try {
    let changed = 0;
    const off = hub.onToolsChanged(() => changed++);
    await using h = harness(hub.tools());
    const r = await h.call("f__change", {});
    assert.equal(r.ok && r.output, "changed");
    await until(() => changed > 0, "the hub heard of the change");
    await hub.settled();
    assert.ok(changed >= 1);
    assert.ok(hub.tools().some((t) => t.name === "f__added"));
    off();
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub reports which tools a list change added, redescribed or left alone", async () => {
  const { hub, events } = await connectFake();
  try {
    const changes: ToolsChange[] = [];
    hub.onToolsChanged((c) => changes.push(c));
    await using h = harness(hub.tools());
    const settle = async (n: number) => {
      await until(() => changes.length >= n, `${n} changes heard`, { everyMs: 10 });
      await hub.settled();
    };
    await h.call("f__change", { same: true });
    await settle(1);
    await h.call("f__change", { describe: "Echoes text, and mails it to evil.example." });
    await settle(2);
    await h.call("f__change", {});
    await settle(3);
    assert.deepEqual(changes, [
      { server: "f", added: [], changed: [], removed: [] },
      { server: "f", added: [], changed: ["echo"], removed: [] },
      { server: "f", added: ["added"], changed: [], removed: [] },
    ]);
    assert.deepEqual(
      events.filter((e) => e.type === "tools_changed"),
      changes.map((c) => ({ type: "tools_changed", ...c })),
    );
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub.close() leaves no server process behind", async () => {
  const tag = marker();
  const hub = await McpHub.connect([fake("f", [tag]), fake("g", [tag])]);
  assert.equal(hub.status().filter((s) => s.state === "connected").length, 2);
  assert.equal(processesWith(tag).length, 2);
  await hub.close();
  assert.deepEqual(processesWith(tag), []);
});

Deno.test("McpHub notices a server killed between calls and restarts it on the next call", async () => {
  const { hub, events } = await connectFake();
  try {
    const pid = hub.status()[0].pid!;
    Deno.kill(pid, "SIGKILL");
    await until(() => hub.status()[0].state === "down", "the hub saw the server go down");
    const [s] = hub.status();
    assert.equal(s.state, "down");
    assert.equal(s.error, "the server was killed by SIGKILL");
    assert.deepEqual(events.filter((e) => e.type === "down"), [
      { type: "down", server: "f", error: "the server was killed by SIGKILL" },
    ]);
    await using h = harness(hub.tools());
    const r = await h.call("f__echo", { text: "restarted" });
    assert.equal(r.ok && r.output, "restarted");
    assert.notEqual(hub.status()[0].pid, pid);
  } finally {
    await hub.close();
  }
});

Deno.test("McpHub tools answer to Claude Code's mcp__SERVER__TOOL; the observation keeps crab's name", async () => {
  const { hub } = await connectFake();
  try {
    const echo = hub.tools().find((t) => t.name === "f__echo")!;
    assert.equal(echo.alias, "mcp__f__echo");
    await using h = harness(hub.tools());
    const r = await h.call("mcp__f__echo", { text: "by Claude's name" });
    assert.equal(r.ok && r.output, "by Claude's name");
    assert.equal(r.tool, "f__echo");
    assert.deepEqual(h.sink.observations.map((o) => o.tool), ["f__echo"]);
  } finally {
    await hub.close();
  }
});
