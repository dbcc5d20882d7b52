/**
 * Runs the benchmarks in this folder in turn, each in its own process; each
 * prints its own figures and ratios against the peer tool measured in the same
 * run, and hands its rows of the performance table in (see `_table.ts`). At the
 * end the whole table is printed: every measure with its figure, target and
 * whether it was met; a measure whose benchmark is missing says so.
 *
 *   deno task bench            every benchmark
 *   deno task bench grep.ts …  only these (the table still lists every measure)
 *
 * The machine may be shared: figures are medians, and the load average at the
 * start and end is printed beside them.
 *
 * @module
 */

import {
  formatTarget,
  formatValue,
  measure,
  MEASURES,
  meets,
  type Row,
  ROWS_ENV,
} from "./_table.ts";

/** The benchmarks, run in this order. Register a new one with one line here. */
const BENCHES = [
  "startup.ts",
  "oneshot.ts",
  "dispatch.ts",
  "walk.ts",
  "glob.ts",
  "grep.ts",
  "grep_phases.ts",
  "bash_throughput.ts",
  "bash_memory.ts",
  "sandbox.ts",
  "git_view.ts",
  "workspace_lock.ts",
  "stopping.ts",
  "mcp_serve.ts",
  "print_startup.ts",
  "repl_startup.ts",
  "sdk_startup.ts",
  "web_fetch.ts",
  "web_fetch_quality.ts",
  "mcp_startup.ts",
  "confinement.ts",
  "approval_diff.ts",
  "policy.ts",
  "proxy.ts",
  "undo.ts",
];

const here = new URL(".", import.meta.url);

/** The 1, 5 and 15 minute load averages (Deno reads /proc only with every permission). */
function loadAverage(): string {
  try {
    const out = new Deno.Command("cat", { args: ["/proc/loadavg"], stderr: "null" }).outputSync();
    return new TextDecoder().decode(out.stdout).split(" ").slice(0, 3).join(" ") || "unknown";
  } catch {
    return "unknown";
  }
}

function exists(url: URL): boolean {
  try {
    Deno.statSync(url);
    return true;
  } catch {
    return false;
  }
}

const chosen = Deno.args.length ? BENCHES.filter((b) => Deno.args.includes(b)) : BENCHES;
const rowsFile = Deno.makeTempFileSync({ prefix: "crab-bench-rows-" });
const loadBefore = loadAverage();
const ran = new Set<string>();
const failed: string[] = [];
try {
  for (const name of chosen) {
    const url = new URL(name, here);
    if (!exists(url)) continue;
    ran.add(name);
    console.log(`\n== ${name}`);
    const status = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-prompt", url.pathname],
      env: { [ROWS_ENV]: rowsFile },
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
    if (!status.success) {
      failed.push(name);
      console.log(`${name} failed with exit code ${status.code}`);
    }
  }
  const rows: Row[] = Deno.readTextFileSync(rowsFile).split("\n").filter(Boolean).map((l) =>
    JSON.parse(l)
  );
  printTable(rows);
} finally {
  Deno.removeSync(rowsFile);
}
if (failed.length) Deno.exit(1);

function printTable(rows: Row[]): void {
  for (const r of rows) measure(r.measure); // a row for a measure the table lacks is a bug
  console.log(
    `\n== the performance table (load average ${loadBefore} at the start, ${loadAverage()} ` +
      `at the end; ${navigator.hardwareConcurrency} cores)`,
  );
  for (const m of MEASURES) {
    const mine = rows.filter((r) => r.measure === m.id);
    if (mine.length === 0) {
      const why = ran.has(m.bench)
        ? `${m.bench} reported no figure`
        : `not measured: ${m.bench} ${
          !BENCHES.includes(m.bench)
            ? "is not registered"
            : exists(new URL(m.bench, here))
            ? "was not run"
            : "does not exist"
        }`;
      console.log(`${m.label} — target ${formatTarget(m)}: ${why}`);
      continue;
    }
    // Several rows: the worst counts, and every one of them must meet the target.
    const worst = mine.reduce((a, b) => (b.value > a.value ? b : a));
    const met = mine.filter((r) => meets(m, r.value)).length;
    const verdict = met === mine.length ? "met" : "MISSED";
    const count = mine.length > 1 ? ` (${met} of ${mine.length} met; worst shown)` : "";
    console.log(
      `${m.label} — ${formatValue(m, worst.value)}, target ${formatTarget(m)}: ${verdict}${count}` +
        `  [${worst.detail}]`,
    );
  }
}
