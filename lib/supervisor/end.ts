// Ending an attempt's processes, whatever the tick decided: the session's group or tmux session, its
// systemd scope's cgroup, the attempt's verify command, and every process that carries the session's
// mark. The close path (lib/writer/close.ts) and loop reset call it; it knows nothing of worktrees or events.
import { currentAttemptOf, type ItemState } from "../log/projection.ts";
import type { SessionItem } from "../log/item-views.ts";
import { endMarked, type MarkedProcess } from "../shared/process.ts";
import { adoptable, endSession, sessionMark } from "./sessions.ts";
import { endVerify, verifySpawnEvidence } from "./verify-command.ts";
import { endRecordedScope } from "./scope.ts";

/**
 * End a session's processes: its group or tmux session, its systemd scope's cgroup if it ran in one,
 * the attempt's verify command if one runs, then every process of this user that carries its mark
 * (one that left all of those: setsid, a double fork, a daemon). A session whose start was never
 * recorded (a step killed right after the spawn) is found through its folder.
 */
export async function endSessionProcesses(
  it: SessionItem,
  graceMs: number,
): Promise<{ how: string; swept: MarkedProcess[]; left: MarkedProcess[]; verify: string | null }> {
  const s = it.session;
  const target = s.pid === null && s.tmux === null ? (adoptable(s.sessionDir) ?? s) : s;
  let how = await endSession(target, graceMs);
  // A session in a systemd scope: every process left in its cgroup too (lib/supervisor/scope.ts).
  const scoped = await endRecordedScope(s.sessionDir, graceMs);
  if (scoped !== null && scoped !== "not_running" && how === "not_running") how = scoped;
  const verify = await endVerifyRun(it, graceMs);
  const { ended, left } = await endMarked([sessionMark(s)], graceMs);
  return { how, swept: ended, left, verify };
}

/**
 * End the current attempt's verify command, if it has one (reserved, started or finished: a
 * finished one may have left something running in its group or its scope). A verify whose start was never
 * recorded (a step killed right after the spawn) is found through its folder. Null: no verify process.
 */
export async function endVerifyRun(it: ItemState, graceMs: number): Promise<string | null> {
  const run = currentAttemptOf(it)?.verifyRun;
  if (!run || !it.session) return null;
  const dir = it.session.sessionDir;
  const target = run.pid !== null ? { pid: run.pid, startTime: run.startTime } : verifySpawnEvidence(dir).found;
  if (target) return endVerify({ proc: target, dir, graceMs });
  // Not found as a process, but a scope may have been recorded before the spawn: end what is in it.
  const scoped = await endRecordedScope(dir, graceMs, "verify");
  return scoped ?? "not_running";
}
