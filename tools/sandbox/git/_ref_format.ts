/**
 * What git writes in its ref files, by git's own rules: ref names as
 * `git check-ref-format` accepts them, the value of a loose ref or `HEAD` (an
 * object id, or `ref: ` and a name under `refs/`), the lists of ids in
 * `MERGE_HEAD` and `FETCH_HEAD`, and the lines of `packed-refs`. A sandboxed
 * command may leave anything in these files, and the user's git reads them
 * outside the sandbox; crab keeps only what parses.
 *
 * @module
 */

/** An object id: SHA-1 or SHA-256, lower-case hex as git writes it. */
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Characters no ref name holds anywhere (git's `refname_disposition`, besides controls). */
const FORBIDDEN = new Set([" ", "~", "^", ":", "?", "*", "[", "\\"]);

/**
 * Whether `name` is a valid ref name by `git check-ref-format`: components
 * split by `/`, none empty, none starting with `.` or ending with `.lock`; no
 * `..`, no `@{`, no control character, space, `~ ^ : ? * [ \`; not ending with
 * `.`, not `@`; at least two components unless `oneLevel`.
 *
 * @example
 * ```ts
 * isRefName("refs/heads/main"); // true
 * isRefName("refs/heads/a..b"); // false
 * isRefName("HEAD"); // false: one level
 * isRefName("HEAD", true); // true
 * ```
 */
export function isRefName(name: string, oneLevel = false): boolean {
  if (name === "@" || name.endsWith(".")) return false;
  const components = name.split("/");
  if (components.length < 2 && !oneLevel) return false;
  for (const c of components) {
    if (c === "" || c.startsWith(".") || c.endsWith(".lock")) return false;
    if (c.includes("..") || c.includes("@{")) return false;
    for (const ch of c) {
      const code = ch.charCodeAt(0);
      if (code < 0x20 || code === 0x7f || FORBIDDEN.has(ch)) return false;
    }
  }
  return true;
}

/** `text` without one final newline. */
function chomp(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

/**
 * Whether `text` is what git writes in a loose ref or in `HEAD` (and the
 * other one-id files, `ORIG_HEAD`, `CHERRY_PICK_HEAD`, …): an object id, or
 * `ref: ` and a valid name under `refs/`, then a newline.
 *
 * @example
 * ```ts
 * isRefValue("ref: refs/heads/main\n"); // true
 * isRefValue("ref: ../../config\n"); // false
 * ```
 */
export function isRefValue(text: string): boolean {
  const line = chomp(text);
  if (OBJECT_ID.test(line)) return true;
  const m = /^ref: (refs\/.*)$/.exec(line);
  return m !== null && isRefName(m[1]);
}

/** Whether `text` is a `MERGE_HEAD`: one object id a line. */
export function isIdList(text: string): boolean {
  return text.split("\n").every((l, i, all) => i === all.length - 1 ? l === "" : OBJECT_ID.test(l));
}

/** Whether `text` is a `FETCH_HEAD`: each line an object id, a tab, and what was fetched. */
export function isFetchHead(text: string): boolean {
  return text.split("\n").every((l, i, all) =>
    i === all.length - 1 ? l === "" : /^(?:[0-9a-f]{40}|[0-9a-f]{64})\t/.test(l)
  );
}

/**
 * Whether `text` parses as `packed-refs`: an optional `# pack-refs with:`
 * header first, then lines of an object id, a space and a valid name under
 * `refs/`, each optionally followed by a `^` line with the id it peels to.
 *
 * @example
 * ```ts
 * isPackedRefs(`# pack-refs with: peeled fully-peeled sorted \n${"a".repeat(40)} refs/tags/v1\n^${"b".repeat(40)}\n`); // true
 * isPackedRefs("nonsense\n"); // false
 * ```
 */
export function isPackedRefs(text: string): boolean {
  if (text === "") return true;
  if (!text.endsWith("\n")) return false;
  const lines = text.slice(0, -1).split("\n");
  let peelable = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (i === 0 && line.startsWith("# pack-refs with:")) continue;
    if (line.startsWith("^")) {
      if (!peelable || !OBJECT_ID.test(line.slice(1))) return false;
      peelable = false;
      continue;
    }
    const space = line.indexOf(" ");
    const name = line.slice(space + 1);
    if (space < 0 || !OBJECT_ID.test(line.slice(0, space))) return false;
    if (!name.startsWith("refs/") || !isRefName(name)) return false;
    peelable = true;
  }
  return true;
}
