/**
 * What tests of crab's in-process `query()` share: a sandbox's environment
 * pointed at the fake model, a query's messages gathered, its result.
 *
 * @module
 */

import type { SDKMessage, SDKResultMessage } from "../../sdk.ts";
import type { Sandbox } from "./cli.ts";

/** The run's environment: the sandbox's, and the fake model as Anthropic's API. */
export function envOf(s: Sandbox, url: string): Record<string, string> {
  return { ...s.env, ANTHROPIC_API_KEY: "test-key", ANTHROPIC_BASE_URL: url };
}

/** Every message of a query, in order. */
export async function all(q: AsyncIterable<SDKMessage>): Promise<SDKMessage[]> {
  const out: SDKMessage[] = [];
  for await (const m of q) out.push(m);
  return out;
}

/** The last message: the result. */
export const resultOf = (ms: SDKMessage[]) => ms.at(-1) as SDKResultMessage;
