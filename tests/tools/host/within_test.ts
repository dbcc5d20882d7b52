import assert from "node:assert/strict";
import { outlasts, within } from "../../../tools/host/within.ts";

Deno.test("within() gives the value of work that ends in time, and late for work that does not", async () => {
  assert.equal(await within(Promise.resolve(7), 1000), 7);
  let go = () => {};
  const slow = new Promise<string>((resolve) => go = () => resolve("done"));
  assert.equal(await within(slow, 20), "late");
  go();
  assert.equal(await slow, "done");
  await assert.rejects(within(Promise.reject(new Error("no")), 1000), /no/);
});

Deno.test("outlasts() is true only while the promise is unsettled past the bound", async () => {
  assert.equal(await outlasts(Promise.resolve(), 1000), false);
  assert.equal(await outlasts(new Promise(() => {}), 20), true);
  await assert.rejects(outlasts(Promise.reject(new Error("broken pipe")), 1000), /broken pipe/);
});
