import assert from "node:assert/strict";
import {
  commandSubject,
  compileCommandPattern,
  matchCommand,
  type MatchWord,
} from "../../../tools/policy/command_pattern.ts";

/** Words of a command: `$` alone is a word that may vanish, `$` inside a word unknown text. */
function words(command: string): MatchWord[] {
  return command.split(" ").map((w) =>
    w === "$" ? { segs: [null], vanish: true } : {
      segs: w.split(/(\$)/).filter((s) => s !== "").map((s) => s === "$" ? null : s),
      vanish: false,
    }
  );
}

function match(rule: string, command: string): "certain" | "possible" | "no" {
  const p = compileCommandPattern(rule);
  const s = commandSubject(words(command));
  return matchCommand(p, s, true) ? "certain" : matchCommand(p, s, false) ? "possible" : "no";
}

Deno.test("matchCommand() on Claude Code's documented wildcard examples", () => {
  const cases: [string, string, string][] = [
    ["npm run build", "npm run build", "certain"],
    ["npm run build", "npm run build --prod", "no"],
    ["npm run test *", "npm run test", "certain"],
    ["npm run test *", "npm run test --watch", "certain"],
    ["npm run test *", "npm run tests", "no"],
    ["npm run test:*", "npm run test", "certain"],
    ["npm run test:*", "npm run test:unit", "no"],
    ["npm *", "npm install", "certain"],
    ["npm *", "pnpm install", "no"],
    ["* install", "npm install", "certain"],
    ["* install", "yarn install", "certain"],
    ["git * main", "git checkout main", "certain"],
    ["git * main", "git merge main", "certain"],
    ["git * main", "git checkout dev", "no"],
    ["ls *", "ls -la", "certain"],
    ["ls *", "lsof", "no"],
    ["ls*", "lsof", "certain"],
    ["ls*", "ls -la", "certain"],
    ["echo \\*", "echo *", "certain"],
    ["echo \\*", "echo x", "no"],
    ["echo '*'", "echo x", "no"],
  ];
  for (const [rule, command, want] of cases) {
    assert.equal(match(rule, command), want, `${rule} ~ ${command}`);
  }
});

Deno.test("matchCommand() tells a certain match from a possible one when words are unknown", () => {
  const cases: [string, string, string][] = [
    ["npm test *", "npm test $", "certain"], // $FLAGS: empty or more words, both allowed
    ["npm test *", "npm $", "possible"], // $X may be "test"
    ["rm -rf *", "rm -rf $", "certain"],
    ["git push *", "git $ origin", "possible"],
    ["git push *", "git st$ origin", "no"],
    ["git diff *", "git diff$", "possible"], // `git diff$X` may be `git diff-index`
    ["echo * done", "echo $ done", "possible"], // $X may vanish: `echo done`
    ["cat src/*", "cat src/$.ts", "certain"],
    ["cat src/*", "cat $/x", "possible"],
  ];
  for (const [rule, command, want] of cases) {
    assert.equal(match(rule, command), want, `${rule} ~ ${command}`);
  }
});
