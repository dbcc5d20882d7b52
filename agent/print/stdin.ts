/**
 * Print mode's text on stdin: the prompt itself (`echo PROMPT | crab -p`), or
 * material added to a prompt given as an argument (`git diff | crab -p "review
 * this"`), which reaches the model as `PROMPT\n\nSTDIN` as with `claude -p`.
 *
 * Reading is bounded: at most {@link STDIN_LIMIT} bytes are kept (the model is
 * told when the rest was cut), bytes that are not text are refused, and when a
 * prompt is given a pipe that stays open without writing is waited for
 * {@link FIRST_BYTE_WAIT_MS} only, so a script that leaves stdin open never hangs.
 *
 * @module
 */

/** Bytes of stdin kept; the rest is not read. */
export const STDIN_LIMIT = 1024 * 1024;

/** How long a prompt given as an argument waits for stdin's first byte. */
export const FIRST_BYTE_WAIT_MS = 3000;

/** What was read from stdin. */
export interface StdinText {
  text: string;
  /** True when stdin had more than {@link STDIN_LIMIT} bytes. */
  cut: boolean;
  /** True when nothing came within the wait and stdin was left unread. */
  silent: boolean;
}

/** Stdin that is not text (a NUL byte, or bytes that are not UTF-8). */
export class BinaryStdinError extends Error {
  override name = "BinaryStdinError";
}

/**
 * Reads stdin as text, up to `limit` bytes. With `firstByteMs`, gives up when
 * no byte came in that time (`silent`); once one has come, reads to the end.
 */
export async function readStdinText(
  opts: {
    limit?: number;
    firstByteMs?: number;
    stdin?: { read(p: Uint8Array): Promise<number | null> };
  } = {},
): Promise<StdinText> {
  const limit = opts.limit ?? STDIN_LIMIT;
  const stdin = opts.stdin ?? Deno.stdin;
  const buf = new Uint8Array(limit + 1);
  let used = 0;
  let first = true;
  while (used <= limit) {
    const read = stdin.read(buf.subarray(used));
    let n: number | null;
    if (first && opts.firstByteMs !== undefined) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), opts.firstByteMs);
      });
      const r = await Promise.race([read, timeout]);
      clearTimeout(timer);
      // The pending read is left behind: the process ends without waiting for it.
      if (r === "timeout") return { text: "", cut: false, silent: true };
      n = r;
    } else {
      n = await read;
    }
    first = false;
    if (n === null) break;
    used += n;
  }
  const cut = used > limit;
  const bytes = buf.subarray(0, Math.min(used, limit));
  if (bytes.includes(0)) {
    throw new BinaryStdinError("Cannot read stdin as text: it has a NUL byte");
  }
  let text: string;
  try {
    // `stream` drops a character the cut split in two instead of calling it invalid.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    throw new BinaryStdinError("Cannot read stdin as text: it is not UTF-8");
  }
  return { text, cut, silent: false };
}

/** The note the model reads after stdin that was cut. */
export function cutNote(limit = STDIN_LIMIT): string {
  return `[stdin was longer than ${limit} bytes; only the first ${limit} bytes are above]`;
}
