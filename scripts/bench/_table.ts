/**
 * The performance table every benchmark reports into: each measure with its
 * target, and {@link reportRow} for a benchmark to hand in a figure. A row is
 * printed at once, and when `mod.ts` runs the benchmark (which sets
 * `CRAB_BENCH_ROWS` to a file) it is also appended there as one JSON line, so
 * `deno task bench` can print the whole table with met or missed at the end.
 *
 * @module
 */

/** How a measure compares with its target. */
export type Unit = "ratio" | "ms" | "+ms";

/** One measure of the table. */
export interface Measure {
  id: string;
  label: string;
  unit: Unit;
  /** The figure must be at most this. */
  target: number;
  /** Several rows (one per pattern or page): the worst one counts, so every row must meet it. */
  many?: boolean;
  /** The benchmark file that reports it. */
  bench: string;
}

/** The measures, in the order the table prints them. */
export const MEASURES: readonly Measure[] = [
  {
    id: "print_run",
    label: "installed `crab -p` (the bundle) whole run ÷ bare `deno run` + one fetch",
    unit: "ratio",
    target: 3.0,
    bench: "print_startup.ts",
  },
  {
    id: "tool_read_run",
    label: "installed `crab tool read` (the bundle) ÷ bare `deno run` reading the file",
    unit: "ratio",
    target: 2.0,
    bench: "print_startup.ts",
  },
  {
    id: "version",
    label: "`crab --version` − empty `deno run`",
    unit: "+ms",
    target: 10,
    bench: "startup.ts",
  },
  {
    id: "tool_grep_trivial",
    label: "one-shot trivial `crab tool grep` − empty `deno run`",
    unit: "+ms",
    target: 50,
    bench: "oneshot.ts",
  },
  {
    id: "grep_oneshot_exhaustive",
    label: "one-shot grep exhaustive ÷ rg",
    unit: "ratio",
    target: 2.5,
    many: true,
    bench: "oneshot.ts",
  },
  {
    id: "grep_oneshot_capped",
    label: "one-shot grep capped at 100 ÷ (rg | head -100)",
    unit: "ratio",
    target: 8,
    many: true,
    bench: "oneshot.ts",
  },
  {
    id: "grep_exhaustive",
    label: "in-process grep exhaustive ÷ spawned rg",
    unit: "ratio",
    target: 1.3,
    many: true,
    bench: "grep.ts",
  },
  {
    id: "grep_capped",
    label: "in-process grep capped ÷ spawned rg + kill, every pattern",
    unit: "ratio",
    target: 1.0,
    many: true,
    bench: "grep.ts",
  },
  {
    id: "glob_oneshot",
    label: "one-shot glob ÷ fd",
    unit: "ratio",
    target: 2.5,
    many: true,
    bench: "oneshot.ts",
  },
  {
    id: "bash_yes",
    label: "bash `yes | head -c 256M` ÷ `cat`",
    unit: "ratio",
    target: 4,
    bench: "bash_throughput.ts",
  },
  {
    id: "repl_start",
    label: "REPL start to prompt",
    unit: "ms",
    target: 250,
    bench: "repl_startup.ts",
  },
  {
    id: "sdk_init",
    label: "`query()` in-process: the call to its `system/init` (median of 20)",
    unit: "ms",
    target: 50,
    bench: "sdk_startup.ts",
  },
  {
    id: "sandbox_call",
    label: "sandbox's added time per bash call",
    unit: "+ms",
    target: 15,
    bench: "sandbox.ts",
  },
  {
    id: "approval_diff",
    label: "approval diff of a 10 MB file with one changed line",
    unit: "ms",
    target: 200,
    bench: "approval_diff.ts",
  },
  {
    id: "workspace_lock",
    label: "workspace lock's added time per call that changes the workspace",
    unit: "+ms",
    target: 0.5,
    bench: "workspace_lock.ts",
  },
  {
    id: "undo_first_snapshot",
    label: "undo's first snapshot of a 10,000-file tree",
    unit: "ms",
    target: 2000,
    bench: "undo.ts",
  },
  {
    id: "undo_snapshot",
    label: "undo snapshot before a bash call on a 10,000-file tree (p50)",
    unit: "ms",
    target: 30,
    bench: "undo.ts",
  },
  {
    id: "undo_snapshot_edit",
    label: "undo's time per edit call on a 10,000-file tree, before and after (p50)",
    unit: "ms",
    target: 30,
    bench: "undo.ts",
  },
  {
    id: "git_view_call",
    label: "git views per call: 100,000 loose objects − a fresh repository (p50)",
    unit: "+ms",
    target: 2,
    bench: "git_view.ts",
  },
  {
    id: "policy_decision",
    label: "policy decision of a bash call, parse included (p50)",
    unit: "ms",
    target: 2,
    bench: "policy.ts",
  },
  {
    id: "web_fetch_max",
    label: "web_fetch max over the test pages",
    unit: "ms",
    target: 250,
    bench: "web_fetch.ts",
  },
  {
    id: "proxy_call",
    label: "sandboxed `bash true` with the network off (proxy) − with all of it",
    unit: "+ms",
    target: 5,
    bench: "proxy.ts",
  },
  {
    id: "proxy_throughput",
    label: "100 MB loopback download: direct speed ÷ speed through crab's proxy",
    unit: "ratio",
    target: 2,
    bench: "proxy.ts",
  },
];

/** One figure for a measure. */
export interface Row {
  /** A {@link Measure} id. */
  measure: string;
  /** The figure compared with the target (a ratio, or milliseconds). */
  value: number;
  /** What was compared, with the raw figures: `"function": crab 80.1 ms, rg 40.2 ms`. */
  detail: string;
}

/** The measure of `id`; throws for an id the table does not have. */
export function measure(id: string): Measure {
  const m = MEASURES.find((m) => m.id === id);
  if (!m) throw new Error(`no such measure in the benchmark table: ${id}`);
  return m;
}

/** True when `value` meets the measure's target. */
export function meets(m: Measure, value: number): boolean {
  return value <= m.target;
}

/** A figure in the measure's unit: `2.31×`, `+12.0 ms`, `180 ms`. */
export function formatValue(m: Measure, value: number): string {
  if (m.unit === "ratio") return `${value.toFixed(2)}×`;
  if (m.unit === "+ms") {
    return `${value >= 0 ? "+" : ""}${value.toFixed(Math.abs(value) < 1 ? 2 : 1)} ms`;
  }
  return `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`;
}

/** The target in the measure's unit: `≤ 2.5×`, `≤ +50 ms`. */
export function formatTarget(m: Measure): string {
  if (m.unit === "ratio") return `≤ ${m.target}×`;
  return `≤ ${m.unit === "+ms" ? "+" : ""}${m.target} ms`;
}

/** Environment variable naming the file rows are appended to. */
export const ROWS_ENV = "CRAB_BENCH_ROWS";

/** Prints a row with its verdict and hands it to `mod.ts` when it collects rows. */
export function reportRow(row: Row): void {
  const m = measure(row.measure);
  console.log(
    `  → ${m.label}: ${formatValue(m, row.value)} (target ${formatTarget(m)}, ${
      meets(m, row.value) ? "met" : "MISSED"
    })  ${row.detail}`,
  );
  const file = Deno.env.get(ROWS_ENV);
  if (file) Deno.writeTextFileSync(file, JSON.stringify(row) + "\n", { append: true });
}

/** Median of a non-empty list. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
