/**
 * A write loop to be killed: in workspace DIR, reads and rewrites `big.txt` with
 * the write tool over and over, alternating two contents of SIZE bytes ("a"s and
 * "b"s). Prints `ready` before the first write. Used by the SIGKILL test.
 *
 * Run: `deno run -A tests/tools/_killed_writer.ts DIR SIZE`
 *
 * @module
 */

import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";

const [dir, size] = Deno.args;
const d = new Dispatcher({
  registry: new Registry([readTool, writeTool]),
  session: new Session(dir),
  policy: new Policy({ yolo: true }),
  sink: new MemorySink(),
  runId: "killed-writer",
});
const contents = ["a", "b"].map((c) => c.repeat(Number(size)));
console.log("ready");
for (let i = 0;; i++) {
  await d.dispatch("read", { path: "big.txt", limit: 1 });
  const r = await d.dispatch("write", { path: "big.txt", content: contents[i % 2] });
  if (!r.ok) {
    console.error(JSON.stringify(r.error));
    Deno.exit(1);
  }
}
