import assert from "node:assert/strict";
import { join } from "node:path";
import { crabArgs, sandbox } from "../../../support/cli.ts";
import { unshared } from "../../../support/unshare.ts";

// bash's network by domain, end to end: crab runs in a user, network and mount namespace made
// here, whose loopback carries the test hosts' public-looking addresses and whose /etc/hosts
// (bind-mounted) names them. bwrap gives each command a network namespace of its own inside.

const SERVERS = new URL("./_servers.ts", import.meta.url).pathname;

const HOSTS = [
  "1.2.3.4 allowed.test",
  "1.2.3.5 denied.test",
  "1.2.3.6 other.test",
  "1.2.3.7 registry.test",
  "127.0.0.1 private.test",
].join("\n") + "\n";

const SCRIPT = `
  out=$1 servers=$2 deno=$3; shift 3
  ip link set lo up || exit 90
  for a in 1.2.3.4 1.2.3.5 1.2.3.6 1.2.3.7; do ip addr add $a/32 dev lo || exit 91; done
  mount --bind "$out/hosts" /etc/hosts || exit 92
  "$deno" run -A "$servers" "$PWD/cert.pem" "$out/key.pem" "$out/ready" "$out/registry" > "$out/servers.out" 2>&1 &
  spid=$!
  i=0
  while [ ! -e "$out/ready" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
  [ -e "$out/ready" ] || { kill $spid; exit 93; }
  "$@" < "$out/calls.jsonl" > "$out/stdout" 2> "$out/stderr"
  echo $? > "$out/exit"
  kill $spid
  exit 0`;

const netnsProblem = (() => {
  try {
    const out = new Deno.Command("unshare", {
      args: ["-Urnm", "sh", "-c", "ip link set lo up && ip addr add 1.2.3.4/32 dev lo"],
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    return out.success ? null : new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
})();

// Every process of the sandbox but the caller and PID 1 (which the kernel keeps from its own
// namespace's signals) killed; the relay listens in PID 1, the supervisor.
const KILL_ALL = "kill -9 -1 2>/dev/null; sleep 0.2; ";

// ssh's ProxyCommand from GIT_SSH_COMMAND, run by hand against the TCP echo through SOCKS.
const PROXY_COMMAND = `pc=\${GIT_SSH_COMMAND#*ProxyCommand=}; pc=\${pc%"'"}; pc=\${pc% %h %p}; `;

interface Case {
  name: string;
  command: string;
  check(output: string): void;
}

const CASES: Case[] = [
  {
    name: "an allowed host over plain HTTP",
    command: "curl -sS http://allowed.test:8080/x",
    check: (o) => assert.equal(o, "hello GET allowed.test:8080\n"),
  },
  {
    name: "an allowed host over HTTPS (CONNECT)",
    command: "curl -sS --cacert cert.pem https://allowed.test:8443/",
    check: (o) => assert.equal(o, "hello GET allowed.test:8443\n"),
  },
  {
    name: "a denied host gets 403 with the reason and how to allow it",
    command: "curl -sS -i http://denied.test:8080/",
    check: (o) => {
      assert.match(o, /^HTTP\/1\.1 403 Forbidden/);
      assert.match(
        o,
        /"denied\.test": it is denied by "denied\.test" \(sandbox\.network\.deniedDomains in /,
      );
    },
  },
  {
    name: "a host in no list gets 403 naming --allow-domain",
    command: "curl -sS -i http://other.test:8080/",
    check: (o) => {
      assert.match(o, /^HTTP\/1\.1 403 Forbidden/);
      assert.match(o, /To allow it, run crab with --allow-domain other\.test/);
    },
  },
  {
    name: "a CONNECT to a host not allowed is refused",
    command: "curl -sS --cacert cert.pem https://other.test:8443/",
    check: (o) => assert.match(o, /CONNECT tunnel failed, response 403/),
  },
  {
    name: "a direct connection to the server's address fails",
    command: "curl -sS --noproxy '*' --max-time 5 http://1.2.3.4:8080/",
    check: (o) => assert.match(o, /Failed to connect|Couldn't connect|Network is unreachable/),
  },
  {
    name: "a client that ignores the proxy variables reaches nothing",
    command: "exec 3<>/dev/tcp/1.2.3.4/8080 && echo CONNECTED",
    check: (o) => {
      assert.equal(o.includes("CONNECTED"), false, o);
      assert.match(o, /Network is unreachable|Connection refused/);
    },
  },
  {
    name: "Host header spoofing on plain HTTP is refused",
    command: "curl -sS -i -H 'Host: other.test:8080' http://allowed.test:8080/",
    check: (o) => {
      assert.match(o, /^HTTP\/1\.1 403 Forbidden/);
      assert.match(o, /its Host header "other\.test:8080" does not name the host/);
      assert.equal(o.includes("hello"), false, o);
    },
  },
  {
    name: "an allowed name that resolves to a private address is refused, CONNECT too",
    command: "curl -sS -i http://private.test:8080/; " +
      "curl -sS --cacert cert.pem https://private.test:8443/",
    check: (o) => {
      assert.match(o, /^HTTP\/1\.1 403 Forbidden/);
      assert.match(o, /"private\.test": it resolves to 127\.0\.0\.1 \(loopback/);
      assert.match(o, /CONNECT tunnel failed, response 403/);
    },
  },
  {
    name: "SOCKS5: raw TCP through ssh's ProxyCommand, and a refusal",
    command: PROXY_COMMAND + 'echo ping | eval "$pc allowed.test 7000"; echo; ' +
      'echo ping | eval "$pc other.test 7000"; ' +
      "curl -sS --socks5-hostname 127.0.0.1:1080 http://allowed.test:8080/s",
    check: (o) => {
      assert.match(o, /^echo:ping\n/);
      assert.match(
        o,
        /crab: the sandbox's proxy refused other\.test port 7000 \(not an allowed host\)/,
      );
      assert.match(o, /hello GET allowed\.test:8080\n/);
    },
  },
  {
    name: "npm install from a registry that is the one host allowed for it",
    command: "mkdir -p app && cd app && echo '{}' > package.json && " +
      "npm install --registry http://registry.test:8080/ --no-audit --no-fund " +
      "--no-update-notifier tiny > npm.log 2>&1; echo npm=$?; cat node_modules/tiny/index.js",
    // What the install made ends the result, as each call's changes do.
    check: (o) =>
      assert.match(
        o,
        /^npm=0\nmodule\.exports = 'tiny from registry\.test';\n\nfiles changed: \+\d+ ~0 -0: \+app\/ /,
      ),
  },
  {
    name: "24 MiB up and back at once through the relay arrive whole",
    command: "head -c 25165824 /dev/urandom > up.bin && " +
      "curl -sS --data-binary @up.bin -H 'Content-Type: application/octet-stream' " +
      "-o back.bin http://allowed.test:8080/echo && cmp up.bin back.bin && echo same; " +
      "rm -f up.bin back.bin",
    check: (o) => assert.equal(o, "same\n"),
  },
  {
    name: "killing every process of the sandbox leaves the relay the one way out",
    command: KILL_ALL + "curl -sS --max-time 5 http://allowed.test:8080/k; " +
      "curl -sS --noproxy '*' --max-time 5 http://1.2.3.4:8080/",
    check: (o) => {
      assert.match(o, /^hello GET allowed\.test:8080\n/);
      assert.match(o, /Failed to connect|Couldn't connect|Network is unreachable/);
    },
  },
];

/** An npm registry of one package, `tiny`, as files the test servers answer with. */
async function tinyRegistry(dir: string): Promise<void> {
  const pkg = join(dir, "pkg");
  Deno.mkdirSync(pkg, { recursive: true });
  Deno.writeTextFileSync(join(pkg, "package.json"), '{"name": "tiny", "version": "1.0.0"}\n');
  Deno.writeTextFileSync(join(pkg, "index.js"), "module.exports = 'tiny from registry.test';\n");
  const packed = new Deno.Command("npm", {
    args: ["pack", "--pack-destination", dir, "--silent"],
    cwd: pkg,
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  assert.ok(packed.success, new TextDecoder().decode(packed.stderr));
  Deno.renameSync(join(dir, "tiny-1.0.0.tgz"), join(dir, "tiny.tgz"));
  const tgz = Deno.readFileSync(join(dir, "tiny.tgz"));
  const hex = (b: ArrayBuffer) =>
    [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
  const sha512 = new Uint8Array(await crypto.subtle.digest("SHA-512", tgz));
  const integrity = "sha512-" + btoa(String.fromCharCode(...sha512));
  const shasum = hex(await crypto.subtle.digest("SHA-1", tgz));
  const tarball = "http://registry.test:8080/tiny/-/tiny-1.0.0.tgz";
  Deno.writeTextFileSync(
    join(dir, "packument.json"),
    JSON.stringify({
      name: "tiny",
      "dist-tags": { latest: "1.0.0" },
      versions: {
        "1.0.0": { name: "tiny", version: "1.0.0", dist: { tarball, integrity, shasum } },
      },
    }),
  );
}

Deno.test({
  name: "bash with --allow-domain reaches the allowed hosts through crab's proxy and nothing else",
  async fn() {
    // .ci/run installs iproute2; a machine without network namespaces fails here, saying why.
    if (netnsProblem) throw new Error(`unshare -Urnm with ip fails here: ${netnsProblem}`);
    using s = sandbox();
    Deno.writeTextFileSync(join(s.root, "hosts"), HOSTS);
    const cert = new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=allowed.test",
        "-addext",
        "subjectAltName=DNS:allowed.test,DNS:private.test,DNS:other.test",
        "-keyout",
        join(s.root, "key.pem"),
        "-out",
        join(s.ws, "cert.pem"),
      ],
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    assert.ok(cert.success, new TextDecoder().decode(cert.stderr));
    await tinyRegistry(join(s.root, "registry"));
    Deno.writeTextFileSync(
      join(s.root, "calls.jsonl"),
      CASES.map((c) => JSON.stringify({ tool: "bash", args: { command: `${c.command} 2>&1` } }))
        .join("\n") + "\n",
    );
    const crab = [
      Deno.execPath(),
      ...crabArgs(),
      "tool",
      "--jsonl",
      "--allow-domain",
      "allowed.test,private.test,denied.test,registry.test",
    ];
    // Deny wins over allow: denied.test is in both lists.
    Deno.mkdirSync(join(s.env.XDG_CONFIG_HOME, "crab"), { recursive: true });
    Deno.writeTextFileSync(
      join(s.env.XDG_CONFIG_HOME, "crab", "config.json"),
      JSON.stringify({ sandbox: { network: { deniedDomains: ["denied.test"] } } }),
    );
    const out = await unshared(
      s,
      "-Urnm",
      SCRIPT,
      [s.root, SERVERS, Deno.execPath(), ...crab],
      { DENO_NO_UPDATE_CHECK: "1" },
      150_000,
    );
    const read = out.read;
    const why = out.stderr + read("servers.out") + read("stderr");
    assert.equal(out.code, 0, why);
    assert.equal(read("exit").trim(), "0", why);
    const answers = read("stdout").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(answers.length, CASES.length, read("stdout"));
    const failed: string[] = [];
    CASES.forEach((c, i) => {
      const a = answers[i];
      try {
        assert.ok(a.ok, JSON.stringify(a));
        c.check(a.output);
      } catch (e) {
        failed.push(`${c.name}: ${e instanceof Error ? e.message : e}\n${a.output ?? ""}`);
      }
    });
    assert.deepEqual(failed, []);
  },
});

Deno.test("WebFetch(domain:…) rules turn the proxy on; a project's sandbox.network does not", async () => {
  using s = sandbox();
  const curl = JSON.stringify({ command: "curl -sS -i --max-time 5 http://other.test/ 2>&1" });
  const byRule = await s.crab([
    "tool",
    "bash",
    curl,
    "--allowedTools",
    "WebFetch(domain:allowed.test)",
  ]);
  assert.equal(byRule.code, 0, byRule.stderr);
  assert.match(byRule.stdout, /^HTTP\/1\.1 403 Forbidden/);
  assert.match(
    byRule.stdout,
    /^Refused by crab's proxy: a connection to other\.test — not among the hosts this run allows/m,
  );
  // A repository cannot give its own commands a way out, trusted or not.
  s.put(
    ".crab/config.json",
    JSON.stringify({ sandbox: { network: { allowedDomains: ["other.test"] } } }),
  );
  const byProject = await s.crab(["tool", "--trust-project", "bash", curl]);
  assert.match(byProject.stdout, /^HTTP\/1\.1 403 Forbidden/);
  assert.match(
    byProject.stdout,
    /^Refused by crab's proxy: a connection to other\.test — not among the hosts this run allows/m,
  );
  assert.match(byProject.stdout, /bash has no network in this run/);
});
