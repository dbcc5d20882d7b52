/**
 * What a session's sandbox allows bash: the mode, whether the network is on,
 * and the extra writable paths from the user's config. Set on the session by
 * the front end; the tool layer only reads it.
 *
 * @module
 */

import { DEFAULT_SANDBOX_MODE, type SandboxMode } from "./mode.ts";

/** The sandbox settings of one session. */
export interface SandboxPolicy {
  readonly mode: SandboxMode;
  /** Commands may use the network (the run granted the `net` class). */
  readonly net: boolean;
  /** Absolute paths outside the workspace that commands may write (`sandbox.writable`). */
  readonly writable: readonly string[];
}

/** The policy of a session nobody configured: workspace-write, no network. */
export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = {
  mode: DEFAULT_SANDBOX_MODE,
  net: false,
  writable: [],
};
