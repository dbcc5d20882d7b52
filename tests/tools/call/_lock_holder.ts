/**
 * A crab that holds workspace DIR and never lets go: it dispatches a write-class
 * call that waits forever, and prints `held` once the call runs. Used by the test
 * that kills it.
 *
 * Run: `deno run -A tests/tools/call/_lock_holder.ts DIR`
 *
 * @module
 */

import { Dispatcher } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";

const [dir] = Deno.args;
const d = new Dispatcher({
  registry: new Registry([{
    name: "hold",
    class: "write",
    description: "Holds the workspace.",
    schema: { type: "object", properties: {} },
    run() {
      console.log("held");
      // A timer keeps the process alive; the call never ends.
      return new Promise(() => setInterval(() => {}, 60_000));
    },
  }]),
  session: new Session(dir),
  policy: new Policy({ yolo: true }),
  sink: new MemorySink(),
  runId: "lock-holder",
});
await d.dispatch("hold", {});
