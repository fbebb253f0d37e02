// Git as the fake forges run it on their bare repositories (tests/helpers/fake-github.ts,
// fake-gitlab.ts): the server's own git, in the test process's environment.
import { cpSync } from "node:fs";
import { tmpdir } from "node:os";

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

/**
 * The fake's bare repository at `bare`: a file copy of `copyOf` (a bare repository made once and
 * shared as a fixture, so no git runs), or a new one with `seedFrom`'s main pushed to it.
 */
export function bareRemote(bare: string, o: { seedFrom?: string; copyOf?: string }): void {
  if (o.copyOf) {
    if (o.seedFrom) throw new Error("a fake's remote is seeded from a repository or copied from a bare one, not both");
    cpSync(o.copyOf, bare, { recursive: true });
    return;
  }
  run(tmpdir(), ["init", "-q", "--bare", "-b", "main", bare]);
  if (o.seedFrom) run(o.seedFrom, ["push", "-q", bare, "main:main"]);
}
