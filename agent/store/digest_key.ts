/**
 * The random key of a store's keyed digests, in a file beside the store.
 *
 * @module
 */

import { KeyedDigest, randomKeyHex } from "../../tools/call/digest.ts";

/**
 * Reads the digest key at `path`, creating it (0600, written whole before it
 * appears under its name, so a concurrent process never reads half a key) when
 * missing. A key that is wider than 0600 is narrowed.
 */
export async function loadDigestKey(path: string): Promise<KeyedDigest> {
  const read = async () => {
    const stat = await Deno.stat(path);
    if (stat.mode !== null && (stat.mode & 0o077) !== 0) await Deno.chmod(path, 0o600);
    return new KeyedDigest((await Deno.readTextFile(path)).trim());
  };
  try {
    return await read();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const tmp = `${path}.${randomKeyHex().slice(0, 12)}.tmp`;
  await Deno.writeTextFile(tmp, randomKeyHex() + "\n", { mode: 0o600, createNew: true });
  try {
    await Deno.link(tmp, path);
  } catch (e) {
    // Another process made the key first: use theirs.
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
  return await read();
}
