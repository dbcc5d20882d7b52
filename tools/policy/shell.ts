/**
 * A shell command as the policy sees it: every simple command that could run,
 * with its words, assignments and redirections, found by a real bash parser
 * ([unbash](https://github.com/webpro-nl/unbash), pure TypeScript, synchronous).
 *
 * Every node of the tree is visited, so commands in lists (`;`, `&&`, `||`,
 * newlines, `&`), pipelines, subshells and groups, `$(…)` and backticks,
 * process substitutions, `if`/`for`/`while`/`until`/`case`/`select`, function
 * bodies, `coproc`, here-documents, parameter defaults (`${x:-$(…)}`) and
 * array subscripts are all found, each as one {@link SimpleCommand}. A compound
 * command's own redirections (`{ …; } > f`, `while …; done < f`) become a
 * command without words. What the parser could not read, and constructions
 * whose effect cannot be known before the run, are listed as problems:
 * - a syntax error (the tree is then partial);
 * - arithmetic on a variable (`$((x))`, `(( x ))`, `${a[i]}`, `a[i]=…`,
 *   `[[ x -eq 1 ]]`): bash evaluates the variable's *contents* as an
 *   expression, and `a[$(cmd)]` inside it runs `cmd`;
 * - `[[ -v … ]]` (the same evaluation of a subscript), a descriptor variable
 *   with a subscript (`exec {a[i]}>f`), a compound array's `[key]=`;
 * - a value used as a name or as code: indirection (`${!x}`, whose value may
 *   name `a[$(cmd)]`), and every transformation but quoting and case
 *   (`${x@P}` expands a prompt string, running the `$(…)` in it);
 * - nesting deeper than {@link MAX_DEPTH}.
 *
 * The parser module is loaded only by {@link loadShellParser}; nothing here
 * loads it at import time.
 *
 * @module
 */

import type { MatchWord, Seg } from "./command_pattern.ts";

type Unbash = typeof import("unbash");
type Node = import("unbash").SyntaxNode;
type UWord = import("unbash").Word;
type UCommand = import("unbash").Command;
type URedirection = import("unbash").Redirection;
type UAssignment = import("unbash").Assignment;
type UParameterExpansion = import("unbash").ParameterExpansionPart;

let parser: Unbash | undefined;

/** Loads the shell parser once; later calls return at once. */
export async function loadShellParser(): Promise<void> {
  parser ??= await import("unbash");
}

/** True once {@link loadShellParser} has finished. */
export function shellParserLoaded(): boolean {
  return parser !== undefined;
}

/** Nesting of scripts and compound commands past this is not followed: a problem. */
export const MAX_DEPTH = 64;

/** A word of a command. */
export interface ShellWord extends MatchWord {
  /** As written. */
  text: string;
  /** The value, when no part of it is unknown before the run. */
  value?: string;
  /** Starts with an unquoted `~` (the shell puts the home directory there). */
  tilde: boolean;
  /** Holds an unquoted expansion or glob: it may become several words, or none. */
  split: boolean;
}

/** What a redirection does to its target. */
export type RedirectKind = "read" | "write" | "read-write";

/** A redirection to or from a file (descriptor copies and here-documents are left out). */
export interface Redirect {
  kind: RedirectKind;
  /** The operator as written: `>`, `>>`, `2>`, `&>`, `<`, … */
  op: string;
  target: ShellWord;
}

/** One simple command. */
export interface SimpleCommand {
  /** The command as written. */
  text: string;
  /** `NAME=value` before the command name. */
  assigns: { name: string; value?: ShellWord }[];
  /** The command name and its arguments; empty for assignments or redirections alone. */
  words: ShellWord[];
  redirects: Redirect[];
}

/** A parsed command line. */
export interface ParsedShell {
  /** Every simple command, in the order they appear. */
  commands: SimpleCommand[];
  /** Variables a `for` or `select` loop assigns. */
  loopVars: string[];
  /** Syntax errors and constructions whose effect is unknown before the run. */
  problems: string[];
}

/**
 * Parses `source` as bash. Throws if {@link loadShellParser} has not finished
 * (a defect of the caller, never of the command).
 *
 * @example
 * ```ts
 * await loadShellParser();
 * parseShell("npm test && echo $(curl x)").commands.map((c) => c.text);
 * // ["npm test", "echo $(curl x)", "curl x"]
 * ```
 */
export function parseShell(source: string): ParsedShell {
  if (!parser) throw new Error("parseShell() called before loadShellParser() finished");
  const out: ParsedShell = { commands: [], loopVars: [], problems: [] };
  const walker = new Walker(parser, out);
  walker.visit(parser.parse(source), source, 0);
  return out;
}

const NUMBER = /^(?:[0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+)$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `${x@Q}`, `${x@U}`, `${x@u}`, `${x@L}`: quoting and case, which evaluate nothing. */
const SAFE_TRANSFORMS = new Set(["Q", "U", "u", "L"]);

/** A compound assignment's `[key]=value` whose key bash evaluates (an indexed array's). */
function evaluatedKey(w: UWord): boolean {
  const m = /^\[([^\]]*)\]\+?=/.exec(w.text);
  return m !== null && !NUMBER.test(m[1]);
}
const QUOTED = new Set(["SingleQuoted", "AnsiCQuoted", "DoubleQuoted", "LocaleString"]);
const ARITH_TESTS = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);
const EXPANSIONS = new Set([
  "SimpleExpansion",
  "ParameterExpansion",
  "CommandExpansion",
  "ArithmeticExpansion",
]);

class Walker {
  /** The first command of each pipeline timed by bash's `time` keyword, and its `-p`. */
  readonly timed = new WeakMap<Node, boolean>();

  constructor(readonly ub: Unbash, readonly out: ParsedShell) {}

  problem(why: string): void {
    if (!this.out.problems.includes(why)) this.out.problems.push(why);
  }

  visit(node: Node, src: string, depth: number): void {
    if (depth > MAX_DEPTH) {
      this.problem(`it nests more than ${MAX_DEPTH} levels deep`);
      return;
    }
    switch (node.type) {
      case "Script":
        if (node.source !== undefined) src = node.source;
        for (const e of (node as import("unbash").ParsedScript).errors ?? []) {
          this.problem(`syntax error: ${e.message}`);
        }
        break;
      case "Command":
        this.out.commands.push(this.command(node, src));
        break;
      case "Redirected": {
        const redirects = node.redirects.flatMap((r) => this.redirect(r, src) ?? []);
        if (redirects.length) {
          const text = node.redirects.map((r) => src.slice(r.pos, r.end)).join(" ");
          this.out.commands.push({ text, assigns: [], words: [], redirects });
        }
        break;
      }
      case "Pipeline": {
        // `time` is bash's keyword but sh's and dash's program (`sh -c 'time x'`): decided as
        // the `time` wrapper, which either way runs the command it times.
        const time = node.prefixes.find((p) => p.type === "Time");
        if (time && node.commands[0]?.type === "Command") {
          this.timed.set(node.commands[0], time.posix !== undefined);
        }
        break;
      }
      case "For":
      case "Select":
        this.out.loopVars.push(node.name.value);
        break;
      case "ArithmeticWord":
        if (!NUMBER.test(node.value)) {
          this.problem("arithmetic on a variable evaluates its contents, which may run commands");
        }
        break;
      case "ParameterExpansion":
        this.expansion(node);
        if (node.index && !NUMBER.test(node.index.value) && !/^[@*]$/.test(node.index.value)) {
          this.problem(
            "an array subscript evaluates a variable's contents, which may run commands",
          );
        }
        if (node.operation?.type === "Slice") {
          const { offset, length } = node.operation;
          if (
            !/^\s*-?[0-9]+\s*$/.test(offset.value) ||
            (length && !/^\s*-?[0-9]+\s*$/.test(length.value))
          ) {
            this.problem(
              "a substring offset evaluates a variable's contents, which may run commands",
            );
          }
        }
        break;
      case "Assignment":
        if (
          (node.index && !NUMBER.test(node.index.value)) ||
          (node.value.type === "ArrayValue" && node.value.elements.some(evaluatedKey))
        ) {
          this.problem(
            "an array subscript evaluates a variable's contents, which may run commands",
          );
        }
        break;
      case "TestBinary":
        if (
          ARITH_TESTS.has(node.operator) &&
          !(NUMBER.test(node.left.value) && NUMBER.test(node.right.value))
        ) {
          this.problem(
            `[[ … ${node.operator} … ]] evaluates a variable's contents, which may run commands`,
          );
        }
        break;
      case "TestUnary":
        if (node.operator === "-v") {
          this.problem("[[ -v … ]] evaluates an array subscript, which may run commands");
        }
        break;
    }
    this.ub.forEachChild(node, (child) => this.visit(child, src, depth + 1));
  }

  /**
   * Expansions that use a value as a name or as code: `${!x}` (the value names
   * a variable, whose subscript bash evaluates), and every transformation but
   * quoting and case (`${x@P}` runs the `$(…)` in a prompt string).
   */
  expansion(node: UParameterExpansion): void {
    const op = node.operation;
    const listing = op?.type === "Names" || (!op && /^[@*]$/.test(node.index?.value ?? ""));
    if (node.prefix === "!" && !listing) {
      this.problem(
        `\${!${node.parameter}} uses a variable's contents as a name, which may run commands`,
      );
    }
    if (op?.type === "Transform" && !SAFE_TRANSFORMS.has(op.operand.value)) {
      this.problem(
        `\${…@${op.operand.value}} evaluates a variable's contents, which may run commands`,
      );
    }
    if (op?.type === "Unknown") {
      this.problem(`\${…${op.operator}…} is an expansion crab does not know`);
    }
  }

  command(node: UCommand, src: string): SimpleCommand {
    const assigns: SimpleCommand["assigns"] = [];
    const redirects: Redirect[] = [];
    const words: ShellWord[] = [];
    for (const p of node.prefix) {
      if (p.type === "Assignment") assigns.push(assignment(p, src));
      else {
        const r = this.redirect(p, src);
        if (r) redirects.push(r);
      }
    }
    const timed = this.timed.get(node);
    if (timed !== undefined && node.name) {
      const word = (value: string): ShellWord => ({
        segs: [value],
        vanish: false,
        split: false,
        text: value,
        value,
        tilde: false,
      });
      words.push(word("time"), ...(timed ? [word("-p")] : []));
    }
    if (node.name) words.push(shellWord(node.name, src));
    for (const s of node.suffix) {
      if (s.type === "Word") words.push(shellWord(s, src));
      else if (s.type === "Assignment") {
        // `declare x=1`: an argument as far as the command is concerned.
        const segs = assignmentSegs(s, src);
        const literal = segs.every((x) => x !== null);
        words.push({
          segs,
          vanish: false,
          split: !literal,
          text: src.slice(s.pos, s.end),
          tilde: false,
          ...(literal ? { value: segs.join("") } : {}),
        });
      } else {
        const r = this.redirect(s, src);
        if (r) redirects.push(r);
      }
    }
    return { text: src.slice(node.pos, node.end), assigns, words, redirects };
  }

  redirect(r: URedirection, src: string): Redirect | undefined {
    if (r.descriptor?.type === "FileDescriptorVariable" && !IDENTIFIER.test(r.descriptor.name)) {
      this.problem(
        "a descriptor variable's subscript evaluates a variable's contents, which may run commands",
      );
    }
    if (r.type !== "Redirect" || !r.target) return undefined;
    const fd = r.descriptor?.type === "FileDescriptor" ? String(r.descriptor.value) : "";
    const op = fd + r.operator;
    const target = shellWord(r.target, src);
    switch (r.operator) {
      case "<":
        return { kind: "read", op, target };
      case "<>":
        return { kind: "read-write", op, target };
      case ">&":
      case "<&":
        // A descriptor copy (`2>&1`, `>&-`) names no file; `>& file` writes one.
        if (target.value !== undefined && /^(?:[0-9]+-?|-)$/.test(target.value)) return undefined;
        return { kind: r.operator === ">&" ? "write" : "read", op, target };
      default:
        return { kind: "write", op, target };
    }
  }
}

function assignment(a: UAssignment, src: string): { name: string; value?: ShellWord } {
  return a.value.type === "Word"
    ? { name: a.name, value: shellWord(a.value, src) }
    : { name: a.name };
}

/** An assignment given as an argument (`declare x=$(…)`), as one word. */
function assignmentSegs(a: UAssignment, src: string): Seg[] {
  const head = src.slice(a.pos, a.value.pos);
  if (a.value.type !== "Word") return [head, null];
  return [head, ...shellWord(a.value, src).segs];
}

/** A parser word as the matcher and the path checks see it. */
export function shellWord(w: UWord, src: string): ShellWord {
  const text = src.slice(w.pos, w.end);
  const parts = w.parts;
  if (!parts) {
    return {
      segs: [w.value],
      vanish: false,
      split: false,
      text,
      value: w.value,
      tilde: text.startsWith("~"),
    };
  }
  const segs: Seg[] = [];
  const push = (s: Seg) => {
    const last = segs.length - 1;
    if (s === null) {
      if (segs[last] !== null || last < 0) segs.push(null);
    } else if (last >= 0 && segs[last] !== null) segs[last] = (segs[last] as string) + s;
    else segs.push(s);
  };
  for (const p of parts) {
    switch (p.type) {
      case "Literal":
      case "SingleQuoted":
      case "AnsiCQuoted":
        push(p.value);
        break;
      case "DoubleQuoted":
      case "LocaleString":
        if (p.parts.length === 0) push("");
        for (const q of p.parts) push(q.type === "Literal" ? q.value : null);
        break;
      default:
        // Expansions, substitutions, globs, brace expansions: known only at run time.
        push(null);
    }
  }
  const vanish = parts.every((p) => EXPANSIONS.has(p.type));
  const split = parts.some((p) => !QUOTED.has(p.type) && p.type !== "Literal");
  const literal = segs.every((s) => s !== null);
  const first = parts[0];
  const tilde = first.type === "Literal" && first.text.startsWith("~");
  return {
    segs,
    vanish,
    split,
    text,
    ...(literal ? { value: (segs as string[]).join("") } : {}),
    tilde,
  };
}
