/**
 * Side by side: the same scripted work through `claude -p` and `crab -p`, with
 * the same fake model server, settings files and hook scripts, and a table of
 * what each did, judged from outside: the exit code, the result's `subtype`,
 * `is_error` and `api_error_status`, the denials' tool names, what the model
 * got back for each call (an error or not), the watched files afterwards and,
 * for stream cases, the message types in order.
 *
 *   deno run -A scripts/compat/run.ts [--claude PATH] [--crab PATH] [--only NAME,...] [--json]
 *
 * `--claude` defaults to `$CLAUDE_BIN`, else `claude` on PATH; without one only
 * crab's column is filled. `--crab` is an installed crab command; by default
 * this checkout runs with `deno run` and the `full` preset's flags. Nothing
 * here talks to anything but 127.0.0.1. The suite never needs it.
 *
 * @module
 */

import { join } from "node:path";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { crabNameOf, fromClaudeInput } from "../../tools/table.ts";
import {
  type RecordedRequest,
  startFakeModel,
  toolResults,
  type Turn,
} from "../../tests/support/fake_model.ts";
import { denoDir } from "../../tests/support/cli.ts";
import { CASES, type CompatCase, type CompatTurn } from "./cases.ts";

/** What one command did in one case, as the table shows it. */
interface Seen {
  exit: number;
  subtype: string;
  isError: string;
  apiStatus: string;
  denials: string;
  results: string;
  files: string;
  stream: string;
  prompt: string;
  result: string;
}

type Side = "claude" | "crab";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

function usage(message: string): never {
  console.error(`error: ${message}`);
  console.error(
    "usage: deno run -A scripts/compat/run.ts [--claude PATH] [--crab PATH] [--only NAME,...] [--json]",
  );
  Deno.exit(2);
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  if (value === undefined || value.startsWith("--")) usage(`${name} needs a value`);
  args.splice(at, 2);
  return value;
}

function onPath(name: string): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      const p = join(dir || ".", name);
      if (Deno.statSync(p).isFile) return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

const fill = (text: string, ws: string, home: string) =>
  text.replaceAll("$WS", ws).replaceAll("$HOME", home);

function filled(value: unknown, ws: string, home: string): unknown {
  return JSON.parse(fill(JSON.stringify(value), ws, home));
}

/** The fake model's turn for one scripted turn, in `side`'s tool names. */
function turnFor(t: CompatTurn, side: Side, ws: string, home: string): Turn {
  if (!Array.isArray(t)) return t;
  return {
    calls: t.map((c) => {
      const input = filled(c.input, ws, home) as Record<string, unknown>;
      const crab = crabNameOf(c.name);
      if (side === "claude" || !crab) return { name: c.name, args: input };
      return { name: crab, args: fromClaudeInput(crab, input) };
    }),
  };
}

/**
 * Model requests that carry tools get the case's next turn; side requests
 * (titles, summaries, quota checks) a short text, so they never eat a turn.
 */
function script(c: CompatCase, side: Side, ws: string, home: string) {
  const queue = [...c.turns, { text: "done" }];
  const answer = (req: RecordedRequest): Turn => {
    const tools = (req.body as { tools?: unknown[] } | null)?.tools;
    if (!tools?.length) return { text: "ok" };
    const next = queue.shift();
    return next ? turnFor(next, side, ws, home) : { text: "done" };
  };
  return Array.from({ length: 40 }, () => answer);
}

async function git(ws: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.email=compat@example.com", "-c", "user.name=compat", ...args],
    cwd: ws,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`git ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
}

async function prepare(c: CompatCase, root: string): Promise<{ ws: string; home: string }> {
  const ws = join(root, "ws");
  const home = join(root, "home");
  const put = (base: string, files: Record<string, string> | undefined) => {
    for (const [rel, text] of Object.entries(files ?? {})) {
      const p = join(base, rel);
      Deno.mkdirSync(join(p, ".."), { recursive: true });
      Deno.writeTextFileSync(p, fill(text, ws, home));
    }
  };
  Deno.mkdirSync(ws, { recursive: true });
  Deno.mkdirSync(home, { recursive: true });
  put(ws, c.files);
  put(home, c.home);
  await git(ws, "init", "-q");
  await git(ws, "add", "-A");
  await git(ws, "commit", "-q", "--allow-empty", "-m", "start");
  put(ws, c.dirty);
  return { ws, home };
}

function fileState(ws: string, rels: readonly string[]): string {
  return rels.map((rel) => {
    try {
      const text = Deno.readTextFileSync(join(ws, rel));
      return `${rel}=${JSON.stringify(text.length > 20 ? text.slice(0, 20) + "…" : text)}`;
    } catch {
      return `${rel} gone`;
    }
  }).join(" ");
}

function lastJson(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split("\n").filter((l) => l.startsWith("{"));
  for (const line of lines.reverse()) {
    try {
      const v = JSON.parse(line);
      if (v?.type === "result") return v;
    } catch {
      // not JSON
    }
  }
  return {};
}

function streamShape(stdout: string): string {
  const kinds: string[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const m = JSON.parse(line);
      const kind = m.type === "system" ? `system/${m.subtype}` : m.type;
      if (kind === "system/init") continue;
      const blocks = Array.isArray(m.message?.content)
        ? `(${m.message.content.map((b: { type: string }) => b.type).join(",")})`
        : "";
      kinds.push(kind + blocks);
    } catch {
      kinds.push("?");
    }
  }
  return kinds.join(" ");
}

/** The text of the first user message of the first request that offered tools. */
function firstPrompt(requests: RecordedRequest[]): string {
  const req = requests.find((r) => (r.body as { tools?: unknown[] } | null)?.tools?.length);
  const messages = (req?.body as { messages?: { role: string; content: unknown }[] })?.messages;
  const first = messages?.find((m) => m.role === "user")?.content;
  const text = typeof first === "string"
    ? first
    : Array.isArray(first)
    ? first.map((b) => (b as { text?: string }).text ?? "").join(" | ")
    : "";
  // Claude Code puts reminders before the prompt; the command's text is what is compared.
  const at = text.indexOf("one=");
  return (at >= 0 ? text.slice(at) : text).slice(0, 80).replaceAll("\n", " ").trim();
}

async function runSide(c: CompatCase, side: Side, bin: string): Promise<Seen> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: `compat-${side}-` }));
  try {
    const { ws, home } = await prepare(c, root);
    await using fake = await startFakeModel(script(c, side, ws, home));
    const format = c.stream ? ["--output-format", "stream-json", "--verbose"] : [
      "--output-format",
      "json",
    ];
    const args = ["-p", c.prompt ?? "do it", ...format, ...(c.flags ?? [])];
    const env: Record<string, string> = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: home,
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: "compat-key",
      NO_COLOR: "1",
      // Claude Code's own traffic (telemetry, updates) has nowhere to go here.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    };
    if (side === "crab") {
      env.CRAB_HOME = join(root, "crab-data");
      env.XDG_CONFIG_HOME = join(home, ".config");
      // Deno's cache, which the case's HOME would otherwise hide.
      env.DENO_DIR = env.CRAB_DENO_DIR = denoDir();
    }
    const runs = side === "crab" && bin === "source"
      ? { cmd: Deno.execPath(), args: ["run", ...presetFlags("full"), MAIN, ...args] }
      : { cmd: bin, args };
    const child = new Deno.Command(runs.cmd, {
      args: runs.args,
      cwd: ws,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const t0 = Date.now();
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const out = await child.output();
    clearTimeout(timer);
    console.error(`compat: ${c.name}: ${side} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const stdout = new TextDecoder().decode(out.stdout);
    const result = lastJson(stdout);
    const denials = (result.permission_denials as { tool_name?: string }[] | undefined) ?? [];
    const results = fake.modelRequests().flatMap((r) => toolResults(r)).map((t) =>
      `${t.isError ? "error" : "ok"}`
    );
    return {
      exit: out.code,
      subtype: String(result.subtype ?? "-"),
      isError: String(result.is_error ?? "-"),
      apiStatus: String(result.api_error_status ?? "-"),
      denials: denials.map((d) => d.tool_name).join(",") || "-",
      results: results.join(",") || "-",
      files: fileState(ws, c.watch ?? []) || "-",
      stream: c.stream ? streamShape(stdout) : "-",
      prompt: c.prompted ? firstPrompt(fake.modelRequests()) : "-",
      result: String(result.result ?? "").slice(0, 60).replaceAll("\n", " "),
    };
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

const ASPECTS: (keyof Seen)[] = [
  "exit",
  "subtype",
  "isError",
  "apiStatus",
  "denials",
  "results",
  "files",
  "stream",
  "prompt",
  "result",
];

async function main(): Promise<void> {
  const args = [...Deno.args];
  const claude = option(args, "--claude") ?? Deno.env.get("CLAUDE_BIN") ?? onPath("claude");
  const crab = option(args, "--crab") ?? "source";
  const only = option(args, "--only")?.split(",");
  const asJson = args.includes("--json");
  const rest = args.filter((a) => a !== "--json");
  if (rest.length) usage(`unknown argument ${rest[0]}`);
  const cases = CASES.filter((c) => !only || only.includes(c.name));
  if (only && cases.length !== only.length) usage(`no case named ${only.join(", ")}`);
  if (!claude) console.error("compat: no claude command found: only crab's column is filled");
  const rows: Record<string, unknown>[] = [];
  let differ = 0;
  for (const c of cases) {
    const t0 = Date.now();
    const crabSeen = await runSide(c, "crab", crab);
    const claudeSeen = claude ? await runSide(c, "claude", claude) : undefined;
    for (const aspect of ASPECTS) {
      if (aspect === "stream" && !c.stream) continue;
      if (aspect === "prompt" && !c.prompted) continue;
      const a = claudeSeen?.[aspect];
      const b = crabSeen[aspect];
      // The readable result text differs in wording by design; it is shown, not judged.
      const same = a === undefined || aspect === "result" ? "" : a === b ? "same" : "differs";
      if (same === "differs") differ++;
      rows.push({ case: c.name, aspect, claude: a ?? "", crab: b, same });
    }
    console.error(`compat: ${c.name} ran in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  if (asJson) console.log(JSON.stringify(rows, null, 2));
  else {
    for (const c of cases) console.log(`- ${c.name}: ${c.about}`);
    console.table(rows);
    if (claude) console.log(`${differ} aspect(s) differ`);
  }
}

if (import.meta.main) await main();
