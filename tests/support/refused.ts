/**
 * A loopback port nothing listens on, for tests of a refused connection.
 *
 * A port a test binds and closes is free for the next bind to port 0, in this
 * process or in another file of the suite running beside it: that server then
 * answers the call that was meant to be refused, and both tests fail. The kernel
 * hands out ports for port 0 from `ip_local_port_range` only (32768 and up unless
 * changed), and no test binds a port below 1024 on the host; so a privileged port
 * that refuses now refuses for as long as the test runs.
 *
 * @module
 */

/**
 * Privileged ports tried in turn; the first that refuses is used. None is on the
 * fetch standard's list of bad ports, which `fetch` refuses before it connects.
 */
const CANDIDATES = [2, 4, 6, 8, 10, 12, 14];

/** A port on 127.0.0.1 that refuses connections now and keeps refusing them. */
export async function refusedPort(): Promise<number> {
  const low = lowestEphemeral();
  for (const port of CANDIDATES) {
    if (port >= low) break;
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
    } catch (e) {
      if (e instanceof Deno.errors.ConnectionRefused) return port;
    }
  }
  throw new Error(`no port among ${CANDIDATES.join(", ")} refuses connections on 127.0.0.1`);
}

/** The lowest port the kernel gives a bind to port 0. */
function lowestEphemeral(): number {
  try {
    const text = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range");
    const low = Number(text.trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768; // not Linux: the IANA range starts at 49152, higher still
  }
}
