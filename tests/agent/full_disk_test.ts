import assert from "node:assert/strict";
import { until } from "../support/until.ts";
import { join } from "node:path";
import { crabArgs, type Sandbox, sandbox } from "../support/cli.ts";
import { startFakeModel } from "../support/fake_model.ts";
import { assertTmpfsNamespace, unshared } from "../support/unshare.ts";

// The store's disk fills up while crab runs: crab runs in a user and mount namespace whose
// CRAB_HOME is a 1 MiB tmpfs, and the test fills that tmpfs once the store is open.

/**
 * The namespace side: mounts the tmpfs on CRAB_HOME, starts crab with `$@` (its stdin
 * a FIFO fed `first.jsonl`, then `rest.jsonl` once the disk is full, when those exist),
 * waits for `$out/go` (made by the test, or here once crab answered the first line; at
 * most 30 s), fills the tmpfs (again while crab frees a block), says so in `$out/filled`, then waits for crab and
 * records its exit code, and copies the store to `$out/kept`.
 */
const SCRIPT = `
  home=$1 out=$2; shift 2
  mount -t tmpfs -o size=1m tmpfs "$home" || exit 90
  if [ -f "$out/first.jsonl" ]; then
    mkfifo "$out/in" || exit 91
    "$@" < "$out/in" > "$out/stdout" 2> "$out/stderr" &
    pid=$!
    exec 3> "$out/in"
    cat "$out/first.jsonl" >&3
  else
    "$@" < /dev/null > "$out/stdout" 2> "$out/stderr" &
    pid=$!
    exec 3> /dev/null
  fi
  i=0
  while [ ! -e "$out/go" ] && [ $i -lt 600 ]; do
    sleep 0.05; i=$((i+1))
    [ -f "$out/first.jsonl" ] && [ "$(wc -l < "$out/stdout")" -ge 1 ] && touch "$out/go"
  done
  # crab may free a block meanwhile (a temp it removes): fill again until none is left.
  n=0
  while [ $n -lt 20 ]; do
    cat /dev/zero >> "$home/fill" 2>/dev/null
    df -k "$home" | tail -1 > "$out/df"
    [ "$(awk '{print $4}' "$out/df")" = 0 ] && break
    n=$((n+1))
  done
  touch "$out/filled"
  [ -f "$out/rest.jsonl" ] && cat "$out/rest.jsonl" >&3
  exec 3>&-
  wait $pid
  echo $? > "$out/exit"
  mkdir "$out/kept" && cp "$home"/crab.db* "$out/kept/"
  exit 0`;

interface Outcome {
  exit: number;
  stdout: string;
  stderr: string;
  /** `df` of the tmpfs right after filling it. */
  df: string;
  runs: { mode: string; calls: number; status: string | null }[];
}

async function runInFullDisk(
  s: Sandbox,
  args: string[],
  env: Record<string, string> = {},
): Promise<Outcome> {
  const crab = [Deno.execPath(), ...crabArgs()];
  const out = await unshared(
    s,
    "-Urm",
    SCRIPT,
    [s.home, s.root, ...crab, ...args],
    env,
    90_000,
  );
  const read = out.read;
  assert.equal(out.code, 0, out.stderr + read("stderr"));
  const metrics = await s.crab(["metrics", "--json"], { env: { CRAB_HOME: join(s.root, "kept") } });
  assert.equal(metrics.code, 0, metrics.stderr);
  return {
    exit: Number(read("exit").trim()),
    stdout: read("stdout"),
    stderr: read("stderr"),
    df: read("df"),
    runs: JSON.parse(metrics.stdout).runs,
  };
}

function assertFull(o: Outcome) {
  const avail = Number(o.df.trim().split(/\s+/)[3]);
  assert.equal(avail, 0, `the tmpfs was not full: ${o.df}`);
}

const NOT_STORED = /^crab: observations could not be stored: database or disk is full; /;

Deno.test({
  name: "crab tool --jsonl on a store whose disk fills up answers every line and exits 0",
  async fn() {
    assertTmpfsNamespace();
    using s = sandbox();
    s.put("a.txt", "hello\n");
    const line = (tool: string, args: unknown) => JSON.stringify({ tool, args }) + "\n";
    Deno.writeTextFileSync(join(s.root, "first.jsonl"), line("read", { path: "a.txt" }));
    Deno.writeTextFileSync(
      join(s.root, "rest.jsonl"),
      line("read", { path: "a.txt", offset: 1 }) + line("glob", { pattern: "*.txt" }) +
        line("read", { path: "missing.txt" }),
    );
    const o = await runInFullDisk(s, ["tool", "--jsonl"]);
    assertFull(o);
    const answers = o.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(answers.map((a) => [a.tool, a.ok, a.ok ? a.output : a.error.code]), [
      ["read", true, "1\thello\n"],
      ["read", true, "1\thello\n"],
      ["glob", true, "a.txt"],
      ["read", false, "file_not_found"],
    ]);
    assert.equal(o.exit, 0, o.stderr);
    const lines = o.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, o.stderr);
    assert.match(lines[0], NOT_STORED);
    // What was stored before the disk filled up is still there.
    assert.deepEqual(o.runs.map((r) => [r.mode, r.calls >= 1]), [["tool", true]]);
  },
});

Deno.test({
  name: "crab -p on a store whose disk fills up prints the answer and exits 0",
  async fn() {
    assertTmpfsNamespace();
    using s = sandbox();
    s.put("a.txt", "hello\n");
    const waitFor = async (path: string) => {
      await until(() => exists(path), `${path} exists`);
    };
    await using fake = await startFakeModel([
      async () => {
        // The store is open by now: fill its disk before the run goes on.
        Deno.writeTextFileSync(join(s.root, "go"), "");
        await waitFor(join(s.root, "filled"));
        return { calls: [{ name: "read", args: { path: "a.txt" } }] };
      },
      { text: "The file says hello." },
    ]);
    const o = await runInFullDisk(
      s,
      [
        "--provider",
        "anthropic",
        "--base-url",
        fake.baseUrlFor("anthropic"),
        "--model",
        "fake-model",
        "--context-window",
        "200000",
        "-p",
        "what is in a.txt?",
      ],
      { ANTHROPIC_API_KEY: "test-key" },
    );
    assertFull(o);
    assert.equal(o.stdout, "The file says hello.\n");
    assert.equal(o.exit, 0, o.stderr);
    // Besides the tool line, one line says what was not stored.
    const lines = o.stderr.trimEnd().split("\n").filter((l) => !l.startsWith("● read a.txt"));
    assert.equal(lines.length, 1, o.stderr);
    assert.match(lines[0], NOT_STORED);
    assert.deepEqual(o.runs.map((r) => r.mode), ["print"]);
    assert.equal(fake.modelRequests().length, 2);
  },
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
