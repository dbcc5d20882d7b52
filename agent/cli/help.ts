/**
 * Help text for any command of the tree, built from the command and option
 * tables, so it cannot list an option the parser does not take.
 *
 * @module
 */

import { VERSION } from "../../version.ts";
import { GLOBAL_KEYS, optionLabel, OPTIONS, type OptionSpec } from "./options.ts";
import { type Command, commandName } from "./parse.ts";

function rows(items: [string, string][], indent = 2): string[] {
  const width = Math.min(30, Math.max(...items.map(([l]) => l.length)));
  return items.map(([label, text]) =>
    label.length > width
      ? `${" ".repeat(indent)}${label}\n${" ".repeat(indent + width + 2)}${text}`
      : `${" ".repeat(indent)}${label.padEnd(width)}  ${text}`
  );
}

function specsFor(keys: readonly string[]): OptionSpec[] {
  return keys.flatMap((k) => OPTIONS.filter((o) => o.key === k && !o.hidden));
}

function optionRows(command: Command, keys: readonly string[]): string[] {
  return rows(
    specsFor(keys).map((o) => [
      optionLabel(o),
      (!o.means && command.optionHelp?.[o.key]) || o.help,
    ]),
  );
}

/** The help of the command at the end of `path` (`[ROOT]` for crab itself). */
export function helpText(path: readonly Command[]): string {
  const command = path[path.length - 1];
  const name = commandName(path);
  const out: string[] = [];
  if (path.length === 1) out.push(`crab ${VERSION} — ${command.summary}`, "");
  else out.push(command.summary, "");
  const usage = command.usage ??
    [command.children ? "COMMAND [OPTIONS]" : "[OPTIONS]"];
  out.push("Usage:", ...usage.map((u) => `  ${name} ${u}`), "");
  if (command.children) {
    out.push("Commands:", ...rows(command.children.map((c) => [c.name, c.summary])), "");
  }
  const own = command.keys.filter((k) => !GLOBAL_KEYS.includes(k));
  const globals = command.keys.filter((k) => GLOBAL_KEYS.includes(k));
  if (own.length || command.plan) {
    out.push(
      "Options:",
      ...optionRows(command, [...own, "help", ...(path.length === 1 ? ["version"] : [])]),
      "",
    );
  }
  if (globals.length) {
    out.push(
      "Global options (before or after the command words):",
      ...optionRows(command, globals),
      "",
    );
  }
  if (command.details) out.push(command.details, "");
  if (command.children) {
    const under = path.slice(1).map((c) => ` ${c.name}`).join("");
    out.push(`Help for one command: crab help${under} COMMAND, or ${name} COMMAND --help`);
  }
  return out.join("\n").trimEnd();
}
