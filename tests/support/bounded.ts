/**
 * A child process awaited within a bound. A test that waits for a process
 * without one hangs the whole run when the process never ends; this one fails
 * instead, and its error says what was still running: the processes of the
 * run (the child's descendants, and any process whose command or environment
 * names the run's folder, which a process that outlived the child still has),
 * each with its state and what it waits in. Then it kills them all.
 *
 * @module
 */

import { within } from "../../tools/host/within.ts";

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
  const parts: BlobPart[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value as BlobPart);
    }
  } catch {
    // Cancelled after the bound: what came so far is kept.
  }
  return await new Blob(parts).bytes();
}

/** One process as `ps` shows it. */
interface Proc {
  pid: number;
  ppid: number;
  line: string;
}

/** `ps` of every process, wide; `env` adds each one's environment after its command. */
function ps(env: boolean): string[] {
  const args = ["-e", "-ww", ...(env ? ["e"] : []), "-o", "pid=,ppid=,stat=,wchan:32=,args="];
  const out = new Deno.Command("ps", { args, stdout: "piped", stderr: "null" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim());
}

/**
 * The processes of a run: `pid`'s descendants, and any whose command or
 * environment names `root` (one that outlived `pid` has lost its parent).
 * Deno reads /proc only with --allow-all, which the suite has not: `ps` does.
 */
function runProcesses(pid: number, root: string): Proc[] {
  const parse = (l: string) => {
    const [p, pp] = l.trim().split(/\s+/, 2).map(Number);
    return { pid: p, ppid: pp, line: l.trim() };
  };
  const all = ps(false).map(parse).filter((p) => p.pid !== Deno.pid);
  const named = new Set(ps(true).filter((l) => l.includes(root)).map((l) => parse(l).pid));
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
  // `ps` itself names no root, and is gone; a process that ended meanwhile is left out.
  return all.filter((p) => mine.has(p.pid) || named.has(p.pid));
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
