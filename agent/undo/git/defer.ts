/**
 * A first snapshot's short cut in a git repository: a tracked file whose stat
 * is the one git's index kept for it holds the blob the index names, as
 * `git status` trusts, so its content need not be read. The snapshot keeps
 * the blob's id instead of a hash of its own, and the store links the
 * repository's pack files into its `git/` folder (a hard link: no byte
 * copied, and a command that deletes `.git/objects` takes a name, not the
 * bytes); the content is taken out of the pack, checked against its id, only
 * when a call changed the file (`pack.ts`).
 *
 * Only where that holds by construction: a `.git` folder (not a worktree's
 * file), a SHA-1 index git wrote whole (not split), the blob in one of its
 * packs (a loose object may go with `git gc`), no racily clean entry (its
 * mtime not older than the index's, as git checks), no content filter (no
 * `.gitattributes` tracked, no `info/attributes` nor the user's attributes
 * file, no `autocrlf`, `eol`, `filter`, attributes file, `include` or object
 * format in the repository's, the user's or the system's config, none given by
 * the environment): else the worktree's bytes may not be the blob's, and every
 * file is read as before. Like `git status`, it trusts that what git's config
 * says now is what it said when the index was written.
 *
 * @module
 */

import { join } from "../../../tools/fs/path.ts";
import type { StatFields } from "../../../tools/fs/exists.ts";
import { type IndexEntries, indexEntries } from "../../../tools/sandbox/git/view.ts";
import { GitPacks, packDirOf } from "./pack.ts";

/** Config that may make a file's bytes differ from its blob's, or its ids not SHA-1. */
const FILTERING =
  /autocrlf|\beol\b|attributesfile|^\s*\[\s*(filter|include|includeif)\b|objectformat/im;

/** The text of `path`: "" when there is no such file (or no path), undefined when it cannot be read. */
function textOr(path: string | undefined): string | undefined {
  if (!path) return "";
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    return e instanceof Deno.errors.NotFound ? "" : undefined;
  }
}

type Env = (name: string) => string | undefined;

/** `$XDG_CONFIG_HOME/git/NAME` (`~/.config/git/NAME`): a file git reads without being told to. */
function xdgGit(env: Env, name: string): string | undefined {
  const home = env("HOME");
  const xdg = env("XDG_CONFIG_HOME") || (home ? join(home, ".config") : undefined);
  return xdg ? join(xdg, "git", name) : undefined;
}

/** The config files git reads besides the repository's, by `env` (HOME, XDG_CONFIG_HOME, GIT_CONFIG_*). */
function userConfigs(env: Env): (string | undefined)[] {
  const home = env("HOME");
  return [
    env("GIT_CONFIG_GLOBAL") ?? (home ? join(home, ".gitconfig") : undefined),
    xdgGit(env, "config"),
    env("GIT_CONFIG_NOSYSTEM") ? undefined : env("GIT_CONFIG_SYSTEM") ?? "/etc/gitconfig",
  ];
}

/** What a first snapshot may take from git instead of reading. */
export class GitDeferral {
  readonly #entries: IndexEntries;
  /** The index's mtime (ms): an entry not older was written racily. */
  readonly #indexMtime: number;
  /** The repository's folder of packs. */
  readonly packDir: string;
  readonly #packs: GitPacks;

  private constructor(entries: IndexEntries, indexMtime: number, packDir: string) {
    this.#entries = entries;
    this.#indexMtime = indexMtime;
    this.packDir = packDir;
    this.#packs = GitPacks.open(packDir);
  }

  /**
   * The short cut for `workspace`, or undefined when it does not hold there
   * (see the module's doc). Reads the index whole (about 90 bytes a file).
   */
  static open(
    workspace: string,
    env: Env = (n) => Deno.env.get(n),
  ): GitDeferral | undefined {
    const git = join(workspace, ".git");
    try {
      if (!Deno.lstatSync(git).isDirectory) return undefined;
      // Config given to git by the environment, which the index's writer may have had.
      if (env("GIT_CONFIG_PARAMETERS") || env("GIT_CONFIG_COUNT")) return undefined;
      for (const config of [join(git, "config"), ...userConfigs(env)]) {
        const text = textOr(config);
        if (text === undefined || FILTERING.test(text)) return undefined;
      }
      // The repository's attributes, and the user's that git reads without being told to.
      for (const file of [join(git, "info", "attributes"), xdgGit(env, "attributes")]) {
        const attributes = textOr(file);
        if (attributes === undefined || /^\s*[^#\s]/m.test(attributes)) return undefined;
      }
      const indexPath = join(git, "index");
      const indexMtime = Deno.lstatSync(indexPath).mtime?.getTime();
      if (indexMtime === undefined) return undefined;
      const entries = indexEntries(Deno.readFileSync(indexPath));
      if (!entries || entries.size === 0) return undefined;
      if (entries.hasBaseName(".gitattributes")) return undefined;
      const deferral = new GitDeferral(entries, indexMtime, packDirOf(workspace));
      return deferral.#packs.names.length ? deferral : undefined;
    } catch {
      return undefined;
    }
  }

  /** Whether git's index has the file at `rel` (workspace-relative). */
  tracks(rel: string): boolean {
    return this.#find(rel) >= 0;
  }

  #lastRel = "";
  #lastAt = -1;

  /** The entry of `rel`: asked twice in a row for most files (whether tracked, then its blob). */
  #find(rel: string): number {
    if (rel !== this.#lastRel) {
      this.#lastRel = rel;
      this.#lastAt = this.#entries.find(rel);
    }
    return this.#lastAt;
  }

  /** The index's bytes, where {@link blobOf}'s ids lie. */
  get index(): Uint8Array {
    return this.#entries.bytes;
  }

  /**
   * Where in {@link index} the blob id (20 bytes) of the file at `rel`
   * (workspace-relative) with stat `st` lies, when it is the content git's
   * index vouches for and a pack holds; else -1.
   */
  blobOf(rel: string, st: StatFields): number {
    const at = this.#find(rel);
    if (at < 0 || !st.isFile) return -1;
    const oid = this.#entries.blobIfUnchanged(at, st, this.#indexMtime);
    return oid >= 0 && this.#packs.has(this.#entries.bytes, oid) ? oid : -1;
  }

  /** Closes the packs' files (none opened to look ids up). */
  close(): void {
    this.#packs.close();
  }
}
