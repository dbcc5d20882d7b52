import assert from "node:assert/strict";
import { supervisorArgv } from "../../../../tools/sandbox/linux/supervisor.ts";

const PERL = "/usr/bin/perl";

Deno.test("supervisorArgv() carries the watch over a job's ports only when it exposes them", () => {
  const plain = supervisorArgv("true", PERL, [], "3128=/dev/.crab-proxy-http");
  const job = supervisorArgv("true", PERL, [], "", "/dev/.crab-ports 3128 1080");
  assert.deepEqual(plain.slice(3), ["--", "3128=/dev/.crab-proxy-http", "", "true"]);
  assert.deepEqual(job.slice(3), ["--", "", "/dev/.crab-ports 3128 1080", "true"]);
  assert.equal(plain[2].includes("/proc/net/tcp"), false);
  assert.equal(job[2].includes("/proc/net/tcp"), true);
  // Both are perl that compiles.
  for (const argv of [plain, job]) {
    const out = new Deno.Command(PERL, { args: ["-c", "-e", argv[2]], stderr: "piped" })
      .outputSync();
    assert.match(new TextDecoder().decode(out.stderr), /syntax OK/);
  }
});

Deno.test("supervisorArgv() refuses a job's ports without perl", () => {
  assert.throws(
    () => supervisorArgv("true", undefined, [], "", "/dev/.crab-ports 3128 1080"),
    /need the perl supervisor/,
  );
  assert.throws(() => supervisorArgv("true", undefined, [], "8000=/dev/.crab-job-0/8000"));
});
