// The part of emphasize's API crab uses. Its own types pull in highlight.js's DOM types,
// which change the global stream types of the whole program.

/** Colours one token kind. */
export type Style = (value: string) => string;

/** A highlighter with grammars registered. */
export interface Emphasize {
  highlight(language: string, value: string, sheet?: Record<string, Style>): { value: string };
  registered(aliasOrLanguage: string): boolean;
}

/** Grammars, by name. */
export const common: Record<string, unknown>;

/** Creates a highlighter with `grammars`. */
export function createEmphasize(grammars?: Record<string, unknown>): Emphasize;
