// The close path (DESIGN §6): the one way a session is ended, used by stall/lost handling, stop,
// skip, cancel and (later) reset. End the process group or tmux session, remove the worktree
// unless asked to keep it, and return the events that record it, for the caller to append
// together with whatever else its decision implies (atomically).
import { existsSync } from "node:fs";
import type { EventDraft } from "./events.ts";
import type { ItemState } from "./reducer.ts";
import { endSession } from "./sessions.ts";
import { commitLeftovers, removeWorktree } from "./workspace.ts";
import { failpoint } from "./failpoint.ts";

export interface CloseReport {
  item: string;
  attempt: number;
  /** How the session ended: not_running, terminated, killed, tmux_killed. */
  how: string;
  worktreeRemoved: boolean;
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
  const how = await endSession(s, o.graceMs);
  failpoint("close:after_kill");
  let worktreeRemoved = false;
  if (o.removeCheckout && o.it.workspace?.present) {
    // Whatever the agent left is committed on the item branch first: closing never loses work.
    if (existsSync(o.it.workspace.worktree)) {
      try {
        commitLeftovers(o.it.workspace.worktree, `loop: ${o.it.id} attempt ${s.attempt}: changes left when the session was closed (${o.reason})`);
      } catch {
        // A broken checkout cannot be committed; it is removed all the same, and the branch keeps what was committed.
      }
    }
    removeWorktree(o.repo, o.it.workspace.worktree);
    worktreeRemoved = !existsSync(o.it.workspace.worktree);
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
  return { item: o.it.id, attempt: s.attempt, how, worktreeRemoved, events };
}
