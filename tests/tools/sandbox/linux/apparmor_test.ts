/**
 * Why bubblewrap cannot create a user namespace: the facts come from files
 * under a root the test lays out (the sysctls in proc/sys, the profiles in
 * etc/apparmor.d), as Ubuntu 24.04, Debian and a locked-down kernel have them.
 * The last test is the real thing, on a machine with the AppArmor restriction
 * on and no profile for bwrap (the release workflow's Ubuntu 24.04 job, which
 * sets CRAB_EXPECT_USERNS_RESTRICTION=1 so that it cannot pass by skipping).
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import {
  allowsUserns,
  bwrapProfile,
  diagnoseUserns,
  readUsernsFacts,
  usernsDiagnosis,
} from "../../../../tools/sandbox/linux/apparmor.ts";
import { findProgram } from "../../../../tools/host/find_program.ts";
import { resetSandboxStatus, sandboxStatus } from "../../../../tools/sandbox/probe.ts";

/** A root with the given files (relative paths), removed at the end. */
function machine(files: Record<string, string>) {
  const root = Deno.makeTempDirSync({ prefix: "crab-apparmor-" });
  for (const [path, text] of Object.entries(files)) {
    Deno.mkdirSync(dirname(join(root, path)), { recursive: true });
    Deno.writeTextFileSync(join(root, path), text);
  }
  return { root, [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }) };
}

const RESTRICT = "proc/sys/kernel/apparmor_restrict_unprivileged_userns";

Deno.test("usernsDiagnosis() on Ubuntu 24.04 without a bwrap profile names the sysctl and gives the profile", () => {
  using m = machine({
    [RESTRICT]: "1\n",
    "proc/sys/user/max_user_namespaces": "63396\n",
    // Profiles for other programs do not count.
    "etc/apparmor.d/chrome": "profile chrome /opt/google/chrome/chrome flags=(unconfined) {\n" +
      "  userns,\n}\n",
    "etc/apparmor.d/usr.bin.man": "/usr/bin/man {\n  /usr/** r,\n}\n",
  });
  const d = usernsDiagnosis("/usr/bin/bwrap", m.root);
  assert.deepEqual(d, {
    reason: "AppArmor lets only programs whose profile allows it create user namespaces " +
      "(kernel.apparmor_restrict_unprivileged_userns=1), and no AppArmor profile in " +
      "/etc/apparmor.d allows it for /usr/bin/bwrap",
    hint: `Give bwrap a profile with the line "userns,": printf 'abi <abi/4.0>,\\ninclude ` +
      "<tunables/global>\\n\\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\\n  userns,\\n}" +
      "\\n' | sudo tee /etc/apparmor.d/bwrap && sudo apparmor_parser -r /etc/apparmor.d/bwrap; " +
      "or lift the restriction for every program: sudo sysctl -w " +
      "kernel.apparmor_restrict_unprivileged_userns=0; or run bash without a sandbox with " +
      "--sandbox danger-full-access.",
  });
});

Deno.test("usernsDiagnosis() the printf of the hint writes exactly bwrapProfile()", () => {
  using m = machine({ [RESTRICT]: "1\n" });
  const hint = usernsDiagnosis("/usr/bin/bwrap", m.root)!.hint;
  const printf = /(printf '[^']*')/.exec(hint)![1];
  const out = new Deno.Command("sh", { args: ["-c", printf], stdout: "piped" }).outputSync();
  assert.equal(new TextDecoder().decode(out.stdout), bwrapProfile("/usr/bin/bwrap"));
  // And that profile is one the diagnosis recognises.
  assert.ok(allowsUserns(bwrapProfile("/usr/bin/bwrap"), "/usr/bin/bwrap"));
});

Deno.test("usernsDiagnosis() with a profile for bwrap says to load it; another bwrap still lacks one", () => {
  using m = machine({
    [RESTRICT]: "1\n",
    // As Ubuntu 24.10 ships it.
    "etc/apparmor.d/bwrap-userns-restrict": "abi <abi/4.0>,\ninclude <tunables/global>\n" +
      "profile bwrap /usr/bin/bwrap flags=(attach_disconnected,mediate_deleted) {\n" +
      "  allow userns,\n  allow capability,\n}\n",
  });
  assert.deepEqual(usernsDiagnosis("/usr/bin/bwrap", m.root), {
    reason: "AppArmor lets only programs whose profile allows it create user namespaces " +
      "(kernel.apparmor_restrict_unprivileged_userns=1); /etc/apparmor.d/bwrap-userns-restrict " +
      "allows it for /usr/bin/bwrap, but bwrap was refused all the same: the profile is " +
      "probably not loaded",
    hint: "Load it: sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict (or restart " +
      "apparmor), or run bash without a sandbox with --sandbox danger-full-access.",
  });
  const other = usernsDiagnosis("/usr/local/bin/bwrap", m.root);
  assert.match(
    other!.reason,
    /no AppArmor profile in \/etc\/apparmor\.d allows it for \/usr\/local\/bin\/bwrap$/,
  );
  assert.match(other!.hint, /profile bwrap \/usr\/local\/bin\/bwrap flags/);
  assert.match(other!.hint, /not the distribution's \/usr\/bin\/bwrap: installing that one/);
});

Deno.test("usernsDiagnosis() names the Debian switch and a kernel that allows no namespaces", () => {
  {
    using m = machine({ "proc/sys/kernel/unprivileged_userns_clone": "0\n", [RESTRICT]: "1\n" });
    const d = usernsDiagnosis("/usr/bin/bwrap", m.root)!;
    assert.match(d.reason, /\(kernel\.unprivileged_userns_clone=0\)/);
    assert.match(d.hint, /^Allow it: sudo sysctl -w kernel\.unprivileged_userns_clone=1 /);
  }
  {
    using m = machine({ "proc/sys/user/max_user_namespaces": "0\n" });
    const d = usernsDiagnosis("/usr/bin/bwrap", m.root)!;
    assert.match(d.reason, /\(user\.max_user_namespaces=0\)/);
  }
});

Deno.test("usernsDiagnosis() finds no cause where nothing restricts namespaces", () => {
  using m = machine({
    [RESTRICT]: "0\n",
    "proc/sys/kernel/unprivileged_userns_clone": "1\n",
    "proc/sys/user/max_user_namespaces": "63396\n",
  });
  assert.equal(usernsDiagnosis("/usr/bin/bwrap", m.root), undefined);
  using bare = machine({});
  assert.deepEqual(readUsernsFacts("/usr/bin/bwrap", bare.root), {
    bwrap: "/usr/bin/bwrap",
    profiles: [],
  });
  assert.equal(diagnoseUserns(readUsernsFacts("/usr/bin/bwrap", bare.root)), undefined);
});

Deno.test("allowsUserns() reads profile headers: names, globs, bare paths, no userns rule", () => {
  const rule = "  userns,\n}\n";
  assert.ok(allowsUserns(`/usr/bin/bwrap {\n${rule}`, "/usr/bin/bwrap"));
  assert.ok(allowsUserns(`profile /usr/{local/,}bin/bwrap {\n${rule}`, "/usr/local/bin/bwrap"));
  assert.ok(
    allowsUserns(`profile b /usr/**/bwrap flags=(unconfined) {\n${rule}`, "/usr/x/y/bwrap"),
  );
  assert.equal(allowsUserns(`profile b /usr/bin/bwrap {\n  /** r,\n}\n`, "/usr/bin/bwrap"), false);
  assert.equal(allowsUserns(`profile b /usr/bin/bwrap2 {\n${rule}`, "/usr/bin/bwrap"), false);
  // A name alone attaches to nothing.
  assert.equal(allowsUserns(`profile bwrap {\n${rule}`, "/usr/bin/bwrap"), false);
});

const expected = Deno.env.get("CRAB_EXPECT_USERNS_RESTRICTION") === "1";
const installed = findProgram("bwrap");
const facts = installed ? readUsernsFacts(Deno.realPathSync(installed)) : undefined;
// Restricted, and no profile lets bwrap through (after the fix the suite runs, not this test).
const refused = facts?.apparmorRestrict === "1" && facts.profiles.length === 0;
if (!refused && !expected) {
  console.log("skipping the real AppArmor test: nothing here refuses bwrap a user namespace");
}

Deno.test({
  name:
    "sandboxStatus() on a machine with the AppArmor restriction names it instead of bwrap's error",
  ignore: !refused && !expected,
  fn: async () => {
    assert.ok(installed, "bwrap is not installed");
    assert.equal(facts?.apparmorRestrict, "1", "the AppArmor restriction is not on here");
    assert.deepEqual(facts?.profiles, [], "a profile lets bwrap create user namespaces");
    const ws = Deno.makeTempDirSync({ prefix: "crab-apparmor-ws-" });
    try {
      resetSandboxStatus();
      const status = await sandboxStatus(ws);
      assert.equal(status.ok, false, "bwrap worked: a profile lets it create namespaces");
      if (status.ok) return;
      assert.match(status.reason, /kernel\.apparmor_restrict_unprivileged_userns=1/);
      assert.match(status.reason, /\(bwrap said: .+\)$/);
      assert.match(status.hint, /sudo apparmor_parser -r \/etc\/apparmor\.d\/bwrap/);
    } finally {
      resetSandboxStatus();
      Deno.removeSync(ws, { recursive: true });
    }
  },
});
