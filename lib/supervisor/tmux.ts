// tmux, on the socket named by $LOOP_TMUX_SOCKET when set (isolates tests and tenants).
// Bun.spawnSync, not node:child_process: `loop status` probes liveness through here, and loading
// that module costs a tool ~3 ms at start-up.

/**
 * `spawnEnv`: the tmux client's own environment (a new session's, and a new server's, come from it:
 * a session's, so that a server loop starts never holds loop's secrets).
 */
export function tmux(
  args: string[],
  env: Record<string, string | undefined> = process.env,
  spawnEnv?: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const sock = env.LOOP_TMUX_SOCKET;
  try {
    const r = Bun.spawnSync(["tmux", ...(sock ? ["-L", sock] : []), ...args], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      ...(spawnEnv ? { env: spawnEnv } : {}),
    });
    return { status: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  } catch (err) {
    return { status: null, stdout: "", stderr: (err as Error).message }; // tmux not installed
  }
}

export function tmuxHasSession(name: string, env: Record<string, string | undefined> = process.env): boolean {
  return tmux(["has-session", "-t", `=${name}`], env).status === 0;
}

/**
 * The socket path of the tmux server a process runs under, from the `$TMUX` tmux sets in its panes
 * ("<socket path>,<server pid>,<session index>"; the path may itself hold commas), or null.
 */
export function tmuxSocketFromEnv(value: string | undefined): string | null {
  const m = value ? /^(.+),\d+,\d+$/.exec(value) : null;
  return m ? m[1]! : null;
}

const SHELL_SAFE = /^[A-Za-z0-9_./=:@%+,-]+$/;
// A leading "=" is quoted too: zsh expands `=word` to the path of the command `word`.
const shellWord = (s: string) => (SHELL_SAFE.test(s) && !s.startsWith("=") ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The command an operator types to watch a session: on the socket the session's wrapper reported
 * (`-S <path>`, exact whoever asks), else on $LOOP_TMUX_SOCKET (`-L <name>`), else the default server.
 */
export function tmuxAttachCommand(session: string, socket: { path: string } | { name: string } | null): string {
  const sock = socket === null ? [] : "path" in socket ? ["-S", socket.path] : ["-L", socket.name];
  return ["tmux", ...sock, "attach", "-t", `=${session}`].map(shellWord).join(" ");
}
