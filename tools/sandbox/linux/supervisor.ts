/**
 * The supervisor: PID 1 of the sandbox's PID namespace. It closes every
 * descriptor above 2 that it was given (crab's parent may have left some
 * without close-on-exec: a directory's would let the command write there
 * through /proc/self/fd), joins the call's cgroups (the files named after the
 * command), then
 * runs `bash -c COMMAND` (stdin /dev/null, stderr merged into stdout), and
 * when crab closes its stdin (timeout, abort, crab gone) sends SIGTERM to
 * every process in the namespace (only as PID 1: anywhere else "every process"
 * would be every process the user may signal), and SIGKILL to what is left
 * {@link STOP_GRACE_MS} later (a process that ignores SIGTERM, or the command
 * itself, forked a moment before and still ignoring it as the supervisor does,
 * would otherwise outlive a crab that was killed). When the command ends it gives processes
 * still holding on up to 250 ms to finish, counts those left, writes one status
 * line on its own stderr and exits: the kernel then kills everything left in
 * the namespace, whatever it did to leave its process group. As PID 1 it
 * inherits every orphan and reaps it, so that zombies never count against the
 * sandbox's process cap.
 *
 * With a relay to crab's proxy (`net/mod.ts`), it listens on 127.0.0.1 ports
 * and forwards each connection to the proxy's Unix socket, in its own loop:
 * the relay forks no process (a fork costs milliseconds, and a call that makes
 * no connection pays for two listening sockets only), the command cannot kill
 * it, and it ends with the sandbox. The same relay takes a call's forwarded
 * ports to earlier jobs' sockets; and a job's supervisor (`net/ports.ts`)
 * looks at the ports its namespace listens on every 200 ms and keeps a Unix
 * socket for each, relayed the other way. Only such a job's loop wakes on a
 * clock: any other call's waits for its sockets, its command (a pidfd) and
 * crab alone; where the kernel gives no pidfd, it also looks once a second
 * ({@link REAP_TICK_MS}).
 *
 * bwrap reports a child killed by signal N as exit code 128+N, so the status
 * comes from the supervisor instead: perl gives the exact wait status; where
 * there is no perl, a bash supervisor gives the exit code only.
 *
 * @module
 */

import { LINGER_MS, STOP_GRACE_MS } from "../../host/processes.ts";

/**
 * Where the kernel gives no pidfd (before Linux 5.3), the longest the
 * supervisor waits without looking whether its command ended. Perl runs a
 * signal's handler between its own steps: a SIGCHLD that comes as the
 * supervisor enters `select` wakes nothing (a loop of forks here missed 3
 * ends in 60,000 one hour and none in 100,000 the next), and the call would
 * wait for its timeout.
 */
export const REAP_TICK_MS = 1000;

/** How often a job's supervisor looks at the ports its namespace listens on (`net/ports.ts`). */
export const PORT_POLL_MS = 200;

// No modules (POSIX alone costs more to load than the rest of the call): WNOHANG is 1 on Linux.
const PERL = String.raw`
my ($relay, $expose, $cmd, @groups) = @ARGV;
opendir(my $fds, '/proc/self/fd') or die "crab-sandbox: /proc/self/fd: $!\n";
my @inherited = grep { /^\d+$/ && $_ > 2 } readdir($fds);
closedir($fds);
for (@inherited) { if (open(my $h, '<&=', $_)) { close($h) } }
for my $g (@groups) {
  my $f;
  open($f, '>', $g) && syswrite($f, '0') or die "crab-sandbox: cannot join the cgroup $g: $!\n";
  close($f);
}
# The relay: 127.0.0.1:PORT inside the namespace to a Unix socket at PATH, crab's proxy's or an
# earlier job's (AF_INET 2, AF_UNIX 1, SOCK_STREAM 1, SOL_SOCKET 1, SO_REUSEADDR 2 on Linux).
# Listening before the command starts, and relaying in this process's own loop: no process is
# forked for it, not at the start nor for a connection (a fork here costs milliseconds). A
# listener is [socket, where its connections go (a Unix path; a job's port: see below), port,
# gone].
my @ls;
for (split / /, $relay) {
  my ($port, $path) = split /=/, $_, 2;
  socket(my $l, 2, 1, 0) or die "crab-sandbox: socket: $!\n";
  setsockopt($l, 1, 2, pack('i', 1));
  bind($l, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) && listen($l, 128)
    or die "crab-sandbox: cannot listen on 127.0.0.1:$port: $!\n";
  push @ls, [$l, $path, $port];
}
my $listening;
sub listening { $listening = ''; vec($listening, fileno($_->[0]), 1) = 1 for @ls }
listening();
# Where an accepted connection goes: a Unix socket (blocking: crab's proxy and a job's
# supervisor accept at once). One gone for good (ENOENT 2, ECONNREFUSED 111) closes its port:
# what follows is refused at once.
sub reach {
  my ($l) = @_;
  return port($l->[1]) if ref $l->[1];
  my $u;
  socket($u, 1, 1, 0) or return;
  return $u if connect($u, pack('S a*', 1, $l->[1]));
  $l->[3] = 1 if $! == 2 || $! == 111;
  return;
}
# A connection is two flows (client to crab, crab to client) of non-blocking sockets (F_SETFL
# 4, O_NONBLOCK 2048); a flow reads again once all it read is written.
my @flows;
sub accept_ready {
  my ($ready) = @_;
  my $gone = 0;
  for my $l (@ls) {
    next unless vec($ready, fileno($l->[0]), 1);
    accept(my $c, $l->[0]) or next;
    my $u = reach($l);
    # Nowhere to go: a reset (SO_LINGER 13, off after 0 s), at once.
    if (!$u) { setsockopt($c, 1, 13, pack('ii', 1, 0)); $gone ||= $l->[3]; next }
    for ($c, $u) {
      # Larger buffers (SO_SNDBUF 7, SO_RCVBUF 8): fewer, bigger copies for a download.
      setsockopt($_, 1, 7, pack('i', 1 << 21)); setsockopt($_, 1, 8, pack('i', 1 << 21));
      fcntl($_, 4, 2048);
    }
    push @flows, { from => $c, to => $u, buf => '', off => 0 }, { from => $u, to => $c, buf => '', off => 0 };
  }
  return unless $gone;
  close($_->[0]) for grep { $_->[3] } @ls;
  @ls = grep { !$_->[3] } @ls;
  listening();
}
# Moves what a flow can move now, up to 8 MiB (the loop must come back to the command's end
# and to crab's word); EAGAIN (11) waits for select. The end of what it reads, or a reader
# gone, ends the flow (a connection's sockets close with its last flow).
sub flow {
  my ($f) = @_;
  for (1 .. 16) {
    if ($f->{buf} eq '') {
      my $n = sysread($f->{from}, $f->{buf}, 524288);
      return if !defined $n && $! == 11;
      if (!$n) { shutdown($f->{to}, 1); $f->{done} = 1; return }
      $f->{off} = 0;
    }
    my $w = syswrite($f->{to}, $f->{buf}, length($f->{buf}) - $f->{off}, $f->{off});
    if (!defined $w) { return if $! == 11; $f->{buf} = ''; $f->{done} = 1; return }
    $f->{buf} = '' if ($f->{off} += $w) == length $f->{buf};
  }
}
# Adds what the flows wait for to the select masks.
sub waits {
  my ($rin, $win) = @_;
  for (@flows) {
    if ($_->{buf} eq '') { vec($$rin, fileno($_->{from}), 1) = 1 } else { vec($$win, fileno($_->{to}), 1) = 1 }
  }
}
# Accepts what waits and moves what is ready (the select masks' answers).
sub relay {
  my ($rout, $wout) = @_;
  accept_ready($rout);
  for (@flows) {
    flow($_) if vec($_->{buf} eq '' ? $rout : $wout, fileno($_->{buf} eq '' ? $_->{from} : $_->{to}), 1);
  }
  @flows = grep { !$_->{done} } @flows;
}
#EXPOSE
pipe(my $wr, my $ww) or die "crab-sandbox: pipe: $!\n";
# One wake-up byte at a time: a storm of SIGCHLD must not fill the pipe and block the handler.
my $woken = 0;
$SIG{CHLD} = sub { syswrite($ww, "x") unless $woken++ };
# SIGPIPE too: a client gone ends its flow, not the relay.
$SIG{$_} = 'IGNORE' for qw(TERM INT HUP QUIT PIPE);
my $pid = fork() // die "crab-sandbox: fork: $!\n";
if ($pid == 0) {
  $SIG{$_} = 'DEFAULT' for qw(CHLD TERM INT HUP QUIT PIPE);
  close($_->[0]) for @ls;
  open(STDIN, '<', '/dev/null'); open(STDERR, '>&', \*STDOUT);
  exec { 'bash' } 'bash', '-c', $cmd;
  print STDERR "bash: $!\n"; exit 127;
}
# The command's end as a descriptor that select sees: a pidfd (pidfd_open, 434 on x86-64 and
# arm64, Linux 5.3). Perl runs the SIGCHLD handler that writes the wake-up byte between its own
# steps, not when the signal comes: one that comes as select begins wakes nothing.
my $ended;
my $pidfd = syscall(434, $pid, 0);
open($ended, '<&=', $pidfd) or undef $ended if $pidfd >= 0;
# After crab's word, what still runs has $grace seconds left before SIGKILL.
my ($status, $ctl, $grace) = (undef, 1, undef);
# As PID 1 it inherits every orphan: reaped here, their zombies do not count against the cap.
sub reap { while ((my $w = waitpid(-1, 1)) > 0) { $status = $? if $w == $pid } }
# A job that exposes its ports looks at them every ${PORT_POLL_MS} ms, whatever woke it meanwhile.
my $poll = ${PORT_POLL_MS / 1000};
while (1) {
  reap();
  last if defined $status;
  my ($rin, $win) = ($listening, ''); vec($rin, fileno($wr), 1) = 1; vec($rin, 0, 1) = 1 if $ctl;
  waits(\$rin, \$win);
  vec($rin, fileno($ended), 1) = 1 if $ended;
  # The nearest clock: a job's port poll, the grace after crab's word, and, where the command's
  # end is no descriptor, a tick that finds it.
  my $wait = $ended ? undef : ${REAP_TICK_MS / 1000};
  $wait = $poll if $expose && !(defined $wait && $wait < $poll);
  $wait = $grace if defined $grace && !(defined $wait && $wait < $grace);
  my ($n, $left) = select(my $rout = $rin, my $wout = $win, undef, $wait);
  my $spent = defined $wait ? $wait - ($left // 0) : 0;
  # A process that ignored the SIGTERM (or was forked before it could take one) is killed.
  if (defined $grace && ($grace -= $spent) < 0.001) { $grace = undef; kill('KILL', -1) }
  # Once the listeners changed, what select said of their descriptors is stale: select again.
  if ($expose && ($poll -= $spent) < 0.001) { $poll = ${PORT_POLL_MS / 1000}; next if watch() }
  next if $n <= 0;
  relay($rout, $wout);
  if (vec($rout, fileno($wr), 1)) { sysread($wr, my $drain, 512); $woken = 0 }
  # Everything in the namespace, and only there: as PID 1, never outside a PID namespace.
  if ($ctl && vec($rout, 0, 1) && !sysread(STDIN, my $buf, 512)) {
    $ctl = 0;
    if ($$ == 1) { kill('TERM', -1); $grace = ${STOP_GRACE_MS / 1000} }
  }
}
sub others {
  opendir(my $d, '/proc') or return 0; my $n = 0;
  for my $p (readdir $d) {
    next unless $p =~ /^\d+$/; next if $p == 1 || $p == $$;
    open(my $f, '<', "/proc/$p/stat") or next; my $s = <$f>;
    next unless defined $s && $s =~ /.*\) (\S)/s;
    $n++ unless $1 eq 'Z';
  }
  return $n;
}
my $left = others();
for (my $i = 0; $left > 0 && $i < ${LINGER_MS / 10}; $i++) {
  # Still relaying for what is left, meanwhile: 10 ms, whatever wakes the select.
  for (my $t = 0.01; $t > 0;) {
    my ($rin, $win) = ($listening, '');
    waits(\$rin, \$win);
    (my $n, $t) = select(my $rout = $rin, my $wout = $win, undef, $t);
    relay($rout, $wout) if $n > 0;
  }
  reap(); $left = others();
}
unexpose() if $expose;
print STDERR "\ncrab-sandbox-status wait=$status others=$left\n";
`;

// What only a job that exposes its ports runs (a normal call does not even compile it).
const PERL_EXPOSE = String.raw`
# A job's ports: the TCP ports this namespace listens on (state 0A in /proc/net/tcp and tcp6) on
# 127.0.0.1, 0.0.0.0, ::1 or :: (the kernel's words in either byte order), each kept as a Unix
# socket DIR/PORT while it listens, its connections relayed to 127.0.0.1:PORT, or [::1]:PORT
# where only IPv6 listens. Never the relays' own ports, nor those named after DIR.
my ($edir, @never) = split / /, $expose;
my %never = map { $_ => 1 } @never, map { $_->[2] } @ls;
my %loopback = map { $_ => 1 } ('0100007F', '7F000001', '00000000', '0' x 32, ('0' x 24) . '01000000', ('0' x 31) . '1');
my %exposed;
sub watch {
  my %on;
  for my $v (6, 4) {
    open(my $f, '<', $v == 4 ? '/proc/net/tcp' : '/proc/net/tcp6') or next;
    while (<$f>) { $on{hex $2} = $v if /^\s*\d+: ([0-9A-F]+):([0-9A-F]{4}) \S+ 0A / && $loopback{$1} }
  }
  my $changed = 0;
  for my $p (keys %exposed) {
    next if $on{$p};
    close(delete($exposed{$p})->[0]); unlink "$edir/$p"; $changed = 1;
  }
  for my $p (keys %on) {
    next if $never{$p};
    if ($exposed{$p}) { $exposed{$p}[1][1] = $on{$p} == 6; next }
    # What the command left at the name goes: the name is the supervisor's.
    unlink "$edir/$p";
    my $s;
    socket($s, 1, 1, 0) && bind($s, pack('S a*', 1, "$edir/$p")) && listen($s, 128) or next;
    $exposed{$p} = [$s, [$p, $on{$p} == 6], $p]; $changed = 1;
  }
  return 0 unless $changed;
  @ls = ((grep { !ref $_->[1] } @ls), values %exposed);
  listening();
  return 1;
}
# A job's port is [PORT, v6]: the connection goes there, non-blocking, so that a server that
# does not accept holds nobody up (AF_INET6 10, EINPROGRESS 115).
sub port {
  my ($port, $v6) = @{$_[0]};
  my $u;
  socket($u, $v6 ? 10 : 2, 1, 0) or return;
  fcntl($u, 4, 2048);
  my $to = $v6 ? pack('S n N a16 N', 10, $port, 0, ("\0" x 15) . "\1", 0)
    : pack('S n C4 x8', 2, $port, 127, 0, 0, 1);
  return connect($u, $to) || $! == 115 ? $u : undef;
}
# The job's ports end with it.
sub unexpose { unlink "$edir/$_" for keys %exposed }
`;

const BASH = String.raw`
for f in /proc/self/fd/*; do
  f=\${f##*/}
  [ "$f" -gt 2 ] && eval "exec $f<&-"
done
for g in "\${@:2}"; do
  printf 0 2>/dev/null > "$g" || { echo "crab-sandbox: cannot join the cgroup $g" >&2; exit 125; }
done
exec 3<&0 0</dev/null
bash -c "$1" 2>&1 3<&- &
c=$!
trap '' TERM INT HUP QUIT
{
  while read -r -u 3 _; do :; done
  if [ "$$" = 1 ]; then
    kill -TERM -1 2>/dev/null
    sleep ${STOP_GRACE_MS / 1000}
    kill -KILL -1 2>/dev/null
  fi
} &
w=$!
wait "$c"; s=$?
others() {
  n=0
  for p in /proc/[0-9]*; do
    p=\${p#/proc/}
    case $p in 1|$$|$w) continue ;; esac
    read -r l < "/proc/$p/stat" 2>/dev/null || continue
    # A zombie, or the watcher's own pause (its child) after crab's word, is no process left.
    case $l in *") Z "*|*") "?" $w "*) continue ;; esac
    n=$((n + 1))
  done
}
others; i=0
while [ "$n" -gt 0 ] && [ "$i" -lt ${LINGER_MS / 10} ]; do
  read -r -t 0.01 -u 3 _ || [ $? -gt 128 ] || sleep 0.01
  others; i=$((i + 1))
done
printf '\ncrab-sandbox-status code=%d others=%d\n' "$s" "$n" >&2
`;

/**
 * The argv that runs `command` under the supervisor (perl when given, else
 * bash), after it joined the cgroups whose cgroup.procs files are `groups`;
 * with `relay` (`PORT=SOCKET …`, perl only) it first listens on those ports of
 * 127.0.0.1 and forwards each connection to the socket; with `expose` (`DIR
 * PORT…`, perl only) it keeps a socket in DIR for each port its namespace
 * listens on but the ports named.
 */
export function supervisorArgv(
  command: string,
  perl?: string,
  groups: string[] = [],
  relay = "",
  expose = "",
): string[] {
  if ((relay || expose) && !perl) {
    throw new Error("the relay to crab's proxy and a job's ports need the perl supervisor");
  }
  const script = PERL.replace("#EXPOSE\n", expose ? PERL_EXPOSE : "");
  return perl
    ? [perl, "-e", script, "--", relay, expose, command, ...groups]
    : ["bash", "-c", BASH.replaceAll("\\${", "${"), "crab-sandbox", command, ...groups];
}

/** What the supervisor says on stderr when it cannot join a cgroup. */
export const JOIN_FAILED = /^crab-sandbox: (cannot join the cgroup .*)$/m;

/** How the command ended, as the supervisor saw it. */
export interface SupervisedStatus {
  code: number | null;
  /** Signal name when it was killed by one (known only with the perl supervisor). */
  signal: string | null;
  /** Processes still running when the command ended, stopped with the sandbox. */
  others: number;
}

const SIGNALS = [
  "",
  "SIGHUP",
  "SIGINT",
  "SIGQUIT",
  "SIGILL",
  "SIGTRAP",
  "SIGABRT",
  "SIGBUS",
  "SIGFPE",
  "SIGKILL",
  "SIGUSR1",
  "SIGSEGV",
  "SIGUSR2",
  "SIGPIPE",
  "SIGALRM",
  "SIGTERM",
  "SIGSTKFLT",
  "SIGCHLD",
  "SIGCONT",
  "SIGSTOP",
  "SIGTSTP",
  "SIGTTIN",
  "SIGTTOU",
  "SIGURG",
  "SIGXCPU",
  "SIGXFSZ",
  "SIGVTALRM",
  "SIGPROF",
  "SIGWINCH",
  "SIGIO",
  "SIGPWR",
  "SIGSYS",
];

const STATUS_LINE = /^crab-sandbox-status (wait|code)=(\d+) others=(\d+)$/gm;

/**
 * The status line in the supervisor's stderr (the last one wins), and what
 * else was written there (bwrap's own error messages).
 */
export function parseStatus(stderr: string): { status?: SupervisedStatus; rest: string } {
  let status: SupervisedStatus | undefined;
  for (const m of stderr.matchAll(STATUS_LINE)) {
    const value = Number(m[2]);
    const others = Number(m[3]);
    if (m[1] === "code") status = { code: value, signal: null, others };
    else if ((value & 0x7f) === 0) status = { code: value >> 8, signal: null, others };
    else {
      const n = value & 0x7f;
      status = { code: null, signal: SIGNALS[n] ?? `SIG${n}`, others };
    }
  }
  return { status, rest: stderr.replace(STATUS_LINE, "").trim() };
}

/** Bytes of bubblewrap's and the supervisor's own messages kept. */
const STATUS_BYTES = 64 * 1024;

/**
 * The supervisor's stderr as a sandboxed command writes it, kept up to
 * {@link STATUS_BYTES}, read for its status once the command ended.
 */
export class StatusTail {
  #parts: Uint8Array[] = [];
  #size = 0;

  /** Keeps `chunk`, as far as the bound allows. */
  push(chunk: Uint8Array): void {
    if (this.#size >= STATUS_BYTES) return;
    this.#parts.push(chunk.slice(0, STATUS_BYTES - this.#size));
    this.#size += chunk.byteLength;
  }

  /** What {@link parseStatus} finds in what was kept. */
  read(): { status?: SupervisedStatus; rest: string } {
    const all = new Uint8Array(this.#parts.reduce((n, p) => n + p.byteLength, 0));
    let off = 0;
    for (const p of this.#parts) {
      all.set(p, off);
      off += p.byteLength;
    }
    return parseStatus(new TextDecoder().decode(all));
  }
}
