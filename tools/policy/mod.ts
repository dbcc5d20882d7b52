/**
 * The policy room: permission rules in Claude Code's grammar (`rules.ts`),
 * shell commands split into the simple commands they run (`shell.ts`), one
 * decision per call (`decide.ts`, `decision.ts`), the hosts bash may reach
 * (`domains.ts`), what bash's sandbox is granted (`sandbox.ts`), and the one
 * {@link Policy} object of a session (`policy.ts`), built from plain data: it
 * reads no settings file and asks nobody but the front end's asker.
 *
 * ```ts
 * const policy = new Policy({ mode: "default", rules, allowed: ["read"], sandbox });
 * const verdict = await policy.decide({ tool, input, session });
 * ```
 *
 * ## The table of doors
 *
 * A door is a place where crab reads, runs, stores or sends something on the
 * agent's behalf. Every door asks the session's Policy one question; the
 * answer is the policy's, never the door's own. A new door gets a row here and
 * a test that tries to get past it.
 *
 * | door | what crosses it | the Policy's question | today's answer | its test |
 * |---|---|---|---|---|
 * | a tool call (dispatch) | the call runs | `decide(call)`, then `approve(request)` | deny rules > ask rules > protected paths > allow rules and approved classes > mode > class; an input an approval changes (a permission prompt tool's) is decided again | `tests/tools/policy/decision_test.ts`, `policy_test.ts`, `tests/tools/call/dispatch_test.ts`, `tests/agent/print/prompt_tool_test.ts` |
 * | the user's own command (the REPL's `!` line) | a bash call the user typed | `decide(call)`, the call marked `origin: "user"` | a deny rule and crab's closed paths refuse it; ask rules, the mode and the class default do not apply (nothing asks); no PreToolUse hook sees it; the sandbox, protected paths, observation and undo as for any bash call | `tests/tools/call/dispatch_test.ts`, `tests/tools/policy/decision_test.ts`, `tests/agent/repl/bash_mode_test.ts` |
 * | a note (`#`) and `/memory` | a line the user typed, appended to an instruction file (`CLAUDE.md`/`AGENTS.md`, `CLAUDE.local.md`, `~/.claude/CLAUDE.md`); the file opened in the user's `$EDITOR` | `decide(call)` of a write of that file, as the user's own | a deny rule (`Edit(CLAUDE.md)`) and crab's closed paths refuse the note; nothing asks; the editor is the user's program on the file they picked | `tests/agent/repl/slash/memory_command_test.ts` |
 * | what a shell command runs | each program it runs, under any path, wrapper or global option, and values bash runs as code or uses as names | `decide(call)` | deny and ask rules match a program by its base name, through busybox/toybox and past global options (git, npm, pnpm, yarn, cargo, go, docker, podman, kubectl, gh); an allow rule only by the bare name through a PATH no writable directory precedes, or the exact path it names; a value bash runs as code or uses as a name (`${x@P}`, `${!x}`, namerefs, arithmetic on values, …) asks | `tests/tools/policy/decide_test.ts`, `differential_test.ts` (what bash really ran, traced) |
 * | a file a shell command writes | redirections, `tee`, `sort -o`, `git diff --output`, `format-patch -o` | `decide(call)`, then the mode | an Edit/Write rule, else the write class or acceptEdits inside the workspace, else ask (one question with the command's); `/dev/null`, `/dev/std*` and `2>&1` are free | `decide_test.ts`, `decision_test.ts`, `tests/agent/print/permissions_test.ts` |
 * | a search's walk (grep, glob) | files read below the searched folder | `hidden(workspace)` | files a Read deny or ask rule names are left out | `tests/tools/policy/decision_test.ts` |
 * | a background job (bash's `run_in_background`) | a command that keeps running after its call, in a sandbox of its own, its output in a file of this run's saved output | `decide(call)` of the bash call that starts it; then `sandbox` as it stands at the start, without `askHost` | decided and approved as any bash call; its sandbox is a call's (files, protected paths, credential stores, caps) with the rules and host lists of its start: a job narrows what the session allows, never widens it, and never asks (a host in no list is refused, and named in `bash_output`); at most `jobs.max` run; every job ends with its session; `bash_output` and `bash_kill` reach the session's own jobs only | `tests/tools/jobs/table_test.ts`, `tests/tools/jobs/process_test.ts`, `tests/agent/commands/undo_test.ts` |
 * | bash's sandbox: files | what a command may read and write | `sandbox`: the grant, and `rules` read at each call | the workspace (and `sandbox.writable`) writable; Read denies masked, Edit denies read-only | `tests/tools/sandbox/denials_test.ts`, `policy_test.ts` |
 * | bash's sandbox: network | the hosts a command reaches | `sandbox.net`, `sandbox.domains` with the WebFetch rules, `askHost(host)` | none unless `net` or listed; the REPL asks, others refuse | `tests/tools/policy/domains_test.ts`, `tests/agent/repl/host_question_test.ts` |
 * | git's give-back | what git wrote in the sandbox's view of a `.git` replacing the real one, and what a command left in the parts bound in place | `mayGiveBack(gitDir, entry)` | every entry the view's own checks keep: only what git writes to commit; a rebase todo's exec lines commented out; `HEAD`, `*_HEAD`, `packed-refs` only when they parse, never a symlink; in `objects/`, `refs/`, `logs/`, `lfs/`, `rr-cache/` every symlink, FIFO, socket or device in a directory changed during the call removed, and a file under `refs/` that holds no ref removed; `objects/info/alternates` and `http-alternates` put back as they were | `tests/tools/sandbox/git/view_test.ts`, `_ref_format_test.ts` |
 * | undo's store | a copy of a workspace file in crab's data dir, read by crab's thread or, for a big first snapshot, a reader thread beside it (asked before either reads); each file's stat taken by its name in its folder, the folder opened once (`O_PATH`, never through a symlink) | `mayStore(path)` | every file within undo's size limits, Read-denied ones too (`crab undo` after `rm .env` brings it back): no tool reads the store and no command sees it (the next two rows); a stat by name never leaves its folder (no `/`, `.` or `..` in a name) | `tests/agent/undo/store_test.ts` (S4-03), `stage_test.ts`, `snapshot_test.ts` (the reader thread), `tests/tools/fs/exists_test.ts` (a stat by name) |
 * | git's index and packs for undo | a first snapshot's tracked files left unread: `.git/index`, `.git/config`, `info/attributes` and the user's git config read, `.git/objects/pack/*` hard-linked into the store's `git/`, a blob read back out (checked against its id) when a call changed its file | `mayStore(path)` for each file left to git, as for one read | a file the policy keeps out is never left to git; only where the index's stat is the file's and no filter, racy entry or loose object makes the blob differ from the bytes; the links live in the store (hidden like it), are made inside the workspace lock, and go when the repository drops a pack or no row needs them | `tests/agent/undo/git/defer_test.ts`, `pack_test.ts`, `tests/agent/commands/undo_test.ts` |
 * | crab's data dir for the tools | read, grep, glob and `mcp serve` reaching the store, its key, transcripts, undo objects, other runs' spill files | `closedPath(path, workspace)` | closed whatever was approved (a deny, not an outside read `y` opens), but this run's own spill files and a workspace inside it | `tests/tools/policy/policy_test.ts`, `tests/tools/spill_access_test.ts`, `tests/agent/commands/mcp_serve_test.ts` |
 * | what commands never see | crab's data dir and the user's credential stores (`credentials.ts`) inside bash's sandbox | `sandbox.unseen()` | hidden but this run's spill folder, the call's proxy sockets and the port sockets of the jobs it is handed; a store `sandbox.credentials.allow` names is shown; the first result naming a hidden store says which setting opens it | `tests/tools/sandbox/layout_test.ts`, `tests/tools/policy/credentials_test.ts`, `tests/agent/settings/sandbox_test.ts` |
 * | a background job's port | connections from the session's later bash calls to a port a job listens on inside its own sandbox, and from the host's 127.0.0.1 to it | the session's job table hands a later call its own jobs' sockets (`forwardPorts`); the host: `sandbox.jobPortsOnHost` | later calls of the same session only: each job's sockets live in a folder of crab's data dir, which no sandbox sees, and a call gets only the folders it is handed, read-only; the host only with `--job-ports-on-host` or `sandbox.jobPortsOnHost`, and never in a build without network; crab's relay ports (3128, 1080) never; a name in a job's folder is resolved inside the later call's sandbox, and the host's forwarder connects only to a socket it hard-linked first, so a symlink the job swaps in reaches nothing | `tests/tools/sandbox/net/ports_test.ts`, `tests/tools/jobs/table_test.ts`, `tests/tools/jobs/process_test.ts`, `tests/agent/settings/sandbox_test.ts` |
 * | what a call changed where edits are denied | a file a command created or changed that an Edit or Write deny names | `changeRefusal(path, workspace, isDir)`, and the sandbox's placeholders | a `DIR/**` deny makes `DIR` read-only, a missing part covered so nothing is made below it; any other matching change is put back from the call's snapshot (removed if new) and named in the result | `tests/tools/sandbox/denials_test.ts`, `placeholders_test.ts`, `tests/agent/undo/stage_test.ts` |
 * | a hook script | a settings file's command, run as the user outside the sandbox | `hookRefusal(hook)`, and `protect` (the files it runs, read-only for commands, asked for by write and edit) | the user's files', `--settings`' and a trusted workspace's hooks run while the files they name are as pinned; a changed one runs when the user confirms (REPL), else is refused (a blocking event's guard fails closed); a workspace's hooks waiting for trust never run, and a call one of its PreToolUse hooks would check asks every time (refused where nobody answers) | `tests/agent/hooks/scripts_test.ts`, `mod_test.ts`, `tests/tools/policy/policy_test.ts`, `tests/agent/print/permissions_test.ts`, `tests/agent/run/workbench_test.ts` |
 * | a subagent (`task`, `agent/subagents/`) | every call its conversation makes, through the session's dispatcher | `decide(call)` with the call's scope (its mode, its own allow rules), then `approve(request)` naming it | the session's rules, protected paths, sandbox, lock, undo and observations; its tools the intersection of its definition's and the parent's (another is `unknown_tool`); its mode only where stricter than the session's, read at each call; its allow rules for its calls alone, never over a deny or ask rule or a protected path; what would ask goes to the session's asker with its name (refused where nobody answers); at most 4 at once, 50 a session, depth 1; a workspace's agent types only once it is trusted | `tests/agent/subagents/runner_test.ts`, `tests/tools/policy/policy_test.ts`, `tests/sdk_test.ts` |
 * | an answer in the caller's process (`query()`'s `canUseTool`, hook callbacks) | a call approved, changed or refused by a script's function | `decide(call)` first, then `approve(request)`, whose asker is the callback | deny rules and protected paths refuse before the callback is asked; its `updatedInput` is decided again; without a mode, rules or a callback what would ask is refused | `tests/sdk_test.ts` |
 * | an in-process MCP handler (`query()`'s `createSdkMcpServer()`) | a tool call handed to a script's function, run in the script's process with the script's Deno permissions (no sandbox: it is the caller's code) | `decide(call)`, then `approve(request)`, as for any MCP tool (class `mcp:<server>`, rules `mcp__<server>__<tool>`) | deny rules refuse before the handler or `canUseTool` sees the call; what would ask goes to `canUseTool`, else is refused; the arguments are checked against the tool's zod shape before the handler runs; a throw is a tool error | `tests/agent/sdk/mcp_test.ts` |
 * | an instruction import | a file read into the system prompt (sent to the provider) by `@path` | `importRefusal(question)` | a project's files import from the project, and Markdown from `~/.claude/` once trusted; the user's from the project and the home folder; never a credential store (`credentials.ts`); a refusal is said on stderr | `tests/agent/run/system_prompt_test.ts`, `policy_test.ts` |
 * | a skill | its `SKILL.md` read into the conversation (the `skill` tool's result, or `/NAME`'s prompt) and sent to the provider; its folder made readable; its `allowed-tools` | the `skill` call's `decide(call)` (`Skill`, `Skill(NAME)` rules); `openFolder(dir, source, workspace)`; its rules at `decide(call)` of each call | a workspace's skills only once trusted, their files in the trust digest by content, a changed `SKILL.md` refused; the folder opened by an allow rule `Read(//DIR/**)` of the skill's file (deny and ask rules and crab's closed paths still win; never a folder holding the home, the workspace or a credential store); `allowed-tools` as allow rules of scope `skill` for the turn that loaded it (`/NAME`: its prompt), below deny and ask rules, protected paths and the mode; its scripts are bash calls like any; skill folders are protected paths | `tests/agent/skills/skill_tool_test.ts`, `tests/tools/policy/policy_test.ts`, `tests/agent/settings/trust_digest_test.ts` |
 * | the audit report (`crab report`) | the store's records and undo's journal of one run, written to stdout | none: the user's own command, run outside any session | file names and line counts only, never a file's content; the values of the variables bash's environment scrubs are redacted; HTML is text through one escaper under a CSP that loads nothing, Markdown in code spans and fences longer than any backtick run | `tests/agent/commands/report_test.ts` |
 * | print mode's `--report FILE` | the same report as `crab report`, written by crab (never a tool call) to a file the user named | none: the user's own flag, not the model's | what `crab report` holds, nothing more; written whole (a temp file beside it, renamed) when the run ends, with an error or by a signal too; an extension other than `.html`, `.md`, `.json` refused before the run starts | `tests/agent/print/report_test.ts`, `tests/scripts/installed_test.ts` |
 * | an image or PDF for the model | a file's bytes sent to the provider as an image or document block, and a decoder run over them | `decide(call)` of the read call that reads it | a Read deny or ask rule covers an image or PDF like any file; its header is checked (≤ 100 megapixels) before a decoder runs, and a PDF's page count before pages are sent (≤ 100 pages, 20 MB), each in a worker ended after 5 s; only its sizes reach the observation and the store | `tests/agent/print/media_test.ts`, `tests/tools/fs/media/image_result_test.ts`, `pdf_result_test.ts` |
 * | an image or PDF given with a prompt | a stream-json `image`/`document` block's bytes (the SDK's user), or a REPL `@path` or pasted path | none for the SDK's own bytes (its user gives them); a REPL path is a read call, decided as above | the same header check, limits and worker as read's; a path a Read rule denies is refused, and the prompt goes without it | `tests/agent/print/media_test.ts`, `tests/agent/repl/live_test.ts` |
 *
 * web_fetch and MCP tools are tool calls: their rules are `WebFetch(domain:…)`
 * and `mcp__server__tool`, and web_fetch's own address checks (no private
 * addresses, no rebinding) hold whatever the rules say.
 *
 * @module
 */

export {
  type Effect,
  parseRule,
  parseRuleList,
  type Rule,
  ruleAppliesTo,
  RuleError,
  type RuleMatcher,
  type RuleSource,
  type Scope,
} from "./rules.ts";
export {
  applyMode,
  type Call,
  decide,
  type DecideContext,
  type Decision,
  isLoaderVariable,
  isLooserMode,
  loadShellAnalysis,
  MAX_PARTS,
  type Mode,
  type ModeDecision,
  MODES,
  needsShellParser,
  type Part,
  pathVerdict,
  ruleName,
  shellAnalysisLoaded,
  skillRuleMatches,
  stricterMode,
} from "./decide.ts";
export { loadShellParser, shellParserLoaded } from "./shell.ts";
export type { Policy } from "./policy.ts";
