import assert from "node:assert/strict";
import { join } from "node:path";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";
import { OWN_DENO_DIR_VAR } from "../../tools/host/own_roots.ts";
import { VERSION } from "../../version.ts";
import { denoDir, installCrab } from "../support/cli.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = Deno.execPath();

async function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("deno task install puts a crab with the full preset's flags into DENO_INSTALL_ROOT", async () => {
  using crab = await installCrab();
  const tmp = crab.dir;
  const installRoot = crab.env.DENO_INSTALL_ROOT;
  const crabCache = crab.env[OWN_DENO_DIR_VAR];
  const ws = join(tmp, "ws");
  Deno.mkdirSync(ws);
  const env: Record<string, string> = {
    ...crab.env,
    CRAB_HOME: join(tmp, "home"),
    XDG_CONFIG_HOME: join(tmp, "config"),
  };
  const installed = crab.ran;
  assert.equal(installed.code, 0, installed.stderr);
  const bin = join(installRoot, "bin", "crab");
  assert.match(installed.stdout, new RegExp(`^installed ${bin} \\(`));
  assert.ok((Deno.statSync(bin).mode ?? 0) & 0o111, "the command is executable");
  const script = Deno.readTextFileSync(bin);
  const line = script.split("\n").find((l) => l.startsWith("exec deno run ")) ?? script;
  for (const flag of [...presetFlags("full"), ...RUNTIME_FLAGS]) {
    assert.ok(line.split(" ").includes(flag), `${flag} missing from: ${line}`);
  }
  // It runs the bundle, built by the install.
  assert.ok(line.includes(`'${join(ROOT, "dist", "installed", "main.js")}'`), line);
  const built = Deno.readLinkSync(join(ROOT, "dist", "installed"));
  assert.ok(Deno.statSync(join(ROOT, "dist", built, "main.js")).isFile);

  const version = await run(bin, ["--version"], { cwd: ws, env });
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout, `crab ${VERSION}\n`);
  assert.equal(version.stderr, "", "an unchanged checkout runs the bundle as it is");

  // A checkout changed since the build: the next start builds again, then runs.
  Deno.utimeSync(join(ROOT, "dist", "installed.stamp"), new Date(0), new Date(0));
  const rebuilt = await run(bin, ["--version"], { cwd: ws, env });
  assert.equal(rebuilt.code, 0, rebuilt.stderr);
  assert.equal(rebuilt.stdout, `crab ${VERSION}\n`);
  assert.match(rebuilt.stderr, /^crab: rebuilt the bundle after a change in /);
  assert.notEqual(Deno.readLinkSync(join(ROOT, "dist", "installed")), built);
  assert.ok(Deno.statSync(join(ROOT, "dist", built)).isDirectory, "the build before is kept");

  // The installed command works on the folder it is started in; ${PWD} names it.
  Deno.writeTextFileSync(
    join(ws, ".mcp.json"),
    JSON.stringify({
      mcpServers: {
        where: { command: "bash", args: ["-c", 'echo "arg=$0" >&2; exit 3', "${PWD}"] },
      },
    }),
  );
  const list = await run(bin, ["mcp", "list", "--trust-project"], {
    cwd: ws,
    env: { ...env, PWD: "/stale" },
  });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`stderr: arg=${ws}\\n`));

  // Under a writable parent, bash cannot replace the command; it gets the user's DENO_DIR.
  Deno.mkdirSync(join(tmp, "config", "crab"), { recursive: true });
  Deno.writeTextFileSync(
    join(tmp, "config", "crab", "config.json"),
    JSON.stringify({ sandbox: { writable: [tmp] } }),
  );
  const command = `{ echo evil >> ${bin}; } 2>/dev/null; echo $?; ` +
    `{ touch ${crabCache}/gen/x; } 2>/dev/null; echo $?; touch ${installRoot}/bin/other; ` +
    'echo $?; echo "DENO_DIR=$DENO_DIR"';
  const bash = await run(bin, ["tool", "bash", JSON.stringify({ command })], { cwd: ws, env });
  assert.equal(bash.stdout, `1\n1\n0\nDENO_DIR=${env.DENO_DIR}\n`, bash.stderr);
  assert.equal(Deno.readTextFileSync(bin), script);
  // `deno task crab` runs with the same cache of crab's own, and keeps the script too.
  const task = await run(DENO, [
    "task",
    "--quiet",
    "--config",
    join(ROOT, "deno.json"),
    "crab",
    "tool",
    "bash",
    JSON.stringify({ command }),
  ], { cwd: ws, env });
  assert.equal(task.stdout, `1\n1\n0\nDENO_DIR=${env.DENO_DIR}\n`, task.stderr);

  // Installing again replaces the command instead of failing.
  const again = await run(DENO, ["task", "--config", join(ROOT, "deno.json"), "install"], {
    cwd: ws,
    env,
  });
  assert.equal(again.code, 0, again.stderr);
});

Deno.test("deno task install --print shows the script: the bundle, rebuilt when a source file is newer, the source if that fails", async () => {
  const r = await run(DENO, ["task", "--quiet", "install", "--print"], {
    cwd: ROOT,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/h", DENO_DIR: denoDir() },
  });
  assert.equal(r.code, 0, r.stderr);
  const root = ROOT.replace(/\/$/, "");
  const lines = r.stdout.split("\n");
  const flags = [...presetFlags("full"), ...RUNTIME_FLAGS].join(" ");
  assert.equal(
    lines.find((l) => l.startsWith("if ")),
    `if [ ! -f '${root}/dist/installed/main.js' ] || [ ! -f '${root}/dist/installed.stamp' ] || ` +
      `[ -n "$(find '${root}/main.ts' '${root}/version.ts' '${root}/deno.json' '${root}/deno.lock' ` +
      `'${root}/agent' '${root}/tools' '${root}/mcp' '${root}/scripts/bundle.ts' ` +
      `'${root}/scripts/refresh_bundle.ts' -newer '${root}/dist/installed.stamp' -print -quit ` +
      `2>/dev/null)" ]; then`,
  );
  assert.deepEqual(lines.slice(-5), [
    "  deno run --allow-read --allow-write --allow-run --allow-env --no-prompt --quiet --config " +
    `'${root}/deno.json' '${root}/scripts/refresh_bundle.ts' >&2 ||`,
    `    exec deno run ${flags} --quiet --config '${root}/deno.json' 'file://${root}/main.ts' "$@"`,
    "fi",
    `exec deno run ${flags} --quiet '${root}/dist/installed/main.js' "$@"`,
    "",
  ]);
});

Deno.test("deno task install --source --print shows the script: the preset's flags, crab's own Deno cache, the user's DENO_DIR passed on", async () => {
  const r = await run(DENO, [
    "task",
    "--quiet",
    "install",
    "--print",
    "--source",
    "--name",
    "crab-dev",
  ], {
    cwd: ROOT,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: "/h", DENO_DIR: denoDir() },
  });
  assert.equal(r.code, 0, r.stderr);
  const root = ROOT.replace(/\/$/, "");
  assert.equal(
    r.stdout,
    "#!/bin/sh\n" +
      `# crab from ${root}, written by \`deno task install\`. crab runs with a Deno cache of\n` +
      "# its own, which its sandbox keeps out of reach of commands; the commands it starts get\n" +
      "# the DENO_DIR set here.\n" +
      `export CRAB_OUTER_DENO_DIR="\${DENO_DIR-}" CRAB_LAUNCHER='/h/.deno/bin/crab-dev' ` +
      `DENO_DIR='${root}/.deno'\n` +
      `exec deno run ${[...presetFlags("full"), ...RUNTIME_FLAGS].join(" ")} --quiet ` +
      `--config '${root}/deno.json' ` +
      `'file://${root}/main.ts' "$@"\n`,
  );
  const bad = await run(DENO, ["task", "--quiet", "install", "--nope"], {
    cwd: ROOT,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
  });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^error: unknown argument "--nope"\n/);
});
