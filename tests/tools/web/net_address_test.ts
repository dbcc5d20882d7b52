import assert from "node:assert/strict";
import {
  findPrivateHost,
  formatIp,
  parseIPv4,
  parseIPv6,
  privateRange,
  resolveWithDns,
} from "../../../tools/web/net_address.ts";

const signal = new AbortController().signal;

Deno.test("parseIPv4() reads every inet_aton spelling of 127.0.0.1", () => {
  for (
    const s of [
      "127.0.0.1",
      "127.1",
      "127.0.1",
      "2130706433",
      "0x7f000001",
      "0X7F000001",
      "0177.0.0.1",
      "0x7f.0.0.1",
      "0x7f.1",
      "017700000001",
    ]
  ) {
    assert.deepEqual(parseIPv4(s), new Uint8Array([127, 0, 0, 1]), s);
  }
});

Deno.test("parseIPv4() rejects what is not an IPv4 address", () => {
  for (
    const s of [
      "",
      "1.2.3.4.5",
      "256.1.1.1",
      "1.2.3.256",
      "4294967296",
      "08.1.1.1",
      "1..2.3",
      "example.com",
      "1.2.3.4 ",
      "0x1g",
    ]
  ) {
    assert.equal(parseIPv4(s), undefined, s);
  }
});

Deno.test("parseIPv6() reads compressed, bracketed, zoned and dotted forms", () => {
  const loop = new Uint8Array(16);
  loop[15] = 1;
  assert.deepEqual(parseIPv6("::1"), loop);
  assert.deepEqual(parseIPv6("[::1]"), loop);
  assert.deepEqual(parseIPv6("0:0:0:0:0:0:0:1"), loop);
  assert.deepEqual(parseIPv6("::1%eth0"), loop);
  assert.equal(formatIp(parseIPv6("::ffff:127.0.0.1")!), "::ffff:7f00:1");
  assert.equal(formatIp(parseIPv6("fe80:0:0:0:1:0:0:2")!), "fe80::1:0:0:2");
  assert.equal(formatIp(parseIPv6("2001:db8::")!), "2001:db8::");
  for (const s of ["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::g", ":::", "1.2.3.4"]) {
    assert.equal(parseIPv6(s), undefined, s);
  }
});

Deno.test("privateRange() names the range of private, loopback and metadata addresses", () => {
  const cases: Record<string, string> = {
    "127.0.0.1": "loopback (127.0.0.0/8)",
    "127.1": "loopback (127.0.0.0/8)",
    "2130706433": "loopback (127.0.0.0/8)",
    "0x7f000001": "loopback (127.0.0.0/8)",
    "0177.0.0.1": "loopback (127.0.0.0/8)",
    "0.0.0.0": "this-network (0.0.0.0/8)",
    "10.255.0.1": "private (10.0.0.0/8)",
    "172.16.0.1": "private (172.16.0.0/12)",
    "172.31.255.255": "private (172.16.0.0/12)",
    "192.168.0.1": "private (192.168.0.0/16)",
    "100.64.0.1": "carrier-grade NAT (100.64.0.0/10)",
    "100.127.255.255": "carrier-grade NAT (100.64.0.0/10)",
    "169.254.169.254": "link-local (169.254.0.0/16, cloud metadata)",
    "224.0.0.1": "multicast (224.0.0.0/4)",
    "255.255.255.255": "reserved (240.0.0.0/4, broadcast)",
    "::1": "loopback (::1)",
    "::": "unspecified (::)",
    "fc00::1": "unique local (fc00::/7)",
    "fd00:ec2::254": "unique local (fc00::/7)",
    "fe80::1": "link-local (fe80::/10)",
    "febf::1": "link-local (fe80::/10)",
    "::ffff:127.0.0.1": "loopback (127.0.0.0/8), as IPv4-mapped IPv6 (::ffff:0:0/96)",
    "::ffff:7f00:1": "loopback (127.0.0.0/8), as IPv4-mapped IPv6 (::ffff:0:0/96)",
    "::ffff:a9fe:a9fe": "link-local (169.254.0.0/16, cloud metadata), as IPv4-mapped IPv6 " +
      "(::ffff:0:0/96)",
    "::10.0.0.1": "private (10.0.0.0/8), as IPv4-compatible IPv6 (::/96)",
    "64:ff9b::192.168.1.1": "private (192.168.0.0/16), as NAT64 (64:ff9b::/96)",
    "2002:7f00:1::": "loopback (127.0.0.0/8), as 6to4 (2002::/16)",
    "2001:0:7f00:1::": "loopback (127.0.0.0/8), as Teredo server (2001::/32)",
    "2001:0:4136:e378:8000:63bf:80ff:fffe": "loopback (127.0.0.0/8), as Teredo client " +
      "(2001::/32)",
    "nonsense": "not an IP address",
  };
  for (const [address, range] of Object.entries(cases)) {
    assert.equal(privateRange(address), range, address);
  }
});

Deno.test("privateRange() passes public addresses", () => {
  for (
    const address of [
      "93.184.215.14",
      "8.8.8.8",
      "1.1.1.1",
      "172.15.255.255",
      "172.32.0.0",
      "100.63.255.255",
      "100.128.0.0",
      "169.253.0.1",
      "2606:4700:4700::1111",
      "2a00:1450:4001:80b::200e",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::",
    ]
  ) {
    assert.equal(privateRange(address), undefined, address);
  }
});

Deno.test("findPrivateHost() judges literals without a lookup", async () => {
  const resolve = () => Promise.reject(new Error("no lookup expected"));
  assert.deepEqual(await findPrivateHost("[::ffff:7f00:1]", resolve, signal), {
    address: "::ffff:7f00:1",
    range: "loopback (127.0.0.0/8), as IPv4-mapped IPv6 (::ffff:0:0/96)",
  });
  assert.deepEqual(await findPrivateHost("127.1", resolve, signal), {
    address: "127.0.0.1",
    range: "loopback (127.0.0.0/8)",
  });
  assert.equal(await findPrivateHost("8.8.8.8", resolve, signal), undefined);
  assert.deepEqual(await findPrivateHost("Dev.LocalHost.", resolve, signal), {
    address: "dev.localhost",
    range: "loopback name (localhost)",
  });
});

Deno.test("findPrivateHost() refuses a name when any resolved address is private", async () => {
  const addresses: Record<string, string[]> = {
    "public.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "mixed.test": ["93.184.215.14", "::1"],
  };
  const resolve = (host: string) => Promise.resolve(addresses[host]);
  assert.equal(await findPrivateHost("public.test", resolve, signal), undefined);
  assert.deepEqual(await findPrivateHost("mixed.test", resolve, signal), {
    address: "::1",
    range: "loopback (::1)",
  });
});

Deno.test("resolveWithDns() uses the system resolver, which answers offline from /etc/hosts", async () => {
  const found = await resolveWithDns("localhost", new AbortController().signal);
  assert.ok(found.some((a) => a === "127.0.0.1" || a === "::1"), found.join(","));
  await assert.rejects(
    () => resolveWithDns("no-such-host.invalid", new AbortController().signal),
    Deno.errors.NotFound,
  );
});
