/**
 * Every text in crab's source that names a `--flag` (hints, errors, notices,
 * tool descriptions) names one that parses on the command the text is shown
 * for: the command it names (`crab sessions --all`), else the commands whose
 * code shows it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ROOT } from "../../../agent/cli/commands.ts";
import { OPTIONS } from "../../../agent/cli/options.ts";
import type { Command } from "../../../agent/cli/parse.ts";

const ROOT_DIR = new URL("../../../", import.meta.url).pathname;

/** The string literals of a TypeScript source (template parts joined, `${...}` as `X`). */
function stringLiterals(src: string): string[] {
  const out: string[] = [];
  let i = 0;
  let last = ""; // the last significant character outside strings and comments
  const readQuoted = (q: string) => {
    let text = "";
    for (i++; i < src.length && src[i] !== q; i++) {
      if (src[i] === "\\") {
        text += src[i + 1] === "n" ? "\n" : src[i + 1];
        i++;
      } else text += src[i];
    }
    i++;
    return text;
  };
  const readTemplate = (): string => {
    let text = "";
    for (i++; i < src.length && src[i] !== "`"; i++) {
      if (src[i] === "\\") {
        text += src[i + 1] === "n" ? "\n" : src[i + 1];
        i++;
      } else if (src[i] === "$" && src[i + 1] === "{") {
        i += 2;
        code("}");
        text += "X";
      } else text += src[i];
    }
    i++;
    return text;
  };
  const code = (until?: string) => {
    let depth = 0;
    while (i < src.length) {
      const c = src[i];
      if (until && c === "}" && depth === 0) return;
      if (c === "/" && src[i + 1] === "/") {
        while (i < src.length && src[i] !== "\n") i++;
      } else if (c === "/" && src[i + 1] === "*") {
        i = src.indexOf("*/", i + 2) + 2;
        if (i === 1) i = src.length;
      } else if (c === "'" || c === '"') {
        out.push(readQuoted(c));
        last = "a";
      } else if (c === "`") {
        out.push(readTemplate());
        last = "a";
      } else if (c === "/" && (last === "" || "(,=:[!&|?{};+-*%<>~^".includes(last))) {
        // A regular expression literal: skip it, classes included.
        let inClass = false;
        for (i++; i < src.length; i++) {
          if (src[i] === "\\") i++;
          else if (src[i] === "[") inClass = true;
          else if (src[i] === "]") inClass = false;
          else if (src[i] === "/" && !inClass) break;
        }
        i++;
        last = "a";
      } else {
        if (c === "{") depth++;
        if (c === "}") depth--;
        if (!/\s/.test(c)) last = /[\w$)\]]/.test(c) ? "a" : c;
        i++;
      }
    }
  };
  code();
  return out;
}

/** The command a `crab WORDS...` mention names, as a path below the root. */
function named(words: string[]): string {
  let c: Command = ROOT;
  const path: string[] = [];
  for (const w of words) {
    const child = c.children?.find((x) => x.name === w);
    if (!child) break;
    path.push(w);
    c = child;
  }
  return path.join(" ");
}

/** Where a file's texts are shown, unless a text names its command; "any": one of them suffices. */
function shownFor(file: string): { commands: string[]; any?: boolean } {
  if (file.startsWith("tools/")) return { commands: ["", "tool", "mcp serve"] };
  if (file.startsWith("mcp/")) return { commands: ["", "tool", "mcp list", "mcp test"], any: true };
  if (file === "agent/commands/tool.ts") return { commands: ["tool"] };
  if (file === "agent/commands/mcp_serve.ts") return { commands: ["mcp serve"] };
  if (file === "agent/commands/mcp.ts") {
    return { commands: ["mcp list", "mcp add", "mcp remove", "mcp test", "tool"], any: true };
  }
  if (file === "agent/commands/metrics.ts") return { commands: ["metrics"] };
  if (file === "agent/commands/sessions.ts") return { commands: ["sessions"] };
  if (file === "agent/commands/report.ts") return { commands: ["report"] };
  if (file === "agent/commands/undo.ts") return { commands: ["undo"] };
  if (file === "agent/commands/trust.ts") return { commands: ["trust"] };
  if (file === "agent/commands/permissions.ts") {
    return { commands: ["permissions", "permissions check"], any: true };
  }
  if (file.startsWith("agent/cli/")) {
    return {
      commands: [
        "",
        "tool",
        "mcp list",
        "mcp add",
        "mcp remove",
        "mcp test",
        "mcp serve",
        "metrics",
        "metrics export",
        "report",
        "sessions",
        "undo",
        "trust",
        "permissions",
        "permissions check",
      ],
      any: true,
    };
  }
  return { commands: [""] };
}

/** Deno's own flags (and V8's, passed by `--v8-flags`), which crab's texts name when they speak of permissions and builds. */
const DENO_FLAG =
  /^--(allow|deny)-(read|write|run|env|net|sys|ffi|import|all)$|^--no-prompt$|^--cached-only$|^--config$|^--include$|^--v8-flags$|^--max-semi-space-size$|^--heap-growing-percent$|^--optimize-for-size$|^--no-lazy$|^--expose-gc$|^--enable-experimental-regexp-engine-on-excessive-backtracks$/;

/**
 * Flags of other programs that crab's texts name: bubblewrap's argv, npm's in bash.md's advice,
 * git's in what the sandbox reports after a call, systemd-run's in a hint, bash's that the
 * policy reads through.
 */
/** Options of the REPL's slash commands (`/permissions add RULE --local`), not of the command line. */
const REPL_COMMAND_FLAG = /^--(user|local)$/;

const OTHER_PROGRAMS_FLAG =
  /^--(die-with-parent|new-session|unshare-[a-z]+|share-net|as-pid-1|disable-userns|cap-drop|ro-bind|bind|dev-bind|proc|dev|tmpfs|size|remount-ro|setenv|chdir|cache|continue|no-skip-worktree|no-assume-unchanged|user|scope|rcfile|init-file)$/;

function command(path: string): Command {
  let c = ROOT;
  for (const w of path ? path.split(" ") : []) c = c.children!.find((x) => x.name === w)!;
  return c;
}

/** Whether `flag` is an option `path` takes. */
function takes(path: string, flag: string): boolean {
  const c = command(path);
  return OPTIONS.some((o) =>
    (o.long === flag) && (c.keys.includes(o.key) || o.key === "help" || o.key === "version")
  );
}

function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(ROOT_DIR + dir)) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory) walk(rel);
      else if (/\.(ts|md)$/.test(e.name)) out.push(rel);
    }
  };
  for (const d of ["agent", "tools", "mcp"]) walk(d);
  return out.sort();
}

Deno.test("stringLiterals() finds strings and template text, not comments or regexes", () => {
  const src = 'const a = "x --one"; // "--no"\n/* \'--nope\' */ const r = /--re"x/;\n' +
    'const t = `--two ${f("--three")} --four`;';
  assert.deepEqual(stringLiterals(src), ["x --one", "--three", "--two X --four"]);
});

Deno.test("every --flag a hint, error or description names parses where the text is shown", () => {
  const problems: string[] = [];
  let checked = 0;
  for (const file of sources()) {
    const text = Deno.readTextFileSync(ROOT_DIR + file);
    const literals = file.endsWith(".md") ? [text] : stringLiterals(text);
    const shown = shownFor(file);
    for (const literal of literals) {
      // Each `crab WORDS` mention decides for the flags after it.
      const parts = literal.split(/(?=\bcrab [a-z-])/);
      for (const part of parts) {
        const mention = part.match(/^crab ((?:[a-z]+ )*[a-z]*)/);
        const targets = mention ? [named(mention[1].trim().split(" "))] : shown.commands;
        const any = mention ? false : shown.any;
        // Claude Code's spellings are camelCase: --allowedTools, --disallowedTools.
        for (const [flag] of part.matchAll(/(?<![\w-])--[a-z][a-zA-Z0-9-]*/g)) {
          if (DENO_FLAG.test(flag) || OTHER_PROGRAMS_FLAG.test(flag)) continue;
          if (file.startsWith("agent/repl/") && REPL_COMMAND_FLAG.test(flag)) continue;
          checked++;
          const ok = any
            ? targets.some((t) => takes(t, flag))
            : targets.every((t) => takes(t, flag));
          if (!ok) {
            problems.push(
              `${file}: ${flag} in ${JSON.stringify(literal.slice(0, 80))} does not parse on ` +
                targets.map((t) => `crab ${t}`.trim()).join(any ? " or " : " and "),
            );
          }
        }
      }
    }
  }
  assert.deepEqual(problems, []);
  // The check saw the texts it is about.
  assert.ok(checked > 40, `only ${checked} flags found`);
});
