/**
 * A child process awaited within a bound. A test that waits for a process
 * without one hangs the whole run when the process never ends; this one fails
 * instead, and its error says what was still running: the processes of the
 * run (the child's descendants, and any process whose working directory or
 * environment is under the run's folder, which a process that outlived the
 * child still has), each with its state and what it waits in. Then it kills
 * them all.
 *
 * @module
 */

/** What a finished process printed. */
export interface Output {
  code: number;
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** Set when the bound ran out: what was running then (the processes were killed). */
  overrun?: string;
}

/** Reads a whole stream through `reader`; stops when it is cancelled, keeping what came. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
    }
  } catch {
    // Cancelled after the bound: what came so far is kept.
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `work`, or "late" when `ms` pass first; the timer is cleared either way. */
async function within<T>(work: Promise<T>, ms: number): Promise<T | "late"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** One process as /proc shows it. */
interface Proc {
  pid: number;
  ppid: number;
  state: string;
  line: string;
}

function readProc(pid: number): Proc | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const tail = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cmd = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").join(" ").trim();
    let wchan = "?";
    try {
      wchan = Deno.readTextFileSync(`/proc/${pid}/wchan`) || "-";
    } catch {
      // Not readable here: the state says enough.
    }
    return {
      pid,
      ppid: Number(tail[1]),
      state: tail[0],
      line: `${pid} ppid ${tail[1]} ${tail[0]} ${wchan} ${cmd.slice(0, 300)}`,
    };
  } catch {
    return null;
  }
}

/** True when the process works or lives under `root`: its cwd, or a variable naming it. */
function under(pid: number, root: string): boolean {
  try {
    if (Deno.readLinkSync(`/proc/${pid}/cwd`).startsWith(root)) return true;
  } catch {
    // Gone, or another user's.
  }
  try {
    return Deno.readTextFileSync(`/proc/${pid}/environ`).includes(root);
  } catch {
    return false;
  }
}

/** The processes of a run: `pid`'s descendants, and any under `root`. */
export function runProcesses(pid: number, root: string): Proc[] {
  const all: Proc[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    const p = readProc(Number(e.name));
    if (p) all.push(p);
  }
  const mine = new Set<number>([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (!mine.has(p.pid) && mine.has(p.ppid)) {
        mine.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => mine.has(p.pid) || under(p.pid, root));
}

/**
 * Waits for `child` and its output, at most `limitMs`. When that runs out, the
 * result has `overrun` (the processes then running, which are killed) and
 * code 124, as `timeout` exits.
 */
export async function bounded(
  child: Deno.ChildProcess,
  root: string,
  limitMs: number,
): Promise<Output> {
  const readers = [child.stdout.getReader(), child.stderr.getReader()];
  const out = drain(readers[0]);
  const err = drain(readers[1]);
  const whole = Promise.all([child.status, out, err]);
  const first = await within(whole, limitMs);
  if (first !== "late") {
    const [status, stdout, stderr] = first;
    return { code: status.code, stdout, stderr };
  }
  const procs = runProcesses(child.pid, root);
  const alive = procs.some((p) => p.pid === child.pid);
  const overrun = `ran over ${limitMs} ms; the process ${
    alive ? "was still running" : "had ended but its output was held open"
  }; processes of the run:\n${procs.map((p) => "  " + p.line).join("\n") || "  none"}`;
  for (const p of procs) {
    try {
      Deno.kill(p.pid, "SIGKILL");
    } catch {
      // Ended meanwhile.
    }
  }
  // Killed, the output's writers are gone and what they wrote is read to its end;
  // a writer this did not find is cut off.
  if (await within(Promise.all([out, err]), 10_000) === "late") {
    for (const r of readers) r.cancel().catch(() => {});
  }
  const [stdout, stderr] = await Promise.all([out, err]);
  await child.status;
  return { code: 124, stdout, stderr, overrun };
}
