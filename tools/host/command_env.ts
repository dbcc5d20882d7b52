/**
 * The environment of the commands crab starts (bash, hook commands, MCP servers):
 * the run's own ({@link runEnv}) minus every secret, with git and pagers that
 * never wait for a person.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";

/**
 * The one list of what crab keeps out of the environments it gives commands (bash,
 * MCP servers), by name: `API_KEY`, `*_API_KEY`, `*_KEY`, `*_TOKEN`, `*_SECRET*`,
 * `*PASSWORD` (`PGPASSWORD` too), `*_PAT`, `*_JWT`, `*_AUTH`, `GH_*`, `*DATABASE_URL`,
 * the OTLP exporter's headers (which carry a collector's API key), and these names.
 */
const SECRET_NAME =
  /^API_KEY$|_KEY$|_TOKEN$|_SECRET|PASSWORD$|_PAT$|_JWT$|_AUTH$|^GH_|DATABASE_URL$|^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS$/i;

/** Names that are secrets whatever the pattern says. */
const SECRET_NAMES = new Set([
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "GITHUB_TOKEN",
  "MYSQL_PWD",
  "DOCKER_AUTH_CONFIG",
]);

/** A value that is a URL with a password in it (`https://user:pass@host/`), whatever its name. */
const CREDENTIAL_URL = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]*@/i;

/** Whether `name=value` is a secret that commands must not see. */
export function isSecret(name: string, value: string): boolean {
  return SECRET_NAME.test(name) || SECRET_NAMES.has(name.toUpperCase()) ||
    CREDENTIAL_URL.test(value);
}

const NO_EDITOR = "echo 'crab: no editor is available here: give the text on the command line " +
  "(git commit -m MESSAGE, git tag -m MESSAGE)' >&2; false";
const NO_SEQUENCE_EDITOR = "echo 'crab: no editor is available here: git rebase -i needs " +
  "GIT_SEQUENCE_EDITOR set to a command that rewrites the todo file (a sed script)' >&2; false";

/** Crab's environment minus secrets, with non-interactive git and pagers (bash, MCP servers). */
export function scrubEnv(
  env: Record<string, string> = runEnv.toObject(),
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!isSecret(k, v)) out[k] = v;
  }
  out.GIT_TERMINAL_PROMPT = "0";
  out.PAGER = "cat";
  out.GIT_PAGER = "cat";
  return out;
}

/**
 * bash's environment: {@link scrubEnv}, and editors that fail at once with a
 * message (`git commit` without `-m`, `git rebase -i`) instead of waiting for a
 * person who is not there.
 */
export function bashEnv(env?: Record<string, string>): Record<string, string> {
  return {
    ...scrubEnv(env),
    GIT_EDITOR: NO_EDITOR,
    EDITOR: NO_EDITOR,
    VISUAL: NO_EDITOR,
    GIT_SEQUENCE_EDITOR: NO_SEQUENCE_EDITOR,
  };
}
