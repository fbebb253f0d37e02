// Observing processes and sessions from outside, without changing anything.
import { groupAlive } from "../shared/process.ts";
import { tmuxHasSession } from "./tmux.ts";


/** A session is alive while its tmux session or anything in its process group is. */
export function sessionAlive(s: { pid: number | null; tmux: string | null }, env: Record<string, string | undefined> = process.env): boolean {
  if (s.tmux && tmuxHasSession(s.tmux, env)) return true;
  return s.pid !== null && groupAlive(s.pid);
}
