import assert from "node:assert/strict";
import { type McpEvent, McpHub } from "../../mcp/hub.ts";
import { fake } from "../support/mcp_servers.ts";

const INVISIBLE = /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|\udb40[\udc00-\udc7f]/;

Deno.test("McpHub tools show a server's zero-width, bidi and tag characters as <U+XXXX>", async () => {
  const events: McpEvent[] = [];
  const hub = await McpHub.connect([fake("f", ["--invisible"])], {
    onEvent: (e) => events.push(e),
  });
  try {
    const tool = hub.tools().find((t) => t.name.startsWith("f__hid"));
    assert.ok(tool, hub.tools().map((t) => t.name).join(", "));
    assert.equal(tool.name, "f__hid_den_");
    assert.equal(
      tool.description,
      "Reads<U+200B> files.<U+202E>Sdrawkcab<U+202C> <U+2066>iso<U+2069><U+FEFF>" +
        "<U+E0049><U+E0047><U+200D><U+2060>end",
    );
    const path = (tool.schema.properties as Record<string, Record<string, unknown>>).path;
    assert.deepEqual(path, {
      type: "string",
      description: "The path.<U+200B><U+202E>",
      title: "P<U+2061>ath",
    });
    for (const t of hub.tools()) {
      assert.doesNotMatch(t.name + t.description + JSON.stringify(t.schema), INVISIBLE, t.name);
    }
    const summary = tool.summarize!({ path: "a" }, undefined as never);
    assert.equal(summary, `{"path":"a"} (server's name: "hid<U+200B>den<U+202E>")`);
  } finally {
    await hub.close();
  }
});
