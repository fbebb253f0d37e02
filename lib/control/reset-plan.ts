// `loop reset`, the decisions: from the projection and what was found on disk (ItemFacts), which
// pieces of each chosen item's state exist and what a reset does to each. Pure: plain data in, a
// plan out, tested with plain data (tests/control/reset-plan.test.ts). lib/control/reset.ts gathers
// the facts and carries the plan out.
import type { CHECKOUT_OUTCOMES, RESET_PIECES } from "../log/events.ts";
import { type ItemState, type Projection, recordedPieces, requireItem } from "../log/projection.ts";
import { isInFlight } from "../log/vocabulary.ts";
import { itemBranch } from "../definition/branches.ts";
import { blockedBecauseOf } from "../decisions/next-work.ts";
import { pausedByQuestionOf } from "../decisions/attention.ts";
import { worktreeDir } from "../shared/paths.ts";

export type Piece = (typeof RESET_PIECES)[number];
export type CheckoutOutcome = (typeof CHECKOUT_OUTCOMES)[number];

/** What lib/control/reset.ts found outside the log for one item, read-only. */
export interface ItemFacts {
  /** `sessions/<item>/` exists. */
  sessionDir: boolean;
  /** The item's checkout (checkoutPath): does it exist, is it a checkout of the item branch, has it uncommitted changes (null: not asked). */
  worktree: { path: string; exists: boolean; onItemBranch: boolean; dirty: boolean | null };
  /** `<worktrees>/<item>.aside-*`: moved aside by earlier launches; listed, never removed. */
  aside: string[];
  /** The commit the item branch points at, or null when there is no such branch. */
  branchHead: string | null;
  /** Existing archive branches of this item and epoch (archivePrefix), in creation order of their suffix. */
  archives: string[];
  /** The session's process group or tmux session is alive (asked only of a session not recorded closed). */
  groupAlive: boolean;
  /** Processes of this user carrying the session's mark (LOOP_SESSION_MARK). */
  marked: number;
  /** The process group of the current attempt's verify command is alive (it runs detached, no lease held). */
  verifyAlive?: boolean;
}

/** What was found about the loop as a whole. */
export interface LoopFacts {
  /** A live `loop run --watch` named by run.pid. */
  watcher: { pid: number } | null;
  /** A live step holding the lease (seen by a dry run or before the prompt; a real run then exits 75). */
  leaseHolder: { pid: number; host: string } | null;
}

interface ResetInput {
  p: Projection;
  /** The chosen items, resolved and deduplicated, in the order given; every item for --all. */
  ids: string[];
  /** --all: only the items with some state are reset (and reported). */
  all: boolean;
  facts: Record<string, ItemFacts>;
  loop: LoopFacts;
  dryRun: boolean;
}

export interface ItemPlan {
  item: string;
  ref: string | null;
  epoch: number;
  /** Some piece exists. */
  found: boolean;
  /** The pieces that exist, in RESET_PIECES order: what the reset acts on. */
  pieces: Piece[];
  /** The session is not recorded closed: end it through the close path (its events are recorded). */
  closeSession: boolean;
  /** A live agent is ended: the item was launching or running, or its processes are alive. */
  wasLive: boolean;
  /** The item has a session record: end whatever of it is left (tmux session, marked processes). */
  sweep: boolean;
  /** What happens to the checkout. */
  checkout: { action: "remove" | "keep" | "none"; outcome: CheckoutOutcome; path: string | null; why: string | null };
  deleteSessionDir: boolean;
  /** The item branch is archived (renamed, never deleted), or was by a reset of this epoch that was cut short. */
  branch: { kind: "rename"; from: string; to: string; head: string } | { kind: "archived"; to: string } | null;
  aside: string[];
  /** The loop was paused by this item's question: it is resumed. */
  resumeLoop: boolean;
  /** What will be done, in plain words (the prompt, --dry-run, the text report). */
  effects: string[];
  /** What the reset leaves where it is, in plain words: what the item landed (docs/cli/loop-reset.md#never-removed). */
  stays: string[];
}

export interface ResetPlan {
  /** The loop's name (what `loop reset --all` on a terminal asks the operator to type). */
  loopName: string;
  items: ItemPlan[];
  warnings: string[];
}

/** The name the item branch has: the one recorded at its launch, else the current definition's. */
export function branchOf(p: Projection, it: ItemState): string {
  return it.workspace?.branch ?? itemBranch(p.loop.name ?? "", it.id);
}

/** Where an item's checkout is: the one recorded at its launch, else the standard place. */
export function checkoutPath(worktrees: string, it: ItemState): string {
  return it.workspace?.worktree ?? worktreeDir(worktrees, it.id);
}

/**
 * Archive branches of an item's epoch: `loop/<name>/reset/<item>/e<epoch>`, then `-2`, `-3` … when
 * that name is taken. Item branches live under `loop/<name>/item/`, so the two never collide.
 */
export function archivePrefix(loopName: string, item: string, epoch: number): string {
  return `loop/${loopName}/reset/${item}/e${epoch}`;
}

export function archiveName(loopName: string, item: string, epoch: number, taken: readonly string[]): string {
  const base = archivePrefix(loopName, item, epoch);
  if (!taken.includes(base)) return base;
  for (let k = 2; ; k++) if (!taken.includes(`${base}-${k}`)) return `${base}-${k}`;
}

export function planReset(input: ResetInput): ResetPlan {
  const { p, facts } = input;
  const plans: ItemPlan[] = [];
  for (const id of input.ids) {
    const plan = planItem(p, requireItem(p, id), facts[id]!);
    if (input.all && !plan.found) continue;
    plans.push(plan);
  }
  return { loopName: p.loop.name ?? "", items: plans, warnings: warningsFor(input, plans) };
}

function planItem(p: Projection, it: ItemState, f: ItemFacts): ItemPlan {
  const recorded = new Set(recordedPieces(it));
  const s = it.session;
  const closeSession = s !== null && s.closed === null;
  const wasLive = (closeSession && (it.status === "launching" || it.status === "running")) || f.groupAlive || f.marked > 0 || f.verifyAlive === true;
  const pieces = new Set<Piece>();
  if (recorded.has("session") || f.sessionDir) pieces.add("session");
  if (recorded.has("control")) pieces.add("control");
  if (recorded.has("ledger")) pieces.add("ledger");

  // The checkout is the item's when the log records it present, or when what is there is a
  // checkout of the item branch. Anything else at that path is not loop's to remove.
  const wt = f.worktree;
  const ours = recorded.has("workspace") || (wt.exists && wt.onItemBranch);
  const keep = p.loop.settings?.keepCheckoutOnClose ?? false;
  let checkout: ItemPlan["checkout"];
  if (ours) {
    pieces.add("workspace");
    if (!wt.exists) checkout = { action: "none", outcome: "absent", path: wt.path, why: "already gone" };
    else if (keep) checkout = { action: "keep", outcome: "kept", path: wt.path, why: "workspace.keepCheckoutOnClose" };
    else checkout = { action: "remove", outcome: "removed", path: wt.path, why: null };
  } else if (wt.exists) checkout = { action: "none", outcome: "absent", path: wt.path, why: `${wt.path} is not a checkout of ${branchOf(p, it)}; left alone` };
  else checkout = { action: "none", outcome: "absent", path: null, why: null };

  let branch: ItemPlan["branch"] = null;
  const from = branchOf(p, it);
  if (f.branchHead !== null) branch = { kind: "rename", from, to: archiveName(p.loop.name ?? "", it.id, it.epoch, f.archives), head: f.branchHead };
  // No item branch, and an archive of this very epoch exists: a reset of this epoch renamed it and
  // was cut short before its event (the event moves the epoch on). Named, never archived twice.
  else if (f.archives.length > 0) branch = { kind: "archived", to: f.archives.at(-1)! };
  if (branch) pieces.add("branch");

  const order: Piece[] = ["session", "control", "ledger", "workspace", "branch"];
  const found = pieces.size > 0;
  const resumeLoop = found && pausedByQuestionOf(p, it.id);
  const plan: ItemPlan = {
    item: it.id,
    ref: it.def.ref,
    epoch: it.epoch,
    found,
    pieces: order.filter((x) => pieces.has(x)),
    closeSession: found && closeSession,
    wasLive: found && wasLive,
    sweep: found && s !== null,
    checkout,
    deleteSessionDir: f.sessionDir,
    branch,
    aside: f.aside,
    resumeLoop,
    effects: [],
    stays: found ? staysOf(it) : [],
  };
  plan.effects = effectsOf(plan, it);
  return plan;
}

/**
 * What a reset cannot take back: each landing of the item's attempts that delivered its work
 * somewhere the item's branch is not (a merge into the target, a pull request merged into the base).
 */
function staysOf(it: ItemState): string[] {
  const out: string[] = [];
  for (const a of it.attempts) {
    const l = a.landing;
    if (!l || l.target === null || (l.outcome !== "merged" && l.outcome !== "already_contained")) continue;
    const at = l.commit ? ` (at ${l.commit.slice(0, 12)})` : "";
    out.push(
      `${l.target} keeps what ${it.id} landed in attempt ${a.n}${at}: a reset does not undo a landing; a re-run that changes nothing more lands nothing (already_contained), and to take the change out, revert it on ${l.target}`,
    );
  }
  return out;
}

function effectsOf(plan: ItemPlan, it: ItemState): string[] {
  if (!plan.found) return [`${plan.item}: nothing to reset`];
  const out: string[] = [];
  const s = it.session;
  if (plan.wasLive && s)
    out.push(`end the live agent of ${plan.item} (attempt ${s.attempt}${s.tmux ? `, tmux ${s.tmux}` : s.pid !== null ? `, pid ${s.pid}` : ""})`);
  else if (plan.closeSession && s) out.push(`close the session of ${plan.item} (attempt ${s.attempt})`);
  if (plan.pieces.includes("session"))
    out.push(
      `delete ${plan.item}'s session record${plan.deleteSessionDir ? ` and its folder sessions/${plan.item}/ (every attempt's output and verify logs: \`loop logs\` has none of them afterwards)` : ""}`,
    );
  if (plan.pieces.includes("control")) out.push(`forget ${plan.item}'s control records (commands, holds, replies, question): it is disarmed`);
  if (plan.pieces.includes("ledger"))
    out.push(
      `forget ${plan.item}'s ledgers (${it.attempts.length} attempt(s), ${it.failures} failure(s)${it.landing ? ", landing" : ""}; status ${it.status}): it becomes pending, first sight`,
    );
  if (plan.checkout.action === "remove") out.push(`remove the checkout ${plan.checkout.path} (changes left in it are committed on its branch first)`);
  else if (plan.checkout.action === "keep") out.push(`keep the checkout ${plan.checkout.path} (${plan.checkout.why})`);
  if (plan.branch?.kind === "rename") out.push(`archive branch ${plan.branch.from} as ${plan.branch.to}`);
  else if (plan.branch?.kind === "archived") out.push(`branch already archived as ${plan.branch.to}`);
  if (plan.resumeLoop) out.push(`resume the loop (it was paused by ${plan.item}'s question)`);
  return out;
}

function warningsFor(input: ResetInput, plans: ItemPlan[]): string[] {
  const { p } = input;
  const out: string[] = [];
  const acting = plans.filter((x) => x.found);
  if (acting.length === 0) return out;
  const names = acting.map((x) => x.item).join(", ");
  if (input.loop.watcher)
    out.push(`a \`loop run --watch\` is running (pid ${input.loop.watcher.pid}): it may launch ${names} again right after the reset; stop it first`);
  if (input.loop.leaseHolder)
    out.push(
      `a \`loop run\` step holds the lease (pid ${input.loop.leaseHolder.pid} on ${input.loop.leaseHolder.host}): it may launch ${names} again right after; stop it first (a reset while it holds the lease exits 75)`,
    );
  const requireStart = p.loop.settings?.requireStartCommand ?? false;
  const relaunched = acting.filter((x) => requireItem(p, x.item).inDefinition).map((x) => x.item);
  if (!requireStart && relaunched.length && (p.loop.state === "running" || p.loop.state === "drained" || p.loop.state === "new"))
    out.push(
      `the loop is ${p.loop.state} and does not require explicit starts: the next \`loop run\` launches ${relaunched.join(", ")} again, as a first attempt on a fresh branch`,
    );
  for (const x of acting) {
    const s = requireItem(p, x.item).session;
    if (x.wasLive)
      out.push(
        `${x.item}: a live agent ${input.dryRun ? "would be" : "is being"} ended${s ? ` (attempt ${s.attempt}${s.tmux ? `, tmux ${s.tmux}` : s.pid !== null ? `, pid ${s.pid}` : ""})` : ""}`,
      );
    const wt = input.facts[x.item]!.worktree;
    if (x.checkout.action === "remove" && wt.dirty) {
      const keeps = x.branch?.kind === "rename" ? `${x.branch.from}, archived as ${x.branch.to}` : "its branch";
      out.push(
        `${x.item}: the checkout ${wt.path} has uncommitted changes and ${input.dryRun ? "would be" : "is being"} removed; they are committed on ${keeps} first (files git ignores are lost)`,
      );
    }
    const it = requireItem(p, x.item);
    if (!isInFlight(it.status) && it.status !== "pending" && it.status !== "passed") {
      const blocked = blockedBecauseOf(p, x.item).filter((d) => !plans.some((y) => y.item === d));
      if (blocked.length)
        out.push(
          `${blocked.join(", ")} stay${blocked.length === 1 ? "s" : ""} blocked by ${x.item}'s ${it.status}: reset ${blocked.length === 1 ? "it" : "them"} too, or \`loop ctl retry --work-item\` ${blocked.length === 1 ? "it" : "each"}`,
        );
    }
  }
  return out;
}
