/**
 * Prints the files walkSync() lists under DIR (the workspace), one per line in
 * walk order. A test runs it with the HOME and XDG_CONFIG_HOME it chose, to
 * see which global excludes file the walker reads there.
 *
 * Run: `deno run -A tests/tools/search/_walk_print.ts DIR`
 *
 * @module
 */

import { walkSync } from "../../../tools/search/walk.ts";

const [root] = Deno.args;
for (const e of walkSync({ root, workspace: root })) console.log(e.rel);
