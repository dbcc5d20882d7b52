/**
 * Runs one command in crab's own sandbox under `strace -f` (started outside
 * bwrap, which it follows into the sandbox's namespaces) and returns the
 * programs the command ran: every successful `execve` made by the call's bash,
 * a subshell of it, or a wrapper the policy parser sees through (`env`,
 * `nohup`, `time`, `timeout`, `nice`, `stdbuf`, `xargs`, `find`, and `sh`,
 * `bash`, `dash` given a `-c` script). What other programs start is theirs.
 *
 * Each call gets a fresh workspace, HOME and /tmp (the sandbox's private one),
 * no network, stdin from /dev/null (the supervisor's) and a time limit.
 *
 * @module
 */

import { join } from "node:path";
import { sandboxCommand } from "../../tools/sandbox/mod.ts";
import { bashEnv } from "../../tools/host/command_env.ts";

/** A program a traced command ran. */
export interface Exec {
  /** The file executed, as given to execve. */
  file: string;
  argv: string[];
  /** The base name of the program that made the call (`bash` for the call's own shell). */
  by: string;
}

/** What one traced run saw. */
export interface Trace {
  /** The execs that count (see the module doc). */
  execs: Exec[];
  /** The call's own `bash -c COMMAND` was seen: the tracer worked. */
  traced: boolean;
  /** The command was stopped at its time limit. */
  timedOut: boolean;
}

/** Programs whose execs count: the wrappers the policy parser sees through. */
const SEEN_THROUGH = new Set([
  "env",
  "nohup",
  "time",
  "timeout",
  "nice",
  "stdbuf",
  "xargs",
  "find",
]);
const SHELLS = new Set(["bash", "sh", "dash"]);

function base(file: string): string {
  return file.slice(file.lastIndexOf("/") + 1);
}

/** A shell given a script on its command line (`-c`, in any cluster of short options). */
function runsScript(argv: string[]): boolean {
  for (const a of argv.slice(1)) {
    if (a === "--" || !/^[-+]/.test(a)) return false;
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(a)) return true;
  }
  return false;
}

/** True when strace can run here at all. */
export function straceAvailable(): boolean {
  try {
    return new Deno.Command("strace", { args: ["-V"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/**
 * Runs `command` in a fresh workspace under crab's sandbox (workspace-write,
 * no network), traced.
 */
export async function traceInSandbox(
  command: string,
  opts: { timeoutMs?: number; workspace: string; home: string },
): Promise<Trace> {
  const timeoutMs = opts.timeoutMs ?? 2000;
  const sc = await sandboxCommand(
    { workspace: opts.workspace, sandbox: { mode: "workspace-write", net: false, writable: [] } },
    command,
  );
  const out = join(Deno.makeTempDirSync({ prefix: "crab-trace-" }), "trace");
  let timedOut = false;
  try {
    const child = new Deno.Command("strace", {
      args: [
        "-f",
        // Stops only at the traced calls (a seccomp filter), not at every call of every process.
        "--seccomp-bpf",
        "-qq",
        "--pidns-translation",
        "-s",
        "1000000",
        "-e",
        "signal=none",
        "-e",
        "trace=execve,execveat,clone,clone3,fork,vfork",
        "-o",
        out,
        "--",
        sc.program,
        ...sc.args,
      ],
      cwd: opts.workspace,
      // bwrap's stdin is the supervisor's control line: closing it stops the command.
      stdin: "piped",
      stdout: "null",
      stderr: "null",
      env: { ...bashEnv(), HOME: opts.home, TMPDIR: "/tmp", ...sc.env },
      clearEnv: true,
    }).spawn();
    const control = child.stdin.getWriter();
    let kill: ReturnType<typeof setTimeout> | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      control.close().catch(() => {});
      kill = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // gone already
        }
      }, 1000);
    }, timeoutMs);
    try {
      await child.status;
    } finally {
      clearTimeout(timer);
      clearTimeout(kill);
      control.close().catch(() => {});
    }
  } finally {
    await sc.release();
  }
  let text = "";
  try {
    text = Deno.readTextFileSync(out);
  } finally {
    Deno.removeSync(join(out, ".."), { recursive: true });
  }
  return { ...parseTrace(text, command), timedOut };
}

type Event =
  | { kind: "exec"; file: string; argv: string[]; seq: number }
  | { kind: "clone"; child: number };

/** One process's image: the program it runs and whether its execs count. */
interface Image {
  name: string;
  /** Inside the call (its bash or anything that bash started). */
  call: boolean;
  /** Its execs count. */
  counts: boolean;
}

/**
 * The counted execs of an strace log (`-f --pidns-translation`, execve and the
 * clone family), for the call `bash -c command`.
 */
export function parseTrace(text: string, command: string): Omit<Trace, "timedOut"> {
  const events = new Map<number, Event[]>();
  const parents = new Map<number, { pid: number; at: number }>();
  const pending = new Map<number, string>();
  const order: number[] = [];
  let seq = 0;
  for (const raw of text.split("\n")) {
    const m = /^(\d+) +(.*)$/.exec(raw);
    if (!m) continue;
    const pid = Number(m[1]);
    let line = m[2];
    if (line.endsWith("<unfinished ...>")) {
      pending.set(pid, line.slice(0, -"<unfinished ...>".length));
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed) {
      line = (pending.get(pid) ?? "") + resumed[1];
      pending.delete(pid);
    }
    const list = events.get(pid) ?? [];
    if (!events.has(pid)) {
      events.set(pid, list);
      order.push(pid);
    }
    const call = /^(\w+)\((.*)\) += (-?\d+)(?: .*\/\* (\d+) in strace's PID NS \*\/)?/s.exec(line);
    if (!call) continue;
    const [, name, args, ret, translated] = call;
    if (name === "execve" || name === "execveat") {
      if (ret !== "0") continue;
      list.push({ kind: "exec", file: cStrings(args)[0] ?? "", argv: argvOf(args), seq: seq++ });
    } else if (Number(ret) > 0) {
      const child = Number(translated ?? ret);
      list.push({ kind: "clone", child });
      parents.set(child, { pid, at: list.length });
    }
  }
  // Each process's image at each event, from its parent's at the clone.
  const execs: (Exec & { seq: number })[] = [];
  let traced = false;
  const none: Image = { name: "", call: false, counts: false };
  const imageAt = (pid: number, at: number): Image => {
    let img = startImage(pid);
    const list = events.get(pid) ?? [];
    for (let i = 0; i < at && i < list.length; i++) {
      const e = list[i];
      if (e.kind === "exec") img = next(img, e);
    }
    return img;
  };
  const starting = new Map<number, Image>();
  const startImage = (pid: number): Image => {
    const known = starting.get(pid);
    if (known) return known;
    const parent = parents.get(pid);
    const img = parent ? imageAt(parent.pid, parent.at) : none;
    starting.set(pid, img);
    return img;
  };
  const next = (img: Image, e: Extract<Event, { kind: "exec" }>): Image => {
    const name = base(e.file);
    if (
      !img.call && name === "bash" && e.argv.length === 3 && e.argv[1] === "-c" &&
      e.argv[2] === command
    ) {
      return { name, call: true, counts: true };
    }
    if (!img.call) return { name, call: false, counts: false };
    return {
      name,
      call: true,
      counts: SEEN_THROUGH.has(name) || (SHELLS.has(name) && runsScript(e.argv)),
    };
  };
  for (const pid of order) {
    let img = startImage(pid);
    for (const e of events.get(pid) ?? []) {
      if (e.kind !== "exec") continue;
      if (img.counts) execs.push({ file: e.file, argv: e.argv, by: img.name, seq: e.seq });
      img = next(img, e);
      traced ||= img.call;
    }
  }
  // In the order the log has them (a process's lines are in order; across processes, nearly).
  execs.sort((a, b) => a.seq - b.seq);
  return { execs: execs.map(({ file, argv, by }) => ({ file, argv, by })), traced };
}

/** The C strings of strace's argument text, unescaped, in order (nested arrays flattened). */
function cStrings(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') {
      i++;
      continue;
    }
    const bytes: number[] = [];
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") {
        const c = text[i + 1];
        const simple: Record<string, number> = {
          n: 10,
          t: 9,
          r: 13,
          v: 11,
          f: 12,
          a: 7,
          b: 8,
          e: 27,
          '"': 34,
          "\\": 92,
        };
        if (c in simple) {
          bytes.push(simple[c]);
          i += 2;
        } else if (c === "x") {
          bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
          i += 4;
        } else if (/[0-7]/.test(c)) {
          const oct = /^[0-7]{1,3}/.exec(text.slice(i + 1))![0];
          bytes.push(parseInt(oct, 8));
          i += 1 + oct.length;
        } else {
          bytes.push(c.charCodeAt(0));
          i += 2;
        }
      } else {
        const enc = new TextEncoder().encode(text[i]);
        bytes.push(...enc);
        i++;
      }
    }
    i++; // the closing quote; a following "..." marks a cut string
    out.push(new TextDecoder().decode(new Uint8Array(bytes)));
  }
  return out;
}

/** The argv array of an execve's argument text: the strings between the first `[` and its `]`. */
function argvOf(args: string): string[] {
  // The file comes first: skip its string, then read the array.
  let i = 0;
  let inString = false;
  for (; i < args.length; i++) {
    const c = args[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[") break;
  }
  let j = i + 1;
  inString = false;
  for (; j < args.length; j++) {
    const c = args[j];
    if (inString) {
      if (c === "\\") j++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "]") break;
  }
  return cStrings(args.slice(i + 1, j));
}
