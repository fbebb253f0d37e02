// Running an item's verify command: through the shell, in the worktree, in its own process group
// so a timeout can end everything it started. The full log is kept; its sha256 and tail go into
// the verify_finished event.
import { closeSync, openSync, readFileSync } from "node:fs";
import { sha256Hex } from "../log/canonical.ts";
import { tail } from "../shared/fsutil.ts";
import { killGroup } from "../shared/process.ts";

export interface VerifyResult {
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  sha256: string;
  tail: string;
  reason: string;
}

export interface VerifyCommand {
  /** The item's verify command, run by `sh -c`. */
  command: string;
  /** The worktree it runs in. */
  cwd: string;
  /** Where its whole output goes (truncated first). */
  logPath: string;
  /** Past this its whole process group is ended and the verify fails as timed out. */
  timeoutMs: number;
  /** Added to this process's environment (LOOP_ITEM, LOOP_ATTEMPT, LOOP_WORKDIR). */
  env: Record<string, string>;
}

export async function runVerify({ command, cwd, logPath, timeoutMs, env }: VerifyCommand): Promise<VerifyResult> {
  const fd = openSync(logPath, "w");
  let timedOut = false;
  const result = await (async (): Promise<{ code: number | null; signal: string | null; error?: string }> => {
    let child: Bun.Subprocess;
    try {
      // Bun.spawn, not node:child_process: that module costs every `loop run` ~3 ms to load.
      child = Bun.spawn(["sh", "-c", command], { cwd, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", fd, fd] });
    } catch (err) {
      return { code: null, signal: null, error: (err as Error).message };
    }
    const timer = setTimeout(() => {
      timedOut = true;
      void killGroup(child.pid, 2000);
    }, timeoutMs);
    await child.exited;
    clearTimeout(timer);
    // The shell may be gone while something it started lingers in the group: end it too.
    void killGroup(child.pid, 0);
    return { code: child.exitCode, signal: child.signalCode === null ? null : String(child.signalCode) };
  })();
  closeSync(fd);
  const text = readFileSync(logPath, "utf8");
  const passed = !timedOut && result.code === 0;
  const reason = timedOut
    ? `timed out after ${Math.round(timeoutMs / 1000)}s`
    : result.error
      ? `could not run: ${result.error}`
      : result.signal
        ? `killed by ${result.signal}`
        : passed
          ? "exit 0"
          : `exit ${result.code}`;
  return { passed, exitCode: result.code, timedOut, sha256: sha256Hex(text), tail: tail(text), reason };
}
