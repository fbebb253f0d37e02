// Where a new attempt's branch starts (docs/loop-json.md#workspace): the base, the landing target,
// or with workspace.stacked the previous item's branch. The checkout and workspace.setup: lib/step/checkout.ts.
import { itemBranch } from "../definition/branches.ts";
import type { ItemState } from "../log/projection.ts";
import { branchExists } from "../repo/git.ts";
import { startPointFor } from "../repo/workspace.ts";
import { activeItems } from "../decisions/next-work.ts";
import { projection, type StepContext } from "./context.ts";

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
