/**
 * The user's credential stores: files and folders under the home directory
 * that hold keys, tokens and passwords for other services. crab keeps them
 * out of everything the model reaches by default — bash's sandbox shows them
 * as unreadable, and no instruction file imports them — unless the user's own
 * settings open one (`sandbox.credentials.allow`).
 *
 * A deny-list cannot be complete: it names the stores of the common tools, and
 * a store elsewhere is protected by a `Read(…)` deny rule of the user's.
 *
 * @module
 */

import { join } from "../fs/path.ts";

/**
 * Credential stores, relative to the home directory. A folder covers
 * everything in it. `~/.ssh` is its private keys: the agent's socket (which
 * lives elsewhere, `$SSH_AUTH_SOCK`) stays reachable, and so do the public
 * keys and `known_hosts`, which hold nothing secret.
 */
export const CREDENTIAL_STORES: readonly string[] = [
  ".ssh/id_*",
  ".ssh/*_rsa",
  ".ssh/*_ed25519",
  ".ssh/*_ecdsa",
  ".aws",
  ".azure",
  ".config/gcloud",
  ".kube/config",
  ".docker/config.json",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".config/git/credentials",
  ".config/gh/hosts.yml",
  ".gnupg/private-keys-v1.d",
  ".gnupg/secring.gpg",
  ".claude/.credentials.json",
  ".codex/auth.json",
  ".config/op",
  ".op",
  ".password-store",
  ".config/Bitwarden CLI",
  ".local/share/keyrings",
  ".vault-token",
  ".terraform.d/credentials.tfrc.json",
  ".cargo/credentials.toml",
  ".cargo/credentials",
  ".gem/credentials",
  ".config/hub",
  ".config/heroku",
  ".fly/config.yml",
];

/**
 * Whether `name` matches `pattern`, where `*` stands for any characters but
 * `/`; a pattern never matches a public key (`*.pub`): a key pair's public
 * half holds nothing secret, and git and ssh read it to sign.
 */
export function matchesName(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  if (name.endsWith(".pub")) return false;
  const re = new RegExp(
    "^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]*") +
      "$",
  );
  return re.test(name);
}

/**
 * The credential store `path` (absolute) is in, relative to `home`, or
 * undefined when it is in none. `open` names stores the user opened.
 *
 * @example
 * ```ts
 * credentialStoreOf("/home/u/.aws/credentials", "/home/u"); // ".aws"
 * credentialStoreOf("/home/u/.ssh/known_hosts", "/home/u"); // undefined
 * ```
 */
export function credentialStoreOf(
  path: string,
  home: string,
  open: readonly string[] = [],
): string | undefined {
  const prefix = home.endsWith("/") ? home : home + "/";
  if (!path.startsWith(prefix)) return undefined;
  const rel = path.slice(prefix.length);
  const parts = rel.split("/");
  for (const store of CREDENTIAL_STORES) {
    if (open.includes(store)) continue;
    const depth = store.split("/").length;
    if (parts.length < depth) continue;
    const head = parts.slice(0, depth).join("/");
    if (matchesName(store, head)) return store;
  }
  return undefined;
}

/**
 * Whether `open` (entries of the user's `sandbox.credentials.allow`) opens
 * `store`: an entry names a store, or a folder that holds stores (`.ssh`
 * opens every `.ssh/…` entry).
 */
export function opensStore(open: readonly string[], store: string): boolean {
  return open.some((o) => o === store || store.startsWith(o.replace(/\/+$/, "") + "/"));
}

/** Why `entry` cannot be an entry of `sandbox.credentials.allow`, or undefined when it can. */
export function credentialEntryProblem(entry: string): string | undefined {
  if (CREDENTIAL_STORES.some((s) => opensStore([entry], s))) return undefined;
  return `"${entry}" is not a credential store crab hides (known: ${CREDENTIAL_STORES.join(", ")})`;
}

/**
 * The line a command's result gets when its output names `path`, a credential
 * store the sandbox hid (`store`, an entry of {@link CREDENTIAL_STORES}): what
 * opens it, in the user's config file `configFile`.
 */
export function credentialNote(path: string, store: string, configFile: string): string {
  return `Note: ${path} is hidden from commands (a credential store). Only the user can open it, ` +
    `in ${configFile}: "sandbox": {"credentials": {"allow": [${JSON.stringify(store)}]}}.`;
}

/** The credential stores as absolute paths under `home` (patterns keep their `*`). */
export function credentialPaths(home: string, open: readonly string[] = []): string[] {
  return CREDENTIAL_STORES.filter((s) => !open.includes(s)).map((s) => join(home, s));
}
