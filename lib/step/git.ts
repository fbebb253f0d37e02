// Git, run as a process. Every call names its cwd; failures carry git's own stderr.
// Bun.spawnSync, not node:child_process: loading that module costs every tool ~3 ms at start-up.
import { GitError } from "../shared/errors.ts";
export { GitError } from "../shared/errors.ts";

export interface GitResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0" };

export function gitTry(cwd: string, args: string[], env: Record<string, string> = {}, input?: string): GitResult {
  try {
    const stdin = input === undefined ? "ignore" : new TextEncoder().encode(input);
    const r = Bun.spawnSync(["git", ...args], { cwd, env: { ...process.env, ...GIT_ENV, ...env }, stdin, stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  } catch (err) {
    // git missing from PATH, or cwd gone: a failed call like any other, with the reason.
    return { code: null, stdout: "", stderr: (err as Error).message };
  }
}

export function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  const r = gitTry(cwd, args, env);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  return r.stdout.trim();
}

export function isWorkTree(dir: string): boolean {
  const r = gitTry(dir, ["rev-parse", "--is-inside-work-tree"]);
  return r.code === 0 && r.stdout.trim() === "true";
}

export function currentBranch(dir: string): string | null {
  const r = gitTry(dir, ["symbolic-ref", "--quiet", "--short", "HEAD"]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Whether the repository has a commit at all (`git init` without a commit has a branch name, no branch). */
export function hasAnyCommit(dir: string): boolean {
  const r = gitTry(dir, ["rev-list", "-n", "1", "--all"]);
  return r.code === 0 && r.stdout.trim() !== "";
}

export function branchExists(dir: string, branch: string): boolean {
  return gitTry(dir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]).code === 0;
}

export function revParse(dir: string, rev: string): string | null {
  const r = gitTry(dir, ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}
