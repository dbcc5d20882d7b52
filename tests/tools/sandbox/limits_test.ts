import assert from "node:assert/strict";
import {
  DEFAULT_PROCESSES,
  DEFAULT_TMP_BYTES,
  formatSize,
  limitsFromConfig,
  limitsProblem,
  parseSize,
  resolveLimits,
} from "../../../tools/sandbox/limits.ts";

Deno.test("parseSize() reads bytes and binary units, and nothing else", () => {
  assert.deepEqual(
    ["1G", "8g", "512M", "1536K", "2GiB", "3T", 4096, "4096", " 1G "].map(parseSize),
    [
      1024 ** 3,
      8 * 1024 ** 3,
      512 * 1024 ** 2,
      1536 * 1024,
      2 * 1024 ** 3,
      3 * 1024 ** 4,
      4096,
      4096,
      1024 ** 3,
    ],
  );
  for (const bad of ["1.5G", "-1", "lots", "", "1X", -5, 1.5, true, null]) {
    assert.equal(parseSize(bad), undefined, String(bad));
  }
});

Deno.test("formatSize() names whole binary units", () => {
  assert.deepEqual([1024 ** 3, 64 * 1024 ** 2, 1536 * 1024 ** 2, 500].map(formatSize), [
    "1 GiB",
    "64 MiB",
    "1536 MiB",
    "500 bytes",
  ]);
});

Deno.test("limitsProblem() names the field and what it must be", () => {
  assert.equal(limitsProblem({ processes: 4096, memory: "8G", tmp: "1G" }), undefined);
  assert.equal(limitsProblem({}), undefined);
  const cases: [unknown, string][] = [
    [
      "8G",
      'field "sandbox.limits" must be an object such as {"processes": 4096, "memory": "8G", "tmp": "1G"}',
    ],
    [
      { processes: "many" },
      'field "sandbox.limits.processes" must be a whole number of at least 16',
    ],
    [{ processes: 3 }, 'field "sandbox.limits.processes" must be a whole number of at least 16'],
    [
      { memory: "8 gigs" },
      'field "sandbox.limits.memory" must be a size such as "512M" or "8G" (or a number of bytes), not "8 gigs"',
    ],
    [{ memory: "1M" }, 'field "sandbox.limits.memory" must be at least 32 MiB'],
    [{ tmp: "10K" }, 'field "sandbox.limits.tmp" must be at least 1 MiB'],
    [{ procs: 10 }, 'unknown field "sandbox.limits.procs" (known: processes, memory, tmp)'],
  ];
  for (const [value, message] of cases) assert.equal(limitsProblem(value), message);
});

Deno.test("resolveLimits() fills in 4096 processes, half the RAM and 1 GiB of /tmp", () => {
  const ram = 24 * 1024 ** 3 + 12345; // not a whole number of pages: the cap rounds down to one
  assert.deepEqual(resolveLimits(undefined, ram), {
    processes: DEFAULT_PROCESSES,
    memory: 12 * 1024 ** 3 + 4096,
    tmp: DEFAULT_TMP_BYTES,
  });
  assert.deepEqual(resolveLimits({ processes: 100, tmp: 5 }, 0), {
    processes: 100,
    memory: 8 * 1024 ** 3,
    tmp: 5,
  });
  assert.deepEqual(limitsFromConfig({ processes: 64, memory: "2G", tmp: 1048576 }), {
    processes: 64,
    memory: 2 * 1024 ** 3,
    tmp: 1024 ** 2,
  });
});
