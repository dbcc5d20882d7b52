/**
 * Approval policies. Read-class calls inside the workspace never ask. Other
 * classes are allowed when pre-approved (`--allow`, `a` at the prompt, `--yolo`,
 * print mode), else an asker is consulted (the interactive prompt), else refused.
 *
 * The `protected` class (git config and hooks, crab's settings: see
 * `protected.ts`) is the exception: only `--allow protected` pre-approves it.
 * `--yolo` does not, and `a` at its prompt allows the one call, never the class.
 *
 * @module
 */

import type { ApprovalClass, ApprovalDecision, ApprovalPolicy, ApprovalRequest } from "./tool.ts";

/** The answer of an interactive asker: this call, refuse, or the whole class. */
export type AskAnswer = "yes" | "no" | "all";

/** Asks a person; resolves when they answered. */
export type Asker = (request: ApprovalRequest, signal: AbortSignal) => Promise<AskAnswer>;

/** Options of a {@link SessionPolicy}. */
export interface SessionPolicyOptions {
  /** Approve everything (`--yolo`, print mode). */
  yolo?: boolean;
  /** Classes approved up front (`--allow write,exec`). */
  allowed?: Iterable<ApprovalClass>;
  /** The interactive prompt; without it, unapproved calls are refused. */
  ask?: Asker;
}

/** The approval state of one session. */
export class SessionPolicy implements ApprovalPolicy {
  readonly yolo: boolean;
  readonly allowed: Set<ApprovalClass>;
  readonly #ask: Asker | undefined;

  constructor(opts: SessionPolicyOptions = {}) {
    this.yolo = opts.yolo ?? false;
    this.allowed = new Set(opts.allowed ?? []);
    this.#ask = opts.ask;
  }

  /** True when `cls` runs without asking. */
  isAllowed(cls: ApprovalClass): boolean {
    if (cls === "protected") return this.allowed.has(cls);
    return this.yolo || cls === "read" || this.allowed.has(cls);
  }

  async approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (this.isAllowed(request.class)) return { allowed: true };
    if (!this.#ask) {
      const flag = request.class === "outside" ? "--allow-outside" : `--allow ${request.class}`;
      return {
        allowed: false,
        reason: `${request.class} calls are not approved in this session (start crab with ${flag})`,
      };
    }
    const answer = await this.#ask(request, signal);
    if (answer === "all" && request.class !== "protected") this.allowed.add(request.class);
    if (answer === "no") return { allowed: false, reason: "The user refused this call." };
    return { allowed: true };
  }
}
