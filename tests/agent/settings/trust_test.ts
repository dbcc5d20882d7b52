import assert from "node:assert/strict";
import {
  isRefused,
  isTrusted,
  refuseWorkspace,
  trustWorkspace,
  untrustWorkspace,
} from "../../../agent/settings/trust.ts";

/** A temp dir, and the environment that makes `home` in it crab's data dir. */
function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-trust-" }));
  return {
    root,
    env: { get: (k: string) => k === "CRAB_HOME" ? `${root}/home` : undefined },
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

Deno.test("trustWorkspace() is remembered by real path across symlinks", () => {
  using p = place();
  const { root, env } = p;
  Deno.mkdirSync(`${root}/ws`);
  Deno.symlinkSync(`${root}/ws`, `${root}/link`);
  assert.equal(isTrusted(`${root}/ws`, env), false);
  trustWorkspace(`${root}/link`, env);
  assert.equal(isTrusted(`${root}/ws`, env), true);
  assert.equal(isTrusted(`${root}/other`, env), false);
  assert.equal(untrustWorkspace(`${root}/ws`, env), true);
  assert.equal(isTrusted(`${root}/link`, env), false);
});

Deno.test("refuseWorkspace() is remembered, never counts as trust, and a later yes replaces it", () => {
  using p = place();
  const { root, env } = p;
  Deno.mkdirSync(`${root}/ws`);
  assert.equal(isRefused(`${root}/ws`, env), false);
  refuseWorkspace(`${root}/ws`, env);
  assert.equal(isRefused(`${root}/ws`, env), true);
  assert.equal(isTrusted(`${root}/ws`, env), false);
  trustWorkspace(`${root}/ws`, env);
  assert.equal(isRefused(`${root}/ws`, env), false);
  assert.equal(isTrusted(`${root}/ws`, env), true);
  const record = JSON.parse(Deno.readTextFileSync(`${root}/home/trust.json`));
  assert.deepEqual(Object.keys(record.refused), []);
});
