/**
 * crab's own code, Deno cache and launcher stay out of reach of sandboxed
 * commands even under a writable parent, with real bubblewrap, real files and
 * a real crab started from a copy of this checkout. Folders live under
 * /var/tmp: /tmp is the sandbox's private directory.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import {
  crabOrigin,
  LAUNCHER_VAR,
  OUTER_DENO_DIR_VAR,
  OWN_DENO_DIR,
  ownRoots,
  takeLauncherEnv,
} from "../../../tools/host/own_roots.ts";
import { presetFlags } from "../../../tools/host/capabilities.ts";
import { Dispatcher, type DispatchResult } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { bashTool } from "../../../tools/bash.ts";

const ROOT = Deno.realPathSync(new URL("../../../", import.meta.url).pathname);

function tempRoot(): string {
  return Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-own-" }));
}

function put(path: string, text: string): string {
  Deno.mkdirSync(dirname(path), { recursive: true });
  Deno.writeTextFileSync(path, text);
  return path;
}

/** The Deno cache this test process runs from. */
function denoDir(): string {
  return Deno.env.get("DENO_DIR") ||
    join(Deno.env.get("XDG_CACHE_HOME") || join(Deno.env.get("HOME") ?? "/root", ".cache"), "deno");
}

Deno.test("ownRoots() names the deno binary, the checkout and the Deno cache of a crab run from source", () => {
  const { launchers, ...origin } = crabOrigin();
  assert.deepEqual(origin, {
    executable: Deno.execPath(),
    checkout: ROOT + "/",
    denoDir: denoDir(),
  });
  assert.ok(Array.isArray(launchers));
  const roots = ownRoots("/var/tmp");
  for (const p of [Deno.execPath(), ROOT, denoDir()]) {
    assert.ok(roots.includes(Deno.realPathSync(p)), `${p} missing from ${roots}`);
  }
});

Deno.test("ownRoots() keeps crab's checkout writable only for a workspace inside it", () => {
  const root = tempRoot();
  try {
    const checkout = join(root, "crab");
    put(join(checkout, "main.ts"), "");
    put(join(checkout, OWN_DENO_DIR, "npm", "x.js"), "");
    put(join(checkout, "node_modules", "x", "index.js"), "");
    const origin = {
      executable: put(join(root, "bin", "deno"), ""),
      checkout,
      denoDir: join(checkout, OWN_DENO_DIR),
      launchers: [put(join(root, "bin", "crab"), ""), join(root, "bin", "gone")],
      codeCache: join(root, "missing.cache"),
    };
    const others = [
      join(root, "bin", "deno"),
      join(checkout, OWN_DENO_DIR),
      join(root, "bin", "crab"),
      join(checkout, "node_modules"),
    ];
    assert.deepEqual(ownRoots(checkout, origin), others);
    assert.deepEqual(ownRoots(join(checkout, "tools"), origin), others);
    assert.deepEqual(ownRoots(root, origin), [...others, checkout]);
    assert.deepEqual(ownRoots(join(root, "other"), origin), [...others, checkout]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("takeLauncherEnv() gives the user's DENO_DIR back and remembers crab's own cache", () => {
  const env = (vars: Record<string, string>) => {
    const m = new Map(Object.entries(vars));
    return {
      m,
      get: (k: string) => m.get(k),
      set: (k: string, v: string) => void m.set(k, v),
      delete: (k: string) => void m.delete(k),
    };
  };
  const user = env({
    DENO_DIR: "/c/.deno",
    [OUTER_DENO_DIR_VAR]: "/u/deno",
    [LAUNCHER_VAR]: "/b/crab",
  });
  takeLauncherEnv(user);
  assert.deepEqual(Object.fromEntries(user.m), { DENO_DIR: "/u/deno" });
  assert.equal(crabOrigin().denoDir, "/c/.deno");
  assert.deepEqual(crabOrigin().launchers, ["/b/crab"]);
  const none = env({ DENO_DIR: "/c/.deno", [OUTER_DENO_DIR_VAR]: "" });
  takeLauncherEnv(none);
  assert.deepEqual(Object.fromEntries(none.m), {});
  // Started without a launcher: nothing to take.
  const plain = env({ DENO_DIR: "/u/deno" });
  takeLauncherEnv(plain);
  assert.deepEqual(Object.fromEntries(plain.m), { DENO_DIR: "/u/deno" });
  assert.equal(crabOrigin().denoDir, "/c/.deno");
});

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

Deno.test("bash() under a writable parent cannot change crab's Deno cache or launcher; their siblings stay writable", async () => {
  const root = tempRoot();
  try {
    const own = join(root, "cache", "crab-deno");
    const dep = put(join(own, "npm/registry.npmjs.org/dep/1.0.0/index.js"), "export {};\n");
    put(join(own, "gen/file/x.ts.js"), "// emitted\n");
    const launcher = put(join(root, "bin", "crab"), "#!/bin/sh\n");
    Deno.mkdirSync(join(root, "cache", "deno"));
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    takeLauncherEnv({
      get: (k) => ({ DENO_DIR: own, [OUTER_DENO_DIR_VAR]: "", [LAUNCHER_VAR]: launcher })[k],
      set: () => {},
      delete: () => {},
    });
    const session = new Session(ws);
    session.sandbox = { mode: "workspace-write", net: false, writable: [root] };
    const dispatcher = new Dispatcher({
      registry: new Registry([bashTool]),
      session,
      policy: new Policy({ yolo: true }),
      sink: new MemorySink(),
      runId: "own-roots-test",
    });
    const command = [
      `echo evil >> ${dep}`,
      `echo evil > ${launcher}`,
      `mv ${launcher} ${root}/bin/old`,
      `mv ${own} ${root}/cache/moved`,
      `mv ${root}/cache ${root}/cache2`,
      `rm -r ${own}/gen`,
      `touch ${root}/cache/deno/mine`,
      `touch ${root}/bin/other`,
    ].map((c) => `{ ${c}; } 2>/dev/null; echo $?`).join("\n");
    const r = out(await dispatcher.dispatch("bash", { command }));
    assert.deepEqual(r.trim().split("\n"), ["1", "1", "1", "1", "1", "1", "0", "0"]);
    assert.equal(Deno.readTextFileSync(dep), "export {};\n");
    assert.equal(Deno.readTextFileSync(launcher), "#!/bin/sh\n");
    assert.equal(Deno.readTextFileSync(join(own, "gen/file/x.ts.js")), "// emitted\n");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

/** Copies what crab needs to run from `ROOT` to `to`. */
function copyCheckout(to: string): void {
  Deno.mkdirSync(to, { recursive: true });
  const copy = (rel: string) => {
    const from = join(ROOT, rel);
    if (Deno.statSync(from).isDirectory) {
      Deno.mkdirSync(join(to, rel), { recursive: true });
      for (const e of Deno.readDirSync(from)) copy(join(rel, e.name));
    } else Deno.copyFileSync(from, join(to, rel));
  };
  for (const rel of ["main.ts", "version.ts", "deno.json", "deno.lock", "tools", "agent", "mcp"]) {
    copy(rel);
  }
}

Deno.test("crab from a checkout under a writable parent: bash cannot change its code or cache, and gets the user's DENO_DIR", async () => {
  const root = tempRoot();
  try {
    const checkout = join(root, "crab");
    copyCheckout(checkout);
    // crab's own cache, as `deno task install` sets it up; its npm packages are this one's.
    Deno.mkdirSync(join(checkout, OWN_DENO_DIR));
    Deno.symlinkSync(join(denoDir(), "npm"), join(checkout, OWN_DENO_DIR, "npm"));
    const userDeno = join(root, "cache", "deno");
    Deno.mkdirSync(userDeno, { recursive: true });
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    const config = put(
      join(root, "config", "crab", "config.json"),
      JSON.stringify({ sandbox: { writable: [root] } }),
    );
    const main = Deno.readTextFileSync(join(checkout, "main.ts"));
    const crab = async (cwd: string, command: string) => {
      const o = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...presetFlags("full"),
          "--config",
          join(checkout, "deno.json"),
          join(checkout, "main.ts"),
          "tool",
          "bash",
          JSON.stringify({ command }),
        ],
        cwd,
        clearEnv: true,
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          HOME: root,
          CRAB_HOME: join(root, "data"),
          XDG_CONFIG_HOME: dirname(dirname(config)),
          NO_COLOR: "1",
          DENO_DIR: join(checkout, OWN_DENO_DIR),
          [OUTER_DENO_DIR_VAR]: userDeno,
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      assert.equal(o.code, 0, dec.decode(o.stderr));
      return dec.decode(o.stdout);
    };
    const probe = [
      `echo evil >> ${checkout}/main.ts`,
      `touch ${checkout}/.deno/gen/x`,
      `touch ${userDeno}/mine`,
      `touch ${root}/sibling`,
    ].map((c) => `{ ${c}; } 2>/dev/null; echo $?`).join("\n") +
      `\necho "DENO_DIR=$DENO_DIR"; env | grep -c -e ^${OUTER_DENO_DIR_VAR}= -e ^${LAUNCHER_VAR}= || true`;
    const elsewhere = await crab(ws, probe);
    assert.equal(elsewhere, `1\n1\n0\n0\nDENO_DIR=${userDeno}\n0\n`);
    assert.equal(Deno.readTextFileSync(join(checkout, "main.ts")), main);

    // Working on crab itself: its sources are the work, its cache is not.
    const itself = await crab(checkout, probe);
    // The change to its own source is the work, and undo says so.
    assert.equal(
      itself,
      `0\n1\n0\n0\nDENO_DIR=${userDeno}\n0\n\nfiles changed: +0 ~1 -0: ~main.ts\n`,
    );
    assert.equal(Deno.readTextFileSync(join(checkout, "main.ts")), main + "evil\n");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
