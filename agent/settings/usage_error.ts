/**
 * The one error of a command line or configuration that cannot be used: crab
 * says `error: MESSAGE` (and `hint: HINT`) on stderr and exits 2, before it
 * starts anything. Every exit 2 comes from this type.
 *
 * @module
 */

/** A problem with the command line or a settings file: exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
  /** What to do instead, when there is more to say than the message. */
  readonly hint: string | undefined;

  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }

  /** The message as crab prints it: `error: …` and, when there is one, `hint: …`. */
  report(): string {
    return `error: ${this.message}${this.hint ? `\nhint: ${this.hint}` : ""}`;
  }
}
