import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { VERSION } from "../../version.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = Deno.execPath();

/** Deno's cache (npm packages), which the temp HOME would otherwise hide. */
function denoDir(): string {
  return Deno.env.get("DENO_DIR") ??
    join(Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache"), "deno");
}

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
  const tmp = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-install-" }));
  try {
    const installRoot = join(tmp, "root");
    const ws = join(tmp, "ws");
    Deno.mkdirSync(ws);
    const env = {
      // The installed command is a shell script that runs `deno` from PATH.
      PATH: `${dirname(DENO)}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      HOME: tmp,
      DENO_DIR: denoDir(),
      DENO_INSTALL_ROOT: installRoot,
      CRAB_HOME: join(tmp, "home"),
      XDG_CONFIG_HOME: join(tmp, "config"),
      NO_COLOR: "1",
    };
    const task = await run(DENO, ["task", "--config", join(ROOT, "deno.json"), "install"], {
      cwd: ws,
      env,
    });
    assert.equal(task.code, 0, task.stderr);
    const bin = join(installRoot, "bin", "crab");
    assert.match(task.stdout, new RegExp(`^installed ${bin} \\(`));
    assert.ok((Deno.statSync(bin).mode ?? 0) & 0o111, "the command is executable");
    const script = Deno.readTextFileSync(bin);
    const line = script.split("\n").find((l) => l.startsWith("exec deno run ")) ?? script;
    for (const flag of presetFlags("full")) {
      assert.ok(line.split(" ").includes(flag), `${flag} missing from: ${line}`);
    }
    assert.ok(line.includes(`file://${join(ROOT, "main.ts")}`), line);

    const version = await run(bin, ["--version"], { cwd: ws, env });
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout, `crab ${VERSION}\n`);

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

    // Installing again replaces the command instead of failing.
    const again = await run(DENO, ["task", "--config", join(ROOT, "deno.json"), "install"], {
      cwd: ws,
      env,
    });
    assert.equal(again.code, 0, again.stderr);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("deno task install --print shows the deno install command with the preset's flags", async () => {
  const r = await run(DENO, ["task", "--quiet", "install", "--print", "--name", "crab-dev"], {
    cwd: ROOT,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `deno install --global --force --quiet --name crab-dev --config ${join(ROOT, "deno.json")} ` +
      `${presetFlags("full").join(" ")} ${join(ROOT, "main.ts")}\n`,
  );
  const bad = await run(DENO, ["task", "--quiet", "install", "--nope"], {
    cwd: ROOT,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
  });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^error: unknown argument "--nope"\n/);
});
