// The merge gate (docs/forge.md#landing): whether a pull request may be merged now, must be waited
// for, or is refused in a way waiting cannot fix. Pure: the landing phase asks the forge, this
// decides. GitHub itself waits only for *required* checks; loop waits for every check run and
// commit status on the head sha to finish green.
import type { ForgeCheck, ForgePull } from "./provider.ts";

export type GateDecision =
  | { kind: "merge"; sha: string }
  | { kind: "merged"; sha: string | null }
  | { kind: "wait"; code: WaitCode; reason: string }
  | { kind: "block"; reason: string };

export type WaitCode = "mergeable_unknown" | "checks_pending" | "checks_missing" | "behind" | "not_mergeable_yet";

export function mergeGate(pr: ForgePull, checks: ForgeCheck[] | null): GateDecision {
  if (pr.merged) return { kind: "merged", sha: pr.mergeCommitSha };
  if (pr.state === "closed") return { kind: "block", reason: `pull request #${pr.number} was closed without merging` };
  if (pr.mergeable === null) return { kind: "wait", code: "mergeable_unknown", reason: `the forge is still computing whether #${pr.number} is mergeable` };
  if (!pr.mergeable || pr.mergeableState === "dirty") return { kind: "block", reason: `pull request #${pr.number} conflicts with its base (mergeable_state ${pr.mergeableState})` };
  if (pr.draft) return { kind: "block", reason: `pull request #${pr.number} is a draft` };
  if (checks === null || checks.length === 0) return { kind: "wait", code: "checks_missing", reason: `no check run or status on ${pr.headSha.slice(0, 12)} yet` };
  const failed = checks.filter((c) => c.state === "failure");
  if (failed.length) return { kind: "block", reason: `checks not green on ${pr.headSha.slice(0, 12)}: ${failed.map((c) => c.detail).join("; ")}` };
  const pending = checks.filter((c) => c.state === "pending");
  if (pending.length) return { kind: "wait", code: "checks_pending", reason: `waiting for ${pending.length} of ${checks.length} checks on ${pr.headSha.slice(0, 12)}: ${pending.map((c) => c.name).join(", ")}` };
  if (pr.mergeableState === "behind") return { kind: "wait", code: "behind", reason: `#${pr.number} is behind its base branch` };
  return { kind: "merge", sha: pr.headSha };
}

/**
 * A 405 on merge: some are waits ("Base branch was modified", required reviews or checks still
 * running), the rest refusals waiting cannot fix (merge method not allowed, linear history).
 */
export function notMergeableIsWait(message: string): boolean {
  if (/merge commits are not allowed|linear history|method .*not allowed|not allowed on this repository|not authorized|permission/i.test(message)) return false;
  return /base branch was modified|required status check|expected|review|pending|try again|not mergeable/i.test(message);
}
