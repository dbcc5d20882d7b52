/** Chooses and builds the model provider from flags and environment. */
import type { RequestPolicy } from "./_request.ts";
import type { Provider } from "./types.ts";

export * from "./types.ts";
export * from "./models.ts";
export type { RequestPolicy } from "./_request.ts";

export type ProviderName = "anthropic" | "openai";

export interface ProviderConfig {
  provider: ProviderName;
  model?: string;
  baseUrl?: string;
  apiKey?: string;
}

export const DEFAULT_MODELS: Record<ProviderName, string> = {
  anthropic: "claude-sonnet-4-5",
  openai: "gpt-4.1",
};

export const LOCAL_BASE_URL = "http://127.0.0.1:11434/v1";

/** Builds a provider; its SDK is imported only here. `policy` tunes retries and timeouts. */
export async function createProvider(
  config: ProviderConfig,
  policy: RequestPolicy = {},
): Promise<Provider> {
  const model = config.model ?? DEFAULT_MODELS[config.provider];
  const opts = { ...policy, model, baseURL: config.baseUrl, apiKey: config.apiKey };
  if (config.provider === "anthropic") {
    const { anthropicProvider } = await import("./anthropic.ts");
    return await anthropicProvider(opts);
  }
  const { openaiProvider } = await import("./openai.ts");
  return await openaiProvider(opts);
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

/**
 * Resolves which provider to use: flags win, then API keys, then a local OpenAI-compatible
 * server at `localBaseUrl` (asked through `probe`), else an error naming all three.
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
  let provider = flags.provider as ProviderName | undefined;
  if (provider === undefined) {
    if (env.ANTHROPIC_API_KEY) provider = "anthropic";
    else if (env.OPENAI_API_KEY || flags.baseUrl) provider = "openai";
  }
  if (provider !== undefined) {
    const keyName = provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
    const apiKey = env[keyName];
    if (!apiKey && !flags.baseUrl) {
      throw new Error(
        `Cannot use provider "${provider}": ${keyName} is not set ` +
          `(set it, or give --base-url for a server that needs no key)`,
      );
    }
    return {
      provider,
      model: flags.model ?? DEFAULT_MODELS[provider],
      ...(flags.baseUrl ? { baseUrl: flags.baseUrl } : {}),
      ...(apiKey ? { apiKey } : {}),
    };
  }
  const models = await probe(localBaseUrl);
  if (models === null) {
    throw new Error(
      "Cannot choose a model provider: set ANTHROPIC_API_KEY, set OPENAI_API_KEY, " +
        `or start a local OpenAI-compatible server at ${localBaseUrl} (e.g. Ollama); ` +
        "--provider, --model and --base-url choose explicitly",
    );
  }
  const model = flags.model ?? models[0];
  if (model === undefined) {
    throw new Error(
      `Cannot choose a model: the local server at ${localBaseUrl} lists none (give --model)`,
    );
  }
  return { provider: "openai", model, baseUrl: localBaseUrl, apiKey: "local" };
}
