// The merge gate (docs/forge.md#landing): whether a pull request may be merged now, must be waited
// for, or is refused in a way waiting cannot fix, each with a named code a later reaction can act
// on. Pure: the landing phase asks the forge and git, this decides, over the provider's neutral
// answers (lib/forge/provider.ts): the pull request (GitLab: merge request) as loop's words say it,
// the forge's own verdict on merging (`mergeability`, translated by the provider from GitHub's
// mergeable_state or GitLab's detailed_merge_status) and every check on the head as passing,
// failing or pending. A merge lands only what loop pushed (and verified), only into the loop's
// base, and only while both locks hold; a forge itself may wait only for *required* checks, loop
// waits for every check on the head to pass, and never merges past a check it could not read.
import type { ForgeChecks, ForgeFailure, ForgePull } from "./provider.ts";
import { sanitizeLine } from "./untrusted.ts";
import type { ForgeBlockCode } from "../log/vocabulary.ts";

export type GateDecision =
  | { kind: "merge"; sha: string }
  | { kind: "merged"; sha: string | null }
  | { kind: "wait"; code: WaitCode; reason: string }
  | { kind: "block"; code: BlockCode; reason: string }
  /** The first lock no longer holds: the item settles with its PR open and unmerged. */
  | { kind: "release"; code: "landing_changed"; reason: string };

type WaitCode =
  | "mergeable_unknown"
  | "checks_pending"
  | "checks_missing"
  | "not_mergeable_yet"
  /** The PR's head is an older commit of what loop pushed: the forge has not caught up with the push. */
  | "head_not_updated"
  /** The merge was answered 409 (the head was not the pinned sha at that moment): the PR is read again next tick. */
  | "merge_conflict"
  /** A request got no usable answer (no connection, a 5xx): asked again next tick. */
  | "forge_error";

/** The refusals, one list with the loop's other landing codes (lib/log/vocabulary.ts FORGE_BLOCK_CODES). */
type BlockCode = ForgeBlockCode;

/** What a pull request is held to: what loop pushed, where it must land, and one fact from git. */
export interface Expected {
  /** The sha loop pushed, after its verify passed; the only head it merges. */
  head: string;
  /** The loop's base branch (workspace.base): the only branch it merges into. */
  base: string;
  /** The PR's head is an ancestor of `head` (git says so): the forge lags the push, nobody moved it. */
  headIsAncestor: boolean;
}

const short = (sha: string) => sanitizeLine(sha, 40).slice(0, 12);

/**
 * Is this PR still the one loop opened for what it pushed? Null when it is (open, into the base,
 * at the pushed head); else what to record. A merged PR is recorded merged only when it holds
 * exactly what loop pushed and went into the loop's base.
 */
export function identityGate(pr: ForgePull, e: Expected): GateDecision | null {
  const base = sanitizeLine(pr.baseRef, 200);
  if (pr.merged) {
    if (pr.baseRef !== e.base)
      return {
        kind: "block",
        code: "merged_elsewhere",
        reason: `${pr.label} was merged into ${base}, not ${e.base}, by someone else; loop does not record it as landed`,
      };
    if (pr.headSha !== e.head)
      return {
        kind: "block",
        code: "merged_elsewhere",
        reason: `${pr.label} was merged by someone else with head ${short(pr.headSha)}, not the ${short(e.head)} loop pushed and verified; loop does not record it as landed`,
      };
    return { kind: "merged", sha: pr.mergeCommitSha };
  }
  if (pr.state === "closed") return { kind: "block", code: "closed", reason: `${pr.label} was closed without merging` };
  if (pr.baseRef !== e.base)
    return { kind: "block", code: "base_changed", reason: `the base of ${pr.label} was changed to ${base}; loop merges only into ${e.base}` };
  if (pr.headSha !== e.head) {
    if (e.headIsAncestor)
      return {
        kind: "wait",
        code: "head_not_updated",
        reason: `the forge still shows ${short(pr.headSha)} as the head of ${pr.label}, an older commit of the ${short(e.head)} loop pushed`,
      };
    return {
      kind: "block",
      code: "head_moved",
      reason: `the head of ${pr.label} moved to ${short(pr.headSha)} after loop pushed ${short(e.head)}; loop merges only what it verified`,
    };
  }
  return null;
}

/** The first lock, read at every landing turn: landing "merge" in the definition the step imported. */
export function definitionLock(landing: string, pr: ForgePull): GateDecision | null {
  if (landing === "merge") return null;
  return {
    kind: "release",
    code: "landing_changed",
    reason: `landing is "${landing}" in loop.json now, so loop does not merge ${pr.label}; it is left open (${pr.url})`,
  };
}

/** The second lock, read right before the merge request: the operator's variable in loop run's environment. */
export function environmentLock(set: boolean, variable: string): GateDecision | null {
  if (set) return null;
  return {
    kind: "block",
    code: "auto_merge_unset",
    reason: `checks are green, but ${variable}=1 is not set in the environment of loop run, so nothing was merged`,
  };
}

/** Whether the PR (already known to be loop's: identityGate) may be merged on these checks. */
export function mergeGate(pr: ForgePull, read: ForgeChecks | null): GateDecision {
  const m = pr.mergeability;
  if (m.kind === "block") return { kind: "block", code: m.code, reason: m.reason };
  if (pr.draft) return { kind: "block", code: "draft", reason: `${pr.label} is a draft` };
  const sha = short(pr.headSha);
  if (read?.unread)
    return { kind: "block", code: "checks_unread", reason: `not every check on ${sha} could be read (${read.unread}); loop merges only what it has seen pass` };
  const checks = read?.checks ?? [];
  const failed = checks.filter((c) => c.verdict === "failing");
  if (failed.length) return { kind: "block", code: "checks_failed", reason: `checks not green on ${sha}: ${failed.map((c) => c.detail).join("; ")}` };
  // A red check blocks at once, whatever the forge is still computing; a pending one is named
  // before the forge's own wait (which is often the same pipeline, said less precisely).
  const pending = checks.filter((c) => c.verdict === "pending");
  if (pending.length)
    return {
      kind: "wait",
      code: "checks_pending",
      reason: `waiting for ${pending.length} of ${checks.length} checks on ${sha}: ${pending.map((c) => c.name).join(", ")}`,
    };
  if (m.kind === "wait") return { kind: "wait", code: m.code, reason: m.reason };
  if (checks.length === 0) return { kind: "wait", code: "checks_missing", reason: `no check run or status on ${sha} yet` };
  // GitHub's `behind` (the base moved on) is not waited for: nobody would update the branch. The
  // merge is asked with the verified head; where protection requires an up-to-date branch, the
  // forge refuses it (405) and the landing blocks, naming why.
  return { kind: "merge", sha: pr.headSha };
}

/**
 * A landing request that failed: a rate limit is neither (nothing is recorded, docs/forge.md#rate-limits);
 * a 401/403/404 is a refusal; on the merge request, a 422 (validation failed) or another 4xx is a
 * refusal too; no answer or a 5xx waits, named, and is asked again next tick. `line` is the failure
 * as one line (lib/forge/provider.ts describeFailure).
 */
export function failureGate(f: ForgeFailure, line: string, o: { merging: boolean; label: string }): GateDecision | "rate_limited" {
  if (f.kind === "rate_limited") return "rate_limited";
  if (f.kind === "http" && (f.status === 401 || f.status === 403 || f.status === 404))
    return { kind: "block", code: "forge_refused", reason: `the forge refused: ${line}` };
  if (o.merging && f.kind === "http" && f.status >= 400 && f.status < 500)
    return { kind: "block", code: "merge_refused", reason: `the forge refused to merge ${o.label}: ${line}` };
  return {
    kind: "wait",
    code: "forge_error",
    reason: o.merging ? `the merge request for ${o.label} got no usable answer (${line}); asking again next tick` : `${line}; asking again next tick`,
  };
}
