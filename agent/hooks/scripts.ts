/**
 * The files a hook's command runs, and what it is pinned to. A hook runs as
 * the user, outside the sandbox, so a script it names in the workspace
 * (`./scripts/check.sh`, `"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py`) is
 * what a sandboxed command must not be able to change: every word of the
 * command that names an existing file in the workspace is protected (read-only
 * in the sandbox, asked for by write and edit) and pinned by its content's
 * hash. A hook whose pinned file changed does not run until the user says so.
 *
 * Pins are kept per workspace in crab's data dir (`hook-pins.json`, 0600),
 * taken the first time a hook's file is seen; a project's hooks are also
 * covered by the trust digest, with their files' hashes.
 *
 * Some hooks run a tool that loads code from the workspace (`npm run`,
 * `make`, `eslint`, …): the sandbox does not cover that code, and the trust
 * prompt and `/hooks` say so.
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import { dataDir, ensureDataDir } from "../../tools/fs/data_dir.ts";
import { sha256 } from "../../tools/fs/sha256.ts";

export { hookScripts } from "../settings/hooks.ts";

/**
 * Programs that load code from the workspace when a hook runs them, and how
 * the hook's words show it: the sandbox does not cover that code.
 */
const WORKSPACE_CODE: readonly [RegExp, string][] = [
  [/^(npm|pnpm|yarn|bun)\s+(run|run-script|exec|test|start|x)\b/, "a package script"],
  [/^(npx|pnpx|bunx)\b/, "a package's binary"],
  [/^(yarn|pnpm)\s+[a-z][\w:-]*$/, "a package script"],
  [/^(make|gmake|just|task|rake|invoke|nox|tox)\b/, "the workspace's build file"],
  [/^deno\s+(task|run|test)\b/, "deno task or a workspace module"],
  [
    /^(eslint|prettier|stylelint|tsc|jest|vitest|mocha|pytest|ruff|black|mypy|flake8|rubocop)\b/,
    "a tool that loads the workspace's config and plugins",
  ],
  [/^(cargo|go)\s+(run|test|build|check|clippy)\b/, "the workspace's build scripts"],
  [
    /^(python3?|node|ruby|perl|php|bash|sh|zsh)\s+(?!-c\b)/,
    "a script interpreted from the workspace",
  ],
  [/^(\.\/|\.\.\/|\$\{?(CLAUDE|CRAB)_PROJECT_DIR)/, "a script in the workspace"],
  [
    /^(gradle|gradlew|\.\/gradlew|mvn|mvnw|sbt|bundle\s+exec|composer|poetry\s+run|uv\s+run|pipenv\s+run)\b/,
    "the workspace's build",
  ],
];

/**
 * Why `command` runs code from the workspace outside the sandbox (what kind
 * of code), or undefined when its words show no such program. A shell line of
 * several commands is looked at command by command.
 */
export function workspaceCodeOf(command: string): string | undefined {
  for (const part of command.split(/&&|\|\||[;|\n]/)) {
    const text = part.trim().replace(/^(env\s+(\w+=\S*\s+)*|exec\s+|command\s+)/, "");
    for (const [re, what] of WORKSPACE_CODE) if (re.test(text)) return what;
  }
  return undefined;
}

/** A hook's file now, against its pin: unchanged, pinned now (first sight), or changed. */
export type PinState = "same" | "new" | "changed";

interface PinFile {
  /** Workspace (real path) → file (real path) → sha256 of its content when pinned. */
  workspaces: Record<string, Record<string, string>>;
}

function pinPath(): string {
  return join(dataDir(), "hook-pins.json");
}

function loadPins(): PinFile {
  try {
    const parsed = JSON.parse(Deno.readTextFileSync(pinPath())) as Partial<PinFile>;
    if (parsed && typeof parsed.workspaces === "object" && parsed.workspaces !== null) {
      return { workspaces: parsed.workspaces };
    }
  } catch {
    // Missing or unreadable: nothing is pinned yet.
  }
  return { workspaces: {} };
}

function savePins(pins: PinFile): void {
  ensureDataDir();
  const tmp = `${pinPath()}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(pins, null, 2) + "\n", { mode: 0o600 });
  Deno.renameSync(tmp, pinPath());
}

/** The sha256 of `path`'s content, or undefined when it cannot be read. */
export function fileHash(path: string): string | undefined {
  try {
    return sha256(Deno.readFileSync(path));
  } catch {
    return undefined;
  }
}

/**
 * Each of `files` against its pin in `workspace`: a file seen for the first
 * time is pinned now (`new`); one whose content differs from its pin is
 * `changed` (and stays pinned to the old content until {@link repin}).
 */
export function checkPins(workspace: string, files: readonly string[]): Map<string, PinState> {
  const out = new Map<string, PinState>();
  if (files.length === 0) return out;
  const pins = loadPins();
  const mine = pins.workspaces[workspace] ??= {};
  let dirty = false;
  for (const f of files) {
    const now = fileHash(f);
    if (now === undefined) continue;
    const pinned = mine[f];
    if (pinned === undefined) {
      mine[f] = now;
      dirty = true;
      out.set(f, "new");
    } else out.set(f, pinned === now ? "same" : "changed");
  }
  if (dirty) savePins(pins);
  return out;
}

/** Pins `files` of `workspace` to their content now (the user confirmed them). */
export function repin(workspace: string, files: readonly string[]): void {
  const pins = loadPins();
  const mine = pins.workspaces[workspace] ??= {};
  for (const f of files) {
    const now = fileHash(f);
    if (now !== undefined) mine[f] = now;
  }
  savePins(pins);
}
