// Observing processes and sessions from outside, without changing anything.
import { recordedGroupAlive } from "../shared/process.ts";
import { tmuxHasSession } from "./tmux.ts";

/**
 * A session is alive while its tmux session or anything in its process group is. `leaderStart`,
 * the wrapper's start time (its started.json), tells the recorded group from a later one with the
 * same id: a new pod numbers its processes from 1 again, and an old session's group id can be a
 * live group of the new pod's.
 */
export function sessionAlive(
  s: { pid: number | null; tmux: string | null },
  env: Record<string, string | undefined> = process.env,
  leaderStart: string | null = null,
): boolean {
  if (s.tmux && tmuxHasSession(s.tmux, env)) return true;
  return s.pid !== null && recordedGroupAlive(s.pid, leaderStart);
}
