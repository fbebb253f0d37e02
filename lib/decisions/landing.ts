// LandingMode's decisions: which way a verified attempt lands, whether a moved target is only this
// item's own merge recorded too late, and what an attempt's landing settles the item as. Pure: the
// land and settle phases (lib/step/land.ts, settle.ts, step.ts) look, and act on what these say.
import type { LandingMode } from "../definition/normalized.ts";
import type { LandingOutcome, SettleCode } from "../log/vocabulary.ts";

/**
 * Through the forge or locally. A forge landing already under way finishes through the forge
 * whatever `landing` says now (switched to "none", it settles with its PR left open and says so:
 * docs/forge.md#the-two-locks).
 */
export function landingRoute(o: { forge: boolean; landing: LandingMode; forgeLandingStarted: boolean }): "forge" | "local" {
  return o.forge && (o.landing !== "none" || o.forgeLandingStarted) ? "forge" : "local";
}

/**
 * A target that moved from where loop's last merge left it is still loop's when it holds exactly one
 * merge more: first parent the recorded commit, second parent this item's branch head (a step killed
 * after merging, before recording it). `parents`: `<now>^1`, `<now>^2` and the branch's head, as
 * git resolved them (fewer when one does not resolve).
 */
export function isOwnMergeOnTop(o: { landedCommit: string; parents: readonly string[] }): boolean {
  const [first, second, branchHead] = o.parents;
  return o.parents.length === 3 && first === o.landedCommit && second === branchHead;
}

/** What an attempt settles as once its landing is recorded (`landed`: the landing delivered it). */
export function settledByLanding(o: { landed: boolean; outcome: LandingOutcome; landingReason: string; verifyReason: string }): {
  outcome: "passed" | "landing_blocked" | "failed";
  code: Extract<SettleCode, "passed" | "landing_blocked" | "merge_conflict" | "landing_failed">;
  reason: string;
} {
  if (o.landed) return { outcome: "passed", code: "passed", reason: `verify passed (${o.verifyReason}); ${o.landingReason}` };
  // A landing through the forge that waiting cannot finish: a status of its own, the PR left open (docs/forge.md).
  if (o.outcome === "blocked") return { outcome: "landing_blocked", code: "landing_blocked", reason: `landing_blocked: ${o.landingReason}` };
  const code = o.outcome === "conflict" ? "merge_conflict" : "landing_failed";
  return { outcome: "failed", code, reason: `${code}: ${o.landingReason}` };
}
