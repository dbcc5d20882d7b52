/**
 * crab's reading of git's ref files against git itself: ref names judged as
 * `git check-ref-format` judges them (edge cases and a seeded random set),
 * `packed-refs` that git writes parse, and every one git refuses is refused.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  isFetchHead,
  isIdList,
  isPackedRefs,
  isRefName,
  isRefValue,
} from "../../../../tools/sandbox/git/_ref_format.ts";

const EDGES = [
  "",
  "@",
  "a",
  "HEAD",
  "refs/heads/main",
  "refs/heads/x;touch${IFS}PWNED;#",
  "refs/heads/a..b",
  "refs/heads/a.",
  "refs/heads/.a",
  "refs/heads/a.lock",
  "refs/heads/a.lock/b",
  "refs/heads/a.lockx",
  "refs/heads/a@{1}",
  "refs/heads/@",
  "refs/heads/a@b{",
  "refs/heads//a",
  "/refs/heads/a",
  "refs/heads/a/",
  "refs/heads/a b",
  "refs/heads/a\tb",
  "refs/heads/a\x7fb",
  "refs/heads/a~1",
  "refs/heads/a^",
  "refs/heads/a:b",
  "refs/heads/a?",
  "refs/heads/a*",
  "refs/heads/a[b",
  "refs/heads/a\\b",
  "refs/heads/a./b",
  "refs/heads/é",
  "refs/heads/{}$|;&<>",
  "refs/heads/-x",
  "a/b",
];

const ALPHABET = [
  "a",
  "b",
  ".",
  ".",
  "/",
  "/",
  "@",
  "{",
  "}",
  "~",
  "^",
  ":",
  "?",
  "*",
  "[",
  "\\",
  " ",
  "\t",
  "\x7f",
  "-",
  "lock",
  "é",
  "$",
];

/** A small seeded generator (mulberry32), so a failure names a name that comes back. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generated(count: number, seed: number): string[] {
  const next = random(seed);
  const out: string[] = [];
  while (out.length < count) {
    const parts = ["refs/"];
    const n = 1 + Math.floor(next() * 8);
    for (let i = 0; i < n; i++) parts.push(ALPHABET[Math.floor(next() * ALPHABET.length)]);
    // A leading "-" would be an option to git.
    const name = next() < 0.8 ? parts.join("") : parts.slice(1).join("");
    if (!name.startsWith("-")) out.push(name);
  }
  return out;
}

/** git's verdicts on `names`: [plain, --allow-onelevel] for each. */
async function gitVerdicts(names: string[]): Promise<[boolean, boolean][]> {
  const script = `while IFS= read -r -d '' n; do
    git check-ref-format "$n" && printf 1 || printf 0
    git check-ref-format --allow-onelevel "$n" && printf 1 || printf 0
  done`;
  const child = new Deno.Command("bash", {
    args: ["-c", script],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(names.map((n) => `${n}\0`).join("")));
  await w.close();
  const bits = new TextDecoder().decode((await child.output()).stdout);
  return names.map((_, i): [boolean, boolean] => [bits[2 * i] === "1", bits[2 * i + 1] === "1"]);
}

Deno.test("isRefName() judges names as git check-ref-format does, edge cases and 300 random ones", async () => {
  const names = [...EDGES, ...generated(300, 33)];
  const verdicts = await gitVerdicts(names);
  assert.equal(verdicts.length, names.length);
  const differ = names.filter((n, i) =>
    isRefName(n) !== verdicts[i][0] || isRefName(n, true) !== verdicts[i][1]
  ).map((n) => JSON.stringify(n));
  assert.deepEqual(differ, []);
  // The generated set is not all one verdict.
  const valid = verdicts.filter(([v]) => v).length;
  assert.ok(valid > 25 && valid < names.length - 25, `${valid} of ${names.length} valid`);
});

Deno.test("isRefValue() takes a hash or a ref to a valid name under refs/, nothing else", () => {
  const id = "0123456789abcdef0123456789abcdef01234567";
  assert.deepEqual(
    [
      `${id}\n`,
      id,
      `${id}${id.slice(0, 24)}\n`,
      "ref: refs/heads/main\n",
      "ref: refs/heads/x;touch${IFS}PWNED;#\n",
      "ref: refs/heads/a..b\n",
      "ref: ../../config\n",
      "ref: HEAD\n",
      "ref: refs/heads/main\nref: refs/heads/x\n",
      `${id.toUpperCase()}\n`,
      `${id} trailing\n`,
      "",
    ].map(isRefValue),
    [true, true, true, true, true, false, false, false, false, false, false, false],
  );
  assert.equal(isIdList(`${id}\n${id}\n`), true);
  assert.equal(isIdList(`${id}\nref: refs/heads/main\n`), false);
  assert.equal(isFetchHead(`${id}\t\tbranch 'main' of /x\n${id}\tnot-for-merge\tx\n`), true);
  assert.equal(isFetchHead(""), true);
  assert.equal(isFetchHead("ref: refs/heads/main\n"), false);
});

Deno.test("isPackedRefs() reads what git pack-refs writes, and refuses every file git refuses", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-packed-" });
  try {
    const run = (...args: string[]) =>
      new Deno.Command("git", {
        args: ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
        cwd: dir,
        stdout: "null",
        stderr: "null",
      }).outputSync();
    run("init", "-q", "-b", "main");
    run("commit", "-q", "--allow-empty", "-m", "one");
    run("tag", "-a", "-m", "t", "v1");
    run("branch", "x;touch${IFS}PWNED;#");
    run("pack-refs", "--all");
    const packed = Deno.readTextFileSync(join(dir, ".git/packed-refs"));
    assert.match(packed, /^# pack-refs with:.*\n.*\n\^/s);
    assert.equal(isPackedRefs(packed), true);
    const [first] = packed.split("\n").filter((l) => /^[0-9a-f]{40} /.test(l));
    const id = first.slice(0, 40);
    const refused = [
      `${first}\nnonsense\n`,
      `^${id}\n`,
      `${first}\n^${id}\n^${id}\n`,
      `${id} refs/heads/a..b\n`,
      `${id.slice(1)} refs/heads/a\n`,
      `${first}\n# pack-refs with: peeled\n`,
    ];
    const gitRefuses = refused.filter((text) => {
      Deno.writeTextFileSync(join(dir, ".git/packed-refs"), text);
      return !run("for-each-ref").success;
    });
    assert.ok(gitRefuses.length >= 3, `git refuses ${gitRefuses.length}`);
    // crab refuses every one git refuses, and the others too (a name git warns about).
    assert.deepEqual(refused.filter(isPackedRefs), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
