import assert from "node:assert/strict";
import denoJson from "../../../deno.json" with { type: "json" };
import {
  COMPILED_RUNTIME_FLAGS,
  fenceFlags,
  isPrivateHost,
  needOf,
  PRESET_TOOLS,
  presetFlags,
  PRESETS,
  PRIVATE_RANGES,
  RUNTIME_FLAGS,
  sandboxProgram,
} from "../../../tools/host/capabilities.ts";

Deno.test("presetFlags() full preset and the runtime flags equal the flags of the crab task", () => {
  const task = denoJson.tasks.crab;
  // The flags are the words after `deno run` up to the entry point.
  const words = task.slice(task.indexOf("deno run ") + "deno run ".length).split(" ");
  const flags = words.slice(0, words.findIndex((w) => !w.startsWith("--")));
  assert.deepEqual(flags, [...presetFlags("full"), ...RUNTIME_FLAGS]);
});

Deno.test("presetFlags() every preset carries --no-prompt and unscoped --allow-env", () => {
  for (const preset of PRESETS) {
    for (const hosts of [["api.anthropic.com"], ["127.0.0.1:11434"]]) {
      const flags = presetFlags(preset, hosts);
      assert.ok(flags.includes("--no-prompt"), preset);
      assert.ok(flags.includes("--allow-env"), preset);
    }
  }
});

// The flag list of each preset, whole: a change to what a binary may do shows up here.
Deno.test("presetFlags() snapshot of every preset for a public provider", () => {
  const deny = `--deny-net=${PRIVATE_RANGES.join(",")}`;
  assert.deepEqual(
    Object.fromEntries(PRESETS.map((p) => [p, presetFlags(p, ["api.anthropic.com"])])),
    {
      full: [
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        "--allow-net",
        deny,
        "--no-prompt",
      ],
      "no-web": [
        "--allow-read",
        "--allow-write",
        "--allow-run=bwrap",
        "--allow-env",
        "--allow-net=api.anthropic.com",
        "--no-prompt",
      ],
      "read-only": [
        "--allow-read",
        "--allow-write=.crab",
        "--allow-env",
        "--allow-net=api.anthropic.com",
        "--no-prompt",
      ],
    },
  );
  assert.equal(
    deny,
    "--deny-net=localhost,0.0.0.0/8,10.0.0.0/8,100.64.0.0/10,127.0.0.0/8,169.254.0.0/16," +
      "172.16.0.0/12,192.168.0.0/16,[::1],[::]",
  );
});

Deno.test("fenceFlags() turns the private fence off, with a note, for a local provider", () => {
  const fence = fenceFlags({ tools: PRESET_TOOLS.full, providerHosts: ["127.0.0.1:11434"] });
  assert.ok(!fence.flags.some((f) => f.startsWith("--deny-net")));
  assert.match(fence.notes.join("\n"), /fence for private addresses is off: 127\.0\.0\.1:11434/);
});

Deno.test("fenceFlags() scopes run and net to MCP servers when no tool needs them", () => {
  assert.deepEqual(
    fenceFlags({
      tools: ["read", "grep"],
      providerHosts: ["api.anthropic.com"],
      mcpHosts: ["mcp.example.com"],
      mcpCommands: ["npx", "uvx"],
    }).flags,
    [
      "--allow-read",
      "--allow-write=.crab",
      "--allow-run=npx,uvx",
      "--allow-env",
      "--allow-net=api.anthropic.com,mcp.example.com",
      "--no-prompt",
    ],
  );
});

Deno.test("fenceFlags() completes a build that may already run anything to every permission, and no other", () => {
  const local = ["127.0.0.1:11434"];
  const rest = ["--allow-sys", "--allow-ffi", "--allow-import"];
  const has = (flags: string[]) => rest.filter((f) => flags.includes(f));
  // Unscoped run, write and net with no deny list: every permission, as -A grants it.
  const full = fenceFlags({ tools: PRESET_TOOLS.full, providerHosts: local, anyCommand: true });
  assert.deepEqual(has(full.flags), rest);
  assert.match(full.notes.join("\n"), /every permission/);
  // A fence left anywhere keeps the rest out: a deny list, a scoped run, no write.
  assert.deepEqual(
    has(
      fenceFlags({
        tools: PRESET_TOOLS.full,
        providerHosts: ["api.anthropic.com"],
        anyCommand: true,
      }).flags,
    ),
    [],
  );
  assert.deepEqual(has(fenceFlags({ tools: PRESET_TOOLS.full, providerHosts: local }).flags), []);
  for (const preset of ["no-web", "read-only"] as const) {
    assert.deepEqual(
      has(
        fenceFlags({ tools: PRESET_TOOLS[preset], providerHosts: local, anyCommand: true }).flags,
      ),
      [],
      preset,
    );
  }
});

Deno.test({
  name:
    "presetFlags() full: a file is opened without Deno resolving its path component by component",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = Deno.makeTempDirSync({ prefix: "crab-open-" });
    try {
      const deep = `${dir}/a/b/c/d`;
      Deno.mkdirSync(deep, { recursive: true });
      Deno.writeTextFileSync(`${deep}/f.txt`, "x");
      const script = `${dir}/open.ts`;
      Deno.writeTextFileSync(script, `Deno.readFileSync(${JSON.stringify(`${deep}/f.txt`)});\n`);
      const trace = `${dir}/trace`;
      const out = await new Deno.Command("strace", {
        args: [
          "-f",
          "-e",
          "trace=readlink",
          "-o",
          trace,
          Deno.execPath(),
          "run",
          ...presetFlags("full"),
          script,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      // Each readlink of the file's folders is a syscall per component, for every file undo reads.
      const resolved = Deno.readTextFileSync(trace).split("\n").filter((l) =>
        l.includes(`readlink("${dir}`)
      );
      assert.deepEqual(resolved, []);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});

Deno.test("fenceFlags() rejects a tool that is not built in", () => {
  assert.throws(() => fenceFlags({ tools: ["read", "nope"], providerHosts: [] }), /"nope"/);
});

Deno.test("isPrivateHost() knows loopback, private and public hosts", () => {
  for (
    const h of [
      "localhost",
      "127.0.0.1:11434",
      "10.1.2.3",
      "192.168.1.1:80",
      "[::1]:8080",
      "box.local",
      "169.254.169.254",
      "100.64.0.1",
    ]
  ) {
    assert.equal(isPrivateHost(h), true, h);
  }
  for (const h of ["api.anthropic.com", "8.8.8.8", "172.32.0.1", "[2001:db8::1]:443"]) {
    assert.equal(isPrivateHost(h), false, h);
  }
});

Deno.test("fenceFlags() scopes bash to bwrap, adds MCP commands, and opens --allow-run only when asked", () => {
  const tools = PRESET_TOOLS["no-web"];
  const providerHosts = ["api.anthropic.com"];
  const run = (spec: Partial<Parameters<typeof fenceFlags>[0]>) =>
    fenceFlags({ tools, providerHosts, ...spec }).flags.filter((f) => f.startsWith("--allow-run"));
  assert.deepEqual(run({}), ["--allow-run=bwrap"]);
  assert.deepEqual(run({ mcpCommands: ["npx", "bwrap"] }), ["--allow-run=bwrap,npx"]);
  assert.deepEqual(run({ anyCommand: true }), ["--allow-run"]);
  assert.deepEqual(
    fenceFlags({ tools: PRESET_TOOLS.full, providerHosts, anyCommand: true }).notes,
    [
      "unscoped --allow-run: MCP servers configured after the build can start; " +
      "bash is fenced by its sandbox, not by this flag",
    ],
  );
});

Deno.test("needOf() asks bash for bwrap in the sandbox and for bash itself without it", () => {
  assert.deepEqual(needOf("exec", "/ws"), { name: "run", command: "bwrap" });
  assert.deepEqual(needOf("exec", "/ws", undefined, "read-only"), {
    name: "run",
    command: "bwrap",
  });
  assert.deepEqual(needOf("exec", "/ws", undefined, "danger-full-access"), {
    name: "run",
    command: "bash",
  });
});

Deno.test("fenceFlags() scopes a macOS build's bash to /usr/bin/sandbox-exec, by its absolute path", () => {
  const tools = PRESET_TOOLS["no-web"];
  const providerHosts = ["api.anthropic.com"];
  const run = (os: string, mcpCommands: string[] = []) =>
    fenceFlags({ tools, providerHosts, mcpCommands, os }).flags.filter((f) =>
      f.startsWith("--allow-run")
    );
  assert.deepEqual(run("darwin"), ["--allow-run=/usr/bin/sandbox-exec"]);
  assert.deepEqual(run("darwin", ["npx"]), ["--allow-run=/usr/bin/sandbox-exec,npx"]);
  assert.deepEqual(run("linux"), ["--allow-run=bwrap"]);
  // Without the exec class neither sandbox program may start.
  assert.deepEqual(
    fenceFlags({ tools: PRESET_TOOLS["read-only"], providerHosts, os: "darwin" }).flags
      .filter((f) => f.startsWith("--allow-run")),
    [],
  );
  assert.equal(sandboxProgram("darwin"), "/usr/bin/sandbox-exec");
  assert.equal(sandboxProgram("linux"), "bwrap");
  assert.deepEqual(needOf("exec", "/ws", undefined, "workspace-write", "darwin"), {
    name: "run",
    command: "/usr/bin/sandbox-exec",
  });
  assert.deepEqual(needOf("exec", "/ws", undefined, "danger-full-access", "darwin"), {
    name: "run",
    command: "bash",
  });
});

/** Runs `scripts/compile.ts ARGS` (an option that prints, not a build); its stdout's words. */
async function compileScript(...args: string[]): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      "--no-prompt",
      new URL("../../../scripts/compile.ts", import.meta.url).pathname,
      "--no-mcp-config",
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim().split(" ");
}

Deno.test("scripts/compile.ts --print-flags picks the sandbox program of the target's OS", async () => {
  const flags = async (target: string) =>
    (await compileScript("--preset", "no-web", "--target", target, "--print-flags"))
      .filter((f) => f.startsWith("--allow-run"));
  assert.deepEqual(await flags("aarch64-apple-darwin"), ["--allow-run=/usr/bin/sandbox-exec"]);
  assert.deepEqual(await flags("x86_64-apple-darwin"), ["--allow-run=/usr/bin/sandbox-exec"]);
  assert.deepEqual(await flags("x86_64-unknown-linux-gnu"), ["--allow-run=bwrap"]);
});

Deno.test("the binary compiles lazily; what runs by deno run compiles each module whole", async () => {
  // deno run keeps a code cache of every module it loads: compiled whole, a module comes out of
  // it ready. A compiled binary caches only the modules it loads at start.
  assert.deepEqual(RUNTIME_FLAGS, [
    "--v8-flags=--max-semi-space-size=1,--expose-gc," +
    "--enable-experimental-regexp-engine-on-excessive-backtracks,--no-lazy",
  ]);
  assert.deepEqual(COMPILED_RUNTIME_FLAGS, [
    "--v8-flags=--max-semi-space-size=1,--expose-gc," +
    "--enable-experimental-regexp-engine-on-excessive-backtracks",
  ]);
  const words = await compileScript("--bundle", "--print-command");
  assert.deepEqual(words.slice(0, 2), ["deno", "compile"]);
  assert.ok(words.includes(COMPILED_RUNTIME_FLAGS[0]), words.join(" "));
  assert.ok(!words.some((w) => w.includes("--no-lazy")), words.join(" "));
});
