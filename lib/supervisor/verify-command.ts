// An item's verify command as a process: started detached through the session wrapper
// (`loop __session <dir> verify`: its own process group, `sh -c <command>` in the worktree, output
// in verify.log, verify-started.json and verify-exit.json beside it), so no step waits on it and a
// killed step leaves it running and recorded. Like a session, it runs in a systemd scope of its own
// where there is systemd (lib/supervisor/scope.ts, role verify: verify-scope.json beside the session's
// scope.json): a oneshot step's unit would otherwise take it down when the step ends. Later steps
// observe it from outside, and the close path (lib/step/close.ts) ends it, scope and all. The full
// log is kept; its sha256 and tail go into verify_finished.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../log/canonical.ts";
import { readJsonOrNull, tail, writeFileAtomic } from "../shared/fsutil.ts";
import { killRecordedGroup, processStartTime, recordedGroupAlive } from "../shared/process.ts";
import { VERIFY_FILES } from "./session-wrapper.ts";
import { startSession } from "./sessions.ts";
import { endRecordedScope, type ScopeTarget, type SessionMechanism } from "./scope.ts";
import type { SandboxRequest } from "./sandbox.ts";

export { VERIFY_FILES };

/** A verify process as recorded: the wrapper's pid (its group's id) and start time. */
export interface VerifyProcess {
  pid: number;
  startTime: string | null;
}

export interface VerifyExit {
  code: number | null;
  signal: string | null;
  error: string | null;
}

export interface VerifyResult {
  exitCode: number | null;
  sha256: string;
  tail: string;
}

/**
 * Start `sh -c <command>` in `cwd` under the session wrapper, detached; `verify-spawned.json`
 * records the wrapper at once, so a step killed before it records verify_started is adopted.
 * Throws with a clear message when the wrapper cannot be started.
 */
export function startVerify(o: {
  /** The attempt's session folder. */
  dir: string;
  command: string;
  cwd: string;
  /** Added to the step's environment (LOOP_ITEM, LOOP_ATTEMPT, LOOP_WORKDIR). */
  env: Record<string, string>;
  /** The attempt's session mark (sessionMark): the close path's sweep of the session finds the verify too. */
  mark: string;
  /** Where its systemd scope is named from (the attempt's, as its session's); without it, a plain process group. */
  scope?: Omit<ScopeTarget, "role">;
  /** The item's sandbox, when it has one: the verify runs in the same one as its agent. */
  sandbox?: SandboxRequest;
}): VerifyProcess & { mechanism: SessionMechanism | null } {
  const { pid, mechanism } = startSession({
    dir: o.dir,
    argv: ["sh", "-c", o.command],
    cwd: o.cwd,
    env: o.env,
    tmuxName: null,
    kind: "verify",
    mark: o.mark,
    ...(o.scope ? { scope: { ...o.scope, role: "verify" as const } } : {}),
    ...(o.sandbox ? { sandbox: o.sandbox } : {}),
  });
  const started: VerifyProcess = { pid, startTime: processStartTime(pid) };
  // Atomic: a step killed mid-write must not leave a half file that adoption then misreads.
  writeFileAtomic(join(o.dir, VERIFY_FILES.spawned), JSON.stringify(started) + "\n");
  return { ...started, mechanism };
}

/** What a verify's folder shows of a reserved verify whose start is not recorded. */
export function verifySpawnEvidence(dir: string): { launched: boolean; found: VerifyProcess | null } {
  const spawned = readJsonOrNull<{ pid?: number; startTime?: string | null }>(join(dir, VERIFY_FILES.spawned));
  if (typeof spawned?.pid === "number" && spawned.pid > 0) return { launched: true, found: { pid: spawned.pid, startTime: spawned.startTime ?? null } };
  // Killed between the spawn and verify-spawned.json: the wrapper names itself once it runs.
  const started = readJsonOrNull<{ wrapperPid?: number; wrapperStart?: string | null }>(join(dir, VERIFY_FILES.started));
  if (typeof started?.wrapperPid === "number" && started.wrapperPid > 0)
    return { launched: true, found: { pid: started.wrapperPid, startTime: typeof started.wrapperStart === "string" ? started.wrapperStart : null } };
  return { launched: existsSync(join(dir, VERIFY_FILES.launch)), found: null };
}

/** The exit status its wrapper wrote, or null while it runs (or if it vanished). */
export function readVerifyExit(dir: string): VerifyExit | null {
  const j = readJsonOrNull<Partial<VerifyExit>>(join(dir, VERIFY_FILES.exit));
  return j ? { code: j.code ?? null, signal: j.signal ?? null, error: j.error ?? null } : null;
}

/** Is the recorded verify process group alive (never mistaking a later process that reuses its pid)? */
export function verifyAlive(p: VerifyProcess): boolean {
  return recordedGroupAlive(p.pid, p.startTime);
}

/**
 * End a verify: its process group, then every process left in its systemd scope's cgroup if it ran
 * in one (verify-scope.json in `dir`): SIGTERM, the grace period, SIGKILL. Returns how:
 * not_running, terminated, killed.
 */
export async function endVerify(o: {
  proc: VerifyProcess;
  /** The attempt's session folder, where the verify's scope record is. */
  dir: string;
  graceMs: number;
  /** endScope's: tests point them at a stand-in cgroup tree and no systemctl. */
  cgroupRoot?: string;
  systemctl?: string | null;
}): Promise<"not_running" | "terminated" | "killed"> {
  const how = await killRecordedGroup(o.proc.pid, o.proc.startTime, o.graceMs);
  const scoped = await endRecordedScope(o.dir, o.graceMs, "verify", {
    ...(o.cgroupRoot !== undefined ? { cgroupRoot: o.cgroupRoot } : {}),
    ...(o.systemctl !== undefined ? { systemctl: o.systemctl } : {}),
  });
  return scoped !== null && scoped !== "not_running" && how === "not_running" ? scoped : how;
}

/** The log's digest and tail for verify_finished (a log the wrapper never created is empty). */
export function verifyLogSummary(logPath: string, exitCode: number | null): VerifyResult {
  let text = "";
  try {
    text = readFileSync(logPath, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  return { exitCode, sha256: sha256Hex(text), tail: tail(text) };
}
