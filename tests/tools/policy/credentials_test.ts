import assert from "node:assert/strict";
import {
  credentialEntryProblem,
  credentialStoreOf,
  opensStore,
} from "../../../tools/policy/credentials.ts";

Deno.test("credentialStoreOf() takes ssh private keys, never a public key or known_hosts", () => {
  const store = (rel: string) => credentialStoreOf(`/home/u/${rel}`, "/home/u");
  assert.equal(store(".ssh/id_ed25519"), ".ssh/id_*");
  assert.equal(store(".ssh/deploy_rsa"), ".ssh/*_rsa");
  assert.equal(store(".ssh/id_ed25519.pub"), undefined);
  assert.equal(store(".ssh/known_hosts"), undefined);
  assert.equal(store(".aws/credentials"), ".aws");
});

Deno.test("opensStore() opens a store by its entry or a folder holding it", () => {
  assert.equal(opensStore([".aws"], ".aws"), true);
  assert.equal(opensStore([".ssh"], ".ssh/id_*"), true);
  assert.equal(opensStore([".ssh/"], ".ssh/*_rsa"), true);
  assert.equal(opensStore([".ss"], ".ssh/id_*"), false);
  assert.equal(opensStore([".aws"], ".azure"), false);
  assert.equal(credentialEntryProblem(".gnupg"), undefined);
  assert.match(credentialEntryProblem(".bashrc")!, /not a credential store/);
});
