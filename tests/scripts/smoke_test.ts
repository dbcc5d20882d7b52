import assert from "node:assert/strict";
import { join } from "node:path";
import { type Preset, presetFlags } from "../../tools/host/capabilities.ts";
import { VERSION } from "../../version.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SMOKE = join(ROOT, "scripts", "smoke.ts");
const MAIN = join(ROOT, "main.ts");

/** Deno's cache, so a stand-in finds crab's npm packages whatever HOME it gets. */
function denoDir(): string {
  return Deno.env.get("DENO_DIR") ??
    join(Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache"), "deno");
}

/**
 * A stand-in for a compiled binary built with `preset`'s flags: a script that
 * runs main.ts with exactly those flags (what `deno compile` bakes in).
 */
function standIn(dir: string, preset: Preset, opts: { version?: string } = {}): string {
  const path = join(dir, `crab-${preset}`);
  const run = `exec "${Deno.execPath()}" run ${presetFlags(preset).join(" ")} "${MAIN}" "$@"`;
  Deno.writeTextFileSync(
    path,
    "#!/bin/sh\n" +
      `export DENO_DIR="${denoDir()}"\n` +
      (opts.version ? `[ "$1" = --version ] && { echo "crab ${opts.version}"; exit 0; }\n` : "") +
      run + "\n",
  );
  Deno.chmodSync(path, 0o755);
  return path;
}

async function smoke(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-prompt", SMOKE, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("smoke.ts passes a build whose fence offers exactly its preset's tools", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-smoke-test-" });
  try {
    const full = await smoke(standIn(dir, "full"));
    assert.equal(full.code, 0, full.stderr);
    assert.equal(
      full.stdout,
      `smoke: ${join(dir, "crab-full")} ok (crab ${VERSION}, full: read, write, edit, bash, ` +
        "glob, grep, bash_output, bash_kill, web_fetch)\n",
    );
    const ro = await smoke(standIn(dir, "read-only"), "--preset", "read-only");
    assert.equal(ro.code, 0, ro.stderr);
    assert.match(ro.stdout, /ok \(crab .*, read-only: read, glob, grep\)\n$/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("smoke.ts fails a build that offers less than its preset, or names another version", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-smoke-test-" });
  try {
    const short = await smoke(standIn(dir, "read-only"), "--preset", "full");
    assert.equal(short.code, 1);
    const lines = short.stderr.split("\n");
    assert.deepEqual(lines.slice(0, 2), [
      `smoke: ${join(dir, "crab-read-only")} (full) failed:`,
      "  the build does not offer write, edit, bash, bash_output, bash_kill, web_fetch",
    ]);
    // The self-check's own words about what it left out, whatever flags it names.
    assert.match(lines[2], /^ {2}crab tool says: crab: this build leaves out write, edit \(no /);
    const old = await smoke(standIn(dir, "no-web", { version: "0.0.1" }), "--preset", "no-web");
    assert.equal(old.code, 1);
    assert.match(
      old.stderr,
      new RegExp(
        `--version printed "crab 0\\.0\\.1\\\\n" \\(exit 0\\), expected "crab ${VERSION}"`,
      ),
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
