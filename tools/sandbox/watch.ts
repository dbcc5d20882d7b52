/**
 * The check after a call on the protected paths of the workspace, for what
 * mounts cannot hold:
 *
 * - A protected name that is a symlink (`.mcp.json -> conf/mcp.json`): its
 *   target is mounted read-only, but a link cannot be a mount point, so the
 *   command could replace the link itself. A link replaced or retargeted is put
 *   back, and what replaced it is moved to crab's quarantine.
 * - A protected path that appeared during the call where a placeholder could
 *   not stand: moved to the quarantine. Only inside the writable roots: what
 *   appears elsewhere the command could not have made (crab itself may have,
 *   saving a rule the user gave while the call ran).
 * - A rename outside the sandbox over a protected file (an editor saving
 *   `.mcp.json`) detaches the read-only mount inside a running call: the kernel
 *   lets renames in other mount namespaces win. Only the git directories are
 *   immune to it (`git/view.ts`); for other files crab cannot tell the user's
 *   change from the command's after that, so it keeps the file and says so.
 *
 * Each of these is named in the command's result.
 *
 * @module
 */

import { basename, join, relative } from "../fs/path.ts";
import { ensureDataDir } from "../fs/data_dir.ts";
import { isEmptyEntry, lstatOrNull } from "../fs/exists.ts";
import { namesIn, type ProtectedPath } from "../fs/protected.ts";
import { isWithin } from "../fs/workspace.ts";

interface Before {
  p: ProtectedPath;
  /** The link's target, for a symlinked protected name. */
  target?: string;
  ino: number | null;
  exists: boolean;
}

function readLinkOrNull(path: string): string | null {
  try {
    return Deno.readLinkSync(path);
  } catch {
    return null;
  }
}

/** Moves `path` into crab's quarantine; returns where it went, or null when it could not. */
function quarantine(path: string): string | null {
  const dir = join(ensureDataDir("quarantine"), `${Date.now()}-${crypto.randomUUID().slice(0, 8)}`);
  Deno.mkdirSync(dir, { mode: 0o700 });
  const to = join(dir, basename(path));
  try {
    Deno.renameSync(path, to);
    return to;
  } catch {
    return null;
  }
}

/**
 * Records the state of `watched` before a call; `check()` after it puts back
 * links, moves away what appeared in the `writable` roots, and returns notes
 * for the result.
 */
export function watchProtected(
  workspace: string,
  watched: readonly ProtectedPath[],
  writable: readonly string[],
): { check(): string[] } {
  const before: Before[] = watched.map((p) => ({
    p,
    target: p.link ? readLinkOrNull(p.link) ?? undefined : undefined,
    ino: p.ino ?? null,
    // An empty directory is a placeholder (this call's or another's), or runs nothing.
    exists: p.exists && !isEmptyEntry(p.path),
  }));
  const show = (path: string) => relative(workspace, path) || path;
  return {
    check() {
      const notes: string[] = [];
      const names = namesIn(workspace);
      for (const b of before) {
        const { p } = b;
        // Still missing, and so is its top-level name: nothing to look up.
        if (!b.exists && !p.link && isWithin(workspace, p.path)) {
          if (!names.has(p.path.slice(workspace.length + 1).split("/")[0])) continue;
        }
        if (p.link && b.target !== undefined && readLinkOrNull(p.link) !== b.target) {
          const moved = lstatOrNull(p.link) ? quarantine(p.link) : "";
          if (moved === null) {
            notes.push(
              `${show(p.link)} was a symlink to ${b.target} and was replaced; ` +
                "crab could not put it back: check it before trusting it.",
            );
            continue;
          }
          Deno.symlinkSync(b.target, p.link);
          notes.push(
            `${show(p.link)} is a protected symlink to ${b.target}; the command replaced it. ` +
              `crab put the link back${moved ? ` and moved what replaced it to ${moved}` : ""}.`,
          );
          continue;
        }
        const now = lstatOrNull(p.path);
        if (!b.exists && now && writable.some((r) => isWithin(r, p.path))) {
          if (isEmptyEntry(p.path)) continue;
          const moved = quarantine(p.path);
          notes.push(
            moved
              ? `The command created ${show(p.path)}, a protected path (${p.reason}); ` +
                `crab moved it to ${moved}.`
              : `${show(p.path)} appeared during the call, a protected path (${p.reason}); ` +
                "crab could not move it away: check it before trusting it.",
          );
        } else if (b.exists && (!now || now.ino !== b.ino)) {
          notes.push(
            `${show(p.path)} was replaced outside the sandbox during the call, which lifts ` +
              "its read-only mount inside; crab cannot tell whether the command changed it " +
              "too: check it before trusting it.",
          );
        }
      }
      return notes;
    },
  };
}
