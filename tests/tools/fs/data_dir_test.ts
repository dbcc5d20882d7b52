import assert from "node:assert/strict";
import { join } from "node:path";
import { configDir, dataDir, ensureDataDir, homeDir } from "../../../tools/fs/data_dir.ts";
import { homedir } from "node:os";

const env = (vars: Record<string, string>) => ({ get: (k: string) => vars[k] });

Deno.test("dataDir() takes CRAB_HOME, then XDG_DATA_HOME/crab, then ~/.local/share/crab", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-datadir-" }));
  try {
    const home = join(root, "home");
    assert.equal(dataDir(env({ HOME: home })), join(home, ".local", "share", "crab"));
    assert.equal(
      dataDir(env({ HOME: home, XDG_DATA_HOME: join(root, "x") })),
      join(root, "x/crab"),
    );
    assert.equal(
      dataDir(env({ HOME: home, XDG_DATA_HOME: join(root, "x"), CRAB_HOME: join(root, "c") })),
      join(root, "c"),
    );
    // An empty variable counts as unset.
    assert.equal(
      dataDir(env({ HOME: home, CRAB_HOME: "", XDG_DATA_HOME: "" })),
      join(home, ".local/share/crab"),
    );
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("ensureDataDir() makes the folder, private to the user", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-datadir-" }));
  try {
    const dir = ensureDataDir("spill", env({ CRAB_HOME: join(root, "c") }));
    assert.equal(dir, join(root, "c", "spill"));
    assert.equal(Deno.statSync(dir).mode! & 0o777, 0o700);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("configDir() takes XDG_CONFIG_HOME/crab, then ~/.config/crab", () => {
  assert.equal(configDir(env({ HOME: "/h" })), "/h/.config/crab");
  assert.equal(configDir(env({ HOME: "/h", XDG_CONFIG_HOME: "/x" })), "/x/crab");
});

Deno.test("homeDir() is HOME when set, else the account's home as node:os finds it", () => {
  assert.equal(homeDir(new Map([["HOME", "/somewhere"]])), "/somewhere");
  // Without HOME node:os asks the account database, as homeDir() reads it.
  const env = { ...Deno.env.toObject() };
  delete env.HOME;
  const out = new Deno.Command(Deno.execPath(), {
    args: ["eval", "console.log(require('node:os').homedir())"],
    env,
    clearEnv: true,
  }).outputSync();
  const expected = new TextDecoder().decode(out.stdout).trim() || homedir();
  assert.equal(homeDir(new Map()), expected);
});
