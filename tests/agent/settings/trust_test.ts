import assert from "node:assert/strict";
import {
  isRefused,
  isTrusted,
  refuseWorkspace,
  trustWorkspace,
  untrustWorkspace,
} from "../../../agent/settings/trust.ts";

Deno.test("trustWorkspace() is remembered by real path across symlinks", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-trust-" }));
  const prev = Deno.env.get("CRAB_HOME");
  Deno.env.set("CRAB_HOME", `${root}/home`);
  try {
    Deno.mkdirSync(`${root}/ws`);
    Deno.symlinkSync(`${root}/ws`, `${root}/link`);
    assert.equal(isTrusted(`${root}/ws`), false);
    trustWorkspace(`${root}/link`);
    assert.equal(isTrusted(`${root}/ws`), true);
    assert.equal(isTrusted(`${root}/other`), false);
    assert.equal(untrustWorkspace(`${root}/ws`), true);
    assert.equal(isTrusted(`${root}/link`), false);
  } finally {
    if (prev === undefined) Deno.env.delete("CRAB_HOME");
    else Deno.env.set("CRAB_HOME", prev);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("refuseWorkspace() is remembered, never counts as trust, and a later yes replaces it", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-trust-" }));
  const prev = Deno.env.get("CRAB_HOME");
  Deno.env.set("CRAB_HOME", `${root}/home`);
  try {
    Deno.mkdirSync(`${root}/ws`);
    assert.equal(isRefused(`${root}/ws`), false);
    refuseWorkspace(`${root}/ws`);
    assert.equal(isRefused(`${root}/ws`), true);
    assert.equal(isTrusted(`${root}/ws`), false);
    trustWorkspace(`${root}/ws`);
    assert.equal(isRefused(`${root}/ws`), false);
    assert.equal(isTrusted(`${root}/ws`), true);
    const record = JSON.parse(Deno.readTextFileSync(`${root}/home/trust.json`));
    assert.deepEqual(Object.keys(record.refused), []);
  } finally {
    if (prev === undefined) Deno.env.delete("CRAB_HOME");
    else Deno.env.set("CRAB_HOME", prev);
    Deno.removeSync(root, { recursive: true });
  }
});
