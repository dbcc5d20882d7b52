// Lays out a sandbox for the workspace in Deno.args[0] again and again, for
// Deno.args[1] ms, while another process makes and removes protected paths there.
import { sandboxLayout } from "../../../../tools/sandbox/layout.ts";

const [ws, ms] = [Deno.args[0], Number(Deno.args[1])];
const end = Date.now() + ms;
let n = 0;
while (Date.now() < end) {
  sandboxLayout(ws, { mode: "workspace-write", net: false, writable: [] });
  n++;
}
console.log(`layouts=${n}`);
