import assert from "node:assert/strict";
import { StdioTransport } from "../../mcp/_stdio_transport.ts";

/** The MCP SDK's code for a closed connection, which the client reads as "the server went away". */
const CONNECTION_CLOSED = -32000;

Deno.test("StdioTransport: a message sent after the server exited is refused as a closed connection", async () => {
  const t = new StdioTransport({ name: "dead", command: "bash", args: ["-c", "exit 4"] });
  const closed = new Promise<void>((resolve) => t.onclose = resolve);
  await t.start();
  await closed;
  assert.equal(t.exitDescription, "exited with code 4");
  // The SDK's connect sends initialize: a server that is gone by then is a closed connection,
  // which the client describes by the server's exit, as when it leaves a moment later.
  const sent = t.send({ jsonrpc: "2.0", id: 0, method: "initialize" });
  await assert.rejects(sent, (e: Error & { code?: unknown }) => {
    assert.equal(e.code, CONNECTION_CLOSED, e.message);
    return true;
  });
  await t.close();
});
