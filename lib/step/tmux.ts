// tmux, on the socket named by $LOOP_TMUX_SOCKET when set (isolates tests and tenants).
// Bun.spawnSync, not node:child_process: `loop status` probes liveness through here, and loading
// that module costs a tool ~3 ms at start-up.

export function tmux(args: string[], env: Record<string, string | undefined> = process.env): { status: number | null; stdout: string; stderr: string } {
  const sock = env.LOOP_TMUX_SOCKET;
  try {
    const r = Bun.spawnSync(["tmux", ...(sock ? ["-L", sock] : []), ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  } catch (err) {
    return { status: null, stdout: "", stderr: (err as Error).message }; // tmux not installed
  }
}

export function tmuxHasSession(name: string, env: Record<string, string | undefined> = process.env): boolean {
  return tmux(["has-session", "-t", `=${name}`], env).status === 0;
}
