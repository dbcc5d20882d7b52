/**
 * Approval policies. Read-class calls inside the workspace never ask. Other
 * classes are allowed when pre-approved (`--allow`, `a` at the prompt, `--yolo`,
 * print mode), else an asker is consulted (the interactive prompt), else refused.
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
  /** Classes allowed by an `a` answer (not up front), which {@link forget} can void. */
  readonly #answeredAll = new Set<ApprovalClass>();

  constructor(opts: SessionPolicyOptions = {}) {
    this.yolo = opts.yolo ?? false;
    this.allowed = new Set(opts.allowed ?? []);
    this.#ask = opts.ask;
  }

  /** True when `cls` runs without asking. */
  isAllowed(cls: ApprovalClass): boolean {
    return this.yolo || cls === "read" || this.allowed.has(cls);
  }

  /**
   * Voids an `a` answer for `cls` (what it allowed has changed, e.g. an MCP server
   * redescribed a tool), so the next call asks again. A class allowed up front
   * (`--allow`, print mode) is the user's standing choice and stays. True when a
   * grant was voided.
   */
  forget(cls: ApprovalClass): boolean {
    if (!this.#answeredAll.delete(cls)) return false;
    this.allowed.delete(cls);
    return true;
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
    if (answer === "all") {
      this.allowed.add(request.class);
      this.#answeredAll.add(request.class);
    }
    if (answer === "no") return { allowed: false, reason: "The user refused this call." };
    return { allowed: true };
  }
}
