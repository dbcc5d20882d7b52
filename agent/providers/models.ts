/**
 * What crab knows about models by name: context window and output limit, for context
 * management and the default `max_tokens`. Names match by longest prefix after any
 * `vendor/` part (`anthropic/claude-sonnet-4-5` on OpenRouter matches `claude-sonnet-4`).
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";

/**
 * Context window assumed for a model crab does not know and whose server does not say
 * (see `context_window.ts`). Current models have at least this much; a server that has
 * less refuses an oversized request, and crab then shrinks its estimate and asks again.
 */
export const DEFAULT_CONTEXT_WINDOW = 131_072;

/** Output limit assumed for a model crab does not know. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8_192;

interface ModelFacts {
  context: number;
  output: number;
}

/** Known model families, by name prefix. */
export const KNOWN_MODELS: Readonly<Record<string, ModelFacts>> = {
  "claude-3-haiku": { context: 200_000, output: 4_096 },
  "claude-3-opus": { context: 200_000, output: 4_096 },
  "claude-3-5-haiku": { context: 200_000, output: 8_192 },
  "claude-3-5-sonnet": { context: 200_000, output: 8_192 },
  "claude-3-7-sonnet": { context: 200_000, output: 64_000 },
  "claude-sonnet-4": { context: 200_000, output: 64_000 },
  "claude-haiku-4": { context: 200_000, output: 64_000 },
  "claude-opus-4": { context: 200_000, output: 32_000 },
  "claude-opus-4-5": { context: 200_000, output: 64_000 },
  "claude-opus-4-6": { context: 200_000, output: 64_000 },
  "claude-opus-4-7": { context: 1_000_000, output: 64_000 },
  "claude-opus-4-8": { context: 1_000_000, output: 64_000 },
  "claude-sonnet-5": { context: 1_000_000, output: 64_000 },
  "claude-fable-5": { context: 1_000_000, output: 64_000 },
  "claude-mythos-5": { context: 1_000_000, output: 64_000 },
  "claude": { context: 200_000, output: 32_000 },
  "gpt-3.5-turbo": { context: 16_385, output: 4_096 },
  "gpt-4": { context: 8_192, output: 8_192 },
  "gpt-4-turbo": { context: 128_000, output: 4_096 },
  "gpt-4o": { context: 128_000, output: 16_384 },
  "gpt-4.1": { context: 1_047_576, output: 32_768 },
  "gpt-5": { context: 400_000, output: 128_000 },
  "o1": { context: 200_000, output: 100_000 },
  "o1-mini": { context: 128_000, output: 65_536 },
  "o3": { context: 200_000, output: 100_000 },
  "o4-mini": { context: 200_000, output: 100_000 },
};

const PREFIXES = Object.keys(KNOWN_MODELS).sort((a, b) => b.length - a.length);

function facts(model: string): ModelFacts | undefined {
  const name = model.toLowerCase().slice(model.lastIndexOf("/") + 1);
  // opusplan's conversation must fit both of its models: the smaller of each limit.
  if (name === OPUSPLAN) {
    const [a, b] = [facts(MODEL_ALIASES.opus), facts(MODEL_ALIASES.sonnet)];
    if (!a || !b) return a ?? b;
    return { context: Math.min(a.context, b.context), output: Math.min(a.output, b.output) };
  }
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  if (prefix === undefined) return undefined;
  const known = KNOWN_MODELS[prefix];
  return longContext(name).long ? { ...known, context: LONG_CONTEXT } : known;
}

/** The window of a model asked for with Claude Code's `[1m]` suffix. */
const LONG_CONTEXT = 1_000_000;

/**
 * A model name split from Claude Code's `[1m]` suffix (`claude-sonnet-4-5[1m]`:
 * the model with its million-token window, which Anthropic opens by a beta header).
 */
export function longContext(model: string): { model: string; long: boolean } {
  return /\[1m\]$/i.test(model)
    ? { model: model.slice(0, -4), long: true }
    : { model, long: false };
}

/**
 * The context window of `model` in tokens, or {@link DEFAULT_CONTEXT_WINDOW}.
 *
 * @example
 * ```ts
 * contextWindow("claude-sonnet-4-5"); // 200000
 * contextWindow("my-local-model"); // 131072
 * ```
 */
export function contextWindow(model: string): number {
  return facts(model)?.context ?? DEFAULT_CONTEXT_WINDOW;
}

/** The context window crab's table knows for `model`, or undefined. */
export function knownContextWindow(model: string): number | undefined {
  return facts(model)?.context;
}

/** The most output tokens `model` can produce in one reply, or {@link DEFAULT_MAX_OUTPUT_TOKENS}. */
export function maxOutputTokens(model: string): number {
  return facts(model)?.output ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

/**
 * Claude Code's model aliases and the full ids they stand for at Anthropic: the
 * ones Claude Code 2.1.197 resolves them to (its context and price tables say
 * the same as crab's); each may carry the `[1m]` suffix (see {@link longContext}).
 * Claude Code's `ANTHROPIC_DEFAULT_OPUS_MODEL`, `…_SONNET_MODEL`,
 * `…_HAIKU_MODEL` and `…_FABLE_MODEL` name others.
 */
export const MODEL_ALIASES: Readonly<Record<string, string>> = {
  sonnet: "claude-sonnet-4-6",
  opus: "claude-opus-4-8",
  haiku: "claude-haiku-4-5",
  fable: "claude-fable-5",
};

/**
 * Claude Code's `opusplan`: Opus while the session is in plan mode, Sonnet in
 * every other mode. It stays the session's model name; each request names the
 * model it stands for then ({@link requestModel}).
 */
export const OPUSPLAN = "opusplan";

/** Reads one environment variable (the process's own by default). */
export type EnvGet = (name: string) => string | undefined;

const processEnv: EnvGet = (name) => runEnv.get(name);

function aliasTarget(alias: string, env: EnvGet): string | undefined {
  const full = MODEL_ALIASES[alias];
  if (!full) return undefined;
  return env(`ANTHROPIC_DEFAULT_${alias.toUpperCase()}_MODEL`)?.trim() || full;
}

/**
 * The model id an Anthropic request names: an alias (`sonnet`, `opus`, `haiku`)
 * becomes its full id; any other name, and every name for another provider, is
 * kept (`opusplan` too: see {@link requestModel}).
 *
 * @example
 * ```ts
 * resolveModel("anthropic", "opus"); // "claude-opus-4-8"
 * resolveModel("anthropic", "sonnet[1m]"); // "claude-sonnet-4-6[1m]"
 * resolveModel("openai", "opus"); // "opus"
 * ```
 */
export function resolveModel(provider: string, model: string, env: EnvGet = processEnv): string {
  if (provider !== "anthropic") return model;
  const { model: base, long } = longContext(model);
  const full = aliasTarget(base.toLowerCase(), env);
  return full ? full + (long ? "[1m]" : "") : model;
}

/** Whether `model` is `opusplan`, which only Anthropic's requests resolve. */
function isOpusPlan(provider: string, model: string): boolean {
  return provider === "anthropic" && model.toLowerCase() === OPUSPLAN;
}

/**
 * The model one request names in permission mode `mode`: `opusplan` is Opus in
 * plan mode and Sonnet otherwise; any other name is {@link resolveModel}'s.
 *
 * @example
 * ```ts
 * requestModel("anthropic", "opusplan", "plan"); // "claude-opus-4-8"
 * requestModel("anthropic", "opusplan", "acceptEdits"); // "claude-sonnet-4-6"
 * ```
 */
export function requestModel(
  provider: string,
  model: string,
  mode: string,
  env: EnvGet = processEnv,
): string {
  if (!isOpusPlan(provider, model)) return resolveModel(provider, model, env);
  return resolveModel(provider, mode === "plan" ? "opus" : "sonnet", env);
}

/** Every model a session with `model` may ask: both of `opusplan`'s, else the one. */
export function modelsBehind(provider: string, model: string, env: EnvGet = processEnv): string[] {
  return isOpusPlan(provider, model)
    ? [resolveModel(provider, "opus", env), resolveModel(provider, "sonnet", env)]
    : [resolveModel(provider, model, env)];
}
