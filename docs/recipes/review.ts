// A read-only review of the workspace, its report written by the script: `deno task review`.
import { query } from "@crab/crab/sdk";

let report = "";
for await (
  const m of query({
    prompt: "Review the changes in this repository and list the problems you find.",
    options: {
      allowedTools: ["Read", "Grep", "Glob"],
      disallowedTools: ["Bash", "Write", "Edit"],
      maxTurns: 20,
    },
  })
) {
  if (m.type === "result") report = m.result;
}
Deno.writeTextFileSync("REVIEW.md", report + "\n");
