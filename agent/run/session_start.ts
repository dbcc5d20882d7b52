/**
 * Which session a run talks in: a new one (with `--session-id`, the id given),
 * a stored one (`--resume`, `--continue`), or a copy of a stored one under a new
 * id (`--fork-session`); and whether its transcript is kept
 * (`--no-session-persistence` keeps none; observations are kept either way).
 * New sessions get UUIDs, as Claude Code's do; older ids keep working.
 *
 * @module
 */

import type { Message } from "../providers/types.ts";
import type { Transcripts } from "../store/sessions.ts";

/** The session flags of a run. */
export interface SessionFlags {
  continue?: boolean;
  resume?: string;
  /** The id of the new session (`--session-id`). */
  sessionId?: string;
  /** Go on in a copy of the resumed session (`--fork-session`). */
  forkSession?: boolean;
  /** Keep no transcript (`--no-session-persistence`). */
  noSessionPersistence?: boolean;
}

/** The session a run opened. */
export interface OpenedSession {
  id: string;
  /** The conversation so far (empty for a new session). */
  messages: Message[];
  /** Whether messages are written to the transcript. */
  persist: boolean;
}

/** A session that cannot be opened as asked; the message carries its hint. */
export class SessionFlagError extends Error {
  override name = "SessionFlagError";
}

/** Opens the session the flags ask for in `workspace`. */
export function openSession(
  transcripts: Transcripts,
  workspace: string,
  flags: SessionFlags,
  who: { provider: string; model: string },
): OpenedSession {
  const persist = !flags.noSessionPersistence;
  const resuming = flags.resume !== undefined || flags.continue === true;
  if (flags.forkSession && !resuming) {
    throw new SessionFlagError(
      "Cannot use --fork-session without --resume or --continue: there is no session to fork\n" +
        "hint: crab -p --continue --fork-session PROMPT",
    );
  }
  if (flags.sessionId !== undefined && resuming && !flags.forkSession) {
    throw new SessionFlagError(
      "Cannot use --session-id with --resume or --continue: the session keeps its own id\n" +
        "hint: add --fork-session to go on in a copy named by --session-id",
    );
  }
  const id = flags.sessionId?.toLowerCase() ?? crypto.randomUUID();
  if (flags.sessionId !== undefined && transcripts.find(id)?.id === id) {
    throw new SessionFlagError(
      `Cannot use --session-id ${id}: a session with that id exists\n` +
        "hint: resume it with --resume ID, or give a new UUID (uuidgen)",
    );
  }
  if (!resuming) {
    if (persist) transcripts.create(workspace, who.provider, who.model, id);
    return { id, messages: [], persist };
  }
  const found = flags.resume !== undefined && flags.resume !== ""
    ? transcripts.find(flags.resume)
    : transcripts.latest(workspace);
  if (!found) {
    throw new SessionFlagError(
      flags.resume !== undefined
        ? `Cannot resume session "${flags.resume}": no such session\nhint: list them with crab sessions`
        : `Cannot continue: no earlier session in ${workspace}\nhint: start without --continue`,
    );
  }
  const messages = transcripts.load(found.id);
  if (!flags.forkSession) return { id: found.id, messages, persist };
  if (persist) {
    transcripts.create(workspace, who.provider, who.model, id);
    transcripts.append(id, 0, messages);
  }
  return { id, messages, persist };
}
