// What an attempt leads to once its session has ended: verify, land, settle, fail and retry or
// settle failed; and how a failure is named. Pure: read from what the log already holds.
import { type ItemState, requireAttempt } from "../log/projection.ts";
import { landed, type SettleCode } from "../log/vocabulary.ts";
import { endedAttempt } from "../log/item-views.ts";
import { identicalFailure, identicalFailureReason } from "./guards.ts";

/** What an attempt that failed settles its item as, when it is the last one allowed. */
type FailedCode = Extract<SettleCode, "session_failed" | "verify_failed" | "gave_up">;

/**
 * What an attempt whose session has ended needs next, read from what the log already holds: each
 * phase records one event, and the next step picks up after it.
 */
export type AfterSession =
  /** The launch was interrupted, or the session died with a stopped watcher (the loop's or the machine's failure, not the agent's): run the attempt again, uncounted. */
  | { kind: "requeue"; reason: string; drained: boolean }
  /** The session or its verify failed: close it, then retry or settle failed (afterFailure); `code`: which, if it settles. */
  | { kind: "fail"; reason: string; code: FailedCode }
  /** Start its verify, or observe the verify already reserved (the attempt's verifyRun). */
  | { kind: "verify" }
  | { kind: "land" }
  /** Verified and landed (or not): close the session and settle the item. */
  | { kind: "settle"; landed: boolean };

export function afterSession(it: ItemState): AfterSession {
  const attempt = endedAttempt(it);
  const { end } = attempt;
  // Cut short by the loop or the machine, not by the agent: the same attempt's work runs again, uncounted.
  if (end.verdict === "launch_interrupted" || end.verdict === "drained") return { kind: "requeue", reason: end.reason, drained: end.verdict === "drained" };
  if (end.verdict !== "exited") return { kind: "fail", reason: end.reason, code: "session_failed" };
  if (!attempt.verify) return { kind: "verify" };
  // The agent gave up (docs/runners.md#giving-up): never retried blindly, it waits for a person.
  if (!attempt.verify.passed && attempt.verify.code === "gave_up") return { kind: "fail", reason: attempt.verify.reason, code: "gave_up" };
  if (!attempt.verify.passed) return { kind: "fail", reason: `verify failed: ${attempt.verify.reason}`, code: "verify_failed" };
  // The attempt's own landing: an earlier attempt's (a retry after landing_blocked or a conflict) says nothing of this one.
  if (!attempt.landing) return { kind: "land" };
  return { kind: "settle", landed: landed(attempt.landing.outcome) };
}

/** After an attempt failed: try again or give up. */
export function afterFailure(it: ItemState): "retry" | "settle_failed" {
  return it.failures + 1 < it.def.maxAttempts ? "retry" : "settle_failed";
}

/**
 * After an attempt failed with `reason`, the guards applied: retry, or settle failed with the
 * reason the item keeps. Two failures in a row with the same verify output settle at once (the
 * identicalFailure guard): a third try would spend money on nothing.
 */
export function afterFailureOf(
  it: ItemState,
  o: { identicalFailure: boolean; reason: string; code: FailedCode },
): { decision: "retry" } | { decision: "settle_failed"; reason: string; code: FailedCode | "identical_failure" } {
  // An agent that gave up is not tried again with the same prompt: a person retries (with an edited prompt), skips or resets it.
  if (o.code === "gave_up")
    return { decision: "settle_failed", reason: `${o.reason} (attempt ${requireAttempt(it).n}; not retried: a person decides)`, code: "gave_up" };
  const planned = afterFailure(it);
  const same = planned === "retry" && o.identicalFailure ? identicalFailure(it.attempts) : null;
  if (planned === "retry" && !same) return { decision: "retry" };
  const attempt = requireAttempt(it);
  if (same)
    return {
      decision: "settle_failed",
      reason: failedReason(it, identicalFailureReason({ ...same, attempt: attempt.n }, o.reason)),
      code: "identical_failure",
    };
  return { decision: "settle_failed", reason: failedReason(it, o.reason), code: o.code };
}

/**
 * Attempts the agent actually ran: those whose session was recorded started. A launch cut short
 * before that (a step killed between the reservation and the spawn, an environment fault after the
 * reservation) keeps its number (its key, its session folder) but is no attempt of the agent's.
 */
export function attemptsRan(attempts: readonly { startedAt: string | null }[]): number {
  return attempts.filter((a) => a.startedAt !== null).length;
}

/**
 * The reason an item settles `failed` with, after its last allowed failure. The budget counts
 * failed attempts only (a question or an operator's stop spends none), so the attempt number can
 * be higher than maxAttempts: both are named, never "attempt 3 of 2".
 */
export function failedReason(it: ItemState, reason: string): string {
  const attempt = attemptsRan(it.attempts);
  const failed = it.failures + 1;
  return `${reason} (failed attempt ${failed} of ${it.def.maxAttempts}${attempt > failed ? `; attempt ${attempt} in all` : ""})`;
}
