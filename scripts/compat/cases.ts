/**
 * The cases the side-by-side harness (`run.ts`) runs through `claude -p` and
 * `crab -p`. Each is a workspace, settings files, a prompt and the tool calls
 * the scripted model makes, written as Claude Code names them (`Bash`, `Edit`,
 * `file_path`); the harness hands crab's model the same calls in crab's names
 * through `tools/table.ts`. `$WS` in a call's input or a file's text is the
 * workspace's absolute path, `$HOME` the home directory's.
 *
 * @module
 */

/** One tool call of the scripted model, in Claude Code's names and shapes. */
export interface CompatCall {
  name: string;
  input: Record<string, unknown>;
}

/** One model turn: calls (answered in one response) or, with none, a final text. */
export type CompatTurn = CompatCall[] | { text: string } | { error: number; message?: string };

/** One case. */
export interface CompatCase {
  /** Short name, shown in the table and taken by `--only`. */
  name: string;
  /** What the case shows. */
  about: string;
  /** Defaults to `do it`. */
  prompt?: string;
  /** Flags given to both commands after `-p PROMPT`. */
  flags?: string[];
  /** Files in the workspace, committed to its git repository before the run. */
  files?: Record<string, string>;
  /** Files left uncommitted (changed or new) after the commit. */
  dirty?: Record<string, string>;
  /** Files under the home directory (`.claude/settings.json`, hook scripts). */
  home?: Record<string, string>;
  /** The scripted model's turns, in order; a final `{ text: "done" }` is added. */
  turns: CompatTurn[];
  /** Workspace files whose state after the run is compared. */
  watch?: string[];
  /** Compare the stream-json message types too (`--output-format stream-json --verbose`). */
  stream?: boolean;
  /** Compare the first prompt text the model got (custom commands' expansion). */
  prompted?: boolean;
}

const guardHook = {
  hooks: {
    PreToolUse: [{
      matcher: "Bash",
      hooks: [{ type: "command", command: "sh $WS/.claude/guard.sh" }],
    }],
  },
};

const blockPromptHook = {
  hooks: {
    UserPromptSubmit: [{
      hooks: [{ type: "command", command: "echo 'no prompts today' >&2; exit 2" }],
    }],
  },
};

/** Every case, in the order the table shows them. */
export const CASES: readonly CompatCase[] = [
  {
    name: "settings-dontAsk",
    about: "defaultMode dontAsk in ~/.claude/settings.json refuses an edit nothing allows",
    files: { "calc.py": "x = 1\n" },
    home: { ".claude/settings.json": JSON.stringify({ permissions: { defaultMode: "dontAsk" } }) },
    // Both refuse an edit of a file not read first: read it, so the mode is what decides.
    turns: [[{ name: "Read", input: { file_path: "$WS/calc.py" } }], [{
      name: "Edit",
      input: { file_path: "$WS/calc.py", old_string: "x = 1", new_string: "x = 2" },
    }]],
    watch: ["calc.py"],
  },
  {
    name: "project-guard-hook",
    about: "a project's PreToolUse guard on rm is never silently skipped",
    files: {
      "calc.py": "x = 1\n",
      ".claude/guard.sh":
        "grep -q '\"rm ' && { echo 'rm is not allowed here' >&2; exit 2; }; exit 0\n",
      ".claude/settings.json": JSON.stringify(guardHook).replaceAll("$WS", "$CLAUDE_PROJECT_DIR"),
    },
    turns: [[{ name: "Bash", input: { command: "rm calc.py" } }]],
    watch: ["calc.py"],
  },
  {
    name: "read-only-git",
    about: "with only a Bash(rm:*) deny, git diff --stat needs no rule",
    flags: ["--disallowedTools", "Bash(rm:*)"],
    files: { "a.txt": "one\n" },
    dirty: { "a.txt": "one\ntwo\n" },
    turns: [[{ name: "Bash", input: { command: "git diff --stat" } }], [{
      name: "Bash",
      input: { command: "rm a.txt" },
    }]],
    watch: ["a.txt"],
  },
  {
    name: "read-deny-git-status",
    about: "a Read deny on a tracked .env never shows it changed",
    files: {
      ".env": "KEY=1\n",
      "a.txt": "one\n",
      ".claude/settings.json": JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }),
    },
    flags: ["--allowedTools", "Bash(git status:*)"],
    turns: [[{ name: "Bash", input: { command: "git status --porcelain" } }]],
  },
  {
    name: "denial-names",
    about: "permission_denials carry Claude's tool names and an absolute file_path",
    files: { "a.txt": "one\n" },
    flags: ["--disallowedTools", "Edit", "--disallowedTools", "Bash"],
    turns: [[{ name: "Read", input: { file_path: "$WS/a.txt" } }], [
      { name: "Edit", input: { file_path: "$WS/a.txt", old_string: "one", new_string: "two" } },
      { name: "Bash", input: { command: "echo hi" } },
    ]],
    watch: ["a.txt"],
  },
  {
    name: "allowed-edit-write",
    about: "--allowedTools Edit with dontAsk: does it also allow Write?",
    flags: ["--allowedTools", "Edit", "--permission-mode", "dontAsk"],
    turns: [[{ name: "Write", input: { file_path: "$WS/new.txt", content: "hi\n" } }]],
    watch: ["new.txt"],
  },
  {
    name: "tools-claude-names",
    about: "--tools takes Claude's names",
    flags: ["--tools", "Read,Grep,Glob"],
    files: { "a.txt": "one\n" },
    turns: [[{ name: "Bash", input: { command: "echo hi" } }]],
  },
  {
    name: "command-args",
    about: "a custom command's $ARGUMENTS and $1 $2 numbering",
    prompt: "/greet alpha beta",
    files: { ".claude/commands/greet.md": "one=$1 two=$2 all=$ARGUMENTS\n" },
    turns: [],
    prompted: true,
  },
  {
    name: "api-400",
    about: "an API error is success + is_error with the status and a readable result",
    // Not retried by either (a 401 or 5xx is, by Claude Code, for minutes).
    turns: Array.from(
      { length: 3 },
      () => ({ error: 400, message: "temperature: must be at most 1" }),
    ),
  },
  {
    name: "prompt-blocked",
    about: "a prompt a UserPromptSubmit hook blocks",
    home: { ".claude/settings.json": JSON.stringify(blockPromptHook) },
    turns: [],
  },
  {
    name: "max-turns",
    about: "--max-turns 1 with a call to make: exit code and result",
    flags: ["--max-turns", "1"],
    turns: [[{ name: "Bash", input: { command: "echo hi" } }]],
  },
  {
    name: "parallel-calls-stream",
    about: "two calls in one response: assistant and user messages in stream-json",
    files: { "a.txt": "one\n", "b.txt": "two\n" },
    turns: [[
      { name: "Read", input: { file_path: "$WS/a.txt" } },
      { name: "Read", input: { file_path: "$WS/b.txt" } },
    ]],
    stream: true,
  },
];
