/**
 * Asks an OpenAI-compatible server how large its model's context window is:
 * vLLM lists `max_model_len` in `/v1/models`, llama.cpp's `/props` has the
 * running `n_ctx`, Ollama's `/api/show` has the model's `num_ctx` parameter or
 * its trained `context_length`. All are asked at once, briefly; a server that
 * answers none of them leaves the window to crab's table and default.
 *
 * @module
 */

import { DEFAULT_CONTEXT_WINDOW, knownContextWindow } from "./models.ts";

/** A window the server reported, and where it came from. */
export interface ServerWindow {
  tokens: number;
  source: "max_model_len" | "n_ctx" | "num_ctx" | "context_length";
}

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (typeof v === "object" && v !== null ? v as Obj : {});
const positive = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v > 0;

async function getJson(url: string, signal: AbortSignal, init: RequestInit = {}): Promise<Obj> {
  const res = await fetch(url, { ...init, signal });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}`);
  }
  return asObj(await res.json());
}

/** vLLM (and OpenRouter-style `context_length`) in the model list. */
async function fromModels(base: string, model: string, signal: AbortSignal, headers: HeadersInit) {
  const body = await getJson(`${base}/models`, signal, { headers });
  const entries = Array.isArray(body.data) ? body.data.map(asObj) : [];
  const entry = entries.find((m) => m.id === model) ?? (entries.length === 1 ? entries[0] : {});
  if (positive(entry.max_model_len)) {
    return { tokens: entry.max_model_len as number, source: "max_model_len" } as ServerWindow;
  }
  if (positive(entry.context_length)) {
    return { tokens: entry.context_length as number, source: "context_length" } as ServerWindow;
  }
  return undefined;
}

/** llama.cpp's server settings. */
async function fromProps(root: string, signal: AbortSignal, headers: HeadersInit) {
  const body = await getJson(`${root}/props`, signal, { headers });
  const n = asObj(body.default_generation_settings).n_ctx ?? body.n_ctx;
  return positive(n) ? { tokens: n as number, source: "n_ctx" } as ServerWindow : undefined;
}

/** Ollama's model info: the `num_ctx` it runs with when set, else the trained length. */
async function fromOllama(root: string, model: string, signal: AbortSignal) {
  const body = await getJson(`${root}/api/show`, signal, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model }),
  });
  const params = typeof body.parameters === "string" ? body.parameters : "";
  const numCtx = params.match(/^\s*num_ctx\s+(\d+)/m);
  if (numCtx) return { tokens: Number(numCtx[1]), source: "num_ctx" } as ServerWindow;
  for (const [k, v] of Object.entries(asObj(body.model_info))) {
    if (k.endsWith(".context_length") && positive(v)) {
      return { tokens: v as number, source: "context_length" } as ServerWindow;
    }
  }
  return undefined;
}

/**
 * The context window `model` has on the OpenAI-compatible server at `baseUrl`
 * (with `/v1`), or undefined when the server does not say within `timeoutMs`.
 *
 * @example
 * ```ts
 * await serverContextWindow("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B"); // { tokens: 32768, source: "max_model_len" }
 * ```
 */
export async function serverContextWindow(
  baseUrl: string,
  model: string,
  opts: { apiKey?: string; timeoutMs?: number } = {},
): Promise<ServerWindow | undefined> {
  const base = baseUrl.replace(/\/+$/, "");
  const root = base.replace(/\/v1$/, "");
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 800);
  const headers: HeadersInit = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};
  const quiet = <T>(p: Promise<T>) => p.catch(() => undefined);
  const [models, props, ollama] = await Promise.all([
    quiet(fromModels(base, model, signal, headers)),
    quiet(fromProps(root, signal, headers)),
    quiet(fromOllama(root, model, signal)),
  ]);
  return models ?? props ?? ollama;
}

/** A run's context window and, when crab had to find it out, the line that says where from. */
export interface WindowChoice {
  tokens: number;
  notice?: string;
}

/**
 * The window of a run: `explicit` (flag or config) or crab's table when they
 * know it (`known`); else the server's answer or the default, with a notice
 * (`asked`). Only OpenAI-compatible servers other than OpenAI's own are asked.
 */
export function chooseWindow(
  config: { provider: string; model?: string; baseUrl?: string; apiKey?: string },
  explicit: number | undefined,
): { known?: number; asked: Promise<WindowChoice> } {
  const model = config.model ?? "";
  const known = explicit ?? knownContextWindow(model);
  if (known !== undefined) return { known, asked: Promise.resolve({ tokens: known }) };
  const ask = config.provider === "openai" && config.baseUrl &&
    !/^https:\/\/api\.openai\.com\//.test(config.baseUrl);
  const asked =
    (ask
      ? serverContextWindow(config.baseUrl!, model, { apiKey: config.apiKey })
      : Promise.resolve(undefined)).then((r): WindowChoice =>
        r
          ? {
            tokens: r.tokens,
            notice: `context window: ${r.tokens} tokens, as the server reports (${r.source})`,
          }
          : {
            tokens: DEFAULT_CONTEXT_WINDOW,
            notice: `context window of "${model}" unknown: assuming ${DEFAULT_CONTEXT_WINDOW} ` +
              "tokens (--context-window N sets it)",
          }
      );
  return { asked };
}
