import assert from "node:assert/strict";
import { osaDistance, suggest } from "../../../agent/settings/suggest.ts";

Deno.test("osaDistance() counts a swap of neighbours as one edit", () => {
  assert.deepEqual(
    [
      ["mdoel", "model"],
      ["ocntextWidnow", "contextWindow"],
      ["kitten", "sitting"],
      ["", "abc"],
      ["same", "same"],
      // No part is edited twice: "ca" to "abc" is three edits, not two.
      ["ca", "abc"],
    ].map(([a, b]) => osaDistance(a, b)),
    [1, 2, 3, 3, 0, 3],
  );
});

Deno.test("suggest() picks the nearest candidate, else the only one the input starts", () => {
  assert.equal(suggest("mertics", ["metrics", "sessions"]), "metrics");
  assert.equal(suggest("--trust", ["--trust-project", "--tools"]), "--trust-project");
  assert.equal(suggest("xyz", ["metrics", "sessions"]), undefined);
});
