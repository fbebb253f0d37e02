// Git as the fake forges run it on their bare repositories (tests/helpers/fake-github.ts,
// fake-gitlab.ts): the server's own git, in the test process's environment.

/** `git <args>` in `cwd`, its trimmed stdout; throws with git's stderr. `env` adds to the process's. */
export function run(cwd: string, args: string[], env: Record<string, string> = {}): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** As run, or null when git fails. */
export function tryRun(cwd: string, args: string[]): string | null {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : null;
}
