// The land phase: a verified attempt's branch is delivered, and landing_finished records how. With
// `landing: "merge"` the branch is merged into the loop's target branch inside the loop's own
// landing worktree (lib/step/workspace.ts landMerge); otherwise the branch itself is the deliverable.
import { join } from "node:path";
import type { Payload } from "../log/events.ts";
import type { ItemState } from "../log/reducer.ts";
import { failpoint } from "../shared/failpoint.ts";
import { append, repoOf, type StepContext, warnMovedAside } from "./context.ts";
import { landMerge } from "./workspace.ts";

type Landing = Omit<Payload<"landing_finished">, "attempt" | "branch">;

/** Land the current (verified) attempt of `it` and record the outcome. */
export function landAttempt(ctx: StepContext, it: ItemState): void {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const branch = it.session!.branch;
  let landing: Landing;
  if (ctx.def.landing === "merge") {
    failpoint("landing:before_merge");
    ctx.store.assertLease();
    const landingDir = join(ctx.paths.workspaces, "_landing");
    const target = ctx.def.target;
    const r = landMerge({
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
  } else landing = { outcome: "none", target: null, commit: null, reason: `branch ${branch} is the deliverable` };
  append(ctx, [{ type: "landing_finished", item: it.id, payload: { attempt: attempt.n, branch, ...landing } }], "landing");
}
