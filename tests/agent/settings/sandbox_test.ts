import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, loadSettings, readSettings } from "../../../agent/settings/crab.ts";
import { extraClasses, sandboxPolicy } from "../../../agent/settings/sandbox.ts";
import { settingsReader } from "../../../agent/settings/files.ts";

function tempFile(content: unknown): { path: string; [Symbol.dispose](): void } {
  const dir = Deno.makeTempDirSync({ prefix: "crab-settings-" });
  const path = join(dir, "config.json");
  Deno.writeTextFileSync(path, JSON.stringify(content));
  return { path, [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }) };
}

Deno.test("readSettings() accepts a sandbox with a mode and writable paths", () => {
  using f = tempFile({ sandbox: { mode: "read-only", writable: ["~/.cache", "/opt/x"] } });
  assert.deepEqual(readSettings(f.path), {
    settings: { sandbox: { mode: "read-only", writable: ["~/.cache", "/opt/x"] } },
    warnings: [],
  });
});

Deno.test("readSettings() names what is wrong with a sandbox setting", () => {
  const cases: [unknown, RegExp][] = [
    [{ sandbox: "open" }, /field "sandbox" must be an object/],
    [{ sandbox: { mode: "wide" } }, /"sandbox.mode" must be one of workspace-write, read-only/],
    [
      { sandbox: { writable: ["relative/dir"] } },
      /"sandbox.writable" must be an array of absolute/,
    ],
    [{ sandbox: { net: true } }, /unknown field "sandbox.net"/],
  ];
  for (const [content, message] of cases) {
    using f = tempFile(content);
    assert.throws(
      () => readSettings(f.path),
      (e) => e instanceof ConfigError && message.test(e.message),
    );
  }
});

Deno.test("readSettings() accepts sandbox.limits and names a bad one with the file", () => {
  using ok = tempFile({ sandbox: { limits: { processes: 512, memory: "8G", tmp: 1048576 } } });
  assert.deepEqual(readSettings(ok.path).settings, {
    sandbox: { limits: { processes: 512, memory: "8G", tmp: 1048576 } },
  });
  using bad = tempFile({ sandbox: { limits: { memory: "eight gigs" } } });
  assert.throws(
    () => readSettings(bad.path),
    (e) =>
      e instanceof ConfigError &&
      e.message === `Cannot use config "${bad.path}": field "sandbox.limits.memory" must be a ` +
          'size such as "512M" or "8G" (or a number of bytes), not "eight gigs"',
  );
});

Deno.test("loadSettings() never takes the sandbox from a project file, trusted or not", () => {
  const ws = Deno.makeTempDirSync({ prefix: "crab-settings-ws-" });
  const config = Deno.makeTempDirSync({ prefix: "crab-settings-home-" });
  const vars: Record<string, string> = { HOME: config, XDG_CONFIG_HOME: config };
  const env = { get: (k: string) => vars[k] };
  try {
    Deno.mkdirSync(join(ws, ".crab"));
    Deno.writeTextFileSync(
      join(ws, ".crab", "config.json"),
      JSON.stringify({ sandbox: { mode: "danger-full-access" }, model: "m" }),
    );
    Deno.mkdirSync(join(config, "crab"));
    Deno.writeTextFileSync(
      join(config, "crab", "config.json"),
      JSON.stringify({ sandbox: { mode: "read-only" }, allow: ["net"] }),
    );
    for (const trusted of [false, true]) {
      const loaded = loadSettings(ws, trusted, settingsReader(), env);
      assert.equal(loaded.sandboxRefused, true);
      assert.deepEqual(loaded.settings.sandbox, { mode: "read-only" });
      assert.deepEqual(loaded.user, { sandbox: { mode: "read-only" }, allow: ["net"] });
    }
  } finally {
    Deno.removeSync(ws, { recursive: true });
    Deno.removeSync(config, { recursive: true });
  }
});

Deno.test("sandboxPolicy() takes the flag, then the user config, then workspace-write", () => {
  const home = Deno.env.get("HOME") ?? "/";
  assert.deepEqual(sandboxPolicy({ user: {} }), {
    mode: "workspace-write",
    net: false,
    writable: [],
  });
  assert.deepEqual(
    sandboxPolicy({
      user: { sandbox: { mode: "read-only", writable: ["~/.npm"] }, allow: ["net"] },
    }),
    { mode: "read-only", net: true, writable: [join(home, ".npm")] },
  );
  assert.deepEqual(
    sandboxPolicy({
      flag: "danger-full-access",
      user: { sandbox: { mode: "read-only" } },
      allow: ["net"],
    }),
    { mode: "danger-full-access", net: true, writable: [] },
  );
  assert.deepEqual(
    sandboxPolicy({ user: { sandbox: { limits: { processes: 64, memory: "1G", tmp: "2M" } } } }),
    {
      mode: "workspace-write",
      net: false,
      writable: [],
      limits: { processes: 64, memory: 1024 ** 3, tmp: 2 * 1024 ** 2 },
    },
  );
});

Deno.test("extraClasses() accepts protected, net and the outside classes, and nothing else", () => {
  assert.deepEqual(extraClasses(["protected", " net", "outside"]), ["protected", "net", "outside"]);
  assert.deepEqual(extraClasses(["outside-read", "outside-write"]), [
    "outside-read",
    "outside-write",
  ]);
  assert.deepEqual(extraClasses(undefined), []);
  assert.throws(
    () => extraClasses(["exec"]),
    /Cannot allow class "exec": use protected, net, outside, outside-read or outside-write/,
  );
});

Deno.test("readSettings() takes sandbox.network's domain lists and names a bad entry", () => {
  using ok = tempFile({
    sandbox: { network: { allowedDomains: ["*.github.com"], deniedDomains: ["x.test"] } },
  });
  assert.deepEqual(readSettings(ok.path).settings, {
    sandbox: { network: { allowedDomains: ["*.github.com"], deniedDomains: ["x.test"] } },
  });
  const cases: [unknown, RegExp][] = [
    [
      { network: { allowedDomains: "github.com" } },
      /"sandbox.network.allowedDomains" must be an array/,
    ],
    [
      { network: { allowedDomains: ["*"] } },
      /"sandbox.network.allowedDomains": "\*" names no host/,
    ],
    [{ network: { httpProxyPort: 1 } }, /unknown field "sandbox.network.httpProxyPort"/],
  ];
  for (const [sandbox, message] of cases) {
    using f = tempFile({ sandbox });
    assert.throws(
      () => readSettings(f.path),
      (e) => e instanceof ConfigError && message.test(e.message),
    );
  }
});

Deno.test("sandboxPolicy() joins --allow-domain and the user's sandbox.network", () => {
  const policy = sandboxPolicy({
    user: {
      sandbox: {
        network: { allowedDomains: ["*.GitHub.com"], deniedDomains: ["gist.github.com"] },
      },
    },
    domains: ["registry.npmjs.org"],
  });
  assert.deepEqual(policy.domains?.allow.map((r) => [r.pattern, r.source.split(" in ")[0]]), [
    ["registry.npmjs.org", "--allow-domain"],
    ["*.github.com", "sandbox.network.allowedDomains"],
  ]);
  assert.deepEqual(policy.domains?.deny.map((r) => r.pattern), ["gist.github.com"]);
  assert.equal(policy.net, false);
  assert.equal(sandboxPolicy({ user: {} }).domains, undefined);
});

Deno.test("readSettings() takes sandbox.credentials.allow: entries of the list, or folders holding some", () => {
  using ok = tempFile({ sandbox: { credentials: { allow: [".aws", ".ssh", ".ssh/id_*"] } } });
  assert.deepEqual(readSettings(ok.path).settings, {
    sandbox: { credentials: { allow: [".aws", ".ssh", ".ssh/id_*"] } },
  });
  const cases: [unknown, RegExp][] = [
    [{ credentials: [".aws"] }, /"sandbox.credentials" must be an object with allow/],
    [{ credentials: { allow: ".aws" } }, /"sandbox.credentials.allow" must be an array/],
    [{ credentials: { deny: [] } }, /unknown field "sandbox.credentials.deny"/],
    [
      { credentials: { allow: [".awz"] } },
      /"sandbox.credentials.allow": "\.awz" is not a credential store crab hides \(known: \.ssh\/id_\*/,
    ],
    [{ credentials: { allow: ["/home/u/.aws"] } }, /"\/home\/u\/\.aws" is not a credential store/],
  ];
  for (const [sandbox, message] of cases) {
    using f = tempFile({ sandbox });
    assert.throws(
      () => readSettings(f.path),
      (e) => e instanceof ConfigError && message.test(e.message),
    );
  }
});

Deno.test("sandboxPolicy() grants the user's credentials.allow, and nothing without it", () => {
  const open = sandboxPolicy({ user: { sandbox: { credentials: { allow: [".aws"] } } } });
  assert.deepEqual(open.credentials, [".aws"]);
  assert.equal(sandboxPolicy({ user: {} }).credentials, undefined);
});

Deno.test("sandboxPolicy() lets a job's ports onto the host only by --job-ports-on-host or the user's sandbox.jobPortsOnHost", () => {
  assert.equal(sandboxPolicy({ user: {} }).jobPortsOnHost, undefined);
  assert.equal(sandboxPolicy({ user: {}, jobPortsOnHost: true }).jobPortsOnHost, true);
  assert.equal(
    sandboxPolicy({ user: { sandbox: { jobPortsOnHost: true } } }).jobPortsOnHost,
    true,
  );
  assert.equal(
    sandboxPolicy({ user: { sandbox: { jobPortsOnHost: false } } }).jobPortsOnHost,
    undefined,
  );
  using ok = tempFile({ sandbox: { jobPortsOnHost: true } });
  assert.deepEqual(readSettings(ok.path).settings, { sandbox: { jobPortsOnHost: true } });
  using bad = tempFile({ sandbox: { jobPortsOnHost: "yes" } });
  assert.throws(
    () => readSettings(bad.path),
    (e) =>
      e instanceof ConfigError &&
      e.message ===
        `Cannot use config "${bad.path}": field "sandbox.jobPortsOnHost" must be a boolean`,
  );
});
