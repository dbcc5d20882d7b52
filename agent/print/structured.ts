/**
 * `--json-schema SCHEMA`: the run's final answer is JSON valid for the schema,
 * returned as the result's `structured_output` as Claude Code does. The model is
 * told the schema in the system prompt; its answer is parsed (a Markdown fence
 * around it is allowed) and validated; an invalid answer is sent back with what
 * is wrong, once, and a second invalid answer fails the run.
 *
 * @module
 */

/** A schema given on the command line, compiled. */
export interface OutputSchema {
  /** The schema as JSON text, for the model. */
  text: string;
  /** What is wrong with a value for the schema; empty when it is valid. */
  problems(value: unknown): string[];
}

/** A schema that cannot be used; the message carries its hint. */
export class SchemaError extends Error {
  override name = "SchemaError";
}

/** How many times an invalid answer is sent back before the run fails. */
export const SCHEMA_RETRIES = 1;

/** Parses and compiles `--json-schema`'s JSON text. */
export async function compileSchema(text: string): Promise<OutputSchema> {
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (e) {
    throw new SchemaError(
      `Cannot use --json-schema: it is not JSON (${(e as Error).message})\n` +
        `hint: give the schema itself as JSON text: --json-schema '{"type": "object", ...}'`,
    );
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new SchemaError(
      "Cannot use --json-schema: a JSON Schema is an object\n" +
        `hint: --json-schema '{"type": "object", "properties": {...}}'`,
    );
  }
  // ajv is loaded only by runs that ask for a schema. A CommonJS package: what it exports is
  // taken from its module.exports, the default export, which the bundle has too.
  const { Ajv } = (await import("ajv")).default;
  const ajv = new Ajv({ allErrors: true, strict: false });
  let validate: ReturnType<typeof ajv.compile>;
  try {
    validate = ajv.compile(schema);
  } catch (e) {
    throw new SchemaError(
      `Cannot use --json-schema: ${(e as Error).message}\n` +
        "hint: check the schema against JSON Schema draft-07",
    );
  }
  return {
    text: JSON.stringify(schema),
    problems(value) {
      if (validate(value)) return [];
      return (validate.errors ?? []).map((e) =>
        `${e.instancePath || "(the answer)"}: ${e.message ?? e.keyword}`
      );
    },
  };
}

/** What the system prompt adds so that the model answers in the schema. */
export function schemaInstruction(schema: OutputSchema): string {
  return "Output format: when the work is done, your final message must be one JSON value " +
    "valid for the JSON Schema below, and nothing else: no prose before or after it, no " +
    "Markdown fence. Tool calls before it are fine.\n\nJSON Schema:\n" + schema.text;
}

/** The verdict on an answer: the value, or what is wrong with it. */
export type Checked = { ok: true; value: unknown } | { ok: false; problems: string[] };

/** Parses and validates the model's final answer. */
export function checkAnswer(schema: OutputSchema, text: string): Checked {
  const fenced = /^\s*```[a-zA-Z]*\n([\s\S]*?)\n```\s*$/.exec(text);
  const body = (fenced ? fenced[1] : text).trim();
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (e) {
    return { ok: false, problems: [`the answer is not JSON (${(e as Error).message})`] };
  }
  const problems = schema.problems(value);
  return problems.length ? { ok: false, problems } : { ok: true, value };
}

/** The message that sends an invalid answer back. */
export function retryPrompt(problems: string[]): string {
  return "Your final answer is not valid for the required JSON Schema:\n" +
    problems.slice(0, 20).map((p) => `- ${p}`).join("\n") +
    "\nAnswer again with only the corrected JSON value.";
}

/** Why the run failed when the second answer was invalid too. */
export function failureText(problems: string[]): string {
  return `The answer did not match --json-schema after ${SCHEMA_RETRIES + 1} tries: ` +
    problems.slice(0, 5).join("; ");
}
