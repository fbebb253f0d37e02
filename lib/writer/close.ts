// The close path (docs/cli/loop-ctl.md#verbs): the one way a session is ended, used by stall/lost
// handling, stop, skip, cancel and reset. End the process group or tmux session (and the systemd
// scope's cgroup, if it ran in one), the attempt's verify command if one runs, and every process that
// left them but carries the session's mark; remove the worktree unless asked to keep it (committing
// what was left in it first), and return the events that record it, for the caller to append
// together with whatever else its decision implies (atomically).
import { existsSync, lstatSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { readTextOrNull } from "../shared/fsutil.ts";
import { moveToTrash, trashOf } from "../shared/trash.ts";
import { airlock, airlockReason, ATTEMPT_GIT, checkoutBytes, forgetCheckout } from "./airlock.ts";
import { keepSpare } from "./spare-checkout.ts";
import { linkedWorktreeRegistration } from "../repo/workspace.ts";
import type { EventDraft } from "../log/events.ts";
import type { ItemState } from "../log/projection.ts";
import { hasSession } from "../log/item-views.ts";
import { endSessionProcesses } from "../supervisor/end.ts";
import { sessionMark } from "../supervisor/sessions.ts";
import { gitTry, revParse } from "../repo/git.ts";
import { failpoint } from "../shared/failpoint.ts";
import type { ModelPrice } from "../definition/normalized.ts";
import { usageDraft } from "./usage-draft.ts";

export interface CloseReport {
  item: string;
  attempt: number;
  /** How the session ended: not_running, terminated, killed, tmux_killed. */
  how: string;
  /** Processes outside the session's group that carried its mark and were ended. */
  swept: number;
  /** How the attempt's verify command ended (not_running, terminated, killed), or null when it had none. */
  verify: string | null;
  worktreeRemoved: boolean;
  /** Why the checkout was kept though its removal was asked for (its changes could not be committed), or null. */
  kept: string | null;
  events: EventDraft[];
}

/**
 * What was left in an item's checkout, committed on its branch through the airlock
 * (docs/threat-model.md#the-airlock: sealed on the agent's side, its objects proven, the branch
 * moved by loop), so that closing never loses work. Null when done (or when a launch cut short left
 * nothing to seal), else why the work could not be committed.
 */
async function sealLeftovers(o: {
  repo: string;
  stateRoot: string;
  env: Record<string, string | undefined>;
  it: ItemState;
  worktree: string;
  branch: string;
  message: string;
}): Promise<string | null> {
  const s = o.it.session;
  if (!s || !lstatSync(o.worktree, { throwIfNoEntry: false })) return null;
  const expected =
    readTextOrNull(join(s.sessionDir, "start-head"), { noLinks: true, maxBytes: 256 })?.trim() || revParse(o.repo, `refs/heads/${o.branch}`) || "";
  const r = await airlock({
    repo: o.repo,
    stateRoot: o.stateRoot,
    env: o.env,
    item: o.it.id,
    runner: o.it.def.runner,
    worktree: o.worktree,
    sessionDir: s.sessionDir,
    branch: o.branch,
    expected,
    sandboxed: Boolean(o.it.def.sandbox),
    attempt: s.attempt,
    mark: sessionMark(s),
    message: o.message,
  });
  if (r.kind === "ok") return null;
  // A launch cut short before its agent's git folder was made has nothing to seal.
  if (r.kind === "seal_failed" && !existsSync(join(s.sessionDir, ATTEMPT_GIT)) && !existsSync(join(s.sessionDir, "started.json"))) return null;
  return `what was left in ${o.worktree} could not be committed (${r.kind}: ${airlockReason(r)})`;
}

/**
 * Retire an item's checkout: what was left in it sealed first (sealLeftovers), then the checkout
 * removed. One whose work cannot be sealed is kept, and `kept` says why. `commit: false` (after a
 * verify ran: the branch holds what was verified, the checkout what the verify left) seals nothing.
 */
export async function retireCheckout(o: {
  repo: string;
  stateRoot: string;
  env: Record<string, string | undefined>;
  it: ItemState;
  worktree: string;
  branch: string;
  message: string;
  commit?: boolean;
  /** The loop's worktrees folder: the checkout is kept there as the spare for the next item when it can serve (lib/writer/spare-checkout.ts). */
  spareIn?: string;
}): Promise<{ removed: boolean; kept: string | null }> {
  if (o.commit !== false) {
    const failed = await sealLeftovers(o);
    if (failed) return { removed: false, kept: `kept ${o.worktree}: ${failed}; remove it by hand once it is safe` };
  }
  const spared =
    o.spareIn !== undefined &&
    dirname(o.worktree) === o.spareIn &&
    !linkedWorktreeRegistration(o.repo, o.worktree) &&
    keepSpare({ stateRoot: o.stateRoot, worktrees: o.spareIn, worktree: o.worktree, item: o.it.id });
  if (!spared) removeCheckout(o.repo, o.worktree, checkoutBytes(o.stateRoot, o.it.id));
  forgetCheckout(o.stateRoot, o.it.id);
  return { removed: !lstatSync(o.worktree, { throwIfNoEntry: false }), kept: null };
}

/**
 * Take a checkout folder away: renamed into the worktrees folder's trash (deleted later, a bounded
 * piece per step: lib/shared/trash.ts), or deleted at once where no rename can take it (another file
 * system); never following a link in it. A linked worktree an older loop made is unregistered.
 */
function removeCheckout(repo: string, wt: string, bytes: number | null): void {
  if (!moveToTrash(wt, trashOf(dirname(wt)), basename(wt), bytes)) rmSync(wt, { recursive: true, force: true });
  failpoint("trash:after_move");
  gitTry(repo, ["worktree", "prune"]);
}

function verifyBegan(it: ItemState, attempt: number): boolean {
  const a = it.attempts.find((x) => x.n === attempt);
  return Boolean(a && (a.verify || a.verifyRun));
}

export async function closeSession(o: {
  it: ItemState;
  repo: string;
  stateRoot: string;
  env: Record<string, string | undefined>;
  reason: string;
  removeCheckout: boolean;
  graceMs: number;
  /** Record session_ended for a session that had not ended yet. */
  endVerdict?: "closed" | "stalled" | "lost" | "never_started" | "drained";
  /** The operator's prices (loop.json `prices`), for the final figure of a session ended here. */
  prices?: Record<string, ModelPrice>;
  /** With removeCheckout: keep the checkout as the spare in this worktrees folder (a landed item's). */
  spareIn?: string;
}): Promise<CloseReport | null> {
  const { it } = o;
  if (!hasSession(it) || it.session.closed) return null;
  const s = it.session;
  failpoint("close:before_kill");
  const { how, swept, verify } = await endSessionProcesses(it, o.graceMs);
  failpoint("close:after_kill");
  let worktreeRemoved = false;
  let kept: string | null = null;
  const ws = o.it.workspace;
  if (ws?.present) {
    const leftovers = {
      repo: o.repo,
      stateRoot: o.stateRoot,
      env: o.env,
      it: o.it,
      worktree: ws.worktree,
      branch: ws.branch,
      // Once the attempt's verify was reserved, the branch holds what it verified: nothing more is committed.
      commit: !verifyBegan(o.it, s.attempt),
      message: `loop: ${o.it.id} attempt ${s.attempt}: changes left when the session was closed (${o.reason})`,
      ...(o.spareIn !== undefined ? { spareIn: o.spareIn } : {}),
    };
    if (o.removeCheckout) {
      const r = await retireCheckout(leftovers);
      worktreeRemoved = r.removed;
      kept = r.kept;
    } else if (leftovers.commit) {
      // The checkout stays for the next attempt, which starts from the branch: the work is committed there.
      const failed = await sealLeftovers(leftovers);
      if (failed) kept = `${failed}; the next attempt starts from ${ws.branch} without it`;
    }
  }
  failpoint("close:after_worktree");
  // What the branch holds now is what it must hold until the item's next launch (lib/repo/owned-refs.ts).
  const head = revParse(o.repo, `refs/heads/${s.branch}`);
  const events: EventDraft[] = [];
  // A session ended here gets its final figure, read once its processes are gone (docs/spend.md).
  const usage = o.it.status === "running" ? usageDraft(o.it, { final: true, prices: o.prices }) : null;
  if (usage) events.push(usage);
  if (o.it.status === "launching" || o.it.status === "running")
    events.push({
      type: "session_ended",
      item: o.it.id,
      payload: { attempt: s.attempt, verdict: o.endVerdict ?? "closed", exitCode: null, signal: null, reason: o.reason },
    });
  events.push({ type: "session_closed", item: o.it.id, payload: { attempt: s.attempt, how, worktreeRemoved, reason: o.reason, head } });
  return { item: o.it.id, attempt: s.attempt, how, swept: swept.length, verify, worktreeRemoved, kept, events };
}
