/**
 * Approval policies. Read-class calls inside the workspace never ask. Other
 * classes are allowed when pre-approved (`--allow`, `a` at the prompt, `--yolo`,
 * print mode), else an asker is consulted (the interactive prompt), else refused.
 *
 * The `protected` class (git config and hooks, crab's settings: see
 * `../fs/protected.ts`) is the exception: only `--allow protected` pre-approves it.
 * `--yolo` does not, and `a` at its prompt allows the one call, never the class.
 *
 * A session's permission rules and mode live here too, and are decided before
 * any of this (`permissions.ts`): a call an ask rule names is asked whatever was
 * approved, and refused where nobody can answer; `dontAsk` never asks.
 *
 * @module
 */

import type { ApprovalClass, ApprovalRequest, OutsideClass } from "../tool.ts";
import { BUILTIN_CLASS_LIST } from "../table.ts";
import type { Mode, Rule } from "./mod.ts";
import type {
  ApprovalDecision,
  ApprovalPolicy,
  CheckedCall,
  PolicyDecision,
} from "../call/stages.ts";
import { permissionDecision, searchHides } from "./decision.ts";

/** Every class `--allow` names (besides `mcp:SERVER`), `outside` for both outside classes. */
export const ALLOW_CLASSES = [
  ...BUILTIN_CLASS_LIST,
  "outside",
  "outside-read",
  "outside-write",
  "protected",
] as const;

/** `outside`, as `--allow` and the `--allow-outside` flags take it: both outside classes. */
export const OUTSIDE = "outside";

/** A class as a pre-approval names it: a class, or `outside` for both outside classes. */
export type AllowedClass = ApprovalClass | typeof OUTSIDE;

const OUTSIDE_CLASSES: readonly OutsideClass[] = ["outside-read", "outside-write"];

/** The classes a pre-approval stands for (`outside` is both outside classes). */
export function expandClass(cls: AllowedClass): ApprovalClass[] {
  return cls === OUTSIDE ? [...OUTSIDE_CLASSES] : [cls];
}

/** The answer of an interactive asker: this call, refuse, the whole class, or refuse with words for the model. */
export type AskAnswer = "yes" | "no" | "all" | { feedback: string };

/** Asks a person; resolves when they answered. */
export type Asker = (request: ApprovalRequest, signal: AbortSignal) => Promise<AskAnswer>;

/** Options of a {@link SessionPolicy}. */
export interface SessionPolicyOptions {
  /** Approve everything (`--yolo`): the mode `bypassPermissions`. */
  yolo?: boolean;
  /** The permission mode (default `default`; `bypassPermissions` under `yolo`). */
  mode?: Mode;
  /** Permission rules, each with its source (`agent/run/settings.ts` loads them). */
  rules?: readonly Rule[];
  /** The home directory, a real path: `~` in rules' commands. Default: `$HOME`. */
  home?: string;
  /** Classes approved up front (`--allow write,exec`); `outside` means both outside classes. */
  allowed?: Iterable<AllowedClass>;
  /** The interactive prompt; without it, unapproved calls are refused. */
  ask?: Asker;
  /** Told of each request allowed without asking (the REPL still shows its change). */
  notify?: (request: ApprovalRequest) => void;
  /**
   * The flag that would approve `cls`, for the refusal text; by default the main
   * command's `--allow CLASS`.
   */
  flagFor?: (cls: ApprovalClass) => string;
}

/** The approval state of one session. */
export class SessionPolicy implements ApprovalPolicy {
  /** The permission mode; may change during a session (the REPL's mode switch). */
  mode: Mode;
  /** The permission rules; a rule added during the session is pushed here. */
  readonly rules: Rule[];
  readonly home: string | undefined;
  readonly allowed: Set<ApprovalClass>;
  readonly #ask: Asker | undefined;
  /** Classes allowed by an `a` answer (not up front), which {@link forget} can void. */
  readonly #answeredAll = new Set<ApprovalClass>();
  readonly #notify: ((request: ApprovalRequest) => void) | undefined;
  readonly #flagFor: (cls: ApprovalClass) => string;

  constructor(opts: SessionPolicyOptions = {}) {
    this.mode = opts.mode ?? (opts.yolo ? "bypassPermissions" : "default");
    this.rules = [...opts.rules ?? []];
    this.home = opts.home;
    this.allowed = new Set([...opts.allowed ?? []].flatMap(expandClass));
    this.#ask = opts.ask;
    this.#notify = opts.notify;
    this.#flagFor = opts.flagFor ?? ((cls) => `--allow ${cls}`);
  }

  /** Everything is approved (`--yolo`, the mode `bypassPermissions`); protected paths still ask. */
  get yolo(): boolean {
    return this.mode === "bypassPermissions";
  }

  /** The rules' and the mode's decision on a call (`permissions.ts`). */
  async decide(call: CheckedCall): Promise<PolicyDecision> {
    return (await permissionDecision(this, call.tool, call.input, call.session.workspace)).verdict;
  }

  /** Files a search leaves out (`permissions.ts`). */
  hidden(workspace: string): ((path: string) => boolean) | undefined {
    return searchHides(this, workspace);
  }

  /** Approves `cls` for the rest of the session (`outside`: both outside classes). */
  allow(cls: AllowedClass): void {
    for (const c of expandClass(cls)) this.allowed.add(c);
  }

  /** True when `cls` runs without asking (`outside`: when both outside classes do). */
  isAllowed(cls: AllowedClass): boolean {
    // A protected path asks every time, under --yolo too, unless allowed up front.
    if (cls === "protected") return this.allowed.has(cls);
    if (this.yolo || cls === "read") return true;
    return expandClass(cls).every((c) => this.allowed.has(c));
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
    const decided = request.decided;
    if (decided?.effect === "allow" || (!decided && this.isAllowed(request.class))) {
      this.#notify?.(request);
      return { allowed: true };
    }
    if (decided?.effect === "ask" && (!this.#ask || this.mode === "dontAsk")) {
      return {
        allowed: false,
        reason: `${decided.why}; nobody is here to answer, so it is refused`,
      };
    }
    if (this.mode === "dontAsk") {
      return {
        allowed: false,
        reason: `${request.class} calls are not allowed, and dontAsk mode asks nothing`,
      };
    }
    if (!this.#ask) {
      const flag = this.#flagFor(request.class);
      return {
        allowed: false,
        reason: `${request.class} calls are not approved in this session (start crab with ${flag})`,
      };
    }
    const answer = await this.#ask(request, signal);
    if (answer === "all" && request.class !== "protected") {
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
