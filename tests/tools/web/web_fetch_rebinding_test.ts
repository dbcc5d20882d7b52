import assert from "node:assert/strict";
import { join } from "node:path";
import { crabArgs, sandbox } from "../../support/cli.ts";
import { unshared } from "../../support/unshare.ts";
import { SECRET } from "./_rebinding_net.ts";

// DNS rebinding: a name that is public when web_fetch checks it and loopback when the
// connection resolves it again. crab runs in a user, network and mount namespace with its
// own DNS server (tests/tools/web/_rebinding_net.ts), so nothing leaves the machine.

const NET = new URL("./_rebinding_net.ts", import.meta.url).pathname;

const SCRIPT = `
  out=$1 net=$2 deno=$3; shift 3
  ip link set lo up || exit 90
  ip addr add 1.2.3.4/32 dev lo || exit 91
  printf 'nameserver 127.0.0.1\\noptions timeout:5 attempts:2\\n' > "$out/resolv.conf"
  mount --bind "$out/resolv.conf" /etc/resolv.conf || exit 92
  "$deno" run -A "$net" --log "$out/dns.log" --ready "$out/ready" > "$out/net.out" 2>&1 &
  netpid=$!
  i=0
  while [ ! -e "$out/ready" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
  [ -e "$out/ready" ] || { kill $netpid; exit 93; }
  "$@" < "$out/calls.jsonl" > "$out/stdout" 2> "$out/stderr"
  echo $? > "$out/exit"
  kill $netpid
  exit 0`;

const netnsProbe = (() => {
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

Deno.test({
  name: "web_fetch() connects to the address it checked, at the first hop and after a redirect",
  async fn() {
    // .ci/run installs iproute2; a machine without network namespaces fails here, saying why.
    if (netnsProbe) throw new Error(`unshare -Urnm with ip fails here: ${netnsProbe}`);
    using s = sandbox();
    const calls = [
      { tool: "web_fetch", args: { url: "http://direct.test:8080/" } },
      { tool: "web_fetch", args: { url: "http://public.test:8080/redirect" } },
    ];
    Deno.writeTextFileSync(
      join(s.root, "calls.jsonl"),
      calls.map((c) => JSON.stringify(c)).join("\n") + "\n",
    );
    const crab = [Deno.execPath(), ...crabArgs(), "tool", "--jsonl"];
    // Deno's own update check would be one more lookup.
    const out = await unshared(
      s,
      "-Urnm",
      SCRIPT,
      [s.root, NET, Deno.execPath(), ...crab],
      { DENO_NO_UPDATE_CHECK: "1" },
      90_000,
    );
    const read = out.read;
    const why = out.stderr + read("net.out") + read("stderr");
    assert.equal(out.code, 0, why);
    assert.equal(read("exit").trim(), "0", why);
    const stdout = read("stdout");
    assert.equal(stdout.includes("SECRET"), false, `the secret was fetched:\n${stdout}`);
    const answers = stdout.trim().split("\n").map((l) => JSON.parse(l));
    const body = (a: { ok: boolean; output?: string }) =>
      a.ok ? a.output!.split("\n\n").slice(1).join("\n\n").split("\n[end of web content")[0] : a;
    assert.deepEqual(answers.map(body), ["public page", "public final page"], stdout);
    assert.ok(answers[1].output.includes("(redirected from http://public.test:8080/redirect)"));
    // One lookup per hop: the name is resolved once and that address is used.
    const queries = read("dns.log").trim().split("\n").filter((l) => l.endsWith(".test A"));
    assert.deepEqual(queries, ["direct.test A", "public.test A", "hop.test A"]);
    assert.ok(SECRET.startsWith("SECRET"));
  },
});
