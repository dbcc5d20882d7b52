/**
 * A report as Markdown or as one self-contained HTML page. Everything in it
 * that a model, a command, a file name, a hook or a server wrote is data: in
 * HTML it passes one escaper ({@link escapeHtml}) into text, never into an
 * element, an attribute or a link, and the page's Content-Security-Policy lets
 * nothing load; in Markdown it sits in a code span or fence longer than any
 * run of backticks inside. Control characters (a terminal's escapes) are shown
 * escaped in both.
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import type { Report } from "./collect.ts";

/** The page's policy: no script, no image, no request of any kind; inline style only. */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'";

/** Text shown, with control characters escaped (a terminal escape is shown, never acted on). */
function shown(text: string): string {
  return printable(text, "prose");
}

/**
 * `text` as HTML text: the one escaper of the report.
 *
 * @example escapeHtml("<b>") === "&lt;b&gt;"
 */
export function escapeHtml(text: string): string {
  return shown(text).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );
}

/** The longest run of backticks in `text`. */
function longestTicks(text: string): number {
  return Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
}

/**
 * `text` as a Markdown code span: fenced by more backticks than any run
 * inside, one line (newlines shown as `⏎`).
 *
 * @example codeSpan("a`b") === "``a`b``"
 */
export function codeSpan(text: string): string {
  const t = shown(text).replace(/\r?\n/g, " ⏎ ");
  const ticks = "`".repeat(longestTicks(t) + 1);
  const pad = t.startsWith("`") || t.endsWith("`") || t === "" ? " " : "";
  return `${ticks}${pad}${t}${pad}${ticks}`;
}

/** `text` as a fenced block, its fence longer than any backtick run inside. */
export function codeFence(text: string): string {
  const t = shown(text);
  const ticks = "`".repeat(Math.max(3, longestTicks(t) + 1));
  return `${ticks}text\n${t}${t.endsWith("\n") ? "" : "\n"}${ticks}`;
}

function stat(f: { added: number | null; removed: number | null }): string {
  return f.added === null ? "binary or not kept" : `+${f.added} -${f.removed}`;
}

/** The run's cost, as its result gave it, with the note of a model without a price. */
function costLine(r: Report, quote: (text: string) => string): string {
  const { total_usd: usd, note } = r.cost;
  if (usd === null) return "Cost: not recorded for this run.";
  return `Cost: $${usd.toFixed(4)}${
    note === null ? "" : ` (${quote(note)})`
  }, estimated from list prices.`;
}

function summaryLine(r: Report): string {
  const s = r.summary;
  return `${s.files_changed} file(s) changed, ${s.commands} command(s), ${s.failures} failure(s), ` +
    `${s.refusals} refusal(s), ${s.tool_calls} tool call(s)`;
}

/** The report as Markdown. */
export function reportMarkdown(r: Report): string {
  const out: string[] = [];
  // A pipe inside a cell's code span would end the cell: GFM reads `\|` there as a pipe.
  const row = (cells: string[]) => `| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`;
  const table = (head: string[], rows: string[][]) => {
    if (rows.length === 0) out.push("None.", "");
    else out.push(row(head), row(head.map(() => "---")), ...rows.map(row), "");
  };
  out.push(`# crab run ${codeSpan(r.run.id)}`, "");
  out.push(`**Summary:** ${summaryLine(r)}.`, "");
  out.push(
    `Model ${codeSpan(r.run.model ?? "-")} (${codeSpan(r.run.provider ?? "-")}), mode ` +
      `${codeSpan(r.run.mode)}, status ${codeSpan(r.run.status ?? "-")}, workspace ` +
      `${codeSpan(r.run.workspace)}, started ${r.run.started_at}.`,
    "",
  );
  out.push("## Prompts", "");
  for (const p of r.prompts) out.push(codeFence(p), "");
  if (r.prompts.length === 0) out.push("None.", "");
  out.push("## Answer", "", r.answer === null ? "None." : codeFence(r.answer), "");
  out.push("## Files changed", "");
  table(
    ["path", "change", "lines", "undo id"],
    r.files.map((f) => [codeSpan(f.path), f.change, stat(f), codeSpan(f.undo_id)]),
  );
  out.push("## Commands", "");
  table(
    ["#", "command", "exit", "ms", "hosts"],
    r.commands.map((c) => [
      String(c.call_seq),
      codeSpan(c.command),
      c.exit_code === null ? c.outcome : String(c.exit_code),
      String(c.duration_ms),
      c.hosts.map((h) => `${codeSpan(h.host)} ${h.allowed ? "allowed" : "refused"}`).join(", ") ||
      "-",
    ]),
  );
  out.push("## Refusals", "");
  table(
    ["#", "tool", "layer", "target", "rule", "source"],
    r.refusals.map((x) => [
      String(x.call_seq),
      codeSpan(x.tool),
      x.layer,
      codeSpan(x.target),
      x.rule === null ? "-" : codeSpan(x.rule),
      x.source === null ? "-" : codeSpan(x.source),
    ]),
  );
  out.push("## Hooks", "");
  table(
    ["event", "command", "outcome", "exit", "blocked", "ms"],
    r.hooks.map((h) => [
      h.event,
      codeSpan(h.command),
      h.outcome,
      h.exit_code === null ? "-" : String(h.exit_code),
      h.blocked ? "yes" : "no",
      String(h.duration_ms),
    ]),
  );
  out.push("## MCP calls", "");
  table(
    ["#", "server", "tool", "outcome", "ms"],
    r.mcp.map((m) => [
      String(m.call_seq),
      codeSpan(m.server),
      codeSpan(m.tool),
      m.outcome,
      String(m.duration_ms),
    ]),
  );
  out.push(
    "## Tokens and cost",
    "",
    `${r.tokens.input} input, ${r.tokens.output} output, ${r.tokens.turns} turn(s).`,
    "",
    `**${costLine(r, codeSpan).replace(":", ":**")}`,
    "",
  );
  return out.join("\n");
}

/** The report as one HTML page: no script, nothing loaded, printable. */
export function reportHtml(r: Report): string {
  const e = escapeHtml;
  const table = (head: string[], rows: string[][]) =>
    rows.length === 0
      ? "<p>None.</p>"
      : `<table><thead><tr>${head.map((h) => `<th>${e(h)}</th>`).join("")}</tr></thead><tbody>${
        rows.map((cells) => `<tr>${cells.map((c) => `<td>${e(c)}</td>`).join("")}</tr>`).join("")
      }</tbody></table>`;
  const pre = (t: string) => `<pre>${e(t)}</pre>`;
  const parts = [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">`,
    `<title>${e(`crab run ${r.run.id}`)}</title>`,
    "<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}" +
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #999;padding:.2em .5em;" +
    "text-align:left;vertical-align:top;white-space:pre-wrap;word-break:break-all}" +
    "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap;word-break:break-all}</style>",
    "</head><body>",
    `<h1>${e(`crab run ${r.run.id}`)}</h1>`,
    `<p id="summary"><strong>Summary:</strong> ${e(summaryLine(r))}.</p>`,
    `<p>${
      e(
        `Model ${r.run.model ?? "-"} (${r.run.provider ?? "-"}), mode ${r.run.mode}, status ` +
          `${r.run.status ?? "-"}, workspace ${r.run.workspace}, started ${r.run.started_at}.`,
      )
    }</p>`,
    "<h2>Prompts</h2>",
    ...(r.prompts.length ? r.prompts.map(pre) : ["<p>None.</p>"]),
    "<h2>Answer</h2>",
    r.answer === null ? "<p>None.</p>" : pre(r.answer),
    "<h2>Files changed</h2>",
    table(
      ["path", "change", "lines", "undo id"],
      r.files.map((f) => [f.path, f.change, stat(f), f.undo_id]),
    ),
    "<h2>Commands</h2>",
    table(
      ["#", "command", "exit", "ms", "hosts"],
      r.commands.map((c) => [
        String(c.call_seq),
        c.command,
        c.exit_code === null ? c.outcome : String(c.exit_code),
        String(c.duration_ms),
        c.hosts.map((h) => `${h.host} ${h.allowed ? "allowed" : "refused"}`).join(", ") || "-",
      ]),
    ),
    "<h2>Refusals</h2>",
    table(
      ["#", "tool", "layer", "target", "rule", "source"],
      r.refusals.map((x) => [
        String(x.call_seq),
        x.tool,
        x.layer,
        x.target,
        x.rule ?? "-",
        x.source ?? "-",
      ]),
    ),
    "<h2>Hooks</h2>",
    table(
      ["event", "command", "outcome", "exit", "blocked", "ms"],
      r.hooks.map((h) => [
        h.event,
        h.command,
        h.outcome,
        h.exit_code === null ? "-" : String(h.exit_code),
        h.blocked ? "yes" : "no",
        String(h.duration_ms),
      ]),
    ),
    "<h2>MCP calls</h2>",
    table(
      ["#", "server", "tool", "outcome", "ms"],
      r.mcp.map((m) => [String(m.call_seq), m.server, m.tool, m.outcome, String(m.duration_ms)]),
    ),
    "<h2>Tokens and cost</h2>",
    `<p>${e(`${r.tokens.input} input, ${r.tokens.output} output, ${r.tokens.turns} turn(s).`)}</p>`,
    `<p id="cost">${e(costLine(r, (t) => t))}</p>`,
    "</body></html>",
    "",
  ];
  return parts.join("\n");
}
