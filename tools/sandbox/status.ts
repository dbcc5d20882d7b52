/**
 * Whether the sandbox works here, as its probe (`probe.ts`) or macOS's
 * (`seatbelt.ts`) found it.
 *
 * @module
 */

import type { CgroupPlan } from "./linux/cgroup.ts";

/** Whether the sandbox works here, as the probe (`probe.ts`) found it. */
export type SandboxStatus =
  | {
    ok: true;
    /** Absolute path of bwrap (on macOS, of sandbox-exec). */
    bwrap: string;
    /** Absolute path of perl, when there is one (exact exit statuses); else bash supervises. */
    perl?: string;
    /** bwrap knows `--disable-userns` (0.8.0 and later). */
    disableUserns: boolean;
    /** bwrap knows `--size`: the private /tmp has a size. */
    tmpSize: boolean;
    /** Where the process and memory caps' cgroups go; absent when none can be made. */
    cgroups?: CgroupPlan;
    /** What is not capped here and how to change that (one notice), when something is not. */
    uncapped?: string;
  }
  | {
    ok: false;
    reason: string;
    hint: string;
    /** The probe's trial did not end in time: a later call probes again. */
    again?: true;
  };
