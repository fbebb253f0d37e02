// A new attempt's worktree made ready before its agent starts (docs/loop-json.md#workspace): where
// its branch starts (the base, the landing target, or with workspace.stacked the previous item's
// branch), workspace.setup run in it, and workspace_prepared recorded. A setup that fails is the
// environment's fault (setup_failed): the launch pauses the loop and gives the attempt back.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { itemBranch } from "../definition/branches.ts";
import { verifyRule } from "../definition/child-environment.ts";
import type { ItemState } from "../log/projection.ts";
import { FaultError } from "../decisions/faults.ts";
import { branchExists, revParse } from "../repo/git.ts";
import { checkWorktree, startPointFor } from "../repo/workspace.ts";
import { runSetup } from "../supervisor/setup-command.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { activeItems } from "../decisions/next-work.ts";
import { append, projection, type StepContext } from "./context.ts";

/** Written in the worktree's git dir once its setup passed: a checkout made again (its git dir with it) runs it again. */
const SETUP_DONE = "loop-setup-done";

/**
 * Where a new item branch starts without a forge: with workspace.stacked and a landing that does
 * not merge, the branch of the item before it in loop.json (it passed: stacked items depend on the
 * one before); else the landing target once it exists (landing merge), else the base.
 */
export function localStartPoint(ctx: StepContext, repo: string, it: ItemState): string {
  return stackedStartPoint(ctx, repo, it) ?? startPointFor({ repo, landing: ctx.def.landing, base: ctx.def.base, target: ctx.def.target });
}

/** With workspace.stacked and a landing that does not merge, the previous item's branch (when it is there), else null. */
export function stackedStartPoint(ctx: StepContext, repo: string, it: ItemState): string | null {
  if (!ctx.def.stacked || ctx.def.landing === "merge") return null;
  // The item before it in loop.json: the projection keeps the definition's order.
  const order = activeItems(projection(ctx)).filter((x) => x.inDefinition);
  const i = order.findIndex((x) => x.id === it.id);
  const previous = i > 0 ? itemBranch(ctx.def.name, order[i - 1]!.id) : null;
  return previous && branchExists(repo, previous) ? previous : null;
}

/**
 * Run workspace.setup in a worktree that has not had it yet, then record workspace_prepared (what
 * the branch was built on when it was created here). Throws a FaultError (setup_failed) when the
 * setup fails; the worktree stays, and the next launch runs the setup in it again.
 */
export async function prepareWorkspace(
  ctx: StepContext,
  it: ItemState,
  o: { repo: string; worktree: string; branch: string; dir: string; attempt: number; startPoint: string; branchCreated: boolean },
): Promise<void> {
  const builtOn = o.branchCreated ? { ref: o.startPoint, commit: revParse(o.repo, o.startPoint) ?? "" } : null;
  let setup: { ms: number; log: string } | null = null;
  const command = ctx.def.setup;
  if (command !== undefined) {
    const checked = checkWorktree({ repo: o.repo, worktree: o.worktree, branch: o.branch });
    const marker = checked.ok ? join(checked.gitDir, SETUP_DONE) : null;
    if (marker === null || !existsSync(marker)) {
      const timeoutMs = it.def.timeouts.setup ?? 10 * 60_000;
      const logPath = join(o.dir, SESSION_FILES.setup);
      ctx.store.assertLease();
      ctx.store.renewLease(ctx.lease, timeoutMs + 10 * 60_000);
      const r = await runSetup({
        command,
        cwd: o.worktree,
        env: { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(o.attempt), LOOP_WORKDIR: o.worktree },
        envRule: verifyRule(ctx.def, { behindGateway: it.def.network !== undefined }),
        logPath,
        timeoutMs,
      });
      if (!r.ok)
        throw new FaultError({
          kind: "setup_failed",
          message: `workspace.setup ${r.reason} in ${o.worktree} (its output: ${logPath}, \`loop logs --setup --work-item ${it.id}\`)`,
          fix: "fix the setup command in loop.json or what it needs on this machine (a registry, a cache, a tool), then `loop ctl resume`",
        });
      if (marker) writeFileSync(marker, `${new Date().toISOString()}\n`);
      setup = { ms: r.ms, log: logPath };
    }
  }
  if (builtOn === null && setup === null) return;
  append(ctx, [{ type: "workspace_prepared", item: it.id, payload: { attempt: o.attempt, builtOn, setup } }], "reserve");
}
