/**
 * Chooses and builds the model provider. Each setting comes from the first of:
 * the flags (`--provider`, `--model`, `--base-url`), crab's config files, the
 * variables the providers' own tools use (`ANTHROPIC_BASE_URL`,
 * `ANTHROPIC_MODEL`, `ANTHROPIC_AUTH_TOKEN`, `OPENAI_BASE_URL`, `OPENAI_MODEL`,
 * and the API keys), and the defaults.
 *
 * @module
 */
import type { RequestPolicy } from "./_request.ts";
import type { AnthropicOptions } from "./anthropic.ts";
import { type Provider, ProviderError, type StreamEvent, type StreamRequest } from "./types.ts";
import { MODEL_ALIASES, resolveModel } from "./models.ts";

export * from "./types.ts";
export * from "./models.ts";
export type { RequestPolicy } from "./_request.ts";

export type ProviderName = "anthropic" | "openai";

export interface ProviderConfig {
  provider: ProviderName;
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  /** A bearer token instead of an API key (`ANTHROPIC_AUTH_TOKEN`, for gateways). */
  authToken?: string;
}

/** The variable a refused credential came from, for the hint of a 401. */
export function credentialHint(config: ProviderConfig): string {
  if (config.provider === "anthropic") {
    if (config.apiKey) return "check ANTHROPIC_API_KEY";
    if (config.authToken) return "check ANTHROPIC_AUTH_TOKEN (sent as a bearer token)";
    return "set ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN for a gateway's bearer token";
  }
  if (config.apiKey && config.apiKey !== "local") return "check OPENAI_API_KEY";
  return `the server at ${config.baseUrl ?? "the base URL"} wants a key: set OPENAI_API_KEY`;
}

/** A stream whose 401 says which variable to check. */
async function* withHint(
  events: AsyncIterable<StreamEvent>,
  hint: string,
): AsyncGenerator<StreamEvent> {
  try {
    yield* events;
  } catch (e) {
    if (!(e instanceof ProviderError) || e.kind !== "auth" || e.status === 403) throw e;
    throw new ProviderError(e.kind, `${e.message}\nhint: ${hint}`, e.status, {
      code: e.code,
      retryAfterMs: e.retryAfterMs,
      retry: e.retry,
    });
  }
}

/** Each provider's model when none is named: for Anthropic, Claude Code's default (its `opus`). */
export const DEFAULT_MODELS: Record<ProviderName, string> = {
  anthropic: MODEL_ALIASES.opus,
  openai: "gpt-4.1",
};

export const LOCAL_BASE_URL = "http://127.0.0.1:11434/v1";

/** Builds a provider; its SDK is imported only here. `policy` tunes retries and timeouts. */
export async function createProvider(
  config: ProviderConfig,
  policy: RequestPolicy & Pick<AnthropicOptions, "tracing"> = {},
): Promise<Provider> {
  const model = config.model ?? DEFAULT_MODELS[config.provider];
  const { tracing, ...rest } = policy;
  const opts = { ...rest, model, baseURL: config.baseUrl, apiKey: config.apiKey };
  let provider: Provider;
  if (config.provider === "anthropic") {
    const { anthropicProvider } = await import("./anthropic.ts");
    provider = await anthropicProvider({ ...opts, authToken: config.authToken, tracing });
  } else {
    const { openaiProvider } = await import("./openai.ts");
    provider = await openaiProvider(opts);
  }
  const hint = credentialHint(config);
  const stream = provider.stream.bind(provider);
  return { ...provider, stream: (req: StreamRequest) => withHint(stream(req), hint) };
}

export interface ProviderFlags {
  provider?: string;
  baseUrl?: string;
  model?: string;
}

/** Lists model ids at an OpenAI-compatible base URL, or null when nothing answers. */
export type Probe = (baseUrl: string) => Promise<string[] | null>;

/** Asks `GET {baseUrl}/models` with a short timeout. */
export const probeModels: Probe = async (baseUrl) => {
  try {
    const res = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(1000) });
    if (!res.ok) {
      await res.body?.cancel();
      return null;
    }
    const body = await res.json() as { data?: { id?: unknown }[] };
    return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === "string");
  } catch {
    return null;
  }
};

/** The variables each provider reads, as its own SDKs and CLIs name them. */
const VARS = {
  anthropic: { key: "ANTHROPIC_API_KEY", baseUrl: "ANTHROPIC_BASE_URL", model: "ANTHROPIC_MODEL" },
  openai: { key: "OPENAI_API_KEY", baseUrl: "OPENAI_BASE_URL", model: "OPENAI_MODEL" },
} as const;

/**
 * Resolves which provider to use. `flags` carry the command line over the config
 * files; the environment comes next, then the defaults. Without a provider named,
 * an Anthropic key or token picks Anthropic, an OpenAI key or a base URL picks
 * OpenAI, a provider's base URL variable picks that provider, and else a local
 * OpenAI-compatible server at `localBaseUrl` (asked through `probe`); else an
 * error naming all three.
 */
export async function selectProvider(
  env: Record<string, string | undefined>,
  flags: ProviderFlags,
  probe: Probe = probeModels,
  localBaseUrl: string = LOCAL_BASE_URL,
): Promise<ProviderConfig> {
  if (
    flags.provider !== undefined && flags.provider !== "anthropic" && flags.provider !== "openai"
  ) {
    throw new Error(`Cannot use provider "${flags.provider}": expected "anthropic" or "openai"`);
  }
  const set = (name: string) => env[name] ? env[name] : undefined;
  let provider = flags.provider as ProviderName | undefined;
  if (provider === undefined) {
    if (set("ANTHROPIC_API_KEY") || set("ANTHROPIC_AUTH_TOKEN")) provider = "anthropic";
    else if (set("OPENAI_API_KEY") || flags.baseUrl) provider = "openai";
    else if (set("ANTHROPIC_BASE_URL")) provider = "anthropic";
    else if (set("OPENAI_BASE_URL")) provider = "openai";
  }
  if (provider !== undefined) {
    const vars = VARS[provider];
    const apiKey = set(vars.key);
    // A key wins over a token, as the Anthropic SDK has it.
    const authToken = provider === "anthropic" && !apiKey ? set("ANTHROPIC_AUTH_TOKEN") : undefined;
    const baseUrl = flags.baseUrl ?? set(vars.baseUrl);
    if (!apiKey && !authToken && !baseUrl) {
      throw new Error(
        `Cannot use provider "${provider}": ${vars.key} is not set ` +
          (provider === "anthropic"
            ? "(set it, or ANTHROPIC_AUTH_TOKEN for a gateway, or give --base-url or " +
              "ANTHROPIC_BASE_URL for a server that needs no key)"
            : "(set it, or give --base-url or OPENAI_BASE_URL for a server that needs no key)"),
      );
    }
    return {
      provider,
      model: resolveModel(provider, flags.model ?? set(vars.model) ?? DEFAULT_MODELS[provider]),
      ...(baseUrl ? { baseUrl } : {}),
      ...(apiKey ? { apiKey } : {}),
      ...(authToken ? { authToken } : {}),
    };
  }
  const models = await probe(localBaseUrl);
  if (models === null) {
    throw new Error(
      "Cannot choose a model provider: set ANTHROPIC_API_KEY, set OPENAI_API_KEY, " +
        `or start a local OpenAI-compatible server at ${localBaseUrl} (e.g. Ollama); ` +
        "--provider, --model and --base-url choose explicitly (or ANTHROPIC_BASE_URL, " +
        "OPENAI_BASE_URL, ANTHROPIC_MODEL, OPENAI_MODEL)",
    );
  }
  const model = flags.model ?? set("OPENAI_MODEL") ?? models[0];
  if (model === undefined) {
    throw new Error(
      `Cannot choose a model: the local server at ${localBaseUrl} lists none (give --model)`,
    );
  }
  return { provider: "openai", model, baseUrl: localBaseUrl, apiKey: "local" };
}
