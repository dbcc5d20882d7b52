// Gives the agent one function of the project as a tool that runs in this process:
// `deno task ask "Which plan is ada@example.com on?"`.
import { createSdkMcpServer, query, tool } from "@crab/crab/sdk";
import { z } from "zod";
import { findUser } from "./src/users.ts"; // the project's own code

const project = createSdkMcpServer({
  name: "project",
  tools: [
    tool(
      "find_user",
      "Finds a user of the app by email: their name and plan",
      { email: z.string().describe("the user's email address") },
      ({ email }) => {
        const user = findUser(email);
        // A throw reaches the model as the tool's error.
        if (!user) throw new Error(`No user with email "${email}"`);
        return Promise.resolve({ content: [{ type: "text", text: JSON.stringify(user) }] });
      },
      { annotations: { readOnlyHint: true } },
    ),
  ],
});

for await (
  const m of query({
    prompt: Deno.args[0] ?? "Which plans are ada@example.com and bob@example.com on?",
    options: {
      mcpServers: { project },
      // Only the project's function: no file or shell tools are approved.
      allowedTools: ["mcp__project__find_user"],
      maxTurns: 10,
    },
  })
) {
  if (m.type === "result") console.log(m.result);
}
