import assert from "node:assert/strict";
import { join } from "node:path";
import { writeExecutable } from "../support/executable.ts";

const SCRIPT = new URL("../../install.sh", import.meta.url).pathname;
const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
];

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A stand-in binary for `target`: a script that says which one it is. */
function standIn(target: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`#!/bin/sh\necho "crab 0.1.0 ${target}"\n`);
}

/**
 * A release folder on loopback: one stand-in per target and SHA256SUMS. `sums`
 * rewrites the checksum file; every request path is kept in `requests`.
 */
async function release(opts: { sums?: (text: string) => string; missing?: string[] } = {}) {
  const files = new Map<string, Uint8Array<ArrayBuffer>>();
  const lines: string[] = [];
  for (const t of TARGETS) {
    const bytes = standIn(t);
    files.set(`crab-${t}`, bytes);
    lines.push(`${await sha256(bytes)}  crab-${t}`);
  }
  const text = lines.join("\n") + "\n";
  files.set("SHA256SUMS", new TextEncoder().encode(opts.sums ? opts.sums(text) : text));
  for (const m of opts.missing ?? []) files.delete(m);
  const requests: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    requests.push(path);
    const body = path.startsWith("/dl/") ? files.get(path.slice(4)) : undefined;
    return body ? new Response(body) : new Response("not found", { status: 404 });
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}/dl`,
    requests,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** Runs `sh install.sh` with `uname` answering `os` and `arch`, into a temp prefix. */
async function install(
  os: string,
  arch: string,
  base: string,
  extra: { args?: string[]; env?: Record<string, string>; prefix?: string } = {},
) {
  const tmp = Deno.makeTempDirSync({ prefix: "crab-install-sh-" });
  const fake = join(tmp, "fakebin");
  Deno.mkdirSync(fake);
  writeExecutable(
    join(fake, "uname"),
    `#!/bin/sh\ncase "$1" in -s) echo "${os}" ;; -m) echo "${arch}" ;; *) exit 1 ;; esac\n`,
  );
  const prefix = extra.prefix ?? join(tmp, "prefix");
  const out = await new Deno.Command("sh", {
    args: [SCRIPT, "--prefix", prefix, ...(extra.args ?? [])],
    env: {
      PATH: `${fake}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      HOME: tmp,
      CRAB_BASE_URL: base,
      ...extra.env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const bin = join(prefix, "bin", "crab");
  let installed: string | undefined;
  try {
    installed = Deno.readTextFileSync(bin);
  } catch {
    installed = undefined;
  }
  const leftovers = (() => {
    try {
      return [...Deno.readDirSync(join(prefix, "bin"))].map((e) => e.name);
    } catch {
      return [];
    }
  })();
  Deno.removeSync(tmp, { recursive: true });
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
    bin,
    installed,
    leftovers,
  };
}

Deno.test("install.sh picks the asset for each OS and CPU uname reports, and checks it", async () => {
  await using r = await release();
  const cases: [string, string, string][] = [
    ["Linux", "x86_64", "x86_64-unknown-linux-gnu"],
    ["Linux", "amd64", "x86_64-unknown-linux-gnu"],
    ["Linux", "aarch64", "aarch64-unknown-linux-gnu"],
    ["Linux", "arm64", "aarch64-unknown-linux-gnu"],
    ["Darwin", "x86_64", "x86_64-apple-darwin"],
    ["Darwin", "arm64", "aarch64-apple-darwin"],
  ];
  for (const [os, arch, target] of cases) {
    const got = await install(os, arch, r.base);
    assert.equal(got.code, 0, `${os}/${arch}: ${got.stderr}`);
    assert.equal(got.installed, new TextDecoder().decode(standIn(target)), `${os}/${arch}`);
    assert.deepEqual(got.leftovers, ["crab"]);
    assert.match(
      got.stdout,
      new RegExp(`installed ${got.bin} \\(crab 0\\.1\\.0 ${target}\\)\\n`),
      `${os}/${arch}`,
    );
  }
  // Each run fetched the sums, then its own asset, and nothing else.
  assert.deepEqual(r.requests.slice(0, 2), ["/dl/SHA256SUMS", "/dl/crab-x86_64-unknown-linux-gnu"]);
  assert.equal(r.requests.length, cases.length * 2);
});

Deno.test("install.sh refuses an OS or CPU without a release, naming it and the releases", async () => {
  await using r = await release();
  const os = await install("FreeBSD", "amd64", r.base);
  assert.equal(os.code, 1);
  assert.equal(
    os.stderr,
    'install.sh: error: no crab release for OS "FreeBSD" (releases: ' + TARGETS.join(" ") + ")\n",
  );
  const cpu = await install("Linux", "riscv64", r.base);
  assert.equal(cpu.code, 1);
  assert.equal(
    cpu.stderr,
    'install.sh: error: no crab release for CPU "riscv64" on Linux (releases: ' +
      TARGETS.join(" ") + ")\n",
  );
  assert.equal(os.installed, undefined);
  assert.equal(cpu.installed, undefined);
  assert.deepEqual(r.requests, []);
});

Deno.test("install.sh fails loudly on a checksum mismatch and installs nothing", async () => {
  await using r = await release({
    sums: (text) =>
      text.replace(/^[0-9a-f]{64}(?= {2}crab-x86_64-unknown-linux-gnu$)/m, "0".repeat(64)),
  });
  const got = await install("Linux", "x86_64", r.base);
  assert.equal(got.code, 1);
  const actual = await sha256(standIn("x86_64-unknown-linux-gnu"));
  assert.equal(
    got.stderr,
    "install.sh: error: checksum mismatch for crab-x86_64-unknown-linux-gnu: SHA256SUMS says " +
      `${"0".repeat(64)}, the download is ${actual}; nothing was installed\n`,
  );
  assert.equal(got.installed, undefined);
  assert.deepEqual(got.leftovers, []);
  // The other assets' sums are intact.
  const other = await install("Linux", "aarch64", r.base);
  assert.equal(other.code, 0, other.stderr);
});

Deno.test("install.sh fails on a missing SHA256SUMS entry or asset", async () => {
  await using r = await release({
    sums: (text) => text.split("\n").filter((l) => !l.endsWith("aarch64-apple-darwin")).join("\n"),
    missing: ["crab-x86_64-apple-darwin"],
  });
  const noSum = await install("Darwin", "arm64", r.base);
  assert.equal(noSum.code, 1);
  assert.equal(
    noSum.stderr,
    `install.sh: error: ${r.base}/SHA256SUMS has no entry for crab-aarch64-apple-darwin\n`,
  );
  const noAsset = await install("Darwin", "x86_64", r.base);
  assert.equal(noAsset.code, 1);
  assert.match(
    noAsset.stderr,
    new RegExp(`install\\.sh: error: cannot download ${r.base}/crab-x86_64-apple-darwin\\n$`),
  );
  assert.equal(noAsset.installed, undefined);
});

Deno.test("install.sh refuses an asset that does not run here, keeping the old crab", async () => {
  await using r = await release();
  const prefix = Deno.makeTempDirSync({ prefix: "crab-install-sh-prefix-" });
  const first = await install("Linux", "x86_64", r.base, { prefix });
  assert.equal(first.code, 0, first.stderr);
  // A stand-in that fails like a binary for another CPU.
  const broken = new TextEncoder().encode(
    "#!/bin/sh\necho 'cannot execute binary file' >&2\nexit 126\n",
  );
  const sum = await sha256(broken);
  await using bad = await release({
    sums: (text) => text.replace(/^[0-9a-f]{64}(?= {2}crab-x86_64-unknown-linux-gnu$)/m, sum),
  });
  // Serve the broken bytes under the asset's name through a second server.
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/dl/crab-x86_64-unknown-linux-gnu") return new Response(broken);
      return await fetch(`${bad.base}${path.slice(3)}`);
    },
  );
  const got = await install("Linux", "x86_64", `http://127.0.0.1:${server.addr.port}/dl`, {
    prefix,
  });
  Deno.removeSync(prefix, { recursive: true });
  assert.equal(got.code, 1);
  assert.equal(
    got.stderr,
    "install.sh: error: crab-x86_64-unknown-linux-gnu does not run on this machine: " +
      "cannot execute binary file; nothing was installed\n",
  );
  assert.equal(got.installed, first.installed);
  assert.deepEqual(got.leftovers, ["crab"]);
});

Deno.test("install.sh without a base URL needs a release repository", async () => {
  const got = await install("Linux", "x86_64", "", { env: { CRAB_BASE_URL: "" } });
  assert.equal(got.code, 1);
  assert.equal(
    got.stderr,
    "install.sh: error: no release repository: set CRAB_REPO=OWNER/REPO or pass --base-url URL\n",
  );
});
