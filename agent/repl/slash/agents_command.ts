/**
 * `/agents`: the subagent types the model may run with the `task` tool, each
 * with where it was defined (built in, `--agents`, the SDK, a file of the
 * project's or the user's), its tools, model and mode, and the session's caps.
 * Names, descriptions and paths come from files: each line is strictly printable.
 *
 * @module
 */

import { relative } from "../../../tools/fs/path.ts";
import { printable } from "../../../tools/fs/printable.ts";
import type { Colors } from "../../terminal.ts";
import type { AgentDefinition } from "../../subagents/definitions.ts";
import type { Subagents } from "../../subagents/runner.ts";

/** Where a definition comes from, as `/agents` says it. */
function sourceOf(a: AgentDefinition, workspace: string): string {
  switch (a.source) {
    case "built-in":
      return "built-in";
    case "flag":
      return "--agents";
    case "sdk":
      return "the SDK's agents option";
    case "project":
      return `project: ${relative(workspace, a.path ?? "")}`;
    case "user":
      return `user: ${a.path ?? ""}`;
  }
}

/** The lines of `/agents`. */
export function agentsLines(subagents: Subagents, workspace: string, c: Colors): string[] {
  const out: string[] = [];
  const types = subagents.catalog.list();
  const width = Math.max(...types.map((a) => a.name.length)) + 2;
  for (const a of types) {
    out.push(
      c.bold(printable(a.name, "strict").padEnd(width)) +
        c.dim(printable(sourceOf(a, workspace), "strict")),
    );
    out.push("  " + printable(a.description, "strict", 200));
    const facts = [
      `tools: ${a.tools ? a.tools.join(", ") : "the session's, but task"}`,
      ...(a.disallowedTools ? [`not: ${a.disallowedTools.join(", ")}`] : []),
      ...(a.model ? [`model: ${a.model}`] : []),
      ...(a.permissionMode ? [`mode: ${a.permissionMode} (where stricter)`] : []),
      ...(a.maxTurns ? [`turns: ${a.maxTurns}`] : []),
    ];
    out.push(c.dim("  " + printable(facts.join(" · "), "strict", 300)));
  }
  const { caps, started } = subagents;
  out.push(c.dim(
    `${started} of ${caps.maxPerSession} started this session · at most ${caps.maxRunning} ` +
      `at once · ${caps.maxTurns} turns each · nesting ${caps.maxDepth} deep ` +
      "(the subagents setting)",
  ));
  return out;
}
