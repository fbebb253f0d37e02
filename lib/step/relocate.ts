// Worktrees move out of the repository's tree (docs/state.md#where-worktrees-live): a loop made
// before kept them under <state root>/workspaces/, inside the repository, where tools that do not
// read .gitignore walk into them. Each step moves what is left there to the loop's worktrees
// folder with `git worktree move` (nothing copied, nothing lost) and records worktree_moved; an
// item in flight keeps its checkout until its attempt is over. A step killed between the move and
// the record finds the checkout at its new place and records it then (failpoint relocate:after_move).
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { isInFlight } from "../log/vocabulary.ts";
import { type ItemState, requireItem } from "../log/projection.ts";
import { failpoint } from "../shared/failpoint.ts";
import { LANDING_DIR } from "../shared/paths.ts";
import { gitTry } from "../repo/git.ts";
import { checkoutBranch, linkedWorktreeRegistration } from "../repo/workspace.ts";
import { append, projection, repoOf, type StepContext } from "./context.ts";

export function relocateWorktrees(ctx: StepContext): void {
  const old = ctx.paths.workspaces;
  if (!existsSync(old) || resolve(old) === resolve(ctx.worktrees)) return;
  const p = projection(ctx);
  const items = p.order.map((id) => requireItem(p, id));
  const owner = (path: string): ItemState | undefined => items.find((it) => it.workspace?.worktree === path);
  // Recorded at the old place, already at the new one: a step killed after the move.
  for (const it of items) {
    const w = it.workspace;
    if (!w?.present || !w.worktree.startsWith(old + "/")) continue;
    const to = join(ctx.worktrees, w.worktree.slice(old.length + 1));
    if (!existsSync(w.worktree) && checkoutBranch(to) === w.branch) record(ctx, it.id, w.worktree, to);
  }
  // The landing checkout likewise, unless its move is in the log (read only in this rare state).
  const landingFrom = join(old, LANDING_DIR);
  const landingTo = join(ctx.worktrees, LANDING_DIR);
  if (!existsSync(landingFrom) && checkoutBranch(landingTo) === ctx.def.target && !landingMoveRecorded(ctx, landingFrom))
    record(ctx, null, landingFrom, landingTo);
  for (const name of readdirSync(old).sort()) {
    // What a launch moved aside stays where it is (loop reset lists both places).
    if (name.includes(".aside-")) continue;
    const from = join(old, name);
    const it = name === LANDING_DIR ? null : owner(from);
    if (it && isInFlight(it.status)) continue;
    if (checkoutBranch(from) === null) continue; // not a checkout: not loop's to move
    const to = join(ctx.worktrees, name);
    if (existsSync(to)) {
      ctx.options.log.warn(`${from} stays where it is: ${to} already exists; look at both, then remove one`);
      continue;
    }
    ctx.store.assertLease();
    mkdirSync(ctx.worktrees, { recursive: true });
    // A linked worktree (an older version's) moves with git, its registration along; a checkout
    // with a git folder of its own per attempt (lib/repo/attempt-git.ts) is a folder to rename.
    const failed = linkedWorktreeRegistration(repoOf(ctx), from) ? gitMove(repoOf(ctx), from, to) : renameFolder(from, to);
    if (failed !== null) {
      ctx.options.log.warn(`could not move the worktree ${from} to ${to}: ${failed}; it stays where it is`);
      continue;
    }
    failpoint("relocate:after_move");
    record(ctx, it?.id ?? null, from, to);
  }
  // The old folder goes once nothing is left in it.
  try {
    if (readdirSync(old).length === 0) rmdirSync(old);
  } catch {
    // Something is left, or someone else removed it: either way nothing to do.
  }
}

function gitMove(repo: string, from: string, to: string): string | null {
  const r = gitTry(repo, ["worktree", "move", from, to]);
  return r.code === 0 ? null : r.stderr.trim();
}

function renameFolder(from: string, to: string): string | null {
  try {
    renameSync(from, to);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

function landingMoveRecorded(ctx: StepContext, from: string): boolean {
  const rows = ctx.store.db.query<{ payload: string }, []>("SELECT payload FROM events WHERE type = 'worktree_moved' AND item IS NULL").all();
  return rows.some((r) => (JSON.parse(r.payload) as { from?: string }).from === from);
}

function record(ctx: StepContext, item: string | null, from: string, to: string): void {
  append(ctx, [{ type: "worktree_moved", item, payload: { from, to } }], "relocate");
  ctx.options.log.info(`moved the worktree ${from} to ${to} (outside the repository's tree)`);
}
