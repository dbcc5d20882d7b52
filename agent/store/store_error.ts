/**
 * The error of a store that cannot be opened, apart from the store itself, so
 * the command line can tell it (exit 1) without loading SQLite.
 *
 * @module
 */

/** A store that cannot be opened (corrupt, newer schema); the message names the file. */
export class StoreError extends Error {
  override name = "StoreError";
}
