/**
 * The background jobs of one session: what `bash` with `run_in_background`
 * starts, `bash_output` reads and `bash_kill` stops. Each job runs in a
 * sandbox of its own (`process.ts`), its output in a capped file in this
 * process's folder of saved output (`output.ts`), where later calls and the
 * read tool find it and other runs do not.
 *
 * The table is the one owner of a session's jobs: at most {@link JobTable.max}
 * run at once, ids are `b1`, `b2`, … per session, and {@link JobTable.close}
 * (every front end calls it when its session ends) stops what still runs and
 * waits for it. Front ends read it through {@link JobTable.list} and
 * {@link JobTable.subscribe}; the model through the tools.
 *
 * It also owns the jobs' ports: a sandboxed job's folder of sockets (one per
 * TCP port it listens on) is lent to the session's later calls
 * ({@link JobTable.lendPorts}), which reach those ports on their own
 * 127.0.0.1, and removed once the job ended and no call holds it. When the
 * user allows it (`sandbox.jobPortsOnHost`) each port is also put on the
 * host's 127.0.0.1, looked for every {@link HOST_POLL_MS} ms while the job
 * runs and at each read, and taken off when the job ends.
 *
 * @module
 */

import { basename, join, relative } from "../fs/path.ts";
import { isEmptyEntry, lstatOrNull } from "../fs/exists.ts";
import { protectedPaths } from "../fs/protected.ts";
import { ensureOwnSpillDir, noteSpillFile } from "../fs/data_dir.ts";
import { printable } from "../fs/printable.ts";
import { isWithin } from "../fs/workspace.ts";
import { runEnv } from "../fs/run_env.ts";
import {
  exposedPorts,
  type ForwardedPort,
  forwardToHost,
  type HostForward,
  type PortsDir,
} from "../sandbox/net/ports.ts";
import { ToolError } from "../tool.ts";
import { JobOutput } from "./output.ts";
import {
  type ChangedFiles,
  type ChangeWatch,
  endNote,
  type JobEvent,
  type JobInfo,
  type JobRead,
  type JobSession,
  type JobState,
  short,
  SHOWN_PATHS,
  tooMany,
} from "./info.ts";
// The types and words of a job are the table's to give too.
export * from "./info.ts";
import { jobPolicy, type JobProcess, type ProcessEnd, startProcess } from "./process.ts";
import { type JobTableOptions, noteCloser, takeRecipe } from "./recipe.ts";
export type { JobTableOptions } from "./recipe.ts";

/** Jobs that may run at once in one session unless the settings say (`jobs.max`). */
export const DEFAULT_MAX_JOBS = 8;

/** A foreground call running now that may become a job (`move.ts`). */
export interface MovableCall {
  readonly command: string;
  /**
   * Hands the call's processes over to `job`: their output from now on goes
   * to `onOutput` (what they wrote so far first), and the call returns. Called
   * at most once; undefined when the call is over or cannot move any more.
   */
  handOver(job: JobInfo, onOutput: (chunk: Uint8Array) => void): JobProcess | undefined;
}

/** Bytes of one line a filter is given. */
export const MAX_LINE_BYTES = 64 * 1024;
/** Bytes read from an output file at a time. */
const READ_BLOCK = 256 * 1024;

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** How often at most a job's output is told to subscribers. */
const OUTPUT_EVENT_MS = 250;
/** How often the ports of a job whose ports go on the host are looked for. */
export const HOST_POLL_MS = OUTPUT_EVENT_MS;
/** A job's ports put on the host at most (the later ones reach the session's calls only). */
export const MAX_HOST_PORTS = 16;
/** Characters of the last line kept. */
const LAST_LINE_CHARS = 200;

/** One background job. */
class Job {
  readonly id: string;
  readonly command: string;
  readonly startedAt = Date.now();
  readonly t0 = performance.now();
  endedAt: number | null = null;
  /** `performance.now()` when it ended. */
  endedAtMono = 0;
  state: JobState = "running";
  end: ProcessEnd | undefined;
  proc: JobProcess | undefined;
  /** Resolves once the job ended and the table knows how (its changed files included). */
  readonly finished: Promise<void>;
  readonly #finish: () => void;
  /** Where the next `bash_output` starts, in the whole output. */
  readAt = 0;
  /** The model saw how it ended (by `bash_output`, `bash_kill`, or a note). */
  told = false;
  killed = false;
  /** Its processes are gone (its state follows once the table knows how it ended). */
  over = false;
  changes: ChangeWatch | undefined;
  changed: ChangedFiles | undefined;
  /** Proxy refusals already shown by `bash_output`. */
  refusalsShown = 0;
  /** The pending `output` event of a burst's end, if any. */
  outputTimer: ReturnType<typeof setTimeout> | undefined;
  /** Its folder of sockets, until it ended and no call holds it. */
  ports: PortsDir | undefined;
  portsNote: string | undefined;
  /** The user lets its ports onto the host (the grant at its start). */
  portsOnHost = false;
  /** Calls started with its sockets that have not been released yet. */
  portUsers = 0;
  /** Its ports on the host's loopback, by port. */
  readonly hosted = new Map<number, HostForward>();
  /** Why (some of) its ports are not on the host though the user allows it. */
  hostNote: string | undefined;
  /** Looks for new ports to put on the host, while it runs and that works. */
  hostTimer: ReturnType<typeof setInterval> | undefined;
  #partial = "";
  #lastLine = "";
  readonly #decoder = new TextDecoder();

  constructor(id: string, command: string, readonly output: JobOutput, readonly dir: string) {
    this.id = id;
    this.command = command;
    const { promise, resolve } = Promise.withResolvers<void>();
    this.finished = promise;
    this.#finish = resolve;
  }

  /** The table knows how it ended (or that it never started). */
  done(): void {
    this.#finish();
  }

  /** Notes the last line of a chunk of output. */
  saw(chunk: Uint8Array): void {
    const text = this.#partial + this.#decoder.decode(chunk, { stream: true });
    const lines = text.split("\n");
    this.#partial = lines.pop()!.slice(-LAST_LINE_CHARS * 4);
    const full = lines.filter((l) => l.trim() !== "");
    if (full.length) this.#lastLine = full[full.length - 1].slice(-LAST_LINE_CHARS * 4);
  }

  info(): JobInfo {
    const line = this.#partial.trim() !== "" ? this.#partial : this.#lastLine;
    const ended = this.endedAt === null ? performance.now() : this.endedAtMono;
    return {
      id: this.id,
      command: this.command,
      state: this.state,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      ageMs: Math.round(ended - this.t0),
      lastLine: printable(line.replace(/\r$/, ""), "strict", LAST_LINE_CHARS),
      exitCode: this.end?.code ?? null,
      signal: this.end?.signal ?? null,
      ...(this.end?.failure ? { failure: this.end.failure } : {}),
      outputPath: this.output.path,
      ...(this.ports ? { portsDir: this.ports.path } : {}),
      ...(this.portsNote ? { portsNote: this.portsNote } : {}),
      portsOnHost: this.portsOnHost,
      outputBytes: this.output.totalBytes,
    };
  }
}

/** Every open table of this process, for undo's question on a workspace ({@link jobsBeside}). */
const open = new Set<JobTable>();

/** The table of each session that has one. */
const tables = new WeakMap<object, JobTable>();

/** The job table of `session`, if one is open. */
export function jobsOf(session: object): JobTable | undefined {
  return tables.get(session);
}

/**
 * The job table of `session`: the open one, or the one its front end gave the
 * recipe of (`recipe.ts`'s `jobsAtFirstUse`), opened now; undefined when it gave none
 * (or closed the session).
 */
export function jobsFor(session: JobSession): JobTable | undefined {
  const opened = tables.get(session);
  if (opened) return opened;
  const recipe = takeRecipe(session);
  if (!recipe) return undefined;
  const table = openJobs(session, recipe.options);
  if (recipe.subscriber) table.subscribe(recipe.subscriber);
  return table;
}

/**
 * Opens the job table of `session` now. A front end gives a recipe instead
 * (`recipe.ts`), which {@link jobsFor} opens with this at first use; the table
 * is closed when the session ends (`recipe.ts`'s `closeJobs`, or `close()`).
 */
export function openJobs(session: JobSession, opts: JobTableOptions = {}): JobTable {
  const table = new JobTable(session, opts);
  tables.set(session, table);
  open.add(table);
  noteCloser(session, () => table.close());
  return table;
}

/**
 * The ids of this process's jobs in `workspace` (a real path) that ran at any
 * time from `since` (epoch ms) until now: what may have changed files beside a
 * call that ran meanwhile.
 */
export function jobsBeside(workspace: string, since: number): string[] {
  const out: string[] = [];
  for (const table of open) {
    if (table.session.workspace !== workspace) continue;
    for (const job of table.jobs()) {
      if (job.endedAt === null || job.endedAt >= since) out.push(job.id);
    }
  }
  return out;
}

/** The background jobs of one session (see the module doc). */
export class JobTable {
  readonly session: JobSession;
  /** Jobs that may run at once. */
  max: number;
  readonly #opts: JobTableOptions;
  readonly #jobs = new Map<string, Job>();
  readonly #listeners = new Set<(event: JobEvent) => void>();
  /** Foreground calls that may be moved to the background now. */
  readonly #movable = new Set<MovableCall>();
  /** A move asked for before any call could move, until the signal aborts. */
  #wanted: AbortSignal | undefined;
  #seq = 0;
  #closed = false;

  constructor(session: JobSession, opts: JobTableOptions = {}) {
    this.session = session;
    this.max = opts.max ?? DEFAULT_MAX_JOBS;
    this.#opts = opts;
  }

  /** Every job of the session, oldest first, as front ends show them. */
  list(): JobInfo[] {
    return [...this.#jobs.values()].map((j) => j.info());
  }

  /** The jobs as {@link jobsBeside} reads them. */
  jobs(): { id: string; endedAt: number | null }[] {
    return [...this.#jobs.values()].map((j) => ({ id: j.id, endedAt: j.endedAt }));
  }

  /** The jobs still running. */
  running(): JobInfo[] {
    return this.list().filter((j) => j.state === "running");
  }

  /** Tells `listener` of every change from now on; returns what stops that. */
  subscribe(listener: (event: JobEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(kind: JobEvent["kind"], job: Job): void {
    if (this.#listeners.size === 0) return;
    const event = { kind, job: job.info() };
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch (e) {
        console.error(`crab: a job listener failed: ${e instanceof Error ? e.message : e}`);
      }
    }
  }

  /**
   * Starts `command` as a job in the session's sandbox as it stands now.
   * Throws `too_many_jobs` when {@link max} run already, and what the sandbox
   * throws when it cannot run commands here.
   */
  async start(command: string, env: Record<string, string>): Promise<JobInfo> {
    if (this.#closed) {
      throw new Error("the session's jobs were closed: no job starts after its end");
    }
    const running = [...this.#jobs.values()].filter((j) => j.state === "running");
    if (running.length >= this.max) throw tooMany(running, this.max);
    const id = `b${++this.#seq}`;
    const job = this.#newJob(id, command);
    const { output, dir } = job;
    // The slot is taken before the sandbox starts: two calls at once cannot both pass the cap.
    this.#jobs.set(id, job);
    job.changes = this.#opts.watchChanges?.();
    let lastEvent = 0;
    const sandbox = jobPolicy(this.session.sandbox);
    try {
      job.proc = await startProcess({
        command,
        workspace: this.session.workspace,
        sandbox,
        env,
        onOutput: (chunk) => {
          output.push(chunk);
          job.saw(chunk);
          const now = performance.now();
          if (now - lastEvent >= OUTPUT_EVENT_MS) {
            lastEvent = now;
            this.#emit("output", job);
          } else if (job.outputTimer === undefined) {
            // The last output of a burst is told too, once the window has passed.
            job.outputTimer = setTimeout(() => {
              job.outputTimer = undefined;
              lastEvent = performance.now();
              if (!job.over) this.#emit("output", job);
            }, OUTPUT_EVENT_MS - (now - lastEvent));
            Deno.unrefTimer(job.outputTimer);
          }
        },
      });
    } catch (e) {
      // Never started: its id is not given again (another start may have taken the next).
      this.#jobs.delete(id);
      job.changes?.close();
      output.close();
      Deno.removeSync(dir, { recursive: true });
      job.done();
      throw e;
    }
    job.ports = job.proc.portsDir;
    job.portsNote = job.proc.portsNote;
    job.portsOnHost = sandbox.jobPortsOnHost === true;
    if (job.ports && job.portsOnHost) {
      job.hostTimer = setInterval(() => this.#putOnHost(job), HOST_POLL_MS);
      Deno.unrefTimer(job.hostTimer);
    }
    this.#emit("started", job);
    job.proc.ended.then(
      (end) => this.#ended(job, end),
      (e) => this.#ended(job, { code: null, signal: null, failure: String(e), notes: [] }),
    ).finally(() => job.done());
    // Stopped while its sandbox was being made (the session ended meanwhile): it stops now.
    if (job.killed) job.proc.stop();
    return job.info();
  }

  async #ended(job: Job, end: ProcessEnd): Promise<void> {
    job.over = true;
    clearTimeout(job.outputTimer);
    job.outputTimer = undefined;
    clearInterval(job.hostTimer);
    job.hostTimer = undefined;
    for (const f of job.hosted.values()) f.close();
    job.hosted.clear();
    this.#dropPorts(job);
    job.endedAt = Date.now();
    job.endedAtMono = performance.now();
    job.output.close();
    try {
      job.changed = await this.#changedFiles(job);
    } catch (e) {
      job.changed = { paths: [], complete: false, unknown: true };
      end.notes.push(
        `crab could not tell which files changed: ${e instanceof Error ? e.message : e}`,
      );
    }
    const refused = this.#refusedChanges(job.changed);
    if (refused) end.notes.push(refused);
    job.end = end;
    job.state = job.killed ? "killed" : end.failure ? "failed" : "exited";
    this.#emit("ended", job);
  }

  /** The line naming files changed while the job ran where the rules deny edits, if any. */
  #refusedChanges(changed: ChangedFiles): string | undefined {
    const check = this.#opts.changeRefusal;
    if (!check || changed.paths.length === 0) return undefined;
    const named: string[] = [];
    for (const p of changed.paths) {
      const abs = join(this.session.workspace, p);
      const why = check(abs, lstatIsDir(abs));
      if (why) named.push(`${printable(p, "strict", 200)} (${why})`);
    }
    if (named.length === 0) return undefined;
    return `changed while the job ran where edits are denied, which crab cannot put back for a ` +
      `job: ${named.slice(0, SHOWN_PATHS).join(", ")}` +
      (named.length > SHOWN_PATHS ? ` … and ${named.length - SHOWN_PATHS} more` : "") +
      "; tell the user to check them";
  }

  async #changedFiles(job: Job): Promise<ChangedFiles> {
    const watch = job.changes;
    job.changes = undefined;
    if (!watch) return { paths: [], complete: false, unknown: true };
    try {
      const { paths, complete } = await watch.take();
      const ws = this.session.workspace;
      const rel = new Set<string>();
      let placeholders: Set<string> | undefined;
      for (const p of paths) {
        if (!isWithin(ws, p) || p === ws) continue;
        const r = relative(ws, p);
        if (r === ".git" || r.startsWith(".git/")) continue;
        // crab's own passing files: a write's temp file gone again, a sandbox's placeholder
        // (an empty directory at a protected path) gone or still held by another call.
        const now = lstatOrNull(p);
        if (now === null && basename(p).startsWith(".crab-")) continue;
        if (now === null || (now.isDirectory && isEmptyEntry(p))) {
          placeholders ??= new Set(protectedPaths(ws).map((x) => x.path));
          if (placeholders.has(p)) continue;
        }
        rel.add(r);
      }
      return { paths: [...rel].sort(), complete };
    } finally {
      watch.close();
    }
  }

  /** The job `id`; `job_not_found` naming the session's jobs when there is none. */
  #get(id: string): Job {
    const job = this.#jobs.get(id);
    if (job) return job;
    const known = [...this.#jobs.values()];
    throw new ToolError(
      "job_not_found",
      `No background job "${printable(id, "strict", 40)}" in this session`,
      known.length
        ? `This session's jobs: ${
          known.map((j) => `${j.id} (${j.state}: ${short(j.command)})`).join(", ")
        }.`
        : "This session has started no background job: bash with run_in_background: true starts one.",
    );
  }

  /** The info of job `id`; `job_not_found` when there is none. */
  info(id: string): JobInfo {
    return this.#get(id).info();
  }

  /**
   * What job `id` wrote since the last read: its first `headBytes` and, when
   * there is more, its last `tailBytes`, with the bytes between counted;
   * the read point moves to the end. With its state, and the hosts its proxy
   * refused since the last read.
   */
  read(id: string, headBytes: number, tailBytes: number): JobRead {
    const job = this.#get(id);
    const out = job.output;
    const total = out.totalBytes;
    const head = out.read(job.readAt, headBytes);
    let tail = "";
    let gap = head.dropped;
    if (head.next < total) {
      const from = Math.max(head.next, total - tailBytes);
      const end = out.read(from);
      gap += from - head.next;
      tail = decode(end.before) + decode(end.after);
    }
    job.readAt = total;
    return this.#reading(job, { text: decode(head.before) + decode(head.after), gap, tail });
  }

  /**
   * The lines job `id` wrote since the last read, for a filter to choose from.
   * While the job runs, a last line without its newline waits for the next
   * read; every other line is consumed. A line longer than
   * {@link MAX_LINE_BYTES} is given as its start. `unread()` gives them back
   * (a filter that failed), unless another read came in between.
   */
  readLines(id: string): JobRead & { lines: string[]; unread(): void } {
    const job = this.#get(id);
    const out = job.output;
    const running = job.state === "running";
    const lines: string[] = [];
    let dropped = 0;
    const take = (bytes: Uint8Array) => lines.push(decode(bytes.subarray(0, MAX_LINE_BYTES)));
    // The line being read: its bytes so far (bounded: a longer line is tested on its start).
    let partial: Uint8Array[] = [];
    let partialSize = 0;
    const whole = () => concat(partial);
    const before = job.readAt;
    let at = before;
    let consumed = at;
    while (at < out.totalBytes) {
      const slice = out.read(at, READ_BLOCK);
      dropped += slice.dropped;
      const parts = [
        { part: slice.before, base: at, cut: slice.dropped > 0 },
        { part: slice.after, base: slice.next - slice.after.byteLength, cut: false },
      ];
      for (const { part, base, cut } of parts) {
        let from = 0;
        for (let nl = part.indexOf(10); nl !== -1; nl = part.indexOf(10, from)) {
          const line = part.subarray(from, nl);
          take(partialSize ? concat([whole(), line]) : line);
          partial = [];
          partialSize = 0;
          from = nl + 1;
          consumed = base + from;
        }
        if (from < part.byteLength && partialSize < MAX_LINE_BYTES) {
          partial.push(part.slice(from));
          partialSize += part.byteLength - from;
        }
        // The output around a drop is not one line.
        if (cut && partialSize) {
          take(whole());
          partial = [];
          partialSize = 0;
          consumed = base + part.byteLength;
        }
      }
      if (slice.next <= at) break;
      at = slice.next;
    }
    if (partialSize && !running) {
      take(whole());
      consumed = out.totalBytes;
    }
    job.readAt = Math.max(job.readAt, consumed);
    const after = job.readAt;
    const unread = () => {
      if (job.readAt === after) job.readAt = before;
    };
    return { ...this.#reading(job, { text: "", gap: dropped, tail: "" }), lines, unread };
  }

  #reading(job: Job, got: Pick<JobRead, "text" | "gap" | "tail">): JobRead {
    const ended = job.state !== "running";
    const contacts = job.proc?.contacts() ?? [];
    const refused = contacts.filter((c) => !c.allowed).slice(job.refusalsShown);
    job.refusalsShown += refused.length;
    if (ended) job.told = true;
    this.#putOnHost(job);
    const ports = job.over || !job.ports ? [] : exposedPorts(job.ports.path).map(({ port }) => {
      const onHost = job.hosted.get(port)?.port;
      return onHost === undefined ? { port } : { port, hostPort: onHost };
    });
    this.#emit("read", job);
    return {
      info: job.info(),
      ...got,
      refused,
      ports,
      ...(job.hostNote ? { hostNote: job.hostNote } : {}),
      notes: ended ? job.end?.notes ?? [] : [],
      ...(ended && job.changed ? { changed: job.changed } : {}),
      ...(job.output.broken ? { broken: job.output.broken } : {}),
    };
  }

  /**
   * Stops job `id` and everything it started, and waits until they are gone;
   * resolves to how it ended and the files changed while it ran.
   */
  async kill(id: string): Promise<{ info: JobInfo; wasRunning: boolean; changed?: ChangedFiles }> {
    const job = this.#get(id);
    const wasRunning = !job.over;
    if (wasRunning) {
      job.killed = true;
      // A job whose sandbox is still being made is stopped as soon as it has one.
      job.proc?.stop();
    }
    await job.finished;
    job.told = true;
    return { info: job.info(), wasRunning, ...(job.changed ? { changed: job.changed } : {}) };
  }

  /**
   * Offers a running foreground call to be moved to the background (`move.ts`)
   * until the function returned withdraws it.
   */
  offer(call: MovableCall): () => void {
    this.#movable.add(call);
    const wanted = this.#wanted;
    this.#wanted = undefined;
    // Asked for while this call's sandbox was being made: it moves as soon as it runs.
    if (wanted && !wanted.aborted && this.running().length < this.max) this.#adopt(call);
    return () => this.#movable.delete(call);
  }

  /** How many foreground calls could be moved to the background now. */
  get movable(): number {
    return this.#movable.size;
  }

  /**
   * Moves every foreground call running now to the background, each as a job
   * of its own: the jobs they became, and why a call could not move (the cap
   * is reached: it goes on in the foreground). When none runs yet, the next
   * call offered before `later` aborts moves as soon as it runs (a call whose
   * sandbox is still being made).
   */
  moveToBackground(later?: AbortSignal): { moved: JobInfo[]; refused?: ToolError } {
    const moved: JobInfo[] = [];
    const running = () => [...this.#jobs.values()].filter((j) => j.state === "running");
    if (this.#movable.size === 0 && later && !later.aborted) {
      if (running().length >= this.max) return { moved, refused: tooMany(running(), this.max) };
      this.#wanted = later;
    }
    for (const call of [...this.#movable]) {
      if (running().length >= this.max) return { moved, refused: tooMany(running(), this.max) };
      const job = this.#adopt(call);
      if (job) moved.push(job);
    }
    return { moved };
  }

  /** A job named `id` for `command`: its own folder in this run's spill folder, its output file there. */
  #newJob(id: string, command: string): Job {
    const dir = join(
      ensureOwnSpillDir(this.#opts.env ?? runEnv),
      `job-${id}-${crypto.randomUUID().slice(0, 8)}`,
    );
    Deno.mkdirSync(dir, { mode: 0o700 });
    const output = new JobOutput(join(dir, "output.txt"));
    noteSpillFile(output.path, output.identity());
    return new Job(id, command, output, dir);
  }

  /** Makes `call`'s processes a job, or undefined when the call ended or cannot move. */
  #adopt(call: MovableCall): JobInfo | undefined {
    if (this.#closed) return undefined;
    const id = `b${this.#seq + 1}`;
    const job = this.#newJob(id, call.command);
    const { output, dir } = job;
    // What the call wrote before the move is one burst: told once it is over.
    let lastEvent = performance.now();
    const proc = call.handOver(job.info(), (chunk) => {
      output.push(chunk);
      job.saw(chunk);
      if (job.outputTimer !== undefined) return;
      job.outputTimer = setTimeout(() => {
        job.outputTimer = undefined;
        lastEvent = performance.now();
        if (!job.over && this.#jobs.has(id)) this.#emit("output", job);
      }, Math.max(0, OUTPUT_EVENT_MS - (performance.now() - lastEvent)));
      Deno.unrefTimer(job.outputTimer);
    });
    if (!proc) {
      clearTimeout(job.outputTimer);
      output.close();
      Deno.removeSync(dir, { recursive: true });
      job.done();
      return undefined;
    }
    this.#seq++;
    this.#jobs.set(id, job);
    job.changes = this.#opts.watchChanges?.();
    job.proc = proc;
    this.#emit("started", job);
    proc.ended.then(
      (end) => this.#ended(job, end),
      (e) => this.#ended(job, { code: null, signal: null, failure: String(e), notes: [] }),
    ).finally(() => job.done());
    return job.info();
  }

  /**
   * One line per job that ended on its own since the model last heard of it,
   * for the next message it reads: `[job b1 exited with code 0: CMD]`.
   */
  takeNotes(): string[] {
    const out: string[] = [];
    for (const job of this.#jobs.values()) {
      if (job.state === "running" || job.told) continue;
      job.told = true;
      out.push(endNote(job.info(), job.changed));
    }
    return out;
  }

  /**
   * The TCP ports the running jobs listen on, as their sandboxes expose them:
   * one Unix socket per port in each job's folder, named after the port (the
   * first job's when two listen on the same one), sorted by port.
   */
  exposedPorts(): ForwardedPort[] {
    return this.#exposed().ports;
  }

  #exposed(): { ports: ForwardedPort[]; jobs: Job[] } {
    const ports: ForwardedPort[] = [];
    const jobs: Job[] = [];
    for (const job of this.#jobs.values()) {
      if (job.over || !job.ports) continue;
      const mine = exposedPorts(job.ports.path).filter((p) =>
        !ports.some((o) => o.port === p.port)
      );
      if (mine.length === 0) continue;
      ports.push(...mine);
      jobs.push(job);
    }
    return { ports: ports.sort((a, b) => a.port - b.port), jobs };
  }

  /**
   * The running jobs' ports for a call's `forwardPorts`, their folders held
   * until `release()` (call it once the call's sandbox was released), or
   * undefined when no job exposes a port: then nothing is held, and a call
   * while no job runs costs nothing more than this look at the table.
   */
  lendPorts(): { ports: ForwardedPort[]; release(): void } | undefined {
    const { ports, jobs } = this.#exposed();
    if (ports.length === 0) return undefined;
    for (const job of jobs) job.portUsers++;
    let released = false;
    return {
      ports,
      release: () => {
        if (released) return;
        released = true;
        for (const job of jobs) {
          job.portUsers--;
          this.#dropPorts(job);
        }
      },
    };
  }

  /** Removes a job's folder of sockets once it ended and no call holds it. */
  #dropPorts(job: Job): void {
    if (!job.over || job.portUsers > 0 || !job.ports) return;
    job.ports.remove();
    job.ports = undefined;
  }

  /**
   * Puts the ports job's sandbox exposed since the last look on the host's
   * 127.0.0.1 (the same port, or a free one when it is taken). A port stays
   * there until the job ends, so a server that restarts is found again on it.
   * A failure (a build without network) is kept as the note and ends the looking.
   */
  #putOnHost(job: Job): void {
    if (job.over || !job.ports || job.hostTimer === undefined) return;
    try {
      for (const { port, socket } of exposedPorts(job.ports.path)) {
        if (job.hosted.has(port)) continue;
        if (job.hosted.size >= MAX_HOST_PORTS) {
          job.hostNote = `crab puts at most ${MAX_HOST_PORTS} of a job's ports on the user's ` +
            "machine; the others reach later bash calls only.";
          return;
        }
        job.hosted.set(port, forwardToHost(port, socket));
      }
    } catch (e) {
      // A timer's callback must not throw: crab would end.
      job.hostNote = e instanceof Error ? e.message : String(e);
      clearInterval(job.hostTimer);
      job.hostTimer = undefined;
    }
  }

  /**
   * Ends the session's jobs: stops every one still running (SIGTERM, then
   * SIGKILL after the grace) and waits until they are gone. No job starts
   * after. Calling it again waits for the same.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#jobs.values()].filter((j) => j.state === "running");
    await Promise.all(running.map((j) => this.kill(j.id)));
    open.delete(this);
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }
}

/** What {@link JobTable.read} and {@link JobTable.readLines} return. */
function lstatIsDir(path: string): boolean {
  return lstatOrNull(path)?.isDirectory ?? false;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}
