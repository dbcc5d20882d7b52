/**
 * POSIX paths, as `node:path` computes them, without loading Deno's Node
 * layer: importing `node:path` evaluates some twenty of its modules (errors,
 * util, assert, the Windows flavour), about 10 ms of every start-up. crab runs
 * on Linux and macOS only, so the POSIX rules are the rules.
 * `tests/tools/fs/path_test.ts` checks each function against `node:path`
 * on generated paths.
 *
 * @module
 */

/** The separator of path segments. */
export const sep = "/";

/** The separator of `PATH`-like lists. */
export const delimiter = ":";

/** The segments of `path` resolved: `.` and empty ones dropped, `..` taken back (kept above the start when allowed). */
function normalizeSegments(path: string, aboveRoot: boolean): string {
  const out: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (aboveRoot) out.push("..");
      continue;
    }
    out.push(seg);
  }
  return out.join("/");
}

/** Whether `path` starts at the root. */
export function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/**
 * `path` with `.` and `..` resolved and separators collapsed; a trailing
 * separator kept.
 *
 * @example
 * ```ts
 * normalize("a//b/../c/"); // "a/c/"
 * ```
 */
export function normalize(path: string): string {
  if (path === "") return ".";
  const abs = isAbsolute(path);
  const trailing = path.endsWith("/");
  let out = normalizeSegments(path, !abs);
  if (out === "") {
    if (abs) return "/";
    return trailing ? "./" : ".";
  }
  if (trailing) out += "/";
  return abs ? "/" + out : out;
}

/**
 * The segments joined and normalized; empty ones skipped.
 *
 * @example
 * ```ts
 * join("/a", "b", "../c"); // "/a/c"
 * ```
 */
export function join(...segments: string[]): string {
  const joined = segments.filter((s) => s !== "").join("/");
  return joined === "" ? "." : normalize(joined);
}

/**
 * The absolute path the segments lead to, right to left until one is
 * absolute, from the working directory if none is.
 *
 * @example
 * ```ts
 * resolve("/a/b", "../c"); // "/a/c"
 * ```
 */
export function resolve(...segments: string[]): string {
  let path = "";
  for (let i = segments.length - 1; i >= 0 && !isAbsolute(path); i--) {
    const seg = segments[i];
    if (seg === "") continue;
    path = path === "" ? seg : `${seg}/${path}`;
  }
  if (!isAbsolute(path)) {
    const cwd = Deno.cwd();
    path = path === "" ? cwd : `${cwd}/${path}`;
  }
  return "/" + normalizeSegments(path, false);
}

/**
 * The path from `from` to `to`, both resolved first; `""` when they are the
 * same.
 *
 * @example
 * ```ts
 * relative("/a/b/c", "/a/d"); // "../../d"
 * ```
 */
export function relative(from: string, to: string): string {
  if (from === to) return "";
  const a = resolve(from);
  const b = resolve(to);
  if (a === b) return "";
  const as = a === "/" ? [] : a.slice(1).split("/");
  const bs = b === "/" ? [] : b.slice(1).split("/");
  let common = 0;
  while (common < as.length && common < bs.length && as[common] === bs[common]) common++;
  const up = new Array<string>(as.length - common).fill("..");
  return [...up, ...bs.slice(common)].join("/");
}

/** `path` without the separators that end it, but one when it is nothing else. */
function trimEnd(path: string): string {
  let end = path.length;
  while (end > 1 && path[end - 1] === "/") end--;
  return path.slice(0, end);
}

/**
 * The directory part of `path`.
 *
 * @example
 * ```ts
 * dirname("/a/b/"); // "/a"
 * ```
 */
export function dirname(path: string): string {
  if (path === "") return ".";
  // From the end: past the separators that end it, then past the last segment.
  let end = -1;
  let inTrailing = true;
  for (let i = path.length - 1; i >= 1; i--) {
    if (path[i] !== "/") inTrailing = false;
    else if (!inTrailing) {
      end = i;
      break;
    }
  }
  const rooted = isAbsolute(path);
  if (end === -1) return rooted ? "/" : ".";
  if (rooted && end === 1) return "//";
  return path.slice(0, end);
}

/**
 * The last segment of `path`.
 *
 * @example
 * ```ts
 * basename("/a/b.ts/"); // "b.ts"
 * ```
 */
export function basename(path: string): string {
  const trimmed = trimEnd(path);
  return trimmed === "/" ? "" : trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

/**
 * The extension of the last segment, from its last `.`; `""` when it has
 * none or only a leading one.
 *
 * @example
 * ```ts
 * extname("/a/b.test.ts"); // ".ts"
 * ```
 */
export function extname(path: string): string {
  const base = basename(path);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return "";
  // A name of dots alone has no extension beyond its last one: `..` none, `...` ".".
  if (base === "..") return "";
  return base.slice(dot);
}
