import assert from "node:assert/strict";
import { type Fence, refusalLines, refusalsIn } from "../../../tools/sandbox/fence.ts";

const fence: Fence = {
  workspace: "/ws",
  closed: new Map([
    ["/ws/.git/config", {
      access: "read-only",
      layer: "protected",
      why: "a protected path",
      allow: "only the user can change it, outside crab",
    }],
    ["/ws/.env", {
      access: "hidden",
      layer: "rule",
      why: "hidden from commands by a deny rule",
      allow: "only the user can lift the rule, where it is written",
      rule: "Read(./.env)",
      source: "command line",
    }],
  ]),
  open: ["/ws", "/tmp", "/dev"],
  outside: { why: "outside", allow: "--add-dir DIR" },
};

Deno.test("refusalsIn() finds the path an error line is about, in each program's words", () => {
  const output = [
    "touch: cannot touch '/etc/a': Read-only file system",
    "bash: line 1: /etc/b: Read-only file system",
    "OSError: [Errno 30] Read-only file system: '.git/config'",
    "PermissionError: [Errno 13] Permission denied: '.env'",
    "Error: EROFS: read-only file system, open '/usr/c'",
    "cat: .env: Permission denied",
  ].join("\n");
  assert.deepEqual(refusalsIn(output, fence).map((r) => [r.layer, r.action, r.target]), [
    ["sandbox-fs", "write", "/etc/a"],
    ["sandbox-fs", "write", "/etc/b"],
    ["protected", "write", ".git/config"],
    ["rule", "access", ".env"],
    ["sandbox-fs", "write", "/usr/c"],
  ]);
});

Deno.test("refusalsIn() attributes nothing crab did not close", () => {
  const output = [
    "cat: missing.txt: No such file or directory",
    // A file's own mode outside the writable folders: not crab's doing.
    "cat: /etc/shadow: Permission denied",
    // Inside the writable folders, or where the kernel is read-only anyway.
    "bash: notes.txt: Permission denied",
    "bash: /tmp/x: Read-only file system",
    "bash: /proc/sys/x: Read-only file system",
    // A path crab closed, named without a refusal on the same line.
    "reading .env failed",
    `x: /etc/long: Read-only file system ${"y".repeat(3000)}`,
  ].join("\n");
  assert.deepEqual(refusalsIn(output, fence), []);
});

Deno.test("refusalLines() says each kind once, its targets listed", () => {
  const lines = refusalLines(
    refusalsIn("a: /etc/a: Read-only file system\nb: /etc/b: Read-only file system", fence),
  );
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    /^Refused by the sandbox's filesystem: a write to \/etc\/a, \/etc\/b — outside; --add-dir DIR\. This is the user's policy/,
  );
});
