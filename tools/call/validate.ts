/**
 * Argument validation against a tool's schema. Every problem is reported at
 * once, so the model fixes them all in one retry; the tool body never sees
 * invalid input.
 *
 * @module
 */

import type { JsonSchema, ObjectSchema } from "../tool.ts";

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number" && Number.isInteger(v)) return "integer";
  return typeof v;
}

function check(schema: JsonSchema, value: unknown, at: string, problems: string[]): void {
  const got = typeName(value);
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") {
        problems.push(`${at}: expected a string, got ${got}`);
      } else if (schema.enum && !schema.enum.includes(value)) {
        problems.push(
          `${at}: expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}, got ${
            JSON.stringify(value)
          }`,
        );
      } else if (schema.maxLength !== undefined && value.length > schema.maxLength) {
        problems.push(`${at}: longer than ${schema.maxLength} characters`);
      }
      return;
    case "integer":
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) {
        problems.push(
          `${at}: expected ${schema.type === "integer" ? "an integer" : "a number"}, got ${got}`,
        );
        return;
      }
      if (schema.type === "integer" && !Number.isInteger(value)) {
        problems.push(`${at}: expected an integer, got ${value}`);
      }
      if (schema.minimum !== undefined && value < schema.minimum) {
        problems.push(`${at}: must be >= ${schema.minimum}, got ${value}`);
      }
      if (schema.maximum !== undefined && value > schema.maximum) {
        problems.push(`${at}: must be <= ${schema.maximum}, got ${value}`);
      }
      return;
    case "boolean":
      if (typeof value !== "boolean") problems.push(`${at}: expected a boolean, got ${got}`);
      return;
    case "array":
      if (!Array.isArray(value)) {
        problems.push(`${at}: expected an array, got ${got}`);
        return;
      }
      if (schema.minItems !== undefined && value.length < schema.minItems) {
        problems.push(`${at}: needs at least ${schema.minItems} item(s), got ${value.length}`);
      }
      if (schema.maxItems !== undefined && value.length > schema.maxItems) {
        problems.push(`${at}: allows at most ${schema.maxItems} item(s), got ${value.length}`);
      }
      value.forEach((item, i) => check(schema.items, item, `${at}[${i}]`, problems));
      return;
    case "object":
      checkObject(schema, value, at, problems);
      return;
  }
}

function checkObject(schema: ObjectSchema, value: unknown, at: string, problems: string[]): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push(`${at}: expected an object, got ${typeName(value)}`);
    return;
  }
  const obj = value as Record<string, unknown>;
  for (const key of schema.required ?? []) {
    if (!Object.hasOwn(obj, key) || obj[key] === undefined) {
      problems.push(`${at}.${key}: required field missing`);
    }
  }
  for (const [key, v] of Object.entries(obj)) {
    // Own properties only: `constructor` or `__proto__` must not find Object.prototype's.
    const prop = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    if (!prop) {
      if (schema.additionalProperties !== true) {
        const known = Object.keys(schema.properties);
        problems.push(
          `${at}.${key}: unknown field` + (known.length ? ` (known: ${known.join(", ")})` : ""),
        );
      }
      continue;
    }
    // null for an optional field means "not given", as models often send it.
    if (v === null && !(schema.required ?? []).includes(key)) continue;
    check(prop, v, `${at}.${key}`, problems);
  }
}

/** Returns every problem of `value` against `schema`; empty when valid. Paths start at `args`. */
export function validate(schema: ObjectSchema, value: unknown): string[] {
  const problems: string[] = [];
  checkObject(schema, value, "args", problems);
  return problems;
}
