/**
 * Approval policies. Read-class calls inside the workspace never ask. Other
 * classes are allowed when pre-approved (`--allow`, `a` at the prompt, `--yolo`,
 * print mode), else an asker is consulted (the interactive prompt), else refused.
 *
 * @module
 */

import type { ApprovalClass, ApprovalDecision, ApprovalPolicy, ApprovalRequest } from "./tool.ts";

/** The answer of an interactive asker: this call, refuse, the whole class, or refuse with words for the model. */
export type AskAnswer = "yes" | "no" | "all" | { feedback: string };

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
  /** Told of each request allowed without asking (the REPL still shows its change). */
  notify?: (request: ApprovalRequest) => void;
}

/** The approval state of one session. */
export class SessionPolicy implements ApprovalPolicy {
  readonly yolo: boolean;
  readonly allowed: Set<ApprovalClass>;
  readonly #ask: Asker | undefined;
  /** Classes allowed by an `a` answer (not up front), which {@link forget} can void. */
  readonly #answeredAll = new Set<ApprovalClass>();
  readonly #notify: ((request: ApprovalRequest) => void) | undefined;

  constructor(opts: SessionPolicyOptions = {}) {
    this.yolo = opts.yolo ?? false;
    this.allowed = new Set(opts.allowed ?? []);
    this.#ask = opts.ask;
    this.#notify = opts.notify;
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
    if (this.isAllowed(request.class)) {
      this.#notify?.(request);
      return { allowed: true };
    }
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
    if (typeof answer === "object") {
      return { allowed: false, reason: `The user refused this call and said: ${answer.feedback}` };
    }
    return { allowed: true };
  }
}
