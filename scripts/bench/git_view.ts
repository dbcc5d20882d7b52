/**
 * What the sandbox's git views cost per call in a repository of 100,000 loose
 * objects: the private views set up and given back (`prepareGitViews`, then
 * `giveBack`) around a call that changed nothing, beside the same in a fresh
 * repository, and around a call that wrote a commit's worth (three loose
 * objects and a ref, as git writes them). The give-back stats every directory
 * git can write in place, to find links and other non-files in those that
 * changed; that is what the loose objects' 256 directories add over a fresh
 * repository. Target: at most 2 ms added per call. The first call of a process
 * learns the directories and is shown apart; each timed call starts once the
 * last change is more than a second old, as calls a model makes are.
 *
 *   deno run -A scripts/bench/git_view.ts [--objects N]
 *
 * @module
 */

import { join } from "node:path";
import { createHash } from "node:crypto";
import { deflateSync } from "node:zlib";
import { median, reportRow } from "./_table.ts";
import { prepareGitViews } from "../../tools/sandbox/git/view.ts";

const objectsArg = Deno.args.indexOf("--objects");
const OBJECTS = objectsArg >= 0 ? Number(Deno.args[objectsArg + 1]) : 100_000;
const ROUNDS = 40;
const PER_ROUND = 10;
const CHANGED_ROUNDS = 12;
const TARGET_MS = 2;

function git(cwd: string, ...args: string[]): string {
  const o = new Deno.Command("git", {
    args: ["-c", "user.name=b", "-c", "user.email=b@b", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!o.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
  return new TextDecoder().decode(o.stdout).trim();
}

/** Writes a blob as a loose object, as `git hash-object -w` would; returns its id. */
function writeBlob(gitDir: string, content: string): string {
  const body = new TextEncoder().encode(content);
  const raw = new Uint8Array([...new TextEncoder().encode(`blob ${body.length}\0`), ...body]);
  const id = createHash("sha1").update(raw).digest("hex");
  const dir = join(gitDir, "objects", id.slice(0, 2));
  try {
    Deno.mkdirSync(dir);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  Deno.writeFileSync(join(dir, id.slice(2)), deflateSync(raw), { mode: 0o444 });
  return id;
}

function repo(root: string, name: string, objects: number): string {
  const ws = join(root, name);
  Deno.mkdirSync(ws);
  git(ws, "init", "-q", "-b", "main");
  Deno.writeTextFileSync(join(ws, "a.txt"), "a\n");
  git(ws, "add", "a.txt");
  git(ws, "commit", "-qm", "first");
  const gitDir = join(ws, ".git");
  for (let i = 0; i < objects; i++) writeBlob(gitDir, `object ${i}\n`);
  return gitDir;
}

/** One call's views: set up, then (after `during`) given back and put away; ms and notes. */
async function call(gitDir: string, during = () => {}): Promise<{ ms: number; notes: string[] }> {
  const t0 = performance.now();
  const views = await prepareGitViews([gitDir], () => ".git");
  const set = performance.now() - t0;
  during();
  const t1 = performance.now();
  const notes = views.giveBack();
  views.discard();
  return { ms: set + performance.now() - t1, notes };
}

let written = 0;
/** What git writes for a commit: objects in three fan-out directories, and a ref renamed over. */
function commitLike(gitDir: string): () => void {
  return () => {
    for (let i = 0; i < 3; i++) writeBlob(gitDir, `written ${++written}\n`);
    const ref = join(gitDir, "refs", "heads", "bench");
    Deno.writeTextFileSync(`${ref}.lock`, `${"0".repeat(39)}${written % 10}\n`);
    Deno.renameSync(`${ref}.lock`, ref);
  };
}

/** Waits until a change made now is more than a second old (the check counts such a change). */
async function settle(): Promise<void> {
  const until = Date.now() + 1200;
  while (Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

const p90 = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length * 0.9)];

/**
 * Calls that changed nothing, on `a` and `b` in alternating rounds so that the
 * machine's load falls on both alike (after a first call each, and a round to
 * warm up): each side's median per call, and of what `b` adds round by round.
 */
async function quietCalls(a: string, b: string) {
  const first = [(await call(a)).ms, (await call(b)).ms];
  const round = async (gitDir: string) => {
    const t0 = performance.now();
    for (let i = 0; i < PER_ROUND; i++) await call(gitDir);
    return (performance.now() - t0) / PER_ROUND;
  };
  await round(a);
  await round(b);
  const as: number[] = [], bs: number[] = [], added: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const x = await round(a), y = await round(b);
    as.push(x);
    bs.push(y);
    added.push(y - x);
  }
  return { first, a: median(as), b: median(bs), added: median(added), p90: p90(added) };
}

/** Calls that wrote a commit's worth, each once the last one's writes are settled: ms. */
async function changedCalls(gitDir: string): Promise<{ p50: number; p90: number }> {
  const ms: number[] = [];
  for (let i = 0; i < CHANGED_ROUNDS; i++) {
    await settle();
    const r = await call(gitDir, commitLike(gitDir));
    if (r.notes.length) throw new Error(`unexpected notes: ${r.notes.join("\n")}`);
    ms.push(r.ms);
  }
  return { p50: median(ms), p90: p90(ms) };
}

const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-bench-gitview-" }));
Deno.env.set("CRAB_HOME", join(root, "home"));
try {
  const fresh = repo(root, "fresh", 0);
  const t = performance.now();
  const large = repo(root, "large", OBJECTS);
  const dirs = [...Deno.readDirSync(join(large, "objects"))].length;
  console.log(
    `made ${OBJECTS} loose objects in ${dirs} directories in ${
      ((performance.now() - t) / 1000).toFixed(1)
    } s`,
  );
  await settle();
  const quiet = await quietCalls(fresh, large);
  const changed = await changedCalls(large);
  console.log(
    `views per call that changed nothing: fresh repository ${quiet.a.toFixed(3)} ms, ` +
      `${OBJECTS} loose objects ${quiet.b.toFixed(3)} ms (first calls ${
        quiet.first[0].toFixed(1)
      } and ${quiet.first[1].toFixed(1)} ms)`,
  );
  console.log(
    `a call that wrote a commit's worth: p50 ${changed.p50.toFixed(3)} ms (p90 ${
      changed.p90.toFixed(3)
    })`,
  );
  console.log(
    `${OBJECTS} loose objects add ${quiet.added.toFixed(3)} ms per call (p90 of rounds ${
      quiet.p90.toFixed(3)
    }; target ≤ ${TARGET_MS} ms): ${quiet.added <= TARGET_MS ? "ok" : "OVER"}`,
  );
  reportRow({
    measure: "git_view_call",
    value: quiet.added,
    detail: `views per call: ${quiet.b.toFixed(3)} ms with ${OBJECTS} loose objects, ` +
      `${quiet.a.toFixed(3)} ms fresh; ${changed.p50.toFixed(3)} ms after a commit's writes`,
  });
} finally {
  Deno.removeSync(root, { recursive: true });
}
