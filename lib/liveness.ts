// Observing sessions from outside, without changing anything.
import { spawnSync } from "node:child_process";

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function tmuxAlive(target: string): boolean {
  const r = spawnSync("tmux", ["has-session", "-t", `=${target}`], { stdio: "ignore" });
  return r.status === 0;
}

export function sessionAlive(s: { pid: number | null; tmux: string | null }): boolean | null {
  if (s.tmux) return tmuxAlive(s.tmux);
  if (s.pid !== null) return pidAlive(s.pid);
  return null;
}
