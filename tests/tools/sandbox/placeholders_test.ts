/**
 * Protected paths outside the git directories, with real bubblewrap: other
 * tools' config in the project, symlinked protected names, placeholders shared
 * by overlapping calls, and placeholders a killed crab left behind.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Dispatcher, type DispatchResult } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { bashTool } from "../../../tools/bash.ts";
import { sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";

function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-ph-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const session = new Session(ws);
  session.sandbox = { mode: "workspace-write", net: false, writable: [] };
  // The tool alone, without a lock stage: overlapping calls reach the sandbox together.
  const dispatcher = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "placeholders-test",
  });
  return {
    root,
    ws,
    bash: (command: string) => dispatcher.dispatch("bash", { command }),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

Deno.test("bash() in the sandbox: other tools' config cannot be changed, what is created is moved away; the rest of .vscode stays open", async () => {
  using p = place();
  Deno.mkdirSync(join(p.ws, ".vscode"));
  Deno.writeTextFileSync(join(p.ws, ".vscode/tasks.json"), "{}\n");
  const r = out(
    await p.bash([
      `echo '{"tasks":[{"runOn":"folderOpen"}]}' > .vscode/tasks.json; echo tasks=$?`,
      "echo '{}' > .vscode/mcp.json; echo vmcp=$?",
      "echo '{}' > .vscode/extensions.json; echo ext=$?",
      "mkdir -p .claude && echo '{}' > .claude/settings.json; echo claude=$?",
      "echo 'curl x | sh' > .envrc; echo envrc=$?",
      "echo 'evil' > .bashrc; echo bashrc=$?",
    ].join("; ")),
  );
  assert.match(r, /tasks=1/);
  assert.match(r, /ext=0/);
  // Missing ones are free to create inside, and moved away after the call, saying where.
  for (const rel of [".vscode/mcp.json", ".claude/settings.json", ".envrc", ".bashrc"]) {
    assert.match(r, new RegExp(`created ${rel.replace(".", "\\.")}, a protected path`), rel);
    assert.equal(existsSync(join(p.ws, rel)), false, rel);
  }
  assert.equal(Deno.readTextFileSync(join(p.ws, ".vscode/tasks.json")), "{}\n");
  assert.equal(Deno.readTextFileSync(join(p.ws, ".vscode/extensions.json")), "{}\n");
  const moved = r.match(/crab moved it to (\S+)\./g)!.map((m) => m.slice(17, -1));
  assert.equal(moved.length, 4);
  assert.ok(moved.some((m) => Deno.readTextFileSync(m).includes("curl x | sh")));
});

Deno.test("bash() in the sandbox: a protected name that is a symlink is put back when replaced", async () => {
  using p = place();
  Deno.mkdirSync(join(p.ws, "conf"));
  Deno.writeTextFileSync(join(p.ws, "conf/mcp.json"), '{"mcpServers":{}}\n');
  Deno.symlinkSync("conf/mcp.json", join(p.ws, ".mcp.json"));
  const r = out(
    await p.bash(
      `echo x >> conf/mcp.json; echo target=$?; rm .mcp.json; ` +
        `echo '{"mcpServers":{"x":{"command":"touch"}}}' > .mcp.json; echo replaced=$?`,
    ),
  );
  assert.match(r, /target=1/);
  assert.match(r, /replaced=0/);
  assert.match(r, /put the link back/);
  assert.equal(Deno.readLinkSync(join(p.ws, ".mcp.json")), "conf/mcp.json");
  assert.equal(Deno.readTextFileSync(join(p.ws, ".mcp.json")), '{"mcpServers":{}}\n');
});

Deno.test("bash() in the sandbox: overlapping calls cannot remove each other's placeholders", async () => {
  using p = place();
  // The first call's placeholder is there when the second starts; the first ends first.
  const first = p.bash("sleep 0.4");
  await until(() => existsSync(join(p.ws, ".mcp.json")), "the first call's placeholder is there");
  const second = p.bash(
    "sleep 0.8; echo '{}' > .mcp.json; echo mcp=$?; mkdir -p .crab && echo '{}' > .crab/config.json; echo crab=$?",
  );
  out(await first);
  const r = out(await second);
  assert.match(r, /mcp=1/);
  assert.match(r, /crab=1/);
  assert.deepEqual([...Deno.readDirSync(p.ws)], []);
});

/** What a failed sweep leaves to look at: the placeholder, the holds and what they name. */
function placeholderState(ws: string, home: string): string {
  const lines: string[] = [];
  try {
    lines.push(
      `.mcp.json holds: ${[...Deno.readDirSync(join(ws, ".mcp.json"))].map((e) => e.name)}`,
    );
  } catch (e) {
    lines.push(`.mcp.json: ${e}`);
  }
  const dir = join(home, "sandbox", "holds");
  for (const e of Deno.readDirSync(dir)) {
    const f = join(dir, e.name);
    lines.push(`${e.name}: ${JSON.stringify(Deno.readTextFileSync(f))} free=${holdsFree(dir)}`);
  }
  return lines.join("\n");
}

/** Whether no process holds a hold file in `dir` (each is locked while its call runs). */
function holdsFree(dir: string): boolean {
  for (const e of Deno.readDirSync(dir)) {
    if (!e.name.endsWith(".hold")) continue;
    let f: Deno.FsFile;
    try {
      f = Deno.openSync(join(dir, e.name), { read: true, write: true });
    } catch {
      continue; // released and removed meanwhile
    }
    try {
      if (!f.tryLockSync(true)) return false;
    } finally {
      f.close();
    }
  }
  return true;
}

/** The processes whose command line has `marker`: pid, parent, state, command. */
function matching(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,ppid,stat,args"], stdout: "piped" })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.includes(marker));
}

/** Whether a process runs whose command line is `command` and its arguments, alone. */
function commandRuns(command: string): boolean {
  const out = new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").some((l) => l.trim() === command);
}

/** Whether a process runs whose command line has `marker`. */
function running(marker: string): boolean {
  return matching(marker).length > 0;
}

Deno.test("crab killed mid-call: the next crab removes its placeholders, and crab mcp add -s project works", async () => {
  using s = sandbox("crab-ph-kill-");
  const marker = `${30 + Math.random()}`;
  const child = s.spawn(["tool", "bash", JSON.stringify({ command: `sleep ${marker}` })]);
  // Wait for the call's command to run under its placeholder (the sandbox's probe, which runs
  // first, makes and removes placeholders of its own: one seen alone may be the probe's). The
  // command itself: crab's, bwrap's and the supervisor's command lines name it from the start.
  await until(
    () => commandRuns(`sleep ${marker}`) && existsSync(join(s.ws, ".mcp.json")),
    "the call runs, its placeholder there",
  );
  assert.ok(Deno.statSync(join(s.ws, ".mcp.json")).isDirectory);
  child.kill("SIGKILL");
  await child.output();
  // bwrap dies with its parent, and its command with it: wait for that end (a loaded machine
  // takes a moment; the sandbox's own processes, which name the workspace, go last), after
  // which the placeholder stays until someone sweeps it.
  await until(
    () => !running(`sleep ${marker}`) && !running(s.ws),
    "the killed call's command and sandbox have ended",
  ).catch((e) => {
    const left = [...matching(`sleep ${marker}`), ...matching(s.ws)];
    throw new Error(`${e.message}; still running:\n${left.join("\n")}`);
  });
  // The kernel drops the killed crab's hold on its placeholders once nothing of it is left.
  await until(() => holdsFree(join(s.home, "sandbox", "holds")), "the killed call's hold is free");
  assert.ok(existsSync(join(s.ws, ".mcp.json")));
  const add = await s.crab(["mcp", "add", "-s", "project", "tools", "--", "echo", "hi"]);
  assert.equal(add.code, 0, `${add.stderr}\n${placeholderState(s.ws, s.home)}`);
  assert.match(Deno.readTextFileSync(join(s.ws, ".mcp.json")), /"tools"/);
});

Deno.test("bash() in the sandbox: a protected file replaced outside during the call is reported", async () => {
  using p = place();
  Deno.writeTextFileSync(join(p.ws, ".mcp.json"), '{"mcpServers":{}}\n');
  // The sleep is the window in which the file is replaced, once the call has begun.
  const call = p.bash(
    'touch began; sleep 0.8; echo \'{"mcpServers":{"x":{}}}\' > .mcp.json; echo write=$?',
  );
  await until(() => existsSync(join(p.ws, "began")), "the call began");
  // An editor saves by writing a new file and renaming it over the old one.
  Deno.writeTextFileSync(join(p.ws, ".mcp.json.tmp"), '{"mcpServers":{"mine":{}}}\n');
  Deno.renameSync(join(p.ws, ".mcp.json.tmp"), join(p.ws, ".mcp.json"));
  const r = out(await call);
  assert.match(r, /\.mcp\.json was replaced outside the sandbox during the call/);
});

Deno.test("a protected path that appears while the layout is made (another call's placeholder) does not stall it", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-ph-race-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  try {
    // Another call's placeholders, made and removed as fast as a process can.
    const flipper = new Deno.Command("perl", {
      args: [
        "-e",
        "my $end = time + 4; while (time < $end) { for (qw(.mcp.json .crab .git .vscode)) { mkdir $_; rmdir $_ } }",
      ],
      cwd: ws,
    }).spawn();
    const layouts = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-write",
        new URL("./testdata/layout_loop.ts", import.meta.url).pathname,
        ws,
        "2500",
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const timer = setTimeout(() => layouts.kill("SIGKILL"), 15_000);
    const out = await layouts.output();
    clearTimeout(timer);
    await flipper.status;
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(
      out.code,
      0,
      "the layout loop hung or failed: " + new TextDecoder().decode(out.stderr),
    );
    assert.match(text, /layouts=\d{2,}/);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
