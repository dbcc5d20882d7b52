/**
 * Whether this machine lets a test mount a tmpfs in a user and mount namespace
 * (`unshare -Urm`), which the full-disk tests need: undefined when it does, else
 * why not. The tests fail with that reason rather than pass without running.
 *
 * @module
 */

let probed: { problem?: string } | undefined;

/** Why `unshare -Urm` with a tmpfs does not work here, or undefined when it works. */
export function tmpfsNamespaceProblem(): string | undefined {
  probed ??= (() => {
    const dir = Deno.makeTempDirSync({ prefix: "crab-unshare-" });
    try {
      const out = new Deno.Command("unshare", {
        args: ["-Urm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$1"', "sh", dir],
        stdout: "null",
        stderr: "piped",
      }).outputSync();
      return out.success
        ? {}
        : { problem: new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}` };
    } catch (e) {
      return { problem: e instanceof Error ? e.message : String(e) };
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  })();
  return probed.problem;
}

/** Throws with the reason when the full-disk tests cannot run here. */
export function assertTmpfsNamespace(): void {
  const problem = tmpfsNamespaceProblem();
  if (problem) {
    throw new Error(
      `unshare -Urm with a tmpfs fails here (${problem}); the full-disk test needs user namespaces`,
    );
  }
}

/** What a script run by {@link unshared} left: its exit, stderr, and files under the root. */
export interface Unshared {
  code: number;
  stderr: string;
  /** The text of the file `name` under the sandbox's root, "" when there is none. */
  read(name: string): string;
}

/**
 * Runs `sh -c script sh ARGS` under `unshare FLAGS` in `s`'s workspace, with
 * `s`'s environment and `env`, killed after `timeoutMs`; the script leaves its
 * outputs as files under `s.root`.
 */
export async function unshared(
  s: { ws: string; root: string; env: Record<string, string> },
  flags: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Unshared> {
  const child = new Deno.Command("unshare", {
    args: [flags, "sh", "-c", script, "sh", ...args],
    cwd: s.ws,
    env: { ...s.env, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  return {
    code: out.code,
    stderr: new TextDecoder().decode(out.stderr),
    read(name) {
      try {
        return Deno.readTextFileSync(`${s.root}/${name}`);
      } catch {
        return "";
      }
    },
  };
}
