// What a tick does with a running session, in order (docs/cli/loop-run.md, step 5): the budget
// before anything else, then a question, then the agent's exit, then a session gone or stuck.
// Policy, so its order is here in one place. Pure: lib/step/observe.ts looks at the session
// (lib/decisions/session-verdict.ts classifySession judges what it saw), gathers each budget fact
// when this asks for it (recording the usage figure it is judged on first), and carries out what
// this decides.
import type { BudgetVerdict } from "./budget.ts";
import { drainedReason, type WatcherStopFact } from "./faults.ts";
import type { SessionVerdict } from "./session-verdict.ts";

/** What is known of a running session; a budget not judged yet is absent (null: judged, not reached). */
export interface RunningFacts {
  /** What the look from outside saw, judged (classifySession). */
  verdict: SessionVerdict;
  /** The session's folder and launch record exist (a session gone without them is lost, never drained). */
  recordPresent: boolean;
  /** The session runs behind a gateway (loop.json `network`): its budget is enforced at the source. */
  behindGateway: boolean;
  /** The watcher was stopped while this attempt ran (watcher_stopped). */
  drain: WatcherStopFact | undefined;
  /** Still working: the budget judged once its figure so far is recorded. */
  budgetWhileWorking?: BudgetVerdict;
  /** Ended: the budget judged on the figure as recorded (a stop a killed step left due, a lowered budget). */
  budgetDue?: BudgetVerdict;
  /** Exited behind a gateway: the budget judged once its final figure is recorded. */
  budgetAtExit?: BudgetVerdict;
}

type RunningFact = "budgetWhileWorking" | "budgetDue" | "budgetAtExit";

type RunningNext =
  /** Gather this fact (record the figure it is judged on, then judge), then ask again. */
  | { kind: "gather"; fact: RunningFact }
  /** A budget is reached: end the session through the close path and settle or pause (lib/step/spend.ts). */
  | { kind: "budget"; reached: NonNullable<BudgetVerdict> }
  /** Still working: the step stops here. */
  | { kind: "waiting"; reason: string }
  /** It asked a question: end it, record the question, pause the loop. */
  | { kind: "needs_input"; question: string }
  /** The agent exited: record its end. */
  | { kind: "exited"; code: number | null; signal: string | null; reason: string }
  /** Gone, never started or stalled (or gone with a stopped watcher: drained): end what is left through the close path. */
  | { kind: "close"; verdict: "lost" | "never_started" | "stalled" | "drained"; reason: string };

/** The next thing to do for a running session, from what is known of it. */
export function runningNext(f: RunningFacts): RunningNext {
  const v = f.verdict;
  const gather = (fact: RunningFact): RunningNext => ({ kind: "gather", fact });
  // 1. Still working: its figure so far recorded (in its own commit, so a step killed while ending
  // the session leaves the figure that decides), then its budget.
  if (v.kind === "waiting") {
    if (f.budgetWhileWorking === undefined) return gather("budgetWhileWorking");
    return f.budgetWhileWorking ? { kind: "budget", reached: f.budgetWhileWorking } : { kind: "waiting", reason: v.reason };
  }
  // 2. Ended, but a budget the recorded figure had reached is still due: stopped as it would have been.
  if (f.budgetDue === undefined) return gather("budgetDue");
  if (f.budgetDue) return { kind: "budget", reached: f.budgetDue };
  // 3. A question.
  if (v.kind === "needs_input") return { kind: "needs_input", question: v.question };
  if (v.kind === "exited") {
    // 4. Behind a gateway a session that ended over its budget was refused its next model request:
    // stopped as a running one would be, its final figure recorded first.
    if (f.behindGateway) {
      if (f.budgetAtExit === undefined) return gather("budgetAtExit");
      if (f.budgetAtExit) return { kind: "budget", reached: f.budgetAtExit };
    }
    // 5. The agent's exit.
    return { kind: "exited", code: v.code, signal: v.signal, reason: v.reason };
  }
  // 6. Gone without an exit status after the watcher named it when it was stopped: it died with the
  // watcher's machine (a pod's end), which spends no attempt; else lost, never started or stalled.
  const drained = v.kind === "lost" && f.recordPresent ? drainedReason({ stop: f.drain, what: "session", vanished: v.reason }) : null;
  return drained ? { kind: "close", verdict: "drained", reason: drained } : { kind: "close", verdict: v.kind, reason: v.reason };
}
