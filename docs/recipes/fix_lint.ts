// Fixes what the linter reports and says what it did as typed JSON: `deno task fix-lint`.
import { query } from "@crab/crab/sdk";

interface Outcome {
  fixed: number;
  remaining: string[];
}

const schema = {
  type: "object",
  properties: {
    fixed: { type: "number" },
    remaining: { type: "array", items: { type: "string" } },
  },
  required: ["fixed", "remaining"],
};

for await (
  const m of query({
    prompt: "Run `deno lint`, fix what it reports, and say how many problems you fixed.",
    options: {
      allowedTools: ["Read", "Edit", "Bash(deno lint:*)"],
      outputFormat: { type: "json_schema", schema },
    },
  })
) {
  if (m.type === "result" && m.subtype === "success") {
    const outcome = m.structured_output as Outcome;
    console.log(JSON.stringify(outcome));
    if (outcome.remaining.length) Deno.exitCode = 1;
  }
}
