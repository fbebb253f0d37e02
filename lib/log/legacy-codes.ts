// The codes of verdicts written before verdicts had codes. verify_finished, landing_finished and
// item_settled carry a typed `code` (lib/log/vocabulary.ts); events of older logs carry only their
// reason, whose first words named the kind (`protected_path_changed: …`). This module is the only
// code allowed to read a kind from a reason, and only for those old events: the reducer (and the
// page's history, which folds the log itself) asks it once per event, and everything downstream
// reads the code. The words matched here are the ones older versions wrote, frozen: a reason
// reworded today is written with its code and never comes here.
import type { Payload } from "./events.ts";
import { LANDING_CODES, type LandingCode, type SettleCode, type VerifyCode } from "./vocabulary.ts";

/** The words the no-progress guard put first in a failed verdict's reason, before the flag existed. */
const NO_PROGRESS = "no_progress: this attempt changed nothing (no commit and a clean worktree); ";

/** The kinds older verdicts named first in their reason, as `<kind>: …`. */
const NAMED_VERIFY: readonly VerifyCode[] = [
  "objects_refused",
  "verify_result_forged",
  "owned_ref_changed",
  "object_store_tampered",
  "start_commit_missing",
  "protected_path_changed",
  "protected_bytes_differ",
];

/** A verify_finished's code and no-progress flag: its own when it has them, else read from its reason. */
export function verifyCodeOf(p: Payload<"verify_finished">): { code: VerifyCode; noProgress: boolean } {
  if (p.code !== undefined) return { code: p.code, noProgress: p.noProgress === true };
  const noProgress = p.reason.startsWith(NO_PROGRESS);
  const reason = noProgress ? p.reason.slice(NO_PROGRESS.length) : p.reason;
  return { code: legacyVerifyCode(p, reason), noProgress };
}

function legacyVerifyCode(p: Payload<"verify_finished">, reason: string): VerifyCode {
  const named = NAMED_VERIFY.find((k) => reason.startsWith(`${k}: `));
  if (named) return named;
  if (reason.startsWith("no verify command; "))
    return p.passed ? "no_command_passed" : reason.endsWith("but left no change") ? "no_command_no_change" : "no_command_agent_failed";
  if (p.passed) return "passed";
  if (p.timedOut) return "timed_out";
  if (/^exit -?\d+$/.test(reason)) return "exit_nonzero";
  if (reason.startsWith("killed by ")) return "killed";
  if (reason.startsWith("could not run: ")) return "could_not_run";
  if (reason.includes("worktree_replaced: ")) return "worktree_replaced";
  if (reason.startsWith("could not ")) return "git_failed";
  if (reason === "worktree is missing") return "worktree_missing";
  if (reason.startsWith("verify did not start within ")) return "never_started";
  if (reason.startsWith("verify process vanished")) return "lost";
  // Words of a version older than any matched here: failed with an exit code, or not run at all.
  return p.exitCode !== null ? "exit_nonzero" : "could_not_run";
}

/**
 * A landing_finished's code: its own when it is one of LANDING_CODES (a landing through a forge has
 * carried one from the start), else read from its outcome and reason.
 */
export function landingCodeOf(p: Payload<"landing_finished">): LandingCode {
  if (p.code !== undefined && (LANDING_CODES as readonly string[]).includes(p.code)) return p.code as LandingCode;
  switch (p.outcome) {
    case "none":
      return "branch_delivered";
    case "merged":
    case "already_contained":
    case "pr_opened":
      return p.outcome;
    case "conflict":
      return "conflict";
    // A forge's refusal under a code no longer known: "refused" is the forge's own catch-all.
    case "blocked":
      return "refused";
    case "failed":
      if (p.reason.startsWith("target_moved: ")) return "target_moved";
      if (p.reason.startsWith("worktree_replaced: ")) return "landing_replaced";
      if (/^branch \S+ moved since its verify/.test(p.reason)) return "branch_moved";
      if (/^target branch \S+ is checked out in /.test(p.reason)) return "target_checked_out";
      return "merge_failed";
  }
}

/** An item_settled's code: its own when it has one, else read from its outcome and reason. */
export function settleCodeOf(p: Payload<"item_settled">): SettleCode {
  if (p.code !== undefined) return p.code;
  const r = p.reason;
  switch (p.outcome) {
    case "passed":
    case "landing_blocked":
      return p.outcome;
    case "skipped":
      if (r.startsWith("skipped by ")) return "operator_skipped";
      return /^issue #\d+ is closed/.test(r) ? "issue_closed" : "issue_gone";
    case "cancelled":
      return "operator_cancelled";
    case "blocked":
      if (r.startsWith("dependency "))
        return r.endsWith("is not an item of the loop")
          ? "dependency_unknown"
          : r.endsWith("was removed from the definition")
            ? "dependency_removed"
            : "dependency_failed";
      return / could not be read for /.test(r) ? "issue_unreadable" : "issue_ref_invalid";
    case "failed": {
      const named = (["budget_exhausted", "identical_failure", "merge_conflict", "landing_failed"] as const).find((k) => r.startsWith(`${k}: `));
      if (named) return named;
      return r.startsWith("verify failed: ") ? "verify_failed" : "session_failed";
    }
  }
}
