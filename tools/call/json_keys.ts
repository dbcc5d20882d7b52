/**
 * Duplicate object keys in JSON text. `JSON.parse` keeps the last of two equal
 * keys, so `{"path":"../x","path":"a.txt"}` would show one path to a check and
 * mean another to a reader; crab refuses such text instead. A scanner over text
 * that already parsed, not a second parser: it only tracks objects, arrays and
 * keys, and jumps over string contents with `indexOf`.
 *
 * @module
 */

/** Where a key repeats: the key and its path, e.g. `args.edits[1].new`. */
export interface DuplicateKey {
  key: string;
  path: string;
}

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
const OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d;

/** One open container: an object's keys so far, or an array's current index. */
interface Frame {
  keys: Set<string> | null;
  /** The key being read (objects) or the index (arrays), for the path. */
  at: string | number;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  while (end !== -1) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return text.length;
}

function pathOf(stack: Frame[], root: string): string {
  let path = root;
  for (const f of stack) {
    if (typeof f.at === "number") path += `[${f.at}]`;
    else if (f.at !== "") {
      path += /^[A-Za-z_$][\w$]*$/.test(f.at) ? `.${f.at}` : `[${JSON.stringify(f.at)}]`;
    }
  }
  return path.startsWith(".") ? path.slice(1) : path;
}

/**
 * The first key that appears twice in one object of `text`, which must be valid
 * JSON (parse it first). Keys are compared after unescaping (`"p\u0061th"` is
 * `"path"`). `root` names the top value in the path (default empty: `tool`,
 * `args.path`).
 *
 * @example
 * ```ts
 * findDuplicateKey('{"path":"../x","path":"a.txt"}', "args"); // { key: "path", path: "args.path" }
 * ```
 */
export function findDuplicateKey(text: string, root = ""): DuplicateKey | undefined {
  const stack: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (expectKey && top?.keys) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes("\\") ? JSON.parse(text.slice(i, end + 1)) as string : raw;
        top.at = key;
        if (top.keys.has(key)) return { key, path: pathOf(stack, root) };
        top.keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      stack.push({ keys: new Set(), at: "" });
      expectKey = true;
    } else if (c === OPEN_ARRAY) {
      stack.push({ keys: null, at: 0 });
      expectKey = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop();
      expectKey = false;
    } else if (c === COMMA) {
      const top = stack[stack.length - 1];
      if (top?.keys) expectKey = true;
      else if (top) (top.at as number)++;
    } else if (c === COLON) {
      expectKey = false;
    }
  }
  return undefined;
}
