/**
 * A read's open, checked: the file opened is the one the path names (see
 * `confine.ts` for the race it narrows and why). Apart from the writes so that
 * a read, and the start-up of every tool, need no `node:fs`.
 *
 * @module
 */

import { ToolError } from "../tool.ts";
import type { ResolvedPath } from "./workspace.ts";

/** Checks after a read's open, each one of the two opposite kinds, picked at random. */
const VERIFY_CHECKS = 20;
/** Opens tried before a moving path is refused. */
const OPEN_TRIES = 3;
/** A file's identity: device and inode. */
export interface Identity {
  dev: number;
  ino: number | null;
}

/** Whether two identities name one file. */
export function sameFile(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The error of a path that kept changing while it was opened or written. */
export function pathChanged(display: string, verb: string): ToolError {
  return new ToolError(
    "path_changed",
    `Cannot ${verb} "${display}": the path changed while it was being opened`,
    "Another process is renaming files or directories on this path; retry when it is done.",
  );
}

/** A file opened for reading, and what it is. */
export interface Opened {
  file: Deno.FsFile;
  info: Deno.FileInfo;
}

/**
 * Opens `p.real` for reading and checks that the file opened is the one the path
 * names (see the module doc); a spill file must still be the file crab wrote.
 * Errors of the open itself (not found, permission) are thrown as they are.
 */
export async function openChecked(p: ResolvedPath, verb: string): Promise<Opened> {
  for (let attempt = 0; attempt < OPEN_TRIES; attempt++) {
    const file = await Deno.open(p.real, { read: true });
    let ok = false;
    try {
      const info = await file.stat();
      ok = p.spill ? sameFile(info, p.spill) : namesOpenedFile(p.real, info);
      if (ok) return { file, info };
    } finally {
      if (!ok) file.close();
    }
  }
  throw pathChanged(p.display, verb);
}

/**
 * The two opposite checks, in an order drawn at random (a swap loop whose period
 * happened to match a fixed order would pass every check); false at the first
 * that fails.
 */
function namesOpenedFile(real: string, opened: Identity): boolean {
  const [order] = crypto.getRandomValues(new Uint32Array(1));
  try {
    for (let i = 0; i < VERIFY_CHECKS; i++) {
      const ok = (order >>> i) & 1
        ? Deno.realPathSync(real) === real
        : sameFile(Deno.lstatSync(real), opened);
      if (!ok) return false;
    }
    return true;
  } catch {
    return false;
  }
}
