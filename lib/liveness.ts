// Observing processes and sessions from outside, without changing anything.
import { readFileSync } from "node:fs";
import { groupAlive } from "./process.ts";
import { tmuxHasSession } from "./tmux.ts";

/** Is the process alive (a zombie awaiting its reaper does not count)? */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** A session is alive while its tmux session or anything in its process group is. */
export function sessionAlive(s: { pid: number | null; tmux: string | null }, env: Record<string, string | undefined> = process.env): boolean {
  if (s.tmux && tmuxHasSession(s.tmux, env)) return true;
  return s.pid !== null && groupAlive(s.pid);
}
