/**
 * `--input-format stream-json`: print mode's input as JSON lines on stdin, the
 * way Claude Code's SDK talks to its CLI. An `initialize` control request is
 * answered, an `interrupt` stops the run like Ctrl-C, other control requests are
 * refused, and the first `user` message is the prompt. One prompt per process:
 * messages after it are not run.
 *
 * @module
 */

import type { PrintJson } from "./events.ts";

/** What crab says it has, in the shape of the SDK's `SDKControlInitializeResponse`. */
function initializeResponse(): PrintJson {
  return {
    commands: [],
    agents: [],
    output_style: "default",
    available_output_styles: ["default"],
    models: [],
    account: {},
  };
}

/** The text of a user message's content (a string, or text blocks). */
function promptText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((b) =>
    b && typeof b === "object" && b.type === "text" && typeof b.text === "string" ? [b.text] : []
  );
  return texts.length ? texts.join("\n") : undefined;
}

async function* lines(): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
  if (buf.trim() !== "") yield buf;
}

/**
 * Reads stdin until the first user message and returns its text (undefined when
 * stdin ends first). Control requests are answered through `write`, before and
 * after the prompt; an `interrupt` calls `interrupt`.
 */
export async function readStreamPrompt(
  write: (message: PrintJson) => void,
  interrupt: () => void,
): Promise<string | undefined> {
  const input = lines();
  const handle = (line: string): string | undefined => {
    let m: {
      type?: unknown;
      request_id?: unknown;
      request?: { subtype?: unknown };
      message?: { content?: unknown };
    };
    try {
      m = JSON.parse(line);
    } catch {
      return undefined;
    }
    if (m?.type === "control_request") {
      const id = m.request_id;
      const subtype = m.request?.subtype;
      if (subtype === "initialize") {
        write({
          type: "control_response",
          response: { subtype: "success", request_id: id, response: initializeResponse() },
        });
      } else if (subtype === "interrupt") {
        interrupt();
        write({ type: "control_response", response: { subtype: "success", request_id: id } });
      } else {
        write({
          type: "control_response",
          response: {
            subtype: "error",
            request_id: id,
            error: `crab does not support the control request "${subtype}"`,
          },
        });
      }
      return undefined;
    }
    if (m?.type === "user") return promptText(m.message?.content) ?? "";
    return undefined;
  };
  let prompt: string | undefined;
  while (prompt === undefined) {
    const next = await input.next();
    if (next.done) return undefined;
    prompt = handle(next.value);
  }
  // Control requests (an interrupt) may still come while the prompt runs.
  (async () => {
    for (let next = await input.next(); !next.done; next = await input.next()) handle(next.value);
  })().catch(() => {});
  return prompt;
}
