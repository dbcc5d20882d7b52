import assert from "node:assert/strict";
import { writeExecutable } from "../support/executable.ts";

const ROOT = new URL("../../", import.meta.url);
const WORKFLOW = new URL(".github/workflows/release.yml", ROOT);
const SANDBOX = new URL(".github/workflows/sandbox.yml", ROOT);

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  "runs-on"?: string;
  name?: string;
  uses?: string;
  env?: Record<string, string>;
  needs?: string | string[];
  if?: string;
  permissions?: Record<string, string>;
  strategy?: { matrix: { include: { target: string; runner: string }[] } };
  steps?: Step[];
}
interface Workflow {
  on: { push: { tags: string[] }; workflow_dispatch: unknown; workflow_call?: unknown };
  env?: Record<string, string>;
  jobs: Record<string, Job>;
}

async function workflow(file: URL = WORKFLOW): Promise<Workflow> {
  const { parse } = await import("yaml");
  return parse(Deno.readTextFileSync(file), { strict: true, uniqueKeys: true }) as Workflow;
}

/** The targets install.sh knows, from its SUPPORTED line. */
function installShTargets(): string[] {
  const text = Deno.readTextFileSync(new URL("install.sh", ROOT));
  const line = /^SUPPORTED="([^"]+)"$/m.exec(text);
  assert.ok(line, "install.sh has no SUPPORTED line");
  return line[1].split(" ");
}

Deno.test("release.yml parses and builds the four targets install.sh picks from", async () => {
  const wf = await workflow();
  assert.deepEqual(wf.on.push.tags, ["v*"]);
  assert.ok("workflow_dispatch" in wf.on);
  const build = wf.jobs.build;
  const targets = build.strategy!.matrix.include.map((m) => m.target);
  assert.deepEqual(targets, [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
  ]);
  assert.deepEqual([...targets].sort(), [...installShTargets()].sort());
  // Each binary is built and smoke-tested on a runner of its own OS.
  for (const m of build.strategy!.matrix.include) {
    assert.equal(m.runner.startsWith("macos"), m.target.endsWith("apple-darwin"), m.runner);
  }
});

Deno.test("release.yml compiles with scripts/compile.ts, smoke-tests each binary, publishes sums", async () => {
  const wf = await workflow();
  const runs = (job: Job) => (job.steps ?? []).map((s) => s.run ?? "").join("\n");
  const build = runs(wf.jobs.build);
  assert.match(build, /deno install --frozen/);
  assert.match(build, /deno task compile --preset full .*--target \$\{\{ matrix\.target \}\}/);
  // The downloadable full binary must start MCP servers configured after the build.
  assert.doesNotMatch(build, /--preset full [^\n]*--no-mcp-config/);
  assert.match(build, /--preset full --bundle/);
  assert.match(build, /scripts\/smoke\.ts dist\/crab-\$\{\{ matrix\.target \}\} --preset full/);
  assert.match(build, /scripts\/smoke\.ts "\$RUNNER_TEMP\/crab-read-only" --preset read-only/);
  const upload = wf.jobs.build.steps!.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
  assert.equal(upload?.with?.path, "dist/crab-${{ matrix.target }}");

  const publish = wf.jobs.publish;
  // Nothing is published unless the binaries and the sandbox tests passed.
  assert.deepEqual(publish.needs, ["build", "sandbox"]);
  assert.equal(publish.permissions?.contents, "write");
  const pub = runs(publish);
  assert.match(pub, /sha256sum crab-\* install\.sh > SHA256SUMS/);
  assert.match(pub, /s\|@CRAB_RELEASE_REPO@\|\$GITHUB_REPOSITORY\|/);
  assert.match(pub, /gh release create "\$TAG" dist\/crab-\* dist\/install\.sh dist\/SHA256SUMS/);
  // The placeholder the publish step fills in is the one install.sh carries.
  assert.match(
    Deno.readTextFileSync(new URL("install.sh", ROOT)),
    /^RELEASE_REPO="@CRAB_RELEASE_REPO@"$/m,
  );
});

Deno.test("the workflows' scripts are valid shell and name tasks and files that exist", async () => {
  const tasks = Object.keys(
    (JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))) as { tasks: object }).tasks,
  );
  const jobs = [
    ...Object.entries((await workflow()).jobs),
    ...Object.entries((await workflow(SANDBOX)).jobs),
  ];
  for (const [id, job] of jobs) {
    for (const step of job.steps ?? []) {
      if (!step.run) continue;
      const script = step.run.replaceAll(/\$\{\{[^}]*\}\}/g, "x");
      const check = new Deno.Command("bash", { args: ["-n", "-c", script], stderr: "piped" })
        .outputSync();
      assert.ok(check.success, `${id} / ${step.name}: ${new TextDecoder().decode(check.stderr)}`);
      for (const [, task] of script.matchAll(/deno task ([\w-]+)/g)) {
        assert.ok(tasks.includes(task), `${id} / ${step.name}: no task "${task}"`);
      }
      for (const [path] of script.matchAll(/(?:scripts|tests|tools)\/[\w/]+(?:\.ts|\/)/g)) {
        assert.ok(Deno.statSync(new URL(path, ROOT)), `${id} / ${step.name}: no ${path}`);
      }
    }
  }
});

Deno.test("release.yml's publish step writes sums and an install.sh that installs from them", async () => {
  const wf = await workflow();
  const step = wf.jobs.publish.steps!.find((s) => s.run?.includes("SHA256SUMS"));
  assert.ok(step?.run);
  const tmp = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-release-" }));
  try {
    // The job's checkout: install.sh at the top, the downloaded artifacts in dist/.
    Deno.copyFileSync(new URL("install.sh", ROOT), `${tmp}/install.sh`);
    Deno.mkdirSync(`${tmp}/dist`);
    for (const t of installShTargets()) {
      Deno.writeTextFileSync(`${tmp}/dist/crab-${t}`, `#!/bin/sh\necho "crab ${t}"\n`);
    }
    const ran = new Deno.Command("bash", {
      args: ["-e", "-c", step.run],
      cwd: tmp,
      env: { GITHUB_REPOSITORY: "someone/crab" },
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    assert.ok(ran.success, new TextDecoder().decode(ran.stderr));
    const stamped = Deno.readTextFileSync(`${tmp}/dist/install.sh`);
    assert.match(stamped, /^RELEASE_REPO="someone\/crab"$/m);
    const sums = Deno.readTextFileSync(`${tmp}/dist/SHA256SUMS`).trim().split("\n");
    assert.deepEqual(
      sums.map((l) => l.split("  ")[1]).sort(),
      [
        ...installShTargets().map((t) => `crab-${t}`),
        "install.sh",
      ].sort(),
    );

    await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      try {
        return new Response(Deno.readFileSync(`${tmp}/dist${new URL(req.url).pathname}`));
      } catch {
        return new Response("not found", { status: 404 });
      }
    });
    Deno.mkdirSync(`${tmp}/fakebin`);
    writeExecutable(
      `${tmp}/fakebin/uname`,
      '#!/bin/sh\ncase "$1" in -s) echo Darwin ;; -m) echo arm64 ;; esac\n',
    );
    // Not outputSync: the server above answers on this thread.
    const install = await new Deno.Command("sh", {
      args: [`${tmp}/dist/install.sh`, "--prefix", `${tmp}/prefix`],
      env: {
        PATH: `${tmp}/fakebin:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
        CRAB_BASE_URL: `http://127.0.0.1:${server.addr.port}`,
      },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));
    assert.equal(
      Deno.readTextFileSync(`${tmp}/prefix/bin/crab`),
      '#!/bin/sh\necho "crab aarch64-apple-darwin"\n',
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("sandbox.yml runs on macOS and Ubuntu 24.04, by hand and from the release", async () => {
  const release = await workflow();
  assert.equal(release.jobs.sandbox.uses, "./.github/workflows/sandbox.yml");
  const wf = await workflow(SANDBOX);
  assert.ok("workflow_dispatch" in wf.on && "workflow_call" in wf.on);
  assert.deepEqual(Object.keys(wf.jobs).sort(), ["macos", "ubuntu"]);
  assert.equal(wf.jobs.macos["runs-on"], "macos-14");
  assert.equal(wf.jobs.ubuntu["runs-on"], "ubuntu-24.04");
  const test = wf.env!.DENO_TEST;
  // The permission flags the tests must pass with, never -A.
  assert.equal(
    test,
    "deno test --allow-read --allow-write --allow-run --allow-env --allow-net --no-prompt",
  );
  const steps = (id: string) => wf.jobs[id].steps!.map((s) => s.run ?? "");
  assert.ok(
    steps("macos").some((r) => /\$DENO_TEST tests\/tools\/sandbox\/seatbelt_test\.ts/.test(r)),
  );
  // Ubuntu: the diagnosis is asserted before the fix, the suite runs after it, never as root.
  const ubuntu = wf.jobs.ubuntu.steps!;
  const at = (re: RegExp) => ubuntu.findIndex((s) => re.test(s.run ?? ""));
  const restrict = at(/sysctl -w kernel\.apparmor_restrict_unprivileged_userns=1/);
  const diagnosis = at(/\$DENO_TEST tests\/tools\/sandbox\/linux\/apparmor_test\.ts/);
  const fix = at(/apparmor_parser -r \/etc\/apparmor\.d\/bwrap/);
  const suite = at(/\$DENO_TEST tests\/tools\/sandbox\/ /);
  assert.ok(restrict >= 0 && restrict < diagnosis && diagnosis < fix && fix < suite);
  assert.equal(ubuntu[diagnosis].env?.CRAB_EXPECT_USERNS_RESTRICTION, "1");
  for (const i of [diagnosis, suite]) assert.match(ubuntu[i].run!, /test "\$\(id -u\)" != 0/);
  assert.doesNotMatch(ubuntu[suite].run!, /sudo .*deno/);
});
