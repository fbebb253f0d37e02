// tmux, on the socket named by $LOOP_TMUX_SOCKET when set (isolates tests and tenants).
import { spawnSync } from "node:child_process";

export function tmux(args: string[], env: Record<string, string | undefined> = process.env) {
  const sock = env.LOOP_TMUX_SOCKET;
  return spawnSync("tmux", [...(sock ? ["-L", sock] : []), ...args], { encoding: "utf8" });
}

export function tmuxHasSession(name: string, env: Record<string, string | undefined> = process.env): boolean {
  return tmux(["has-session", "-t", `=${name}`], env).status === 0;
}
