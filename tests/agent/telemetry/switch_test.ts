import assert from "node:assert/strict";
import { join } from "node:path";
import { telemetryRequested, workspaceOf } from "../../../agent/telemetry/switch.ts";
import {
  EXPORT_TIMEOUT_MS,
  RESTART_MARK,
  restartEnv,
  tracedCommand,
} from "../../../agent/telemetry/restart.ts";
import { trustWorkspace } from "../../../agent/settings/trust.ts";

const env = (vars: Record<string, string>) => ({ get: (k: string) => vars[k] });

/**
 * Runs `fn` with a workspace and `dirs`, the variables that put HOME, crab's
 * data dir (CRAB_HOME) and config dir (XDG_CONFIG_HOME) in a temp dir.
 */
async function withDirs(
  fn: (d: { ws: string; config: string; dirs: Record<string, string> }) => Promise<void>,
) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-switch-" }));
  const ws = join(root, "ws");
  const config = join(root, "config", "crab");
  Deno.mkdirSync(join(ws, ".crab"), { recursive: true });
  Deno.mkdirSync(config, { recursive: true });
  const dirs = {
    HOME: root,
    CRAB_HOME: join(root, "home"),
    XDG_CONFIG_HOME: join(root, "config"),
  };
  try {
    await fn({ ws, config, dirs });
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}
const write = (path: string, value: unknown) => Deno.writeTextFileSync(path, JSON.stringify(value));

Deno.test("await telemetryRequested() is off by default and follows CRAB_ENABLE_TELEMETRY over config", async () => {
  await withDirs(async ({ ws, config, dirs }) => {
    const argv = ["--cwd", ws, "-p", "go"];
    assert.equal(await telemetryRequested(argv, env(dirs)), false);
    assert.equal(
      await telemetryRequested(argv, env({ ...dirs, CRAB_ENABLE_TELEMETRY: "1" })),
      true,
    );
    assert.equal(
      await telemetryRequested(argv, env({ ...dirs, CRAB_ENABLE_TELEMETRY: "true" })),
      true,
    );
    write(join(config, "config.json"), { telemetry: true });
    assert.equal(await telemetryRequested(argv, env(dirs)), true);
    assert.equal(
      await telemetryRequested(argv, env({ ...dirs, CRAB_ENABLE_TELEMETRY: "0" })),
      false,
    );
  });
});

Deno.test("await telemetryRequested() takes a project's setting only in a trusted workspace", async () => {
  await withDirs(async ({ ws, dirs }) => {
    write(join(ws, ".crab", "config.json"), { telemetry: true });
    assert.equal(await telemetryRequested(["--cwd", ws], env(dirs)), false);
    assert.equal(await telemetryRequested([`--cwd=${ws}`, "--trust-project"], env(dirs)), true);
    trustWorkspace(ws, env(dirs));
    assert.equal(await telemetryRequested(["--cwd", ws], env(dirs)), true);
  });
});

Deno.test("await telemetryRequested() turns nothing on for a broken config", async () => {
  await withDirs(async ({ ws, config, dirs }) => {
    Deno.writeTextFileSync(join(config, "config.json"), "{ not json");
    assert.equal(await telemetryRequested(["--cwd", ws], env(dirs)), false);
  });
});

Deno.test("workspaceOf() reads --cwd in both spellings, else the current directory", () => {
  assert.equal(workspaceOf(["--cwd", "/tmp/x", "-p", "go"]), "/tmp/x");
  assert.equal(workspaceOf(["--cwd=/tmp/y"]), "/tmp/y");
  assert.equal(workspaceOf(["-p", "--cwd"]), Deno.cwd());
});

Deno.test("tracedCommand() restarts the agent, crab tool and crab mcp serve only", () => {
  const cases: [string[], boolean][] = [
    [[], true],
    [["-p", "metrics"], true],
    [["--model", "m", "--print"], true],
    [["tool", "read", "{}"], true],
    [["mcp", "serve"], true],
    [["mcp", "list"], false],
    [["metrics", "export", "--otlp"], false],
    [["sessions"], false],
    [["--help"], false],
  ];
  assert.deepEqual(cases.map(([a]) => tracedCommand(a)), cases.map(([, want]) => want));
});

Deno.test("restartEnv() adds OTEL_DENO and defaults the user did not set, and names them", () => {
  assert.deepEqual(restartEnv(env({})), {
    OTEL_DENO: "true",
    OTEL_DENO_CONSOLE: "ignore",
    OTEL_SERVICE_NAME: "crab",
    OTEL_RESOURCE_ATTRIBUTES: "service.version=0.1.0",
    OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS),
    [RESTART_MARK]:
      "OTEL_DENO,OTEL_DENO_CONSOLE,OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES,OTEL_EXPORTER_OTLP_TIMEOUT",
  });
  const given = restartEnv(
    env({ OTEL_SERVICE_NAME: "ci-bot", OTEL_EXPORTER_OTLP_TIMEOUT: "5000" }),
  );
  assert.equal(given.OTEL_SERVICE_NAME, undefined);
  assert.equal(given.OTEL_EXPORTER_OTLP_TIMEOUT, undefined);
  assert.equal(given[RESTART_MARK], "OTEL_DENO,OTEL_DENO_CONSOLE,OTEL_RESOURCE_ATTRIBUTES");
});
