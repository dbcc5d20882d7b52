import assert from "node:assert/strict";
import { bwrapArgs } from "../../../../tools/sandbox/linux/bwrap.ts";
import type { Layout } from "../../../../tools/sandbox/layout.ts";

const layout: Layout = {
  net: false,
  tmpfs: ["/tmp", "/run/user/1000"],
  reshown: [],
  writable: ["/ws"],
  readOnly: [],
  masked: [],
  placeholders: [],
  gitDirs: [],
  watched: [],
  hidden: [],
  shown: [],
  closed: new Map(),
};

Deno.test("bwrapArgs() sizes every private tmpfs and binds the cgroup files after /dev", () => {
  const a = bwrapArgs(layout, ["prog"], {
    cwd: "/ws",
    disableUserns: true,
    emptyDir: "/empty",
    tmpSize: 1048576,
    files: new Map([["/dev/.crab-cgroup-0", "/sys/fs/cgroup/pids/crab-1-1-0123abcd/cgroup.procs"]]),
  });
  const at = (i: number, n: number) => a.slice(i, i + n);
  const dev = a.indexOf("--dev");
  assert.deepEqual(at(dev, 5), [
    "--dev",
    "/dev",
    "--bind",
    "/sys/fs/cgroup/pids/crab-1-1-0123abcd/cgroup.procs",
    "/dev/.crab-cgroup-0",
  ]);
  const tmp = a.indexOf("--size");
  assert.deepEqual(at(tmp, 8), [
    "--size",
    "1048576",
    "--tmpfs",
    "/tmp",
    "--size",
    "1048576",
    "--tmpfs",
    "/run/user/1000",
  ]);
  assert.ok(a.includes("--unshare-all"));
});

Deno.test("bwrapArgs() without a size or cgroup files is what it was, and can keep the host's cgroup namespace", () => {
  const a = bwrapArgs(layout, ["prog"], { cwd: "/ws", disableUserns: false, emptyDir: "/e" });
  assert.equal(a.includes("--size"), false);
  assert.deepEqual(a.slice(a.indexOf("--tmpfs"), a.indexOf("--tmpfs") + 4), [
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/run/user/1000",
  ]);
  const host = bwrapArgs(layout, ["prog"], {
    cwd: "/ws",
    disableUserns: false,
    emptyDir: "/e",
    hostCgroupNamespace: true,
  });
  assert.equal(host.includes("--unshare-all"), false);
  assert.deepEqual(host.slice(2, 7), [
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-user",
  ]);
});

Deno.test("bwrapArgs() binds the folders of earlier jobs' ports read-only after /dev", () => {
  const a = bwrapArgs(layout, ["prog"], {
    cwd: "/ws",
    disableUserns: true,
    emptyDir: "/empty",
    files: new Map([["/dev/.crab-ports", "/data/sandbox/ports/aaa"]]),
    readOnlyFiles: new Map([["/dev/.crab-job-0", "/data/sandbox/ports/bbb"]]),
  });
  const dev = a.indexOf("--dev");
  assert.deepEqual(a.slice(dev, dev + 8), [
    "--dev",
    "/dev",
    "--bind",
    "/data/sandbox/ports/aaa",
    "/dev/.crab-ports",
    "--ro-bind",
    "/data/sandbox/ports/bbb",
    "/dev/.crab-job-0",
  ]);
});
