/**
 * `crab sessions`: the stored conversations, newest first, to pick one for
 * `--resume ID` (or `--continue` for the latest in this workspace). The table
 * shows models and workspaces in `printable`'s strict mode and first prompts as
 * prose; `--json` gives them as stored.
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import { Store } from "../store/observe.ts";
import { Transcripts } from "../store/sessions.ts";
import { realOrSelf } from "../settings/trust.ts";

/** Options of `crab sessions`. */
export interface SessionsOptions {
  cwd: string;
  all?: boolean;
  json?: boolean;
  limit?: number;
}

/** Prints the sessions; resolves to the exit code. Looking does not create the store. */
export function sessionsCommand(opts: SessionsOptions): number {
  const store = Store.openExisting();
  const workspace = opts.all ? undefined : realOrSelf(opts.cwd);
  const list = store ? new Transcripts(store).list(opts.limit ?? 20, workspace) : [];
  store?.close();
  if (opts.json) {
    console.log(JSON.stringify({
      sessions: list.map((s) => ({
        id: s.id,
        workspace: s.workspace,
        created_at: new Date(s.createdAt).toISOString(),
        updated_at: new Date(s.updatedAt).toISOString(),
        provider: s.provider,
        model: s.model,
        messages: s.messages,
        title: s.title,
      })),
    }));
    return 0;
  }
  if (list.length === 0) {
    const where = workspace && printable(workspace, "strict");
    console.log(
      where
        ? `No sessions in ${where} (crab sessions --all lists every workspace).`
        : "No sessions.",
    );
    return 0;
  }
  const rows = list.map((s) => [
    s.id,
    new Date(s.updatedAt).toISOString().replace("T", " ").slice(0, 16),
    String(s.messages),
    printable(s.model ?? "", "strict"),
    ...(opts.all ? [printable(s.workspace, "strict")] : []),
    printable(s.title, "prose"),
  ]);
  const header = [
    "SESSION",
    "UPDATED",
    "MSGS",
    "MODEL",
    ...(opts.all ? ["WORKSPACE"] : []),
    "FIRST PROMPT",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  console.log([line(header), ...rows.map(line)].join("\n"));
  return 0;
}
