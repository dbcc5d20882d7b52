/**
 * Executables that tests write and then run. Written by a child process, so
 * that this one never holds the file open: a test thread that forks while
 * another has the file open for writing leaves the fork holding it until it
 * runs its own program, and an exec of the file in that moment fails with
 * ETXTBSY, on which `sh` quietly runs the next program of that name on PATH
 * (a fake `uname` becomes the real one).
 *
 * @module
 */

/** Writes `text` to `path` as an executable of `mode`. Throws when it cannot. */
export function writeExecutable(path: string, text: string, mode = 0o755): void {
  const out = new Deno.Command("sh", {
    args: ["-c", 'printf "%s" "$2" > "$1" && chmod "$3" "$1"', "sh", path, text, mode.toString(8)],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`cannot write ${path}: ${new TextDecoder().decode(out.stderr)}`);
  }
}
