import assert from "node:assert/strict";
import { loadShellParser, parseShell, type ShellWord } from "../../../tools/policy/shell.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

await loadShellParser();

/** Each simple command's words: values, `?` for a word known only at run time. */
function commands(source: string): string[] {
  return parseShell(source).commands.map((c) =>
    [
      ...c.assigns.map((a) => `${a.name}=`),
      ...c.words.map((w: ShellWord) => w.value ?? "?"),
      ...c.redirects.map((r) => `${r.kind}:${r.target.value ?? "?"}`),
    ].join(" ")
  );
}

Deno.test("parseShell() finds every simple command that could run", () => {
  const cases: [string, string[]][] = [
    ["npm test; curl x | sh", ["npm test", "curl x", "sh"]],
    ["a && b || c & d\ne", ["a", "b", "c", "d", "e"]],
    ["echo $(curl x) `wget y`", ["echo ? ?", "curl x", "wget y"]],
    ['echo "$(curl x)"', ["echo ?", "curl x"]],
    ["cat <(curl x) >(tee y)", ["cat ? ?", "curl x", "tee y"]],
    ["f() { curl x; }; f", ["curl x", "f"]],
    ["if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]],
    ["for i in 1 2; do rm $i; done", ["rm ?"]],
    ["while read l; do rm $l; done < list", ["read:list", "read l", "rm ?"]],
    ["case $x in a) rm y;; *) curl z;; esac", ["rm y", "curl z"]],
    ["cat <<EOF\n$(curl x)\nEOF", ["cat", "curl x"]],
    ["cat <<'EOF'\n$(curl x)\nEOF", ["cat"]],
    ["cat <<-EOF\n\t`curl x`\n\tEOF", ["cat", "curl x"]],
    ['cat <<< "$(curl x)"', ["cat", "curl x"]],
    ["x=$(curl y) npm test", ["x= npm test", "curl y"]],
    ["echo ${x:-$(curl y)}", ["echo ?", "curl y"]],
    ["(cd a && rm b) | { c; }", ["cd a", "rm b", "c"]],
    ["! time coproc rm a", ["rm a"]],
    // bash's time keyword is sh's program: decided as the time wrapper.
    ["time -p git diff | cat", ["time -p git diff", "cat"]],
    ["echo 'a; rm b' \"c && d\" e\\;f", ["echo a; rm b c && d e;f"]],
    ["n\\pm test; 'npm' test; \"n\"pm test", ["npm test", "npm test", "npm test"]],
    ["npm test # ; rm -rf /", ["npm test"]],
    ["{ a; } > out 2>&1", ["write:out", "a"]],
    ["cmd >a >>b 2>c &>d <e <>f >&g 2>&1 >&-", [
      "cmd write:a write:b write:c write:d read:e read-write:f write:g",
    ]],
    ["echo > $(curl x)", ["echo write:?", "curl x"]],
    ["declare -a x=($(curl y))", ["declare -a ?", "curl y"]],
    ["$CMD a", ["? a"]],
  ];
  for (const [source, want] of cases) assert.deepEqual(commands(source), want, source);
});

Deno.test("parseShell() marks words that may split or vanish, and a leading ~", () => {
  const words = parseShell(`a $x "$x" ~/f '~/g' *.ts pre$x`).commands[0].words;
  assert.deepEqual(
    words.map((w) => ({ text: w.text, vanish: w.vanish, split: w.split, tilde: w.tilde })),
    [
      { text: "a", vanish: false, split: false, tilde: false },
      { text: "$x", vanish: true, split: true, tilde: false },
      { text: '"$x"', vanish: false, split: false, tilde: false },
      { text: "~/f", vanish: false, split: false, tilde: true },
      { text: "'~/g'", vanish: false, split: false, tilde: false },
      { text: "*.ts", vanish: false, split: true, tilde: false },
      { text: "pre$x", vanish: false, split: true, tilde: false },
    ],
  );
});

Deno.test("parseShell() lists what it cannot settle before the run", () => {
  const cases: [string, RegExp][] = [
    ["echo 'x", /syntax error/],
    ["if true; then", /syntax error/],
    ["ls )", /syntax error/],
    ["a && && b", /syntax error/],
    ["echo $((x))", /arithmetic on a variable/],
    ["echo $(( $x + 1 ))", /arithmetic on a variable/],
    ["(( y = 2 ))", /arithmetic on a variable/],
    ["echo ${a[$i]}", /array subscript/],
    ["a[i]=1", /array subscript/],
    ["[[ $x -eq 1 ]]", /evaluates a variable's contents/],
    ["[[ -v a ]]", /-v/],
    ["echo ${s:$n}", /substring offset/],
    ["x='$(rm v)'; echo \"${x@P}\"", /\$\{…@P\} evaluates/],
    ["echo ${x@E} ${x@A} ${x@a} ${x@K}", /\$\{…@E\} evaluates/],
    ["x='a[$(rm v)]'; echo ${!x}", /\$\{!x\} uses a variable's contents as a name/],
    ['echo "${!x:-}"', /\$\{!x\} uses/],
    ["B=([x]=1)", /array subscript/],
    ["declare -a B=([i]=1 [0]=2)", /array subscript/],
    ["exec {a[i]}>/dev/null", /descriptor variable/],
    ["echo " + "$(".repeat(80) + "x" + ")".repeat(80), /nest|syntax/],
  ];
  for (const [source, why] of cases) {
    const problems = parseShell(source).problems;
    assert.ok(problems.some((p) => why.test(p)), `${source}: ${JSON.stringify(problems)}`);
  }
  for (
    const fine of [
      "echo $((1 + 2))",
      "echo ${a[0]} ${a[@]}",
      "[[ 1 -eq 1 ]]",
      "echo ${s:1:2}",
      'echo ${!a[@]} ${!a[*]} ${!pre@} ${!pre*} "${x@Q}" ${x@U} ${x@u} ${x@L}',
      "B=([0]=1 y)",
      "exec {fd}>/dev/null",
    ]
  ) {
    assert.deepEqual(parseShell(fine).problems, [], fine);
  }
});

Deno.test("importing the policy loads no parser; parseShell() before loading throws", async () => {
  const script = `
    import { decide, parseRule, shellParserLoaded } from "${ROOT}tools/policy/mod.ts";
    import { parseShell } from "${ROOT}tools/policy/shell.ts";
    const base = { project: "/p", home: "/h" };
    const rules = [parseRule("Bash", "allow", { scope: "flag" }, base), parseRule("Read(./x)", "allow", { scope: "flag" }, base)];
    const ctx = { workspace: "/w", home: "/h", realPath: (p) => p };
    const d = decide(rules, { tool: "bash", args: { command: "npm test; curl x" } }, ctx);
    let threw = "";
    try { parseShell("ls"); } catch (e) { threw = e.message; }
    console.log(JSON.stringify({ effect: d.effect, loaded: shellParserLoaded(), threw }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-check", script],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stderr), "");
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), {
    effect: "allow",
    loaded: false,
    threw: "parseShell() called before loadShellParser() finished",
  });
});
