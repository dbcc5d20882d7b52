/**
 * crab in a large repository, run like a user, beside git on the same tree.
 *
 * From a fixed seed it makes a git repository of 100,000 files in 2,000
 * directories (`pkgN/src/modM/fileK.ext`, mixed extensions, sizes log-normal
 * with median 1 KiB, capped at 1 MiB, text lines that look like source) and
 * one of 10,000 files in 200 directories, which runs first, each committed and
 * packed by `git gc` (as git's own automatic gc leaves a repository after a
 * commit of that many files, and as a clone comes; `--loose` keeps the
 * objects loose instead, where undo's first snapshot reads every file). On
 * each tree:
 *
 * - the peers: `git add -A` into a fresh shadow index (`GIT_INDEX_FILE`), the
 *   same again with that index, and `git status --porcelain` (median of 3);
 * - crab from the bundle (`crab -p` against the fake model server), in the
 *   same workspace and data dir: run 1 is the first session
 *   (undo's first snapshot happens at its first bash call), run 2 a later one
 *   (the stat cache exists; `--later-runs N` times, 3 unless said, its
 *   figures the median of those, as one session is too noisy a sample on a
 *   shared machine), run 3 a later one whose model takes 2 s to its
 *   first call, as a real one does: undo's look ahead checks the stat cache
 *   meanwhile (its first call's time is counted from the answer), run 4 a
 *   later one whose store is due for pruning (at most once an hour, at a
 *   session's first change: the run's `pruned` stamp is removed before it).
 *   The model makes five calls: bash `echo a >> pkg0/extra.txt`, bash
 *   `echo b >> pkg1/extra.txt`, read of one file, edit of that file, bash
 *   `true`. A call's duration is the time between the model request that
 *   received it and the next model request (the fake server's arrival times):
 *   it includes streaming the reply and building the next request, close
 *   enough. "Later calls" are the second bash, the edit and `bash true`; the
 *   read is shown apart. Peak resident memory of the crab process comes from
 *   `/usr/bin/time -f %M`, or else from polling its `VmHWM`;
 * - the undo store's size (`du`, blocks and apparent) against the tree's
 *   content and the allowance `1.2 × content + 200 × files`;
 * - grep and glob against rg and fdfind on the tree, in process and one-shot
 *   from the bundle, with DESIGN's targets (`_tree_search.ts`).
 *
 * An almost empty repository (three files) runs first, the same way: what each
 * tree's calls cost beyond it is what the tree adds (undo, and what else
 * looks at the workspace), not the sandbox's start or the command itself.
 *
 * Targets, on what a tree adds to a call beyond the almost empty repository's:
 * a later session's first bash call ≤ 2× `git status`, later calls p50 ≤ +30
 * ms; and peak RSS ≤ 150 MB; the store within the allowance. The whole call's
 * ratio to `git status` is printed beside.
 *
 *   deno run -A scripts/bench/monorepo.ts [--files N] [--only 100k|10k] [--search-runs N]
 *     [--later-runs N] [--loose]
 *
 * `--files N` sets the large tree's file count (directories: N ÷ 50).
 *
 * @module
 */

import { join } from "node:path";
import { median } from "./_table.ts";
import { type ScriptTurn, startFakeModel, toolResults } from "../../tests/support/fake_model.ts";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";
import { buildBundle } from "../bundle.ts";
import { searchFigures } from "./_tree_search.ts";
import { PRUNED_STAMP } from "../../agent/undo/retention.ts";
import { shutdownPool } from "../../tools/search/grep_pool.ts";

const flag = (name: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const BIG = Number(flag("--files") ?? 100_000);
const ONLY = flag("--only");
const LOOSE = Deno.args.includes("--loose");
/** Rounds of each grep and glob measurement (`--search-runs N`; 0 leaves them out). */
const SEARCH_RUNS = Number(flag("--search-runs") ?? 5);
const FILES_PER_DIR = 50, MODS_PER_PKG = 50;
const CAP = 1024 * 1024;
const TIMEOUT_MS = 10 * 60_000;
/**
 * How many times the later session runs (`--later-runs N`): the figure held to its target is their
 * median, one session's first call being too noisy a sample on a shared machine.
 */
const LATER_RUNS = Math.max(1, Number(flag("--later-runs") ?? 3));
/** How long the model of the third run thinks before its first call. */
const THINK_MS = 2000;
const EXTS = [".ts", ".ts", ".js", ".json", ".ts", ".md", ".py", ".go", ".txt", ".tsx"];
const WORDS = ["value", "index", "config", "render", "parse", "state", "buffer", "result"];
const dec = new TextDecoder();

/** One crab session's figures (ms, and MB for its peak memory). */
interface Figures {
  first: number;
  later: number;
  read: number;
  whole: number;
  rssMB: number;
}
const exists = (p: string) => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const verdict = (ok: boolean) => (ok ? "met" : "MISSED");

/** mulberry32: a small deterministic PRNG in [0, 1). */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One line of source for a file of `ext`; `id` and `n` make it unique in the tree. */
function line(ext: string, id: number, n: number, rand: () => number): string {
  const w = WORDS[Math.floor(rand() * WORDS.length)];
  const x = Math.floor(rand() * 1e6);
  const pad = " ".repeat(Math.floor(rand() * 4) * 2);
  switch (ext) {
    case ".py":
      return `${pad}${w}_${id}_${n} = ${x}  # ${w} of module ${id}`;
    case ".go":
      return `${pad}var ${w}${id}_${n} = ${x} // ${w} of package ${id}`;
    case ".json":
      return `  "${w}_${id}_${n}": ${x},`;
    case ".md":
    case ".txt":
      return `Line ${n} of document ${id}: the ${w} is ${x}, see section ${n % 17}.`;
    default:
      return `${pad}export const ${w}${id}_${n} = ${x}; // ${w} of module ${id}`;
  }
}

/** A file's name in its directory. */
const fileName = (k: number) => `file${k}${EXTS[k % EXTS.length]}`;

/** Writes `files` files under `root` (made here) with a `.gitignore`; returns the directory count. */
function generate(root: string, files: number, seed: number): number {
  const rand = prng(seed);
  const dirs = Math.max(1, Math.round(files / FILES_PER_DIR));
  Deno.mkdirSync(root, { recursive: true });
  Deno.writeTextFileSync(join(root, ".gitignore"), "*.log\nnode_modules/\ndist/\n.env\n");
  let id = 0;
  for (let d = 0; d < dirs; d++) {
    const dir = join(root, `pkg${Math.floor(d / MODS_PER_PKG)}`, "src", `mod${d % MODS_PER_PKG}`);
    Deno.mkdirSync(dir, { recursive: true });
    const n = Math.floor(files * (d + 1) / dirs) - Math.floor(files * d / dirs);
    for (let k = 0; k < n; k++, id++) {
      // Log-normal size, median 1 KiB (Box–Muller).
      const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
      const size = Math.min(CAP, Math.max(16, Math.round(1024 * Math.exp(z))));
      const ext = EXTS[k % EXTS.length];
      const lines: string[] = [];
      for (let len = 0, i = 0; len < size; i++) {
        const l = line(ext, id, i, rand);
        lines.push(l);
        len += l.length + 1;
      }
      const text = lines.join("\n") + "\n";
      Deno.writeTextFileSync(join(dir, fileName(k)), text.length > CAP ? text.slice(0, CAP) : text);
    }
  }
  return dirs;
}

/** Runs a command to completion within the timeout; throws when it fails. */
async function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ ms: number; stdout: string }> {
  const t = performance.now();
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  }).output();
  const ms = performance.now() - t;
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (${out.code}): ${dec.decode(out.stderr)}`);
  }
  return { ms, stdout: dec.decode(out.stdout) };
}

/** Kills `pid` and its direct children (the process `/usr/bin/time` runs). */
function killTree(pid: number): void {
  try {
    const kids = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/children`).trim();
    for (const k of kids ? kids.split(/\s+/) : []) Deno.kill(Number(k), "SIGKILL");
  } catch { /* gone already */ }
  try {
    Deno.kill(pid, "SIGKILL");
  } catch { /* gone already */ }
}

/** `VmHWM` of a process in KiB, 0 when it cannot be read. */
function vmHwm(pid: number): number {
  try {
    const m = Deno.readTextFileSync(`/proc/${pid}/status`).match(/VmHWM:\s+(\d+)/);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const HAS_TIME = exists("/usr/bin/time");

/** Runs `deno args` with a timeout; its whole time and peak resident memory (KiB). */
async function measured(
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeFile: string,
): Promise<{ ms: number; rssKiB: number }> {
  const cmd = HAS_TIME ? "/usr/bin/time" : Deno.execPath();
  const full = HAS_TIME ? ["-o", timeFile, "-f", "%M", Deno.execPath(), ...args] : args;
  const t = performance.now();
  const child = new Deno.Command(cmd, { args: full, cwd, env, stdout: "piped", stderr: "piped" })
    .spawn();
  let hwm = 0;
  const poll = HAS_TIME ? undefined : setInterval(() => {
    hwm = Math.max(hwm, vmHwm(child.pid));
  }, 20);
  const timer = setTimeout(() => killTree(child.pid), TIMEOUT_MS);
  const out = await child.output();
  const ms = performance.now() - t;
  clearTimeout(timer);
  clearInterval(poll);
  if (!out.success) {
    throw new Error(`crab failed (${out.code}):\n${dec.decode(out.stderr).slice(-3000)}`);
  }
  if (HAS_TIME) hwm = Number(Deno.readTextFileSync(timeFile).trim().split("\n").at(-1));
  return { ms, rssKiB: hwm };
}

/** Bytes and count of the files under `root`, `.git` left out. */
function content(root: string): { bytes: number; files: number } {
  let bytes = 0, files = 0;
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = join(d, e.name);
      if (e.isDirectory) {
        if (!(d === root && e.name === ".git")) walk(p);
      } else if (e.isFile) {
        bytes += Deno.lstatSync(p).size;
        files++;
      }
    }
  };
  walk(root);
  return { bytes, files };
}

const base = exists("/var/tmp") ? "/var/tmp" : undefined;
const tmp = Deno.realPathSync(Deno.makeTempDirSync({ dir: base, prefix: "crab-bench-monorepo-" }));
const fake = await startFakeModel([], { models: ["fake-model"] });
try {
  const home = join(tmp, "home"), config = join(tmp, "config");
  Deno.mkdirSync(home);
  Deno.mkdirSync(config);
  const gitEnv = { GIT_CONFIG_NOSYSTEM: "1", HOME: home, XDG_CONFIG_HOME: config };
  const git = (cwd: string, env: Record<string, string>, ...args: string[]) =>
    run(
      "git",
      [
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        ...args,
      ],
      cwd,
      {
        ...gitEnv,
        ...env,
      },
    );

  let t = performance.now();
  const bundle = (await buildBundle(join(tmp, "bundle"))).main;
  // As the installed command runs it: the permission flags and the runtime's own.
  const crabArgs = [
    "run",
    ...presetFlags("full"),
    ...RUNTIME_FLAGS,
    bundle,
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--model",
    "fake-model",
    "--context-window",
    "200000",
    "--yolo",
    "-p",
    "make the changes",
  ];
  await run(Deno.execPath(), ["run", ...presetFlags("full"), bundle, "--version"], tmp, gitEnv);
  console.log(`bundle built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  console.log(`peak RSS from ${HAS_TIME ? "/usr/bin/time -f %M" : "polling VmHWM"}`);

  // An almost empty repository first: what a call costs without a big tree (the sandbox's
  // start, the command), for what each tree adds to it.
  const trees = [
    { name: "empty", files: 3 },
    { name: "10k", files: 10_000 },
    { name: "100k", files: BIG },
  ].filter((tr) => !ONLY || tr.name === ONLY || tr.name === "empty");
  let empty: { first: number; later: number }[] | undefined;
  for (const tree of trees) {
    const p = `[${tree.name}]`;
    const ws = join(tmp, `ws-${tree.name}`);
    const crabHome = join(tmp, `crabhome-${tree.name}`);

    // 1. The tree and its first commit.
    t = performance.now();
    const dirs = generate(ws, tree.files, 0x5eed + tree.files);
    // The script's second command writes into pkg1/.
    Deno.mkdirSync(join(ws, "pkg1"), { recursive: true });
    const written = performance.now() - t;
    await git(ws, {}, "init", "-q");
    await git(ws, {}, "add", "-A");
    await git(ws, {}, "commit", "-q", "-m", "generated");
    if (!LOOSE) await git(ws, {}, "gc", "-q");
    const total = performance.now() - t;
    const made = content(ws);
    console.log(
      `${p} generated ${made.files.toLocaleString("en")} files in ${dirs} directories, ` +
        `${mb(made.bytes)}: written in ${(written / 1000).toFixed(1)} s, ` +
        `with git init/add/commit${LOOSE ? " (objects loose)" : "/gc"} ${
          (total / 1000).toFixed(1)
        } s`,
    );

    // 2. The peers.
    const shadow = { GIT_INDEX_FILE: join(tmp, `shadow-${tree.name}.index`) };
    const addFresh = (await git(ws, shadow, "add", "-A")).ms;
    const addAgain = (await git(ws, shadow, "add", "-A")).ms;
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await git(ws, {}, "status", "--porcelain")).ms);
    const status = median(statuses);
    console.log(
      `${p} git add -A, fresh index ${addFresh.toFixed(0)} ms; again ${addAgain.toFixed(0)} ms; ` +
        `git status --porcelain p50 of 3 ${status.toFixed(0)} ms`,
    );

    // 3. crab: a first session, a later one (LATER_RUNS times), a later one whose model thinks
    // THINK_MS before its first call (a real model's first answer takes that long or more),
    // which undo's look ahead uses, and a later one that prunes the store.
    const env = {
      ANTHROPIC_API_KEY: "k",
      CRAB_HOME: crabHome,
      XDG_CONFIG_HOME: config,
      HOME: home,
    };
    const sessions: ({ r: number } & Figures)[] = [];
    for (const r of [1, ...Array(LATER_RUNS).fill(2), 3, 4]) {
      if (r === 4) {
        for (const e of Deno.readDirSync(join(crabHome, "undo"))) {
          try {
            Deno.removeSync(join(crabHome, "undo", e.name, PRUNED_STAMP));
          } catch {
            // Never pruned: due anyway.
          }
        }
      }
      const rel = `pkg0/src/mod0/${fileName(((r - 1) % 2) + 1)}`;
      const old = Deno.readTextFileSync(join(ws, rel)).split("\n", 1)[0];
      const think = r === 3 ? THINK_MS : 0;
      const turns: ScriptTurn[] = [
        {
          ...(think ? { delayMs: think } : {}),
          calls: [{ name: "bash", args: { command: "echo a >> pkg0/extra.txt" } }],
        },
        { calls: [{ name: "bash", args: { command: "echo b >> pkg1/extra.txt" } }] },
        { calls: [{ name: "read", args: { path: rel } }] },
        {
          calls: [{ name: "edit", args: { path: rel, edits: [{ old, new: `${old} // r${r}` }] } }],
        },
        { calls: [{ name: "bash", args: { command: "true" } }] },
        { text: "done" },
      ];
      const before = fake.requests.length;
      fake.push(...turns);
      const whole = await measured(crabArgs, ws, env, join(tmp, "time.out"));
      const reqs = fake.modelRequests().filter((q) => q.seq >= before);
      if (reqs.length !== turns.length || fake.remaining() !== 0) {
        throw new Error(`${p} run ${r}: ${reqs.length} model requests, ${turns.length} expected`);
      }
      for (const q of reqs.slice(1)) {
        const bad = toolResults(q).find((x) => x.isError);
        if (bad) throw new Error(`${p} run ${r}: a call failed: ${bad.text}`);
      }
      const d = reqs.slice(1).map((q, i) => q.receivedAt - reqs[i].receivedAt);
      const fig = {
        first: d[0] - think,
        later: median([d[1], d[3], d[4]]),
        read: d[2],
        whole: whole.ms,
        rssMB: whole.rssKiB * 1024 / 1e6,
      };
      sessions.push({ r, ...fig });
      console.log(
        `${p} crab run ${r} (${
          [
            "first session",
            "later session",
            `later session, model thinks ${think} ms first`,
            "later session, store due for pruning",
          ][r - 1]
        }): first bash call ` +
          `${fig.first} ms; later calls p50 ${fig.later} ms (${d[1]}, ${d[3]}, ${d[4]}; ` +
          `read ${fig.read} ms); whole run ${fig.whole.toFixed(0)} ms; ` +
          `peak RSS ${fig.rssMB.toFixed(0)} MB`,
      );
    }

    // Each kind of session once; the later session's figures the median of its runs.
    const runs: Figures[] = [1, 2, 3, 4].map((r) => {
      const of = sessions.filter((x) => x.r === r);
      const mid = (f: (x: Figures) => number) => median(of.map(f));
      return {
        first: mid((x) => x.first),
        later: mid((x) => x.later),
        read: mid((x) => x.read),
        whole: mid((x) => x.whole),
        rssMB: Math.max(...of.map((x) => x.rssMB)),
      };
    });
    if (LATER_RUNS > 1) {
      const r2 = runs[1];
      console.log(
        `${p} crab run 2, median of ${LATER_RUNS}: first bash call ${r2.first} ms; later calls ` +
          `p50 ${r2.later} ms; peak RSS at most ${r2.rssMB.toFixed(0)} MB`,
      );
    }

    if (tree.name === "empty") {
      empty = runs;
      Deno.removeSync(ws, { recursive: true });
      continue;
    }
    if (empty) {
      const [e1, e2] = empty, [r1, r2] = runs;
      console.log(
        `${p} beyond the empty repository's: first bash call run 1 +${r1.first - e1.first} ms, ` +
          `run 2 +${r2.first - e2.first} ms; later calls p50 run 1 +${r1.later - e1.later} ms, ` +
          `run 2 +${r2.later - e2.later} ms`,
      );
    }

    // The undo store against the tree's content.
    const du = async (...opts: string[]) =>
      Number(
        (await run("du", ["-s", ...opts, "--block-size=1", join(crabHome, "undo")], tmp))
          .stdout.split(/\s/)[0],
      );
    const blocks = await du();
    const apparent = await du("--apparent-size");
    const now = content(ws);
    const allowance = 1.2 * now.bytes + 200 * now.files;
    console.log(
      `${p} undo store ${mb(blocks)} in blocks, ${mb(apparent)} apparent; content ` +
        `${mb(now.bytes)} in ${now.files.toLocaleString("en")} files; blocks ÷ content ` +
        `${(blocks / now.bytes).toFixed(2)}; allowance 1.2 × content + 200 × files = ` +
        `${mb(allowance)}: ${verdict(blocks <= allowance)}`,
    );

    // 4. Ratios and targets: what the tree adds to a call, beyond the almost empty
    // repository's (the sandbox's start and the command itself), is what is held to git.
    const [r1, r2] = runs;
    const r3 = runs[2];
    const base = empty ?? [0, 1, 2].map(() => ({ first: 0, later: 0 }));
    const overStatus = (r2.first - base[1].first) / status;
    const laterWorst = Math.max(r1.later - base[0].later, r2.later - base[1].later);
    const r4 = runs[3];
    const rssWorst = Math.max(r1.rssMB, r2.rssMB, r4.rssMB);
    console.log(
      `${p} first bash call ÷ fresh-index git add -A: ${(r1.first / addFresh).toFixed(2)}×`,
    );
    console.log(
      `${p} later session's first bash call ÷ git status: ${(r2.first / status).toFixed(2)}× ` +
        `whole, ${overStatus.toFixed(2)}× beyond the empty repository's (target ≤ 2×) ` +
        verdict(overStatus <= 2),
    );
    const thought = (r3.first - base[2].first) / status;
    console.log(
      `${p} the same when the model thinks ${THINK_MS} ms first: ${
        (r3.first / status).toFixed(2)
      }× ` +
        `whole, ${thought.toFixed(2)}× beyond the empty repository's (target ≤ 2×) ` +
        verdict(thought <= 2),
    );
    console.log(
      `${p} later calls p50: run 1 ${r1.later} ms, run 2 ${r2.later} ms; beyond the empty ` +
        `repository's at most +${laterWorst} ms (target ≤ +30 ms) ${verdict(laterWorst <= 30)}`,
    );
    console.log(
      `${p} a later session that prunes the store: first bash call ${r4.first} ms, ` +
        `+${r4.first - r2.first} ms over run 2's`,
    );
    console.log(
      `${p} peak RSS: run 1 ${r1.rssMB.toFixed(0)} MB, run 2 ${r2.rssMB.toFixed(0)} MB, ` +
        `run 4 (pruning) ${r4.rssMB.toFixed(0)} MB (target ≤ 150 MB) ${verdict(rssWorst <= 150)}`,
    );
    console.log(
      `${p} undo store ÷ allowance: ${(blocks / allowance).toFixed(2)} (target ≤ 1) ` +
        verdict(blocks <= allowance),
    );

    // 5. grep and glob on the tree, against rg and fdfind.
    if (SEARCH_RUNS > 0) await searchFigures(ws, p, { bundle, env }, SEARCH_RUNS);
    Deno.removeSync(ws, { recursive: true });
  }
} finally {
  shutdownPool(); // the grep pool's workers would keep this script alive
  await fake.close();
  Deno.removeSync(tmp, { recursive: true });
}
