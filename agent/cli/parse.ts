/**
 * The command-line parser: argv → the command it names and the options given,
 * read against the option table (`options.ts`) and the command tree
 * (`commands.ts`). An option may stand before or after the command words; it is
 * checked against the command finally named, so one that does not apply there
 * is a usage error saying where it does, never accepted and then ignored.
 *
 * @module
 */

import { OPTIONS, type OptionSpec } from "./options.ts";
import { suggest } from "../settings/suggest.ts";
import { UsageError } from "../settings/usage_error.ts";

export { UsageError } from "../settings/usage_error.ts";

/** A positional argument of a command. */
export interface ArgSpec {
  name: string;
  required?: boolean;
  /** Takes every remaining word. */
  variadic?: boolean;
  /**
   * After this argument's first word, every word is an argument, options too (a
   * server's command line); a function decides by that first word.
   */
  verbatim?: boolean | ((first: string) => boolean);
}

/** A command's plan: what it will be given, and how to run it. */
export interface Plan {
  /** The options object (or call) the command's module receives. */
  input: unknown;
  run(): Promise<number> | number;
}

/** A node of the command tree: a group (`mcp`) or a command that runs. */
export interface Command {
  /** The word that names it (`add`); `crab` for the root. */
  name: string;
  /** One line for the command list and the help's head. */
  summary: string;
  /** Usage lines after `crab SUB`, e.g. `[OPTIONS] NAME -- COMMAND [ARGS...]`. */
  usage?: string[];
  args?: ArgSpec[];
  /** Keys of the options this command takes, in help order. */
  keys: readonly string[];
  /** A command's own wording of an option's help line, by key. */
  optionHelp?: Record<string, string>;
  /** Why an option it does not take makes no sense here, by key (the hint of that error). */
  refuses?: Record<string, string>;
  /** Text after the options in the help. */
  details?: string;
  children?: Command[];
  /** Checks what was given and turns it into the module's input; absent on a group. */
  plan?(p: Parsed): Plan;
}

/** The options and arguments given for a command. */
export class Parsed {
  /** true for a flag, a string for a value, a string array for a list. */
  readonly values = new Map<string, true | string | string[]>();
  /** How each option was spelled the last time (for messages). */
  readonly spelled = new Map<string, string>();
  readonly args: string[] = [];

  has(key: string): boolean {
    return this.values.has(key);
  }
  /** true when the flag was given, undefined when not (so config files may decide). */
  flag(key: string): true | undefined {
    return this.values.get(key) === true ? true : undefined;
  }
  str(key: string): string | undefined {
    const v = this.values.get(key);
    return typeof v === "string" ? v : undefined;
  }
  int(key: string): number | undefined {
    const v = this.str(key);
    return v === undefined ? undefined : Number(v);
  }
  list(key: string): string[] | undefined {
    const v = this.values.get(key);
    return Array.isArray(v) ? [...v] : undefined;
  }
  /** The spelling used for `key`, or its long name. */
  spelling(key: string): string {
    return this.spelled.get(key) ?? OPTIONS.find((o) => o.key === key && !o.means)?.long ?? key;
  }
}

/** What a command line asks for. */
export type Invocation =
  | { kind: "help"; path: Command[] }
  | { kind: "version" }
  | { kind: "run"; path: Command[]; parsed: Parsed };

/** `crab mcp add`, for a path from the root. */
export function commandName(path: readonly Command[]): string {
  return path.map((c) => c.name).join(" ");
}

function spellingsOf(o: OptionSpec): string[] {
  return o.short ? [o.long, o.short] : [o.long];
}

/** The option spelled `name` where `node` reads it: the node's own first, else the table's first. */
function lookup(name: string, node: Command): OptionSpec | undefined {
  const all = OPTIONS.filter((o) => spellingsOf(o).includes(name));
  return all.find((o) => node.keys.includes(o.key)) ?? all[0];
}

/** The spec that holds an option's value (not an alias that means one value of it). */
function primary(key: string): OptionSpec {
  return OPTIONS.find((o) => o.key === key && !o.means)!;
}

/** Every command in the tree that takes option `key`, with its path. */
function takers(root: Command, key: string): string[] {
  const out: string[] = [];
  const walk = (path: Command[]) => {
    const c = path[path.length - 1];
    if (c.plan && c.keys.includes(key)) out.push(commandName(path));
    for (const child of c.children ?? []) walk([...path, child]);
  };
  walk([root]);
  return out;
}

function andList(items: string[]): string {
  return items.length <= 1
    ? items.join("")
    : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

/** Parses `argv` (without the program name) against the tree under `root`. */
export function parseArgs(argv: readonly string[], root: Command): Invocation {
  const reader = new ArgvReader(root);
  for (let i = 0; i < argv.length; i = reader.take(argv, i) + 1);
  return reader.invocation();
}

/** A check's refusal (an option's value), as {@link OptionSpec.check} gives it. */
type Refusal = NonNullable<ReturnType<NonNullable<OptionSpec["check"]>>>;

/**
 * Reads argv one word at a time: the commands it names, their options and
 * arguments. The first problem is kept and thrown once the words are read, so
 * `--help` and `--version` anywhere still answer.
 */
class ArgvReader {
  readonly #root: Command;
  readonly #parsed = new Parsed();
  readonly #path: Command[];
  readonly #given: { spec: OptionSpec; spelling: string }[] = [];
  #help = false;
  #version = false;
  #dashdash = false;
  #problem: UsageError | undefined;

  constructor(root: Command) {
    this.#root = root;
    this.#path = [root];
  }

  /** The command named last. */
  #node(): Command {
    return this.#path[this.#path.length - 1];
  }

  #fail(e: UsageError): void {
    this.#problem ??= e;
  }

  /**
   * Takes the word at `i` (and any value after it); returns the index of the
   * last word it took.
   */
  take(argv: readonly string[], i: number): number {
    const word = argv[i];
    // Once a verbatim argument has its first word, the rest is its own (options included).
    const verbatim = this.#verbatimNow();
    if (!this.#dashdash && !verbatim && word === "--") {
      this.#dashdash = true;
      return i;
    }
    if (!this.#dashdash && !verbatim && word.length > 1 && word.startsWith("-")) {
      return this.#option(argv, i);
    }
    if (this.#parsed.args.length === 0 && !this.#dashdash && this.#node().children) {
      if (this.#commandWord(word)) return i;
    }
    this.#parsed.args.push(word);
    return i;
  }

  /** The spec of positional argument `n` of the command named last. */
  #argSpec(n: number): ArgSpec | undefined {
    const args = this.#node().args ?? [];
    const last = args[args.length - 1];
    return args[n] ?? (last?.variadic ? last : undefined);
  }

  /** Whether the argument being read takes every word from here on. */
  #verbatimNow(): boolean {
    const n = this.#parsed.args.length;
    const spec = n > 0 ? this.#argSpec(n - 1) : undefined;
    if (!spec?.verbatim) return false;
    if (spec.verbatim === true) return true;
    const first = this.#parsed.args[(this.#node().args ?? []).indexOf(spec)];
    return spec.verbatim(first);
  }

  /** The option at `i`, with its value if it takes one; returns the last index taken. */
  #option(argv: readonly string[], i: number): number {
    const word = argv[i];
    const eq = word.startsWith("--") ? word.indexOf("=") : -1;
    const name = eq > 0 ? word.slice(0, eq) : word;
    const inline = eq > 0 ? word.slice(eq + 1) : undefined;
    const spec = lookup(name, this.#node());
    if (!spec) {
      this.#fail(unknownOption(name, this.#path));
      return i;
    }
    if (spec.key === "help") this.#help = true;
    else if (spec.key === "version") this.#version = true;
    else if (spec.kind === "flag") {
      if (inline !== undefined) this.#fail(new UsageError(`Cannot give ${name} a value`));
      else this.#record(spec, name, undefined);
    } else if (inline !== undefined) this.#record(spec, name, inline);
    else {
      const next = argv[i + 1];
      const isWord = next !== undefined && (!next.startsWith("-") || next === "-");
      if (spec.kind === "optional") {
        const taken = isWord && (spec.takes?.(next) ?? true);
        this.#record(spec, name, taken ? next : undefined);
        if (taken) i++;
      } else if (!isWord) {
        this.#fail(new UsageError(`Cannot use ${name} without a value`, `${name} ${spec.arg}`));
      } else {
        this.#record(spec, name, next);
        i++;
        // Claude Code's lists take the words after them too: up to an option, `--`, or a command.
        while (spec.variadic) {
          const more = argv[i + 1];
          if (more === undefined || (more.startsWith("-") && more !== "-")) break;
          const here = this.#node();
          if (this.#parsed.args.length === 0 && here.children?.some((c) => c.name === more)) break;
          this.#record(spec, name, more, true);
          i++;
        }
      }
    }
    return i;
  }

  /**
   * A word where the command named last expects one of its commands: true when
   * it names one, or is refused as a typo of one; false when it is an argument.
   */
  #commandWord(word: string): boolean {
    const here = this.#node();
    const child = here.children!.find((c) => c.name === word);
    if (child) {
      this.#path.push(child);
      return true;
    }
    const name = commandName(this.#path);
    const near = suggest(word, here.children!.map((c) => c.name));
    if (!here.plan) {
      this.#fail(
        new UsageError(
          `Unknown command "${word}" for ${name}`,
          near ? `did you mean ${name} ${near}?` : `see ${name} --help`,
        ),
      );
      return true;
    }
    // A lone word next to a command's name is a typo, not a prompt.
    if (near && /^[a-z-]+$/.test(word)) {
      this.#fail(
        new UsageError(
          `Unknown command "${word}"`,
          `did you mean ${name} ${near}? (to send "${word}" as a prompt: ${name} -- ${word})`,
        ),
      );
      return true;
    }
    return false;
  }

  /** Records option `spec` as spelled, with its raw value; `extra`: a variadic's later word. */
  #record(spec: OptionSpec, spelling: string, raw: string | undefined, extra = false): void {
    this.#given.push({ spec, spelling });
    const key = spec.key;
    const main = primary(key);
    // A single value given twice: the last one wins, as commander, git and claude have it
    // (a wrapper adds defaults, the user's own come after).
    this.#parsed.spelled.set(key, spelling);
    if (main.kind === "flag") {
      this.#parsed.values.set(key, true);
      return;
    }
    const value = spec.means ?? raw ?? "";
    if (main.kind === "list") {
      this.#recordList(main, key, spelling, value, extra);
      return;
    }
    // An optional value left out is "" (e.g. --resume without an id: pick one).
    const why = value === "" && main.kind === "optional" ? undefined : main.check?.(value);
    if (why) this.#fail(refused(spelling, value, why));
    else this.#parsed.values.set(key, value);
  }

  /** Adds the items of a list option's `value` to what it holds, each checked. */
  #recordList(
    main: OptionSpec,
    key: string,
    spelling: string,
    value: string,
    extra: boolean,
  ): void {
    let items: string[];
    try {
      items = typeof main.split === "function"
        ? main.split(value)
        : main.split
        ? value.split(",").map((s) => s.trim()).filter(Boolean)
        : [value];
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      const hint = (e as { hint?: unknown }).hint;
      this.#fail(
        refused(spelling, value, { why, hint: typeof hint === "string" ? hint : "" }, extra),
      );
      return;
    }
    if (items.length === 0) {
      this.#fail(new UsageError(`Cannot use ${spelling} "${value}": expected at least one`));
      return;
    }
    for (const item of items) {
      const why = main.check?.(item);
      if (why) {
        this.#fail(refused(spelling, item, why, extra));
        return;
      }
    }
    const before = this.#parsed.values.get(key);
    this.#parsed.values.set(key, [...(Array.isArray(before) ? before : []), ...items]);
  }

  /** What the words read ask for; throws the first problem met. */
  invocation(): Invocation {
    const path = this.#path;
    if (this.#version) return { kind: "version" };
    if (this.#help) return { kind: "help", path };
    if (this.#problem) throw this.#problem;
    const here = this.#node();
    if (!here.plan) {
      if (this.#given.length === 0) return { kind: "help", path };
      throw new UsageError(
        `Cannot run ${commandName(path)} without a command`,
        `one of: ${here.children!.map((c) => c.name).join(", ")}`,
      );
    }
    this.#checkOptionsApply(here);
    this.#checkArgumentCount(here);
    return { kind: "run", path, parsed: this.#parsed };
  }

  /** Each option given applies to the command named (else: where it does). */
  #checkOptionsApply(here: Command): void {
    const path = this.#path, root = this.#root;
    for (const { spec, spelling } of this.#given) {
      if (here.keys.includes(spec.key)) continue;
      const where = takers(root, spec.key);
      const own = OPTIONS.find((o) =>
        spellingsOf(o).includes(spelling) && here.keys.includes(o.key)
      );
      const applies = where.length === 1 && where[0] === root.name
        ? `it applies to ${root.name} itself (interactive or -p), not to its commands`
        : `it applies to ${andList(where)}`;
      throw new UsageError(
        `Cannot use ${spelling} with ${commandName(path)}: ${applies}`,
        own
          ? `${commandName(path)} has its own ${spelling} (${own.help}): give it after the command`
          : here.refuses?.[spec.key],
      );
    }
  }

  /** As many arguments as the command named takes: its required ones, no more than it can. */
  #checkArgumentCount(here: Command): void {
    const path = this.#path, given = this.#parsed.args;
    const args = here.args ?? [];
    const missing = args.find((a, n) => a.required && given.length <= n);
    if (missing) {
      throw new UsageError(
        `Cannot run ${commandName(path)} without ${missing.name}`,
        `${commandName(path)} ${(here.usage ?? [""])[0]}`.trim(),
      );
    }
    const most = args.some((a) => a.variadic) ? Infinity : args.length;
    if (given.length > most) {
      throw new UsageError(
        `Cannot run ${commandName(path)} with the extra argument "${given[most]}"`,
        `see ${commandName(path)} --help`,
      );
    }
  }
}

/** A check's refusal as a usage error; `extra`: a word a variadic option took after its first. */
function refused(spelling: string, value: string, why: Refusal, extra = false): UsageError {
  const [text, hint] = typeof why === "string" ? [why, undefined] : [why.why, why.hint];
  return new UsageError(
    `Cannot use ${spelling} "${value}": ${text}`,
    extra
      ? `${spelling} takes every word up to the next option: give the prompt or the ` +
        "command's arguments before it, or after --"
      : hint,
  );
}

function unknownOption(name: string, path: Command[]): UsageError {
  const here = path[path.length - 1];
  // A group takes no options of its own: what follows may be any command's.
  const names = OPTIONS.filter((o) =>
    !o.hidden && (!here.plan || here.keys.includes(o.key) || o.key === "help")
  ).map((o) => o.long);
  const near = name.startsWith("--") ? suggest(name, names) : undefined;
  return new UsageError(
    `Unknown option ${name} for ${commandName(path)}`,
    near ? `did you mean ${near}?` : `see ${commandName(path)} --help`,
  );
}
