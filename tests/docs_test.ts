/**
 * The docs as a user meets them: the shell examples of `README.md` and
 * `docs/*.md` that are marked to run do run, and every relative link leads
 * somewhere.
 *
 * A fenced block runs when its info string is `sh test` (or `bash test`,
 * `shell test`); `exit=N` after it expects exit code N instead of 0. Every
 * other block is an illustration. A marked block runs with `bash -e` in a
 * fresh temp folder, with `HOME`, `XDG_CONFIG_HOME` and `CRAB_HOME` inside it,
 * no API keys in the environment, and `crab` defined as this checkout's
 * bundle, the one the installed command runs, under the `full` preset's flags,
 * with Deno's cache only (so nothing is downloaded). A marked example therefore runs without a network or a
 * model; its checks are plain shell (`| grep PATTERN`, `test -f FILE`).
 */

import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { presetFlags } from "../tools/host/capabilities.ts";
import { crabArgs, sandbox } from "./support/cli.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const BLOCK_TIMEOUT_MS = 60_000;

/** The Markdown files the docs are: the README and every page of `docs/`. */
function docFiles(): string[] {
  const pages = [...Deno.readDirSync(join(ROOT, "docs"))]
    .filter((e) => e.isFile && e.name.endsWith(".md"))
    .map((e) => join("docs", e.name))
    .sort();
  return ["README.md", ...pages];
}

/** One fenced code block. */
export interface Fence {
  /** The file, relative to the repository. */
  file: string;
  /** The line of the opening fence, 1-based. */
  line: number;
  /** The info string's words: `["sh", "test", "exit=2"]`. */
  info: string[];
  body: string;
}

/** A fence's words, or none; `indent` and `marker` say how it was opened. */
const FENCE = /^( {0,3})(`{3,}|~{3,})\s*(.*)$/;

/** The fenced blocks of `text`, and its lines outside them (the prose, for links). */
export function parseMarkdown(file: string, text: string): { fences: Fence[]; prose: string[] } {
  const fences: Fence[] = [];
  const prose: string[] = [];
  const lines = text.split("\n");
  let open: { marker: string; line: number; info: string[]; body: string[] } | undefined;
  lines.forEach((l, i) => {
    const m = FENCE.exec(l);
    if (open) {
      if (m && m[2][0] === open.marker[0] && m[2].length >= open.marker.length && !m[3]) {
        fences.push({ file, line: open.line, info: open.info, body: open.body.join("\n") });
        open = undefined;
      } else open.body.push(l);
      prose.push("");
      return;
    }
    if (m) {
      open = { marker: m[2], line: i + 1, info: m[3].split(/\s+/).filter(Boolean), body: [] };
      prose.push("");
    } else prose.push(l);
  });
  return { fences, prose };
}

/** What a marked block expects, or undefined for an illustration. */
export function runnable(info: readonly string[]): { exit: number } | undefined {
  const [lang, ...rest] = info;
  if (!["sh", "bash", "shell"].includes(lang) || !rest.includes("test")) return undefined;
  const exit = rest.find((w) => w.startsWith("exit="));
  return { exit: exit ? Number(exit.slice("exit=".length)) : 0 };
}

/** `s` as one word of a shell command. */
function shellWord(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Runs one block; the process group is killed at the deadline and after the block. */
async function runBlock(
  fence: Fence,
): Promise<{ code: number; stdout: string; stderr: string; timedOut: boolean }> {
  using s = sandbox("crab-docs-");
  const crab = [Deno.execPath(), ...crabArgs(["--cached-only", ...presetFlags("full")])]
    .map(shellWord).join(" ");
  const script = `crab() { ${crab} "$@"; }\n${fence.body}\n`;
  const child = new Deno.Command("bash", {
    args: ["-e", "-c", script],
    cwd: s.ws,
    env: { ...s.env, DENO_NO_UPDATE_CHECK: "1" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  const killGroup = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is gone already.
    }
  };
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, BLOCK_TIMEOUT_MS);
  try {
    const out = await child.output();
    const dec = new TextDecoder();
    return {
      code: out.code,
      stdout: dec.decode(out.stdout),
      stderr: dec.decode(out.stderr),
      timedOut,
    };
  } finally {
    clearTimeout(deadline);
    killGroup();
  }
}

const docs = docFiles().map((file) => ({
  file,
  ...parseMarkdown(file, Deno.readTextFileSync(join(ROOT, file))),
}));
const marked = docs.flatMap((d) => d.fences).flatMap((f) => {
  const expect = runnable(f.info);
  return expect ? [{ fence: f, expect }] : [];
});

Deno.test("parseMarkdown() finds fences with their info strings, and leaves prose outside", () => {
  const text = [
    "Run [this](a.md):",
    "```sh test exit=2",
    "crab --bogus   # [not a link](nowhere.md)",
    "```",
    "````",
    "```",
    "````",
    "done",
  ].join("\n");
  const { fences, prose } = parseMarkdown("x.md", text);
  assert.deepEqual(fences, [
    {
      file: "x.md",
      line: 2,
      info: ["sh", "test", "exit=2"],
      body: "crab --bogus   # [not a link](nowhere.md)",
    },
    { file: "x.md", line: 5, info: [], body: "```" },
  ]);
  assert.deepEqual(prose, ["Run [this](a.md):", "", "", "", "", "", "", "done"]);
  assert.deepEqual(runnable(["sh", "test", "exit=2"]), { exit: 2 });
  assert.deepEqual(runnable(["bash", "test"]), { exit: 0 });
  assert.equal(runnable(["sh"]), undefined);
  assert.equal(runnable(["json", "test"]), undefined);
});

Deno.test("the docs' marked examples cover the commands a newcomer runs first", () => {
  const code = marked.map((m) => m.fence.body).join("\n");
  const wanted: [string, RegExp][] = [
    ["crab --version", /^crab --version\b/m],
    ["crab --help", /^crab --help\b/m],
    ["crab tool read FILE", /^crab tool read '\{"path"/m],
    ["crab permissions", /^crab permissions\s*(#.*)?$/m],
    ["crab permissions check with a deny rule", /^crab permissions check --disallowedTools /m],
    ["crab metrics", /^crab metrics\s*(#.*)?$/m],
  ];
  const missing = wanted.filter(([, pattern]) => !pattern.test(code)).map(([name]) => name);
  assert.deepEqual(missing, [], "commands no marked example runs");
});

for (const { fence, expect } of marked) {
  const first = fence.body.split("\n")[0];
  Deno.test(`${fence.file}:${fence.line} runs: ${first}`, async () => {
    const ran = await runBlock(fence);
    assert.ok(
      !ran.timedOut && ran.code === expect.exit,
      `${fence.file}:${fence.line} ${
        ran.timedOut ? `timed out after ${BLOCK_TIMEOUT_MS / 1000} s` : `exited ${ran.code}`
      }, expected ${expect.exit}\n--- block\n${fence.body}\n--- stdout\n${ran.stdout}--- stderr\n${ran.stderr}`,
    );
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replaceAll(" ", "-");
}

/** The anchors of a Markdown file's headings, duplicates numbered as GitHub numbers them. */
function anchors(prose: readonly string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The link targets of prose lines, outside code spans: `[text](target)`. */
export function linksOf(prose: readonly string[]): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  const text = prose.join("\n").replace(/`[^`]*`/g, (span) => span.replace(/[^\n]/g, " "));
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    out.push({ line: text.slice(0, m.index).split("\n").length, target: m[1] });
  }
  return out;
}

Deno.test("slug() and linksOf() read headings and links as GitHub does", () => {
  assert.equal(slug("Print mode and `claude -p`"), "print-mode-and-claude--p");
  assert.equal(slug("The Agent SDK's hooks"), "the-agent-sdks-hooks");
  assert.equal(slug("Telemetry (OpenTelemetry)"), "telemetry-opentelemetry");
  assert.deepEqual(
    linksOf(["See [a](docs/a.md#x) and `[b](not.md)`,", "[c](https://example.com)."]),
    [{ line: 1, target: "docs/a.md#x" }, { line: 2, target: "https://example.com" }],
  );
});

Deno.test("every relative link in the docs points to a file that exists, and to a heading of it", () => {
  const byFile = new Map(docs.map((d) => [d.file, anchors(d.prose)]));
  const wrong: string[] = [];
  for (const d of docs) {
    for (const { line, target } of linksOf(d.prose)) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
      const [path, fragment] = target.split("#", 2);
      const file = path === "" ? d.file : relative(ROOT, resolve(ROOT, dirname(d.file), path));
      let exists = true;
      try {
        Deno.statSync(join(ROOT, file));
      } catch {
        exists = false;
      }
      if (!exists) wrong.push(`${d.file}:${line}: ${target}: no such file`);
      else if (fragment !== undefined && file.endsWith(".md")) {
        const known = byFile.get(file) ??
          anchors(parseMarkdown(file, Deno.readTextFileSync(join(ROOT, file))).prose);
        if (!known.has(fragment)) wrong.push(`${d.file}:${line}: ${target}: no such heading`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("every path of this repository the docs name in a code span exists", () => {
  const named = /^(?:tools|agent|mcp|scripts|tests|\.ci|\.github)\/[\w./-]*$/;
  const wrong: string[] = [];
  for (const d of docs) {
    d.prose.forEach((l, i) => {
      for (const m of l.matchAll(/`([^`]+)`/g)) {
        if (!named.test(m[1])) continue;
        try {
          Deno.statSync(join(ROOT, m[1]));
        } catch {
          wrong.push(`${d.file}:${i + 1}: ${m[1]}`);
        }
      }
    });
  }
  assert.deepEqual(wrong, []);
});
