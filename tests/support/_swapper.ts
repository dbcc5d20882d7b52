/**
 * A confinement attacker for tests and benchmarks: swaps two directory entries
 * with `renameat2(RENAME_EXCHANGE)` in a tight loop, until a bound in swaps or
 * milliseconds is reached or it is killed. Prints `ready` when it starts and the
 * number of swaps on stderr when it stops; leaves the entries as it found them.
 *
 * Run: `deno run --allow-ffi tests/support/_swapper.ts A B MAX_MS MAX_SWAPS`
 *
 * @module
 */

const [a, b, maxMs, maxSwaps] = Deno.args;
const libc = Deno.dlopen("libc.so.6", {
  renameat2: { parameters: ["i32", "buffer", "i32", "buffer", "u32"], result: "i32" },
});
const AT_FDCWD = -100;
const RENAME_EXCHANGE = 2;
const encoder = new TextEncoder();
const pa = encoder.encode(`${a}\0`);
const pb = encoder.encode(`${b}\0`);
const deadline = Date.now() + Number(maxMs);
const limit = Number(maxSwaps);
let swaps = 0;
let stop = false;
Deno.addSignalListener("SIGTERM", () => stop = true);
console.log("ready");
while (swaps < limit && !stop) {
  // Looking at the clock (and letting SIGTERM in) every 16,384 swaps keeps the loop tight.
  if ((swaps & 16383) === 0) {
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 0));
  }
  if (libc.symbols.renameat2(AT_FDCWD, pa, AT_FDCWD, pb, RENAME_EXCHANGE) === 0) swaps++;
  else break;
}
if (swaps % 2 === 1) libc.symbols.renameat2(AT_FDCWD, pa, AT_FDCWD, pb, RENAME_EXCHANGE);
console.error(`swaps=${swaps}`);
