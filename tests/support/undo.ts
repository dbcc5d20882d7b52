/** A workspace (a git repository's top, by its HEAD) and an undo store beside it, for undo's tests. */

import { join } from "node:path";
import { UndoStore } from "../../agent/undo/store.ts";
import type { Sandbox } from "./cli.ts";

/** Makes the workspace and the store; `using t = undoPlace()` removes both afterwards. */
export function undoPlace(): { ws: string; store: UndoStore; [Symbol.dispose](): void } {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-snap-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(join(ws, ".git"));
  Deno.writeTextFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  return {
    ws,
    store: new UndoStore(join(root, "undo")),
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

/** Writes `text` at `rel` in `ws`, making its folders. */
export function put(ws: string, rel: string, text: string): void {
  Deno.mkdirSync(join(ws, rel, ".."), { recursive: true });
  Deno.writeTextFileSync(join(ws, rel), text);
}

/** Every path under `root` (but its top `.git` when `skipGit`), with its kind, mode and bytes (or link target). */
export function tree(root: string, skipGit = true): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const e of [...Deno.readDirSync(dir)].sort((a, b) => a.name < b.name ? -1 : 1)) {
      if (skipGit && e.name === ".git" && rel === "") continue;
      const abs = join(dir, e.name), r = rel ? `${rel}/${e.name}` : e.name;
      const st = Deno.lstatSync(abs);
      const mode = ((st.mode ?? 0) & 0o7777).toString(8);
      if (st.isSymlink) out[r] = `link -> ${Deno.readLinkSync(abs)}`;
      else if (st.isDirectory) {
        out[r + "/"] = `dir ${mode}`;
        walk(abs, r);
      } else out[r] = `file ${mode} ${btoa(String.fromCharCode(...Deno.readFileSync(abs)))}`;
    }
  };
  walk(root, "");
  return out;
}

/** Runs git in `ws` with a test identity; throws with its stderr when it fails. */
function git(ws: string, ...argv: string[]): void {
  const out = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@example.test", ...argv],
    cwd: ws,
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}

/**
 * Makes `s`'s workspace a git repository with tracked and ignored files, a
 * symlink and a plain script, and (with `heavy`) an ignored heavy directory.
 */
export function gitWorkspace(s: Sandbox, heavy = true): void {
  s.put("x", "to be removed\n");
  s.put("a", "to be moved\n");
  s.put("s", "#!/bin/sh\necho hi\n");
  s.put("e.txt", "line one\nline two\n");
  s.put(".gitignore", "node_modules/\n.env\n");
  s.put(".env", "SECRET=1\n");
  if (heavy) s.put("node_modules/pkg/index.js", "module.exports = 1;\n");
  Deno.symlinkSync("e.txt", join(s.ws, "link"));
  git(s.ws, "init", "-q");
  git(s.ws, "add", "-A");
  git(s.ws, "commit", "-qm", "start");
}

/**
 * Runs git in `cwd` with a test identity and no config but the repository's
 * (no system file, `HOME` the folder itself); its stdout, or an error with its
 * stderr when it fails.
 */
export function gitAlone(cwd: string, ...argv: string[]): string {
  const out = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@example.test", ...argv],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: cwd },
  }).outputSync();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}
