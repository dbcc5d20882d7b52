/**
 * The keeper of the sandbox's cgroups: one small perl process per crab
 * process that reads and writes cgroup files on crab's behalf. Deno lets a
 * process touch /proc and /sys only with --allow-all, which crab never has; bwrap
 * is the one program crab starts, so the keeper runs through it, with the host's
 * root as it is (no namespace but the mount and, for a user, the user
 * namespace bwrap needs). It serves paths inside the cgroup hierarchies, its
 * own /proc/self/cgroup and /proc/self/mountinfo (it is in crab's cgroup) and
 * /proc/meminfo, and refuses every other path. It ends with crab: it stops
 * at the end of its stdin, and bwrap's --die-with-parent covers a crab killed
 * mid-sentence. It never gets the terminal's signals: the terminal sends
 * those of Ctrl-C, Ctrl-Z and Ctrl-\ to its foreground process group, which
 * is crab's, and a keeper in that group would die at the first Ctrl-C. One
 * that died anyway (killed by hand, by the kernel) is started again at the
 * next request.
 *
 * One request is a line of operations (tab-separated verb, path, value), one
 * answer a line of results in order; the first failed change (mkdir, write,
 * rmdir) ends the line, a failed read does not.
 *
 * @module
 */

import { killProcessGroup } from "../../host/processes.ts";
import { within } from "../../host/within.ts";

// No modules: each costs more to load than the rest of the keeper's start.
const KEEPER = String.raw`
$| = 1;
my @roots;
if (open(my $m, '<', '/proc/self/mountinfo')) {
  while (<$m>) {
    my @f = split / /;
    push @roots, $f[4] if / - (cgroup2?) /;
  }
}
my %files = map { $_ => 1 } qw(/proc/self/cgroup /proc/self/mountinfo /proc/meminfo);
sub allowed {
  my $p = shift;
  return 0 if !defined $p || $p =~ m{/\.\.?(/|$)};
  return 1 if $files{$p};
  for (@roots) { return 1 if $p eq $_ || index($p, "$_/") == 0 }
  return 0;
}
sub esc { my $s = shift; $s =~ s/\\/\\\\/g; $s =~ s/\n/\\n/g; $s =~ s/\t/\\t/g; return $s }
while (my $line = <STDIN>) {
  chomp $line;
  my @f = split /\t/, $line, -1;
  my @out;
  while (@f) {
    my ($op, $path, $value) = splice(@f, 0, 3);
    if (!allowed($path)) { push @out, 'err:not a cgroup path'; last }
    if ($op eq 'read') {
      if (open(my $h, '<', $path)) { local $/; my $c = <$h>; push @out, 'ok:' . esc($c // ''); next }
    } elsif ($op eq 'write') {
      my $h;
      if (open($h, '>', $path) && syswrite($h, $value) && close($h)) { push @out, 'ok'; next }
    } elsif ($op eq 'mkdir') {
      if (mkdir($path)) { push @out, 'ok'; next }
    } elsif ($op eq 'rmdir') {
      if (rmdir($path)) { push @out, 'ok'; next }
    } elsif ($op eq 'list') {
      if (opendir(my $d, $path)) {
        my @e = map { "$_ " . ((stat("$path/$_"))[9] // 0) } grep { !/^\./ && -d "$path/$_" } readdir($d);
        push @out, 'ok:' . esc(join("\n", @e));
        next;
      }
    } else { $! = 22 }
    push @out, 'err:' . esc("$!");
    last unless $op eq 'read' || $op eq 'list';
  }
  print join("\t", @out), "\n";
}
`;

/** One operation: read a file, list a directory's subdirectories, make or remove one, write a file. */
export type KeeperOp =
  | ["read" | "list" | "mkdir" | "rmdir", string]
  | ["write", string, string];

/** One operation's result: the content read (or "" for the others), or the OS's complaint. */
export type KeeperResult = { ok: true; value: string } | { ok: false; error: string };

/** A running keeper. */
export interface Keeper {
  /** Runs `ops` in order; the results stop after the first failed change (not read). */
  run(ops: KeeperOp[]): Promise<KeeperResult[]>;
  /** Ends the keeper (its stdin closes). */
  close(): void;
  /** The keeper's bwrap process now, if one runs (for diagnostics). */
  pid(): number | undefined;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, (_, c) => c === "n" ? "\n" : c === "t" ? "\t" : c);
}

/** One keeper process and the pipes to it. */
interface KeeperProcess {
  child: Deno.ChildProcess;
  writer: WritableStreamDefaultWriter<Uint8Array>;
  reader: ReadableStreamDefaultReader<Uint8Array>;
  buffered: string;
  ended: boolean;
  /** It answered a request: it worked, so one that ends is worth starting again. */
  answered: boolean;
}

/** Kills a keeper that is stuck: bwrap leads its process group, perl is in it. */
function stop(p: KeeperProcess): void {
  p.ended = true;
  killProcessGroup(p.child.pid, "SIGKILL", p.child);
  p.reader.cancel().catch(() => {});
}

/** A keeper process, in a session of its own; bwrap's `--die-with-parent` ends it with crab. */
function spawnKeeper(bwrap: string, perl: string): KeeperProcess {
  const child = new Deno.Command(bwrap, {
    args: ["--die-with-parent", "--dev-bind", "/", "/", "--", perl, "-e", KEEPER],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
    // setsid(): a session, and so a process group, of its own.
    detached: true,
  }).spawn();
  child.unref();
  const p: KeeperProcess = {
    child,
    writer: child.stdin.getWriter(),
    reader: child.stdout.getReader(),
    buffered: "",
    ended: false,
    answered: false,
  };
  child.status.then(() => p.ended = true, () => p.ended = true);
  return p;
}

/**
 * How long the keeper may take to answer one request. Each is a few file
 * operations on cgroupfs, done in microseconds; a start through bwrap on a
 * loaded machine takes up to a second. Past this, the keeper is stuck: it is
 * killed and the request fails, so a bash call says so instead of waiting
 * for ever.
 */
export const KEEPER_ANSWER_MS = 20_000;

/** Options of {@link startKeeper}. */
export interface KeeperOptions {
  /** How long one answer may take (default {@link KEEPER_ANSWER_MS}). */
  answerMs?: number;
}

/** What the keeper wrote next, or "late" when `ms` pass first. */
function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  ms: number,
): Promise<ReadableStreamReadResult<Uint8Array> | "late"> {
  const read = reader.read();
  // A read left pending rejects when the stream is cancelled: nobody waits for it.
  read.catch(() => {});
  return within(read, ms);
}

/**
 * Starts the keeper through `bwrap` with `perl`. Requests are served one at a
 * time; the keeper holds crab's event loop only while one is open, so an idle
 * keeper never keeps crab from ending. A keeper that worked and died (killed
 * by hand, by the kernel) is started again at the next request: one the keeper
 * never got is sent to the new one; one it died in the middle of fails, since
 * what it did of it is unknown. One that never answered is not started again:
 * it cannot run here. One that does not answer within `answerMs` is killed,
 * its process group whole, and the request fails.
 */
export function startKeeper(bwrap: string, perl: string, opts: KeeperOptions = {}): Keeper {
  const answerMs = opts.answerMs ?? KEEPER_ANSWER_MS;
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  let proc: KeeperProcess | undefined = spawnKeeper(bwrap, perl);
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const ask = async (line: string): Promise<string> => {
    // Twice at most: a second keeper that cannot take a line is a broken machine, said as such.
    for (let attempt = 1;; attempt++) {
      if (closed) throw new Error("the cgroup keeper was closed");
      // One that ended before it ever answered cannot run here: no point starting more.
      if (proc?.ended && !proc.answered) throw new Error("the cgroup keeper ended");
      if (!proc || proc.ended) {
        proc?.reader.cancel().catch(() => {});
        proc = spawnKeeper(bwrap, perl);
      }
      const p = proc;
      // Unref'd, the process also leaves its pipes unref'd: held while an answer is awaited.
      p.child.ref();
      try {
        try {
          await p.writer.write(enc.encode(`${line}\n`));
        } catch (e) {
          // A pipe with no reader: the keeper is gone, and never saw the line.
          p.ended = true;
          if (attempt < 2 && p.answered) continue;
          throw e;
        }
        while (!p.buffered.includes("\n")) {
          const read = await readWithin(p.reader, answerMs);
          if (read === "late") {
            stop(p);
            throw new Error(`the cgroup keeper did not answer in ${answerMs / 1000} s`);
          }
          if (read.done) {
            p.ended = true;
            throw new Error("the cgroup keeper ended");
          }
          p.buffered += dec.decode(read.value, { stream: true });
        }
      } finally {
        p.child.unref();
      }
      p.answered = true;
      const end = p.buffered.indexOf("\n");
      const answer = p.buffered.slice(0, end);
      p.buffered = p.buffered.slice(end + 1);
      return answer;
    }
  };
  return {
    run(ops) {
      const line = ops.map(([verb, path, value = ""]) => `${verb}\t${path}\t${value}`).join("\t");
      const answer = queue.then(() => ask(line));
      queue = answer.catch(() => {});
      return answer.then((a) =>
        a === ""
          ? []
          : a.split("\t").map((r): KeeperResult =>
            r.startsWith("ok") ? { ok: true, value: unescape(r.slice(3)) } : {
              ok: false,
              error: unescape(r.slice(4)),
            }
          )
      );
    },
    pid() {
      return proc && !proc.ended ? proc.child.pid : undefined;
    },
    close() {
      closed = true;
      proc?.writer.close().catch(() => {});
      proc = undefined;
    },
  };
}
