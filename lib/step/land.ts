// The land phase: a verified attempt's branch is delivered, and landing_finished records how. With
// `landing: "merge"` the branch is merged into the loop's target branch inside the loop's own
// landing worktree (lib/repo/workspace.ts landMerge); otherwise the branch itself is the deliverable.
import { join } from "node:path";
import { LANDING_DIR } from "../shared/paths.ts";
import type { Payload } from "../log/events.ts";
import type { LandingCode } from "../log/vocabulary.ts";
import { requireAttempt } from "../log/projection.ts";
import type { EndedItem } from "../log/item-views.ts";
import { failpoint } from "../shared/failpoint.ts";
import { append, repoOf, type StepContext, warnMovedAside } from "./context.ts";
import { landMerge, type MergeResult } from "../repo/workspace.ts";
import { gitTry } from "../repo/git.ts";
import { isOwnMergeOnTop } from "../decisions/landing.ts";
import { describeRefChange, lastLanded, readRefs, refChanges, restoreCommand } from "../repo/owned-refs.ts";

/** What landing_finished records of a landing, its code typed (the payload's type also admits an older log's). */
type LandingRecord = Omit<Payload<"landing_finished">, "attempt" | "branch" | "code"> & { code: LandingCode };

/**
 * The target, when it is not where loop's last merge left it; null when it is, when nothing was
 * merged yet, or when it holds one merge more: this item's branch merged on top of it, by a step
 * killed before it could record the merge (landMerge then finds it merged and says so again).
 */
function targetMoved(ctx: StepContext, branch: string) {
  const landed = lastLanded(ctx.store.db, ctx.def.target);
  if (!landed) return null;
  const ref = `refs/heads/${landed.target}`;
  const moved = refChanges([{ ref, commit: landed.commit, item: null, exact: true }], readRefs(repoOf(ctx), [ref]))[0];
  if (!moved || moved.now === null) return moved ?? null;
  const parents = gitTry(repoOf(ctx), ["rev-parse", `${moved.now}^1`, `${moved.now}^2`, `refs/heads/${branch}`])
    .stdout.trim()
    .split("\n");
  return isOwnMergeOnTop({ landedCommit: landed.commit, parents }) ? null : moved;
}

/** Land the current (verified) attempt of `it` and record the outcome. */
export function landAttempt(ctx: StepContext, it: EndedItem): void {
  const attempt = requireAttempt(it);
  const branch = it.session.branch;
  let landing: LandingRecord;
  if (ctx.def.landing === "merge") {
    failpoint("landing:before_merge");
    ctx.store.assertLease();
    const landingDir = join(ctx.worktrees, LANDING_DIR);
    const target = ctx.def.target;
    // Never merge on top of a target someone else moved: what it holds would land as verified.
    const moved = targetMoved(ctx, branch);
    const r: MergeResult = moved
      ? {
          outcome: "failed",
          code: "target_moved",
          commit: null,
          reason: `target_moved: ${describeRefChange(moved)}; loop does not merge on top (put it back: ${restoreCommand(moved)})`,
        }
      : landMerge({
          repo: repoOf(ctx),
          landingDir,
          target,
          base: ctx.def.base,
          branch,
          // Exactly the commit its verify ran on; nothing when the branch has moved since.
          commit: attempt.verifyRun?.head ?? null,
          message: `loop: land ${it.id} (attempt ${attempt.n})`,
          onMovedAside: (aside) => warnMovedAside(ctx, { path: landingDir, branch: target, aside }),
        });
    failpoint("landing:after_merge");
    landing = { ...r, target };
  } else landing = { outcome: "none", code: "branch_delivered", target: null, commit: null, reason: `branch ${branch} is the deliverable` };
  append(ctx, [{ type: "landing_finished", item: it.id, payload: { attempt: attempt.n, branch, ...landing } }], "landing");
}
