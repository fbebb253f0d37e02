// The merge gate (docs/forge.md#landing): whether a pull request may be merged now, must be waited
// for, or is refused in a way waiting cannot fix. Pure: the landing phase asks the forge, this
// decides. GitHub itself waits only for *required* checks; loop waits for every check run and
// commit status on the head sha to pass, as the provider classified them (passing, failing,
// pending: lib/forge/provider.ts), and never merges past a check it could not read.
import type { ForgeChecks, ForgePull } from "./provider.ts";

export type GateDecision =
  | { kind: "merge"; sha: string }
  | { kind: "merged"; sha: string | null }
  | { kind: "wait"; code: WaitCode; reason: string }
  | { kind: "block"; reason: string };

export type WaitCode = "mergeable_unknown" | "checks_pending" | "checks_missing" | "not_mergeable_yet";

export function mergeGate(pr: ForgePull, read: ForgeChecks | null): GateDecision {
  if (pr.merged) return { kind: "merged", sha: pr.mergeCommitSha };
  if (pr.state === "closed") return { kind: "block", reason: `pull request #${pr.number} was closed without merging` };
  if (pr.mergeable === null) return { kind: "wait", code: "mergeable_unknown", reason: `the forge is still computing whether #${pr.number} is mergeable` };
  if (!pr.mergeable || pr.mergeableState === "dirty") return { kind: "block", reason: `pull request #${pr.number} conflicts with its base (mergeable_state ${pr.mergeableState})` };
  if (pr.draft) return { kind: "block", reason: `pull request #${pr.number} is a draft` };
  const sha = pr.headSha.slice(0, 12);
  if (read?.unread) return { kind: "block", reason: `not every check on ${sha} could be read (${read.unread}); loop merges only what it has seen pass` };
  const checks = read?.checks ?? [];
  if (checks.length === 0) return { kind: "wait", code: "checks_missing", reason: `no check run or status on ${sha} yet` };
  const failed = checks.filter((c) => c.verdict === "failing");
  if (failed.length) return { kind: "block", reason: `checks not green on ${sha}: ${failed.map((c) => c.detail).join("; ")}` };
  const pending = checks.filter((c) => c.verdict === "pending");
  if (pending.length) return { kind: "wait", code: "checks_pending", reason: `waiting for ${pending.length} of ${checks.length} checks on ${sha}: ${pending.map((c) => c.name).join(", ")}` };
  // `behind` (the base moved on) is not waited for: nobody would update the branch. The merge is
  // asked with the verified head; where protection requires an up-to-date branch, the forge
  // refuses it (405) and the landing blocks, naming why.
  return { kind: "merge", sha: pr.headSha };
}

/**
 * A 405 on merge: some are waits ("Base branch was modified", required reviews or checks still
 * running), the rest refusals waiting cannot fix (merge method not allowed, linear history, a head
 * not up to date with its base where protection requires it: loop does not update branches).
 */
export function notMergeableIsWait(message: string): boolean {
  if (/merge commits are not allowed|linear history|method .*not allowed|not allowed on this repository|not authorized|permission|not up to date/i.test(message)) return false;
  return /base branch was modified|required status check|expected|review|pending|try again|not mergeable/i.test(message);
}
