import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { sleepMarker } from "../../support/marker.ts";

const OWNER = new URL("../../../tools/host/processes.ts", import.meta.url).href;

/**
 * Starts a deno child that spawns a process group, registers it, prints its
 * pgid and waits: for a signal, or, ending by `exit`, for its stdin to close.
 */
function startOwner(marker: string, ending: "sigterm" | "exit" | "sighup") {
  const script = `
    import { exit, registerGroup } from "${OWNER}";
    const child = new Deno.Command("bash", {
      args: ["-c", "sleep ${marker} & sleep ${marker}; wait"], detached: true, stdin: "null",
    }).spawn();
    registerGroup(child.pid, "test");
    console.log(child.pid);
    ${
    ending === "exit"
      ? "for await (const _ of Deno.stdin.readable); exit(0);"
      : "setInterval(() => {}, 1000);"
  }
  `;
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

function survivors(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,args"] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l.trim().split(/\s+/).slice(1).join(" ") === `sleep ${marker}`
  );
}

async function firstLine(child: Deno.ChildProcess): Promise<string> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (!buf.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
  }
  reader.releaseLock();
  return buf.trim();
}

for (const ending of ["sigterm", "sighup", "exit"] as const) {
  Deno.test(`registerGroup() groups die when crab ends by ${ending}`, async () => {
    const marker = sleepMarker(900);
    const child = startOwner(marker, ending);
    const pid = await firstLine(child);
    assert.match(pid, /^\d+$/);
    // bash starts its two sleeps after the pid is printed: wait for them.
    await until(() => survivors(marker).length === 2, "both sleeps run");
    if (ending === "sigterm") child.kill("SIGTERM");
    if (ending === "sighup") child.kill("SIGHUP");
    // Ending by exit: once its input closes (not at a fixed time, which a slow start outlasts).
    await child.stdin.close().catch(() => {});
    const status = await child.status;
    await child.stdout.cancel().catch(() => {});
    assert.equal(status.code, { sigterm: 143, sighup: 129, exit: 0 }[ending]);
    // Killed with the group, not left to run their 900 s.
    await until(() => survivors(marker).length === 0, "no sleep survives");
  });
}

Deno.test("killProcessGroup() ends an unregistered group through the leader it is given when --allow-run is scoped", async () => {
  // Scoped to `sleep`, Deno refuses a signal to the group; the child's own kill() is allowed.
  const dir = Deno.makeTempDirSync({ prefix: "crab-killgroup-" });
  try {
    const script = `${dir}/kill.ts`;
    Deno.writeTextFileSync(
      script,
      `import { killProcessGroup } from "${OWNER}";
      const child = new Deno.Command("sleep", { args: ["600"], detached: true, stdin: "null" }).spawn();
      console.log(killProcessGroup(child.pid, "SIGKILL"), killProcessGroup(child.pid, "SIGKILL", child));
      console.log((await child.status).signal);\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-check", "--allow-run=sleep", "--allow-read", "--allow-env", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(out.stdout);
    assert.equal(said, "false true\nSIGKILL\n", new TextDecoder().decode(out.stderr));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
