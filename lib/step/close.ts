// The close path (docs/cli/loop-ctl.md#verbs): the one way a session is ended, used by stall/lost
// handling, stop, skip, cancel and reset. End the process group or tmux session (and the systemd
// scope's cgroup, if it ran in one), the attempt's verify command if one runs, and every process that
// left them but carries the session's mark; remove the worktree unless asked to keep it (committing
// what was left in it first), and return the events that record it, for the caller to append
// together with whatever else its decision implies (atomically).
import { describeRefused, importSessionObjects } from "../repo/object-import.ts";
import { GitError } from "../shared/errors.ts";
import { systemError } from "../decisions/faults.ts";
import { existsSync, lstatSync } from "node:fs";
import type { EventDraft } from "../log/events.ts";
import type { ItemState } from "../log/projection.ts";
import { endSessionProcesses } from "../supervisor/end.ts";
import { checkWorktree, commitLeftovers, hasUncommittedChanges, removeWorktree } from "../repo/workspace.ts";
import { revParse } from "../repo/git.ts";
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
 * Retire an item's checkout: whatever was left in it is committed on its branch first (closing
 * never loses work), then the worktree is removed. A checkout whose changes cannot be committed (a
 * stale index.lock, a broken .git) is kept, and `kept` says why; so is one that is not the checkout
 * loop made (workspace.ts checkWorktree: nothing is committed in it, nothing removed through it).
 * `commit: false` (after a verify ran: the branch must hold only what was verified) commits
 * nothing: a checkout holding changes is kept, and `kept` says so.
 */
export function retireCheckout(o: { repo: string; worktree: string; branch: string; message: string; commit?: boolean }): { removed: boolean; kept: string | null } {
  const wt = o.worktree;
  if (existsSync(wt) || isLink(wt)) {
    const checked = checkWorktree({ repo: o.repo, worktree: wt, branch: o.branch });
    if (!checked.ok) return { removed: false, kept: `kept ${wt}: ${checked.why}; look at it, then remove it by hand` };
    if (o.commit === false) {
      const dirty = hasUncommittedChanges(wt);
      if (dirty !== false)
        return { removed: false, kept: `kept ${wt}: it ${dirty ? "changed after its verify ran" : "could not be checked for changes"}; nothing was committed, so ${o.branch} holds only what was verified; remove it by hand once you have looked` };
    } else {
      try {
        commitLeftovers({ repo: o.repo, worktree: wt, branch: o.branch, message: o.message });
      } catch (err) {
        // git or the system refused (a lock file, a full disk): kept, and said. Anything else is a bug.
        if (!(err instanceof GitError) && systemError(err) === null) throw err;
        return { removed: false, kept: `kept ${wt}: its uncommitted changes could not be committed (${(err as Error).message}); remove it by hand once they are safe` };
      }
    }
  }
  removeWorktree(o.repo, wt);
  return { removed: !existsSync(wt), kept: null };
}

function verifyBegan(it: ItemState, attempt: number): boolean {
  const a = it.attempts.find((x) => x.n === attempt);
  return Boolean(a && (a.verify || a.verifyRun));
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

export async function closeSession(o: {
  it: ItemState;
  repo: string;
  reason: string;
  removeCheckout: boolean;
  graceMs: number;
  /** Record session_ended for a session that had not ended yet. */
  endVerdict?: "closed" | "stalled" | "lost" | "never_started" | "drained";
  /** The operator's prices (loop.json `prices`), for the final figure of a session ended here. */
  prices?: Record<string, ModelPrice>;
}): Promise<CloseReport | null> {
  const s = o.it.session;
  if (!s || s.closed) return null;
  failpoint("close:before_kill");
  const { how, swept, verify } = await endSessionProcesses(o.it, o.graceMs);
  failpoint("close:after_kill");
  // What a sandboxed session's git wrote is the repository's once proven (lib/repo/object-import.ts).
  const objects = importSessionObjects(o.repo, s.sessionDir);
  let worktreeRemoved = false;
  let kept: string | null = objects.refused.length ? `objects the session wrote that are not what their names say were not imported: ${describeRefused(objects.refused)}` : null;
  if (o.removeCheckout && o.it.workspace?.present) {
    const r = retireCheckout({
      repo: o.repo,
      worktree: o.it.workspace.worktree,
      branch: o.it.workspace.branch,
      // Once the attempt's verify was reserved, the branch holds what it verified: nothing more is committed.
      commit: !verifyBegan(o.it, s.attempt),
      message: `loop: ${o.it.id} attempt ${s.attempt}: changes left when the session was closed (${o.reason})`,
    });
    worktreeRemoved = r.removed;
    kept = [kept, r.kept].filter(Boolean).join("; ") || null;
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
