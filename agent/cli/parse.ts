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
  const parsed = new Parsed();
  const path: Command[] = [root];
  const node = () => path[path.length - 1];
  const given: { spec: OptionSpec; spelling: string }[] = [];
  let help = false;
  let version = false;
  let dashdash = false;
  let problem: UsageError | undefined;
  const fail = (e: UsageError) => problem ??= e;

  const argSpec = (n: number): ArgSpec | undefined => {
    const args = node().args ?? [];
    const last = args[args.length - 1];
    return args[n] ?? (last?.variadic ? last : undefined);
  };

  /** Whether the argument being read takes every word from here on. */
  const verbatimNow = (): boolean => {
    const n = parsed.args.length;
    const spec = n > 0 ? argSpec(n - 1) : undefined;
    if (!spec?.verbatim) return false;
    if (spec.verbatim === true) return true;
    const first = parsed.args[(node().args ?? []).indexOf(spec)];
    return spec.verbatim(first);
  };

  /** A check's refusal as a usage error; `extra`: a word a variadic option took after its first. */
  const refused = (
    spelling: string,
    value: string,
    why: NonNullable<ReturnType<NonNullable<OptionSpec["check"]>>>,
    extra = false,
  ): UsageError => {
    const [text, hint] = typeof why === "string" ? [why, undefined] : [why.why, why.hint];
    return new UsageError(
      `Cannot use ${spelling} "${value}": ${text}`,
      extra
        ? `${spelling} takes every word up to the next option: give the prompt or the ` +
          "command's arguments before it, or after --"
        : hint,
    );
  };

  const record = (
    spec: OptionSpec,
    spelling: string,
    raw: string | undefined,
    extra = false,
  ): void => {
    given.push({ spec, spelling });
    const key = spec.key;
    const main = primary(key);
    // A single value given twice: the last one wins, as commander, git and claude have it
    // (a wrapper adds defaults, the user's own come after).
    parsed.spelled.set(key, spelling);
    if (main.kind === "flag") {
      parsed.values.set(key, true);
      return;
    }
    const value = spec.means ?? raw ?? "";
    if (main.kind === "list") {
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
        fail(
          refused(spelling, value, { why, hint: typeof hint === "string" ? hint : "" }, extra),
        );
        return;
      }
      if (items.length === 0) {
        fail(new UsageError(`Cannot use ${spelling} "${value}": expected at least one`));
        return;
      }
      for (const item of items) {
        const why = main.check?.(item);
        if (why) {
          fail(refused(spelling, item, why, extra));
          return;
        }
      }
      const before = parsed.values.get(key);
      parsed.values.set(key, [...(Array.isArray(before) ? before : []), ...items]);
      return;
    }
    // An optional value left out is "" (e.g. --resume without an id: pick one).
    const why = value === "" && main.kind === "optional" ? undefined : main.check?.(value);
    if (why) fail(refused(spelling, value, why));
    else parsed.values.set(key, value);
  };

  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    // Once a verbatim argument has its first word, the rest is its own (options included).
    const verbatim = verbatimNow();
    if (!dashdash && !verbatim && word === "--") {
      dashdash = true;
      continue;
    }
    if (!dashdash && !verbatim && word.length > 1 && word.startsWith("-")) {
      const eq = word.startsWith("--") ? word.indexOf("=") : -1;
      const name = eq > 0 ? word.slice(0, eq) : word;
      const inline = eq > 0 ? word.slice(eq + 1) : undefined;
      const spec = lookup(name, node());
      if (!spec) {
        fail(unknownOption(name, path));
        continue;
      }
      if (spec.key === "help") help = true;
      else if (spec.key === "version") version = true;
      else if (spec.kind === "flag") {
        if (inline !== undefined) fail(new UsageError(`Cannot give ${name} a value`));
        else record(spec, name, undefined);
      } else if (inline !== undefined) record(spec, name, inline);
      else {
        const next = argv[i + 1];
        const isWord = next !== undefined && (!next.startsWith("-") || next === "-");
        if (spec.kind === "optional") {
          const taken = isWord && (spec.takes?.(next) ?? true);
          record(spec, name, taken ? next : undefined);
          if (taken) i++;
        } else if (!isWord) {
          fail(new UsageError(`Cannot use ${name} without a value`, `${name} ${spec.arg}`));
        } else {
          record(spec, name, next);
          i++;
          // Claude Code's lists take the words after them too: up to an option, `--`, or a command.
          while (spec.variadic) {
            const more = argv[i + 1];
            if (more === undefined || (more.startsWith("-") && more !== "-")) break;
            const here = node();
            if (parsed.args.length === 0 && here.children?.some((c) => c.name === more)) break;
            record(spec, name, more, true);
            i++;
          }
        }
      }
      continue;
    }
    if (parsed.args.length === 0 && !dashdash && node().children) {
      const here = node();
      const child = here.children!.find((c) => c.name === word);
      if (child) {
        path.push(child);
        continue;
      }
      const near = suggest(word, here.children!.map((c) => c.name));
      if (!here.plan) {
        fail(
          new UsageError(
            `Unknown command "${word}" for ${commandName(path)}`,
            near ? `did you mean ${commandName(path)} ${near}?` : `see ${commandName(path)} --help`,
          ),
        );
        continue;
      }
      // A lone word next to a command's name is a typo, not a prompt.
      if (near && /^[a-z-]+$/.test(word)) {
        fail(
          new UsageError(
            `Unknown command "${word}"`,
            `did you mean ${commandName(path)} ${near}? (to send "${word}" as a prompt: ` +
              `${commandName(path)} -- ${word})`,
          ),
        );
        continue;
      }
    }
    parsed.args.push(word);
  }

  if (version) return { kind: "version" };
  if (help) return { kind: "help", path };
  if (problem) throw problem;
  const here = node();
  if (!here.plan) {
    if (given.length === 0) return { kind: "help", path };
    throw new UsageError(
      `Cannot run ${commandName(path)} without a command`,
      `one of: ${here.children!.map((c) => c.name).join(", ")}`,
    );
  }
  for (const { spec, spelling } of given) {
    if (here.keys.includes(spec.key)) continue;
    const where = takers(root, spec.key);
    const own = OPTIONS.find((o) => spellingsOf(o).includes(spelling) && here.keys.includes(o.key));
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
  const args = here.args ?? [];
  const missing = args.find((a, n) => a.required && parsed.args.length <= n);
  if (missing) {
    throw new UsageError(
      `Cannot run ${commandName(path)} without ${missing.name}`,
      `${commandName(path)} ${(here.usage ?? [""])[0]}`.trim(),
    );
  }
  const most = args.some((a) => a.variadic) ? Infinity : args.length;
  if (parsed.args.length > most) {
    throw new UsageError(
      `Cannot run ${commandName(path)} with the extra argument "${parsed.args[most]}"`,
      `see ${commandName(path)} --help`,
    );
  }
  return { kind: "run", path, parsed };
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
