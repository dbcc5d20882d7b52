/**
 * `--input-format stream-json`: print mode's input as JSON lines on stdin, the
 * way Claude Code's SDK talks to its CLI. Every `user` message is a prompt,
 * answered in turn until stdin ends; an `initialize` control request is
 * answered (its settings are checked, see {@link InitSettings}; its hook
 * callbacks are called over this stream, see `agent/hooks/sdk.ts`), an
 * `interrupt` stops the running prompt, other control requests are refused.
 *
 * Nothing the SDK sends is dropped silently: an `initialize` field crab cannot
 * honour is refused (which ends the run, exit 2), a line that is not JSON or
 * not a message crab knows is answered by a notice on stderr, and a user
 * message's blocks other than text are named in a notice.
 *
 * @module
 */

import type { PrintJson } from "./events.ts";
import { parseSdkHooks, type SdkHook, SdkHookBridge } from "../hooks/sdk.ts";
import { type AgentDefinition, AgentError, agentsFromJson } from "../subagents/definitions.ts";

/**
 * What crab says it has, in the shape of the SDK's `SDKControlInitializeResponse`;
 * `mcp_servers_applied` confirms the servers the SDK sent in the request, which
 * the SDK waits for before it sends a prompt.
 */
function initializeResponse(settings: InitSettings): PrintJson {
  return {
    commands: [],
    agents: [],
    output_style: "default",
    available_output_styles: ["default"],
    models: [],
    account: {},
    ...(settings.mcpServers ? { mcp_servers_applied: true } : {}),
  };
}

/** The settings an `initialize` request may carry that crab honours. */
export interface InitSettings {
  /** Replaces crab's system prompt (the SDK's `systemPrompt`; blank means crab's own). */
  systemPrompt?: string;
  /** Added to the end of the system prompt (the SDK's `appendSystemPrompt`). */
  appendSystemPrompt?: string;
  /** The SDK's hook callbacks (`agent/hooks/sdk.ts`), called over this stream. */
  sdkHooks?: SdkHookBridge;
  /** The SDK's `mcpServers`, as one `--mcp-config` JSON text (`{"mcpServers": {...}}`). */
  mcpServers?: string;
  /** The SDK's `jsonSchema` (its `outputFormat`), as `--json-schema` JSON text. */
  jsonSchema?: string;
  /** The SDK's `agents`: subagent types, as `--agents` gives them. */
  agents?: AgentDefinition[];
}

/** An image or PDF block of a user message, as given (base64 decoded). */
export interface GivenMedia {
  /** `image 1`, `document 2`: how notes name it. */
  name: string;
  bytes: Uint8Array;
}

/** A user message of the stream. */
export interface StreamUserMessage {
  /** Its text blocks, joined by newlines. */
  text: string;
  /** Its image and document blocks. */
  media: GivenMedia[];
  /** The message as it came, for `--replay-user-messages`. */
  raw: Record<string, unknown>;
}

/** True for a value that asks for nothing: absent, null, false, "", [] or {}. */
function empty(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === "") return true;
  if (Array.isArray(v)) return v.every((x) => x === "" || x === null);
  if (typeof v === "object") return Object.keys(v as object).length === 0;
  return false;
}

/** A string, or an array of strings joined by blank lines; undefined for anything else. */
function promptValue(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v.join("\n\n");
  return undefined;
}

/** `initialize` fields that only say who is talking, with nothing to honour. */
const INERT_FIELDS = new Set(["subtype", "promptSuggestions"]);

/**
 * Checks an `initialize` request: the settings crab honours, or why it cannot
 * run as asked. `permissionMode` names the mode in force: asking for it is fine.
 */
export function checkInitialize(
  request: Record<string, unknown>,
  permissionMode: string,
): { ok: true; settings: InitSettings; hooks?: SdkHook[] } | { ok: false; error: string } {
  const settings: InitSettings = {};
  let hooks: SdkHook[] | undefined;
  for (const [key, value] of Object.entries(request)) {
    if (INERT_FIELDS.has(key) || empty(value)) continue;
    if (key === "hooks") {
      const parsed = parseSdkHooks(value);
      if (typeof parsed === "string") return { ok: false, error: parsed };
      hooks = parsed;
      continue;
    }
    if (key === "systemPrompt" || key === "appendSystemPrompt") {
      const text = promptValue(value);
      if (text === undefined) {
        return { ok: false, error: `Cannot use initialize's ${key}: it must be a string` };
      }
      if (text.trim() !== "") settings[key] = text;
      continue;
    }
    if (key === "permissionMode" && value === permissionMode) continue;
    if (key === "jsonSchema") {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return {
          ok: false,
          error: "Cannot use initialize's jsonSchema: it must be a JSON Schema object",
        };
      }
      settings.jsonSchema = JSON.stringify(value);
      continue;
    }
    if (key === "agents") {
      try {
        settings.agents = agentsFromJson(value, "sdk");
      } catch (e) {
        if (!(e instanceof AgentError)) throw e;
        return { ok: false, error: e.message.replace("the agents option", "initialize's agents") };
      }
      continue;
    }
    if (key === "mcpServers") {
      const why = mcpServersProblem(value);
      if (why) {
        return { ok: false, error: `Cannot take MCP servers from initialize's mcpServers: ${why}` };
      }
      settings.mcpServers = JSON.stringify({ mcpServers: value });
      continue;
    }
    return { ok: false, error: refusal(key, value, permissionMode) };
  }
  return { ok: true, settings, ...(hooks ? { hooks } : {}) };
}

/**
 * Why initialize's `mcpServers` cannot be used as a `--mcp-config`, or undefined:
 * servers of the SDK's own process (`type: "sdk"`) answer over the control
 * channel, which crab does not speak.
 */
function mcpServersProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return 'expected {"NAME": {"command": ...} or {"type": "http", "url": ...}}';
  }
  for (const [name, server] of Object.entries(value)) {
    if (typeof server !== "object" || server === null || Array.isArray(server)) {
      return `server "${name}" is not an object`;
    }
    if ((server as Record<string, unknown>).type === "sdk") {
      return `server "${name}" runs in the SDK's process (type "sdk"), which crab cannot call; ` +
        "give it as a stdio or HTTP server";
    }
  }
  return undefined;
}

function refusal(key: string, value: unknown, permissionMode: string): string {
  switch (key) {
    case "sdkMcpServers":
      return `Cannot take MCP servers from initialize's ${key}: ` +
        "configure them with crab mcp add, or in .mcp.json";
    case "permissionMode":
      return `Cannot use permission mode ${JSON.stringify(value)}: print mode runs in ` +
        `"${permissionMode}" ` +
        (permissionMode === "acceptOffered"
          ? "(every offered tool approved, outside and protected paths refused; " +
            "--yolo for bypassPermissions)"
          : "(give the mode with --permission-mode)");
    case "allowedTools":
    case "disallowedTools":
      return `Cannot take ${key} from initialize: choose the tools offered with --tools`;
    default:
      return `Cannot honour initialize's ${key}: crab does not support it`;
  }
}

/** The bytes of a base64 `source` of an image or document block, or undefined. */
function base64Source(block: Record<string, unknown>): Uint8Array | undefined {
  const source = block.source as Record<string, unknown> | undefined;
  if (source?.type !== "base64" || typeof source.data !== "string") return undefined;
  try {
    return Uint8Array.from(atob(source.data), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * The text of a user message's content (a string, or blocks), its image and
 * document blocks (Claude's base64 form), and the types of the blocks left over.
 */
function promptText(content: unknown): { text: string; media: GivenMedia[]; others: string[] } {
  if (typeof content === "string") return { text: content, media: [], others: [] };
  if (!Array.isArray(content)) return { text: "", media: [], others: [] };
  const texts: string[] = [];
  const media: GivenMedia[] = [];
  const others: string[] = [];
  for (const b of content) {
    if (b && typeof b === "object" && b.type === "text" && typeof b.text === "string") {
      texts.push(b.text);
      continue;
    }
    const bytes = (b?.type === "image" || b?.type === "document") ? base64Source(b) : undefined;
    if (bytes) media.push({ name: `${b.type} ${media.length + 1}`, bytes });
    else others.push(String(b?.type ?? typeof b));
  }
  return { text: texts.join("\n"), media, others };
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

/** How the input reader talks back. */
export interface StreamInputHooks {
  /** Writes a JSON line to stdout (control responses). */
  write(message: PrintJson): void;
  /** Tells the user something (stderr). */
  notice(message: string): void;
  /** Stops the running prompt. */
  interrupt(): void;
  /** The permission mode in force, which `initialize` may name. */
  permissionMode: string;
  /** `--await-initialize`: a user message before `initialize` is refused. */
  awaitInitialize?: boolean;
  /** Takes a `control_response` to a request crab sent (a permission question); false if none. */
  controlResponse?(message: Record<string, unknown>): boolean;
  /** stdin ended: nothing more will be answered. */
  ended?(): void;
}

/** The user messages of a stream-json input, read in the background as they come. */
export class StreamInput {
  #queue: StreamUserMessage[] = [];
  #waiting?: () => void;
  #ended = false;
  /** The system prompt is set when the first message runs: a later `initialize` cannot change it. */
  #seenUser = false;
  #initialized = false;
  /** Why the run cannot go on as asked (a refused `initialize`), once known. */
  refused?: string;
  /** The settings of the `initialize` request, once answered. */
  settings: InitSettings = {};
  /** Calls the SDK's hook callbacks and takes their answers. */
  readonly #sdkHooks = new SdkHookBridge((m) => this.hooks.write(m));

  constructor(private readonly hooks: StreamInputHooks) {
    (async () => {
      for await (const line of lines()) {
        this.#handle(line);
        if (this.refused) break;
      }
    })().catch((e) => this.hooks.notice(`cannot read stdin: ${e?.message ?? e}`)).finally(() => {
      this.#ended = true;
      this.#sdkHooks.close();
      this.hooks.ended?.();
      this.#wake();
    });
  }

  #wake(): void {
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.();
  }

  /** The next user message; undefined once stdin has ended (or `initialize` was refused). */
  async next(): Promise<StreamUserMessage | undefined> {
    while (!this.refused) {
      const m = this.#queue.shift();
      if (m) return m;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => this.#waiting = resolve);
    }
    return undefined;
  }

  #respond(id: unknown, ok: boolean, body: PrintJson = {}): void {
    this.hooks.write({
      type: "control_response",
      response: ok
        ? { subtype: "success", request_id: id, ...body }
        : { subtype: "error", request_id: id, ...body },
    });
  }

  #handle(line: string): void {
    if (line.trim() === "") return;
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line);
    } catch {
      this.hooks.notice(`skipped a stdin line that is not JSON: ${line.slice(0, 80)}`);
      return;
    }
    if (m?.type === "control_request") {
      const id = m.request_id;
      const request = (m.request ?? {}) as Record<string, unknown>;
      const subtype = request.subtype;
      if (subtype === "initialize") {
        const checked = checkInitialize(request, this.hooks.permissionMode);
        if (!checked.ok) {
          this.refused = checked.error;
          this.#respond(id, false, { error: checked.error });
          this.#wake();
          return;
        }
        if (checked.hooks?.length) {
          this.#sdkHooks.hooks.push(...checked.hooks);
          checked.settings.sdkHooks = this.#sdkHooks;
        }
        const keys = Object.keys(checked.settings);
        if (this.#seenUser && keys.length) {
          this.refused = `Cannot apply initialize's ${keys.join(" and ")} after a user message: ` +
            "send initialize first";
          this.#respond(id, false, { error: this.refused });
          this.#wake();
          return;
        }
        this.settings = checked.settings;
        this.#initialized = true;
        this.#respond(id, true, { response: initializeResponse(checked.settings) });
      } else if (subtype === "interrupt") {
        this.hooks.interrupt();
        this.#respond(id, true);
      } else {
        this.#respond(id, false, {
          error: `crab does not support the control request "${subtype}"`,
        });
      }
      return;
    }
    if (m?.type === "user") {
      const message = (m.message ?? {}) as { content?: unknown };
      const { text, media, others } = promptText(message.content);
      if (others.length) {
        this.hooks.notice(
          `a user message's ${others.join(", ")} block(s) were not sent: crab takes text, ` +
            "and images and PDFs as base64",
        );
      }
      if (this.hooks.awaitInitialize && !this.#initialized) {
        this.refused = "Cannot answer a user message before initialize: --await-initialize " +
          "says initialize comes first";
        this.#wake();
        return;
      }
      this.#seenUser = true;
      this.#queue.push({ text, media, raw: m });
      this.#wake();
      return;
    }
    // A control_response answers a hook callback or a permission question; anything else is unknown.
    if (
      m?.type === "control_response" &&
      (this.#sdkHooks.answer(m) || this.hooks.controlResponse?.(m))
    ) return;
    this.hooks.notice(`skipped a stdin message of type ${JSON.stringify(m?.type)}`);
  }
}
