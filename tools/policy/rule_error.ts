/**
 * The error a permission rule that cannot be used throws: the message names the
 * rule and what is wrong with it, the hint says how to write it instead.
 *
 * @module
 */

/**
 * A rule that cannot be parsed. Where it came from (the file, the flag) is the
 * caller's to add.
 *
 * @example
 * ```ts
 * throw new RuleError(`Cannot use rule "Bsh(ls)": unknown tool "Bsh"`, "Tools are: Read, Edit, …");
 * ```
 */
export class RuleError extends Error {
  override name = "RuleError";
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}
