/** A workspace (a git repository's top, by its HEAD) and an undo store beside it, for undo's tests. */

import { join } from "node:path";
import { UndoStore } from "../../agent/undo/store.ts";

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
