// The merge gate (docs/forge.md#landing): whether a pull request may be merged now, must be waited
// for, or is refused in a way waiting cannot fix. Pure: the landing phase asks the forge, this
// decides, over the provider's neutral answers (lib/forge/provider.ts): the forge's own verdict on
// merging (`mergeability`, translated by the provider from GitHub's mergeable_state or GitLab's
// detailed_merge_status) and every check on the head sha (passing, failing, pending). A forge
// itself may wait only for *required* checks; loop waits for every one to pass, and never merges
// past a check it could not read.
import type { ForgeChecks, ForgePull, Mergeability } from "./provider.ts";

export type GateDecision =
  | { kind: "merge"; sha: string }
  | { kind: "merged"; sha: string | null }
  | { kind: "wait"; code: WaitCode; reason: string }
  | { kind: "block"; reason: string };

export type WaitCode = "mergeable_unknown" | "checks_pending" | "checks_missing" | "not_mergeable_yet";

export function mergeGate(pr: ForgePull, read: ForgeChecks | null): GateDecision {
  if (pr.merged) return { kind: "merged", sha: pr.mergeCommitSha };
  if (pr.state === "closed") return { kind: "block", reason: `${pr.label} was closed without merging` };
  const m: Mergeability = pr.mergeability;
  if (m.kind === "block") return { kind: "block", reason: m.reason };
  if (pr.draft) return { kind: "block", reason: `${pr.label} is a draft` };
  const sha = pr.headSha.slice(0, 12);
  if (read?.unread) return { kind: "block", reason: `not every check on ${sha} could be read (${read.unread}); loop merges only what it has seen pass` };
  const checks = read?.checks ?? [];
  const failed = checks.filter((c) => c.verdict === "failing");
  if (failed.length) return { kind: "block", reason: `checks not green on ${sha}: ${failed.map((c) => c.detail).join("; ")}` };
  // A red check blocks at once, whatever the forge is still computing; a pending one is named
  // before the forge's own wait (which is often the same pipeline, said less precisely).
  const pending = checks.filter((c) => c.verdict === "pending");
  if (pending.length) return { kind: "wait", code: "checks_pending", reason: `waiting for ${pending.length} of ${checks.length} checks on ${sha}: ${pending.map((c) => c.name).join(", ")}` };
  if (m.kind === "wait") return { kind: "wait", code: m.code, reason: m.reason };
  if (checks.length === 0) return { kind: "wait", code: "checks_missing", reason: `no check run or status on ${sha} yet` };
  return { kind: "merge", sha: pr.headSha };
}
