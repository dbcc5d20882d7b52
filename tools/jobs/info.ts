/**
 * What the table tells of a job, and how it is put into words: the types
 * front ends and the tools read, and the lines they show.
 *
 * @module
 */

import { join } from "../fs/path.ts";
import { configDir } from "../fs/data_dir.ts";
import { printable } from "../fs/printable.ts";
import type { Contact } from "../sandbox/mod.ts";
import type { SandboxPolicy } from "../policy/sandbox.ts";
import { ToolError } from "../tool.ts";

/** Where a job is: running, ended on its own, stopped by crab, or never run by the sandbox. */
export type JobState = "running" | "exited" | "killed" | "failed";

/** A job as front ends list it. */
export interface JobInfo {
  /** `b1`, `b2`, … in the order the session started them. */
  id: string;
  command: string;
  state: JobState;
  /** Epoch ms. */
  startedAt: number;
  endedAt: number | null;
  /** Milliseconds it has run (until now, or until it ended). */
  ageMs: number;
  /** The last line of its output so far (escaped for a terminal; cut at 200 characters). */
  lastLine: string;
  /** Its exit code once it exited; null while it runs, or when a signal ended it. */
  exitCode: number | null;
  /** The signal that ended it, when one did. */
  signal: string | null;
  /** Why the sandbox could not run it (state `failed`). */
  failure?: string;
  /** The file that holds its output. */
  outputPath: string;
  /**
   * Its folder for the sockets of the TCP ports it listens on, which its
   * sandbox fills (`exposePorts`), while the job holds one (a sandboxed job
   * on Linux, until it ended and no call uses it); see {@link JobTable.exposedPorts}.
   */
  portsDir?: string;
  /** Why its ports are not exposed (no perl, the host's own network, macOS), when it has none. */
  portsNote?: string;
  /** Whether the user lets its ports onto the host's 127.0.0.1 (`sandbox.jobPortsOnHost`). */
  portsOnHost: boolean;
  /** Bytes it wrote in all. */
  outputBytes: number;
}

/** A change of the table: a job started, wrote (at most a few times a second), was read, ended. */
export interface JobEvent {
  kind: "started" | "output" | "read" | "ended";
  job: JobInfo;
}

/**
 * Which files of the workspace changed while a job ran, from a file watcher
 * the front end gives ({@link JobTableOptions.watchChanges}).
 */
export interface ChangeWatch {
  /**
   * Absolute paths changed since the watch began (once what changed until
   * now was delivered), and whether the watcher vouches it saw them all.
   */
  take(): Promise<{ paths: Iterable<string>; complete: boolean }>;
  close(): void;
}

/** What the files changed while a job ran are known to be. */
export interface ChangedFiles {
  /** Workspace-relative paths, sorted. */
  paths: string[];
  /** False when the watcher may have missed some (or none watched). */
  complete: boolean;
  /** No watcher ran: nothing is known. */
  unknown?: boolean;
}

/** What a session is to its jobs: its workspace and its sandbox grant. */
export interface JobSession {
  readonly workspace: string;
  readonly sandbox: SandboxPolicy;
}

export interface JobRead {
  info: JobInfo;
  /** The new output read (its start, when it was long), as the job wrote it. */
  text: string;
  /** Bytes of new output between {@link text} and {@link tail} not shown (0: none). */
  gap: number;
  /** The end of the new output, when it was too long to show whole. */
  tail: string;
  /** Hosts the job's proxy refused since the last read. */
  refused: Contact[];
  /** The ports it listens on now, while it runs (later calls reach each on their 127.0.0.1). */
  ports: JobPort[];
  /** Why (some of) its ports are not on the host though the user allows it. */
  hostNote?: string;
  /** What the sandbox said when the job ended (caps reached, protected paths put back). */
  notes: string[];
  /** The files changed while it ran, once it ended. */
  changed?: ChangedFiles;
  /** Why its output file stopped taking output, if it did. */
  broken?: string;
}

/** A port a running job listens on, and where it is reached. */
export interface JobPort {
  /** The job's port: the session's later calls reach it on their own 127.0.0.1 there. */
  port: number;
  /** The host's 127.0.0.1 port it is on (`sandbox.jobPortsOnHost`), when it is. */
  hostPort?: number;
}

/** A command as a one-line mention: escaped and cut. */
export function short(command: string, max = 80): string {
  return printable(command.replace(/\s+/g, " ").trim(), "strict", max);
}

/** How a job stands, in words: `running for 12 s`, `exited with code 0`, … */
export function stateWords(job: JobInfo): string {
  switch (job.state) {
    case "running":
      return `running for ${seconds(job.ageMs)}`;
    case "killed":
      return "killed";
    case "failed":
      return `failed: ${job.failure ?? "the sandbox could not run it"}`;
    case "exited":
      return job.signal ? `ended by ${job.signal}` : `exited with code ${job.exitCode}`;
  }
}

/** Why the user's machine cannot reach a job's ports without the user's leave, and what gives it. */
export function hostPortsOff(): string {
  return "only the user allows that, with the flag --job-ports-on-host or " +
    `"sandbox": {"jobPortsOnHost": true} in ${join(configDir(), "config.json")}; ` +
    "tell the user if they need it.";
}

/** A duration for people: `0.6 s`, `12 s`. */
export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** Paths named in one line at most. */
export const SHOWN_PATHS = 12;

/** The files changed while a job ran, as one line (empty when there were none and that is sure). */
export function changedLine(changed: ChangedFiles | undefined): string {
  if (!changed || changed.unknown) {
    return "files changed while it ran: not known (no file watcher ran in this workspace)";
  }
  const { paths, complete } = changed;
  const maybe = complete ? "" : " (the file watcher may have missed some)";
  if (paths.length === 0) return complete ? "" : `files changed while it ran: none seen${maybe}`;
  const shown = paths.slice(0, SHOWN_PATHS).map((p) => printable(p, "strict", 200)).join(", ");
  const more = paths.length > SHOWN_PATHS ? ` … and ${paths.length - SHOWN_PATHS} more` : "";
  return `files changed while it ran (by it, or by anyone else meanwhile): ${shown}${more}${maybe}`;
}

/** The note the model gets at its next turn for a job that ended on its own. */
export function endNote(job: JobInfo, changed: ChangedFiles | undefined): string {
  const files = changed && !changed.unknown && changed.paths.length ? changedLine(changed) : "";
  return `[job ${job.id} ${stateWords(job)}: ${short(job.command)}${files ? `; ${files}` : ""}]`;
}

/** The refusal of a job past the session's cap, naming the running ones. */
export function tooMany(
  running: readonly { id: string; command: string }[],
  max: number,
): ToolError {
  return new ToolError(
    "too_many_jobs",
    `Cannot start another background job: ${running.length} ` +
      `${running.length === 1 ? "is" : "are"} running, the most this session ` +
      `may run at once (jobs.max in crab's settings is ${max})`,
    `Stop one you no longer need with bash_kill first: ${
      running.map((j) => `${j.id} (${short(j.command, 60)})`).join(", ")
    }.`,
  );
}
