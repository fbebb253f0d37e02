// Observing processes and sessions from outside, without changing anything.
import { groupAlive, procStat } from "./process.ts";
import { tmuxHasSession } from "./tmux.ts";

/** Is the process alive (a zombie awaiting its reaper does not count)? */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  // Unreadable (no /proc, a /proc mounted hidepid for another user's process, a process that just
  // went): trust kill(0). Wrongly "dead" would let a step take over a live holder's lease.
  const state = procStat(pid)?.[0];
  return state === undefined || (state !== "Z" && state !== "X");
}

/** A session is alive while its tmux session or anything in its process group is. */
export function sessionAlive(s: { pid: number | null; tmux: string | null }, env: Record<string, string | undefined> = process.env): boolean {
  if (s.tmux && tmuxHasSession(s.tmux, env)) return true;
  return s.pid !== null && groupAlive(s.pid);
}
