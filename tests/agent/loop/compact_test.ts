import assert from "node:assert/strict";
import { compactNotice, summaryRequest, withoutMedia } from "../../../agent/loop/compact.ts";
import { messageChars, stubOld } from "../../../agent/loop/context.ts";
import type { Attachment, Message } from "../../../agent/providers/types.ts";

const shot: Attachment = {
  kind: "image",
  mediaType: "image/png",
  data: "iVBORw0KGgo".repeat(1000),
  label: "shot.png 1341×894",
  tokens: 1599,
};

function conversation(): Message[] {
  return [
    { role: "user", content: "look at the screenshot" },
    {
      role: "assistant",
      content: [{ type: "tool_call", id: "c1", name: "read", argsJson: '{"path":"shot.png"}' }],
    },
    {
      role: "user",
      content: [{
        type: "tool_result",
        callId: "c1",
        text: 'Image "shot.png": PNG, 3000×2000',
        isError: false,
        attachment: shot,
      }],
    },
    { role: "user", content: [{ type: "media", ...shot, label: "mock.png 200×100" }] },
  ];
}

Deno.test("summaryRequest() keeps images out of the summary request and names them", () => {
  const req = summaryRequest(conversation(), undefined, 1_000_000);
  const text = JSON.stringify(req.messages);
  assert.ok(!text.includes(shot.data), "an image went to the summary");
  assert.match(text, /\[image shot\.png 1341×894 was here; left out of the summary\]/);
  assert.match(text, /\[image mock\.png 200×100 was here; left out of the summary\]/);
});

Deno.test("withoutMedia() lists the dropped images and compactNotice() says which", () => {
  const { dropped } = withoutMedia(conversation());
  assert.deepEqual(dropped, ["shot.png 1341×894", "mock.png 200×100"]);
  assert.equal(
    compactNotice({
      reason: "manual",
      messages: 4,
      tokensBefore: 3300,
      tokensAfter: 200,
      files: 1,
      dropped,
    }),
    "context: compacted the conversation (4 messages, about 3300 tokens → 200); 1 file must be " +
      "read again before editing; images and PDFs dropped: shot.png 1341×894, mock.png 200×100",
  );
});

Deno.test("messageChars() counts an image as its estimated tokens, not its base64", () => {
  const [, , result, media] = conversation();
  const text = 'Image "shot.png": PNG, 3000×2000'.length + 20;
  assert.equal(messageChars(result), text + 1599 * 4);
  assert.equal(messageChars(media), 1599 * 4);
});

Deno.test("stubOld() drops the image of a result it stubs", () => {
  const messages = conversation();
  stubOld(messages, 3, () => true, () => {});
  const result = (messages[2].content as { attachment?: unknown; text: string }[])[0];
  assert.equal(result.attachment, undefined);
  assert.match(result.text, /^\[Old tool result removed to save context: read shot\.png/);
});
