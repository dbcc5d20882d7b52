import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { editTool } from "../../tools/edit.ts";
import { closestCandidate } from "../../tools/fs/edit_hint.ts";
import { readTool } from "../../tools/read.ts";

const NFC = "caf\u00e9"; // é as one code point
const NFD = "cafe\u0301"; // e + combining acute

Deno.test("edit() hint says when old differs from the file only in NFC vs NFD", async () => {
  await using h = harness([readTool, editTool]);
  h.put("menu.txt", `tea\n${NFD} au lait\n`);
  await h.call("read", { path: "menu.txt" });
  const r = await h.call("edit", {
    path: "menu.txt",
    edits: [{ old: `${NFC} au lait`, new: "latte" }],
  });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "edit_no_occurrence_found");
  assert.equal(
    r.error.hint,
    "Re-read the file and copy the exact text; closest candidate (differs only in Unicode " +
      "normalization: the file has NFD (decomposed), old has NFC (composed); copy the text " +
      `from the file as it is) at line 2, column 1: ${JSON.stringify(`${NFD} au lait`)}.`,
  );
  // Matching stays exact: nothing was changed.
  assert.equal(h.get("menu.txt"), `tea\n${NFD} au lait\n`);
});

Deno.test("closestCandidate() names the normalization the other way round too", () => {
  assert.match(
    closestCandidate(`x\n${NFC}\n`, NFD),
    /^closest candidate \(differs only in Unicode normalization: the file has NFC \(composed\), old has NFD \(decomposed\);/,
  );
  assert.doesNotMatch(closestCandidate("cafe\n", NFC), /normalization/);
});
