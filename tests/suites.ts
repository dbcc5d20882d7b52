/**
 * The suite's two halves, by file. An end-to-end test file starts processes
 * (crab itself, bash, git, bubblewrap, an MCP or HTTP server in a process of
 * its own, a terminal) and is listed in {@link E2E}; every other test file is a
 * unit file. `deno task test:unit` runs the unit files without --allow-run, so
 * one that starts a process fails there with NotCapable: it belongs in the
 * list. `deno task test:e2e` runs the list. Together they are `deno task test`.
 *
 * Run: `deno run --allow-read tests/suites.ts unit|e2e` prints the half's files,
 * relative to the repository.
 *
 * @module
 */

import { join, relative } from "node:path";

/** The end-to-end test files, relative to the repository. */
export const E2E: readonly string[] = [
  "tests/agent/allow_outside_test.ts",
  "tests/agent/cli/agent_command_test.ts",
  "tests/agent/cli/claude_flags_test.ts",
  "tests/agent/cli/parse_test.ts",
  "tests/agent/commands/mcp_serve_test.ts",
  "tests/agent/commands/mcp_test.ts",
  "tests/agent/commands/metrics_export_test.ts",
  "tests/agent/commands/metrics_test.ts",
  "tests/agent/commands/permissions_test.ts",
  "tests/agent/commands/report_test.ts",
  "tests/agent/commands/sessions_test.ts",
  "tests/agent/commands/tool_test.ts",
  "tests/agent/commands/trust_test.ts",
  "tests/agent/commands/undo_test.ts",
  "tests/agent/fence_test.ts",
  "tests/agent/full_disk_test.ts",
  "tests/agent/hooks/listing_test.ts",
  "tests/agent/hooks/mod_test.ts",
  "tests/agent/hooks/run_test.ts",
  "tests/agent/hooks/scripts_test.ts",
  "tests/agent/hooks/sdk_test.ts",
  "tests/agent/hooks/stage_test.ts",
  "tests/agent/hooks/tool_response_test.ts",
  "tests/agent/hooks/transcript_test.ts",
  "tests/agent/loop/loop_test.ts",
  "tests/agent/print/agent_sdk_test.ts",
  "tests/agent/print/api_errors_test.ts",
  "tests/agent/print/blocks_test.ts",
  "tests/agent/print/context_test.ts",
  "tests/agent/print/events_test.ts",
  "tests/agent/print/json_test.ts",
  "tests/agent/print/media_test.ts",
  "tests/agent/print/mod_test.ts",
  "tests/agent/print/partial_test.ts",
  "tests/agent/print/permissions_test.ts",
  "tests/agent/print/prompt_tool_test.ts",
  "tests/agent/print/report_test.ts",
  "tests/agent/print/sandbox_denials_test.ts",
  "tests/agent/print/signals_test.ts",
  "tests/agent/print/slash_test.ts",
  "tests/agent/print/stdin_test.ts",
  "tests/agent/print/stream_input_test.ts",
  "tests/agent/print/structured_test.ts",
  "tests/agent/providers/env_test.ts",
  "tests/agent/providers/fallback_test.ts",
  "tests/agent/providers/models_test.ts",
  "tests/agent/repl/args_test.ts",
  "tests/agent/repl/bash_mode_test.ts",
  "tests/agent/repl/commands_test.ts",
  "tests/agent/repl/host_question_test.ts",
  "tests/agent/repl/idle_test.ts",
  "tests/agent/repl/interrupt_test.ts",
  "tests/agent/repl/live_test.ts",
  "tests/agent/repl/mod_test.ts",
  "tests/agent/repl/permissions_test.ts",
  "tests/agent/repl/protected_test.ts",
  "tests/agent/repl/rules_prompt_test.ts",
  "tests/agent/repl/sandbox_probe_test.ts",
  "tests/agent/repl/slash/agents_command_test.ts",
  "tests/agent/repl/slash/jobs_command_test.ts",
  "tests/agent/repl/slash/memory_command_test.ts",
  "tests/agent/repl/slash/status_command_test.ts",
  "tests/agent/repl/slash/undo_command_test.ts",
  "tests/agent/repl/trust_test.ts",
  "tests/agent/repl/untrusted_hooks_test.ts",
  "tests/agent/report/render_test.ts",
  "tests/agent/run/budget_test.ts",
  "tests/agent/run/mcp_agent_test.ts",
  "tests/agent/run/runtime_test.ts",
  "tests/agent/run/sandbox_cli_test.ts",
  "tests/agent/run/session_start_test.ts",
  "tests/agent/run/system_prompt_test.ts",
  "tests/agent/run/workbench_test.ts",
  "tests/agent/sdk/mcp_test.ts",
  "tests/agent/sdk/permissions_test.ts",
  "tests/agent/sdk/types_test.ts",
  "tests/agent/settings/crab_test.ts",
  "tests/agent/settings/mod_test.ts",
  "tests/agent/settings/permissions_test.ts",
  "tests/agent/skills/skill_tool_test.ts",
  "tests/agent/spill_access_test.ts",
  "tests/agent/store/hook_runs_test.ts",
  "tests/agent/store/observe_test.ts",
  "tests/agent/subagents/runner_test.ts",
  "tests/agent/telemetry/replay_test.ts",
  "tests/agent/undo/git/defer_test.ts",
  "tests/agent/undo/git/pack_test.ts",
  "tests/agent/undo/inotify_test.ts",
  "tests/agent/undo/stage_test.ts",
  "tests/agent/undo/store_test.ts",
  "tests/agent/undo/watch_test.ts",
  "tests/agent/yolo_root_test.ts",
  "tests/docs_ci_test.ts",
  "tests/docs_recipes_test.ts",
  "tests/docs_test.ts",
  "tests/mcp/_stdio_transport_test.ts",
  "tests/mcp/hub_test.ts",
  "tests/mcp/inspector_test.ts",
  "tests/mcp/invisible_test.ts",
  "tests/mcp/reference_servers_test.ts",
  "tests/mcp/server_test.ts",
  "tests/scripts/bundle_test.ts",
  "tests/scripts/install_sh_test.ts",
  "tests/scripts/install_test.ts",
  "tests/scripts/installed_test.ts",
  "tests/scripts/release_workflow_test.ts",
  "tests/scripts/smoke_test.ts",
  "tests/scripts/web_fetch_quality_bench_test.ts",
  "tests/sdk_parity_test.ts",
  "tests/sdk_test.ts",
  "tests/support/bounded_test.ts",
  "tests/support/executable_test.ts",
  "tests/support/fake_model_test.ts",
  "tests/tools/bash_test.ts",
  "tests/tools/bytes_full_test.ts",
  "tests/tools/call/workspace_lock_test.ts",
  "tests/tools/call/diff_test.ts",
  "tests/tools/fs/confine_test.ts",
  "tests/tools/fs/data_dir_test.ts",
  "tests/tools/fs/debug_log_test.ts",
  "tests/tools/fs/protected_test.ts",
  "tests/tools/fs/workspace_test.ts",
  "tests/tools/glob_test.ts",
  "tests/tools/grep_first_search_test.ts",
  "tests/tools/grep_rg_test.ts",
  "tests/tools/grep_test.ts",
  "tests/tools/host/capabilities_test.ts",
  "tests/tools/host/own_roots_test.ts",
  "tests/tools/host/processes_test.ts",
  "tests/tools/host/turns_test.ts",
  "tests/tools/jobs/move_test.ts",
  "tests/tools/jobs/process_test.ts",
  "tests/tools/jobs/recipe_test.ts",
  "tests/tools/jobs/table_test.ts",
  "tests/tools/policy/decision_test.ts",
  "tests/tools/policy/differential_test.ts",
  "tests/tools/policy/policy_test.ts",
  "tests/tools/policy/shell_test.ts",
  "tests/tools/read_test.ts",
  "tests/tools/sandbox/denials_test.ts",
  "tests/tools/sandbox/git/_index_test.ts",
  "tests/tools/sandbox/git/_ref_format_test.ts",
  "tests/tools/sandbox/git/view_test.ts",
  "tests/tools/sandbox/layout_test.ts",
  "tests/tools/sandbox/linux/apparmor_test.ts",
  "tests/tools/sandbox/linux/cgroup_test.ts",
  "tests/tools/sandbox/linux/keeper_test.ts",
  "tests/tools/sandbox/linux/supervisor_test.ts",
  "tests/tools/sandbox/mod_test.ts",
  "tests/tools/sandbox/net/loopback_test.ts",
  "tests/tools/sandbox/net/mod_test.ts",
  "tests/tools/sandbox/net/ports_test.ts",
  "tests/tools/sandbox/placeholders_test.ts",
  "tests/tools/sandbox/probe_test.ts",
  "tests/tools/sandbox/seatbelt_test.ts",
  "tests/tools/sandbox/sockets_test.ts",
  "tests/tools/search/walk_first_test.ts",
  "tests/tools/search/walk_test.ts",
  "tests/tools/web/web_fetch_rebinding_test.ts",
  "tests/tools/write_test.ts",
];

const ROOT = new URL("..", import.meta.url).pathname;

/** Every test file under `tests/`, relative to the repository, sorted. */
export function testFiles(dir = join(ROOT, "tests")): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory && e.name !== "testdata") out.push(...testFiles(path));
    else if (e.isFile && e.name.endsWith("_test.ts")) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/** The files of one half of the suite. */
export function suite(half: "unit" | "e2e"): string[] {
  const e2e = new Set(E2E);
  return half === "e2e" ? [...E2E] : testFiles().filter((f) => !e2e.has(f));
}

if (import.meta.main) {
  const half = Deno.args[0];
  if (half !== "unit" && half !== "e2e") {
    console.error("usage: deno run --allow-read tests/suites.ts unit|e2e");
    Deno.exit(2);
  }
  console.log(suite(half).join("\n"));
}
