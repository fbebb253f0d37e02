// The close path (docs/cli/loop-ctl.md#verbs): the one way a session is ended, used by stall/lost handling, stop,
// skip, cancel and (later) reset. End the process group or tmux session, and the attempt's verify
// command if one runs, remove the worktree unless asked to keep it, and return the events that
// record it, for the caller to append together with whatever else its decision implies (atomically).
import { existsSync } from "node:fs";
import type { EventDraft } from "../log/events.ts";
import type { ItemState } from "../log/reducer.ts";
import { endSession } from "./sessions.ts";
import { endVerify, verifySpawnEvidence } from "./verify-command.ts";
import { endSessionScope } from "./scope.ts";
import { commitLeftovers, removeWorktree } from "./workspace.ts";
import { failpoint } from "../shared/failpoint.ts";

export interface CloseReport {
  item: string;
  attempt: number;
  /** How the session ended: not_running, terminated, killed, tmux_killed. */
  how: string;
  /** How the attempt's verify command ended (not_running, terminated, killed), or null when it had none. */
  verify: string | null;
  worktreeRemoved: boolean;
  /** Why the checkout was kept though its removal was asked for (its changes could not be committed), or null. */
  kept: string | null;
  events: EventDraft[];
}

export async function closeSession(o: {
  it: ItemState;
  repo: string;
  reason: string;
  removeCheckout: boolean;
  graceMs: number;
  /** Record session_ended for a session that had not ended yet. */
  endVerdict?: "closed" | "stalled" | "lost" | "never_started";
}): Promise<CloseReport | null> {
  const s = o.it.session;
  if (!s || s.closed) return null;
  failpoint("close:before_kill");
  let how = await endSession(s, o.graceMs);
  // A session in a systemd scope: every process left in its cgroup too (lib/step/scope.ts).
  const scoped = await endSessionScope(s.sessionDir, o.graceMs);
  if (scoped !== null && scoped !== "not_running" && how === "not_running") how = scoped;
  const verify = await endVerifyRun(o.it, o.graceMs);
  failpoint("close:after_kill");
  let worktreeRemoved = false;
  let kept: string | null = null;
  if (o.removeCheckout && o.it.workspace?.present) {
    // Whatever the agent left is committed on the item branch first: closing never loses work. A
    // checkout whose changes cannot be committed (a stale index.lock, say) is kept, with the reason.
    const wt = o.it.workspace.worktree;
    if (existsSync(wt)) {
      try {
        commitLeftovers(wt, `loop: ${o.it.id} attempt ${s.attempt}: changes left when the session was closed (${o.reason})`);
      } catch (err) {
        kept = `kept ${wt}: its uncommitted changes could not be committed (${(err as Error).message}); remove it by hand once they are safe`;
      }
    }
    if (kept === null) {
      removeWorktree(o.repo, wt);
      worktreeRemoved = !existsSync(wt);
    }
  }
  failpoint("close:after_worktree");
  const events: EventDraft[] = [];
  if (o.it.status === "launching" || o.it.status === "running")
    events.push({
      type: "session_ended",
      item: o.it.id,
      payload: { attempt: s.attempt, verdict: o.endVerdict ?? "closed", exitCode: null, signal: null, reason: o.reason },
    });
  events.push({ type: "session_closed", item: o.it.id, payload: { attempt: s.attempt, how, worktreeRemoved, reason: o.reason } });
  return { item: o.it.id, attempt: s.attempt, how, verify, worktreeRemoved, kept, events };
}

/**
 * End the current attempt's verify command, if it has one (reserved, started or finished: a
 * finished one may have left something running in its group). A verify whose start was never
 * recorded (a step killed right after the spawn) is found through its folder. Null: no verify process.
 */
export async function endVerifyRun(it: ItemState, graceMs: number): Promise<string | null> {
  const run = it.attempts[it.attempts.length - 1]?.verifyRun;
  if (!run || !it.session) return null;
  const target = run.pid !== null ? { pid: run.pid, startTime: run.startTime } : verifySpawnEvidence(it.session.sessionDir).found;
  return target ? endVerify(target, graceMs) : "not_running";
}
