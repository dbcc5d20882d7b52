import assert from "node:assert/strict";
import {
  isRefused,
  isTrusted,
  refuseWorkspace,
  trustRecord,
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

Deno.test("trustRecord() says never asked, declined or trusted, with the date of the answer", () => {
  using p = place();
  const { root, env } = p;
  Deno.mkdirSync(`${root}/ws`);
  assert.deepEqual(trustRecord(`${root}/ws`, env), { state: "never asked" });
  refuseWorkspace(`${root}/ws`, env);
  const refused = JSON.parse(Deno.readTextFileSync(`${root}/home/trust.json`)).refused;
  assert.deepEqual(trustRecord(`${root}/ws`, env), {
    state: "declined",
    since: refused[`${root}/ws`].refusedAt,
  });
  trustWorkspace(`${root}/ws`, env);
  const trusted = JSON.parse(Deno.readTextFileSync(`${root}/home/trust.json`)).workspaces;
  assert.deepEqual(trustRecord(`${root}/ws`, env), {
    state: "trusted",
    since: trusted[`${root}/ws`].trustedAt,
  });
});

Deno.test("trustWorkspace() keeps the digest it is given: what the user was shown", () => {
  using p = place();
  const { root, env } = p;
  Deno.mkdirSync(`${root}/ws`);
  trustWorkspace(`${root}/ws`, env, "digest of an earlier look");
  assert.equal(isTrusted(`${root}/ws`, env), false);
  assert.equal(trustRecord(`${root}/ws`, env).state, "changed");
});
