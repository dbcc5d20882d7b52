/**
 * The Anthropic SDK's client with the two resources crab calls, messages and
 * models. The SDK's default export attaches every resource of the API (batches,
 * files, skills, organizations, beta…), about 470 KB of code that each print run
 * would load and never call; the SDK's base client takes resources one by one.
 *
 * @module
 */

import { BaseAnthropic } from "@anthropic-ai/sdk/client";
import { Messages } from "@anthropic-ai/sdk/resources/messages";
import { Models } from "@anthropic-ai/sdk/resources/models";

/** The SDK's client, its `messages` and `models` only. */
export class AnthropicClient extends BaseAnthropic {
  messages: Messages = new Messages(this);
  models: Models = new Models(this);
}
