/**
 * Why bubblewrap cannot create a user namespace here, and the fix, from what
 * the machine says: Ubuntu 24.04 and later let only programs with an AppArmor
 * profile that allows `userns` create one
 * (`kernel.apparmor_restrict_unprivileged_userns=1`), older Debian kernels
 * switch them off (`kernel.unprivileged_userns_clone=0`), and any kernel can
 * allow none (`user.max_user_namespaces=0`). The probe asks this only when
 * bwrap failed the way a refused namespace fails; the facts are read from
 * files (under a root the tests choose), never guessed from bwrap's message.
 *
 * @module
 */

import { join } from "../../fs/path.ts";
import { readTextOrNull } from "../../fs/exists.ts";

/** What the machine says about user namespaces and bwrap's AppArmor profiles. */
export interface UsernsFacts {
  /** Real path of the bwrap that failed. */
  bwrap: string;
  /** `kernel.apparmor_restrict_unprivileged_userns`, when the kernel has it. */
  apparmorRestrict?: string;
  /** `kernel.unprivileged_userns_clone`, when the kernel has it (Debian). */
  unprivilegedClone?: string;
  /** `user.max_user_namespaces`. */
  maxUserNamespaces?: string;
  /** Files in /etc/apparmor.d with a profile that attaches to `bwrap` and allows `userns`. */
  profiles: string[];
}

/** A cause found and its fix. */
export interface UsernsDiagnosis {
  reason: string;
  hint: string;
}

const sysctl = (root: string, name: string) =>
  readTextOrNull(join(root, "proc/sys", ...name.split(".")))?.trim() || undefined;

/** An AppArmor attachment glob (`*`, `**`, `{a,b}`) as a regular expression. */
function attachment(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "{") re += "(?:";
    else if (c === "}") re += ")";
    else if (c === ",") re += "|";
    else re += c.replace(/[.+?^$()[\]\\|]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** A profile header: `profile NAME [ATTACHMENT] [flags=(…)] {` or `ATTACHMENT [flags=(…)] {`. */
const HEADER = /^\s*(?:profile\s+(\S+)(?:\s+(\/\S*))?|(\/\S*))(?:\s+flags=\([^)]*\))?\s*\{/gm;
const USERNS = /^\s*(?:allow\s+)?userns\s*,/m;

/** Whether the profile text `text` attaches to `bwrap` and allows user namespaces. */
export function allowsUserns(text: string, bwrap: string): boolean {
  if (!USERNS.test(text)) return false;
  for (const m of text.matchAll(HEADER)) {
    const attach = m[2] ?? m[3] ?? (m[1]?.startsWith("/") ? m[1] : undefined);
    if (attach && attachment(attach).test(bwrap)) return true;
  }
  return false;
}

/** The facts for `bwrap`, read from `/proc/sys` and `/etc/apparmor.d` under `root`. */
export function readUsernsFacts(bwrap: string, root = "/"): UsernsFacts {
  const dir = join(root, "etc/apparmor.d");
  const profiles: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (!e.isFile) continue;
      const text = readTextOrNull(join(dir, e.name));
      if (text && allowsUserns(text, bwrap)) profiles.push(join("/etc/apparmor.d", e.name));
    }
  } catch {
    // No AppArmor profiles here.
  }
  const facts: UsernsFacts = { bwrap, profiles: profiles.sort() };
  const restrict = sysctl(root, "kernel.apparmor_restrict_unprivileged_userns");
  const clone = sysctl(root, "kernel.unprivileged_userns_clone");
  const max = sysctl(root, "user.max_user_namespaces");
  if (restrict !== undefined) facts.apparmorRestrict = restrict;
  if (clone !== undefined) facts.unprivilegedClone = clone;
  if (max !== undefined) facts.maxUserNamespaces = max;
  return facts;
}

/** The AppArmor profile that lets `bwrap` create user namespaces (what Ubuntu 24.10 ships). */
export function bwrapProfile(bwrap: string): string {
  return `abi <abi/4.0>,\ninclude <tunables/global>\n\nprofile bwrap ${bwrap} flags=(unconfined) {\n` +
    "  userns,\n}\n";
}

/** Where the profile goes. */
export const BWRAP_PROFILE_FILE = "/etc/apparmor.d/bwrap";

/** The cause `facts` show for a refused user namespace, or undefined when they show none. */
export function diagnoseUserns(facts: UsernsFacts): UsernsDiagnosis | undefined {
  const without = "or run bash without a sandbox with --sandbox danger-full-access";
  if (facts.maxUserNamespaces === "0") {
    return {
      reason: "the kernel allows no user namespaces (user.max_user_namespaces=0), which " +
        "bubblewrap needs",
      hint: "Allow them: sudo sysctl -w user.max_user_namespaces=10000 (add it to " +
        `/etc/sysctl.d/ to keep it), ${without}.`,
    };
  }
  if (facts.unprivilegedClone === "0") {
    return {
      reason: "the kernel lets no unprivileged user create a user namespace " +
        "(kernel.unprivileged_userns_clone=0), which bubblewrap needs",
      hint: "Allow it: sudo sysctl -w kernel.unprivileged_userns_clone=1 (add it to " +
        `/etc/sysctl.d/ to keep it), ${without}.`,
    };
  }
  if (facts.apparmorRestrict !== "1") return undefined;
  const restricted = "AppArmor lets only programs whose profile allows it create user " +
    "namespaces (kernel.apparmor_restrict_unprivileged_userns=1)";
  if (facts.profiles.length) {
    const file = facts.profiles[0];
    return {
      reason: `${restricted}; ${file} allows it for ${facts.bwrap}, but bwrap was refused ` +
        "all the same: the profile is probably not loaded",
      hint: `Load it: sudo apparmor_parser -r ${file} (or restart apparmor), ${without}.`,
    };
  }
  const profile = bwrapProfile(facts.bwrap).replaceAll("\n", "\\n");
  return {
    reason: `${restricted}, and no AppArmor profile in /etc/apparmor.d allows it for ` +
      facts.bwrap,
    hint: `Give bwrap a profile with the line "userns,": printf '${profile}' | ` +
      `sudo tee ${BWRAP_PROFILE_FILE} && sudo apparmor_parser -r ${BWRAP_PROFILE_FILE}` +
      (facts.bwrap === "/usr/bin/bwrap"
        ? ""
        : ` (this bwrap is not the distribution's /usr/bin/bwrap: installing that one, ` +
          "apt-get install bubblewrap, and putting it first on PATH works too on releases " +
          "whose AppArmor ships a profile for it, Ubuntu 24.10 and later)") +
      "; or lift the restriction for every program: sudo sysctl -w " +
      `kernel.apparmor_restrict_unprivileged_userns=0; ${without}.`,
  };
}

/** The diagnosis for the bwrap at `bwrap` on this machine (`root` for tests). */
export function usernsDiagnosis(bwrap: string, root = "/"): UsernsDiagnosis | undefined {
  let real = bwrap;
  try {
    real = Deno.realPathSync(bwrap);
  } catch {
    // Keep the path as found.
  }
  return diagnoseUserns(readUsernsFacts(real, root));
}
