/**
 * The Agent SDK's hook callbacks over stream-json, driven as the SDK drives
 * crab: `initialize` registers them, crab sends `hook_callback` control
 * requests, and the answers decide.
 */

import assert from "node:assert/strict";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { parseSdkHooks, SdkHookBridge } from "../../../agent/hooks/sdk.ts";

Deno.test("parseSdkHooks() reads initialize's hooks and refuses what crab cannot fire", () => {
  assert.deepEqual(
    parseSdkHooks({ PreToolUse: [{ matcher: "Bash", hookCallbackIds: ["a", "b"], timeout: 5 }] }),
    [
      { event: "PreToolUse", matcher: "Bash", callbackId: "a", timeout: 5 },
      { event: "PreToolUse", matcher: "Bash", callbackId: "b", timeout: 5 },
    ],
  );
  assert.match(String(parseSdkHooks({ Elicitation: [] })), /crab fires PreToolUse/);
  assert.match(String(parseSdkHooks({ Stop: [{}] })), /needs hookCallbackIds/);
});

Deno.test("SdkHookBridge answers a call from its control_response, and ends what waits when input ends", async () => {
  const sent: Record<string, unknown>[] = [];
  const bridge = new SdkHookBridge((m) => sent.push(m));
  const call = bridge.call("hook_0", { hook_event_name: "Stop" }, 5000);
  const request = sent[0] as { request_id: string; request: Record<string, unknown> };
  assert.deepEqual(request.request, {
    subtype: "hook_callback",
    callback_id: "hook_0",
    input: { hook_event_name: "Stop" },
  });
  assert.equal(bridge.answer({ response: { request_id: "other", subtype: "success" } }), false);
  assert.equal(
    bridge.answer({
      response: {
        request_id: request.request_id,
        subtype: "success",
        response: { decision: "block" },
      },
    }),
    true,
  );
  assert.deepEqual(await call, { ok: true, output: { decision: "block" } });
  const waiting = bridge.call("hook_0", {}, 5000);
  bridge.close();
  assert.deepEqual(await waiting, { ok: false, error: "the SDK's input has ended" });
});

Deno.test("crab -p --input-format stream-json calls the SDK's PreToolUse callback, and its deny refuses the call", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "rm -rf build" } }] },
    { text: "understood" },
  ]);
  const child = s.spawn(
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--output-format",
      "stream-json",
      "--verbose",
      "--input-format",
      "stream-json",
    ],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  const writer = child.stdin.getWriter();
  const send = (v: unknown) => writer.write(new TextEncoder().encode(JSON.stringify(v) + "\n"));
  await send({
    type: "control_request",
    request_id: "init",
    request: {
      subtype: "initialize",
      hooks: { PreToolUse: [{ matcher: "Bash", hookCallbackIds: ["hook_0"] }] },
    },
  });
  await send({
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text: "clean" }] },
    parent_tool_use_id: null,
  });
  const seen: Record<string, unknown>[] = [];
  let buf = "";
  const deadline = Date.now() + 60_000;
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  outer: while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      seen.push(m);
      if (m.type === "control_request" && m.request.subtype === "hook_callback") {
        await send({
          type: "control_response",
          response: {
            subtype: "success",
            request_id: m.request_id,
            response: {
              hookSpecificOutput: {
                hookEventName: "PreToolUse",
                permissionDecision: "deny",
                permissionDecisionReason: "the SDK says no",
              },
            },
          },
        });
      }
      if (m.type === "result") break outer;
    }
  }
  await writer.close();
  await reader.cancel();
  child.stderr.cancel();
  await child.status;
  const callback = seen.find((m) => m.type === "control_request") as {
    request: { callback_id: string; input: Record<string, unknown>; tool_use_id: string };
  };
  assert.equal(callback.request.callback_id, "hook_0");
  assert.equal(callback.request.input.hook_event_name, "PreToolUse");
  assert.equal(callback.request.input.tool_name, "Bash");
  assert.deepEqual(callback.request.input.tool_input, { command: "rm -rf build" });
  assert.equal(callback.request.tool_use_id, "toolu_0_0");
  const [result] = toolResults(fake.modelRequests()[1]);
  assert.match(
    result.text,
    /^Error \[hook_denied\]: Cannot run bash: blocked by a PreToolUse hook: the SDK says no/,
  );
  assert.equal(seen.at(-1)?.type, "result");
});
