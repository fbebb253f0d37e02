// An item's verify command as a process: started detached through the session wrapper
// (`loop __session <dir> verify`: its own process group, `sh -c <command>` in the worktree, output
// in verify.log, verify-started.json and verify-exit.json beside it), so no step waits on it and a
// killed step leaves it running and recorded. Like a session, it runs in a systemd scope of its own
// where there is systemd (lib/supervisor/scope.ts, role verify: verify-scope.json beside the session's
// scope.json): a oneshot step's unit would otherwise take it down when the step ends. Later steps
// observe it from outside, and the close path (lib/writer/close.ts) ends it, scope and all. The full
// log is kept; its sha256 and tail go into verify_finished.
//
// The exit status is a file the agent could write too (same user, or code the verify runs), so it
// counts only with its proof: at the start loop hands the wrapper two random secrets through a
// pipe (session-wrapper.ts WrapperPrivate), and records their SHA-256 (verify_started `proof`); the wrapper reveals the pass secret in
// verify-exit.json only when the command exited 0, the fail secret otherwise. A file written before
// the spawn, or by anything but the recorded wrapper, cannot hold the pass secret.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../log/canonical.ts";
import { readJsonOrNull, readRegularFile, tail, writeFileAtomic } from "../shared/fsutil.ts";
import { killRecordedGroup, processStartTime, recordedGroupAlive } from "../shared/process.ts";
import { type ProofSecrets, proofHashes, VERIFY_FILES } from "./session-wrapper.ts";
import type { EnvRule } from "../definition/child-environment.ts";
import { startSession } from "./sessions.ts";
import { endRecordedScope, type ScopeTarget, type SessionMechanism } from "./scope.ts";
import type { SandboxRequest } from "./sandbox.ts";
import type { ChainRecord } from "./chain.ts";
import type { GatewayRequest } from "./gateway-files.ts";

/** The SHA-256 of a verify's two proof secrets, as verify_started records them. */
interface VerifyProof {
  pass: string;
  fail: string;
}

/** A verify process as recorded: the wrapper's pid (its group's id) and start time, and its proof's hashes. */
export interface VerifyProcess {
  pid: number;
  startTime: string | null;
  proof?: VerifyProof | null;
}

interface VerifyExit {
  code: number | null;
  signal: string | null;
  error: string | null;
  /** The secret the wrapper revealed (null: none, as from a wrapper started without secrets). */
  proof: string | null;
}

interface VerifyResult {
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
  /** What it gets of loop's environment (lib/definition/child-environment.ts verifyRule). */
  envRule?: EnvRule;
  /** The step its wrapper starts when the command ends (lib/supervisor/chain.ts). */
  chain?: ChainRecord;
  /** A proxy-only gateway (its `verifyNetwork` list, in the sandbox): the command's only way out. */
  gateway?: GatewayRequest;
}): VerifyProcess & { mechanism: SessionMechanism | null; proof: VerifyProof } {
  // Nothing of an earlier run (or planted by the agent) may be read as this run's: gone before the spawn.
  for (const f of [VERIFY_FILES.exit, VERIFY_FILES.started, VERIFY_FILES.output, VERIFY_FILES.spawned]) rmSync(join(o.dir, f), { force: true });
  const secrets: ProofSecrets = { pass: randomHex(), fail: randomHex() };
  const proof = proofHashes(secrets);
  const { pid, mechanism } = startSession({
    dir: o.dir,
    argv: ["sh", "-c", o.command],
    cwd: o.cwd,
    env: o.env,
    tmuxName: null,
    kind: "verify",
    mark: o.mark,
    proof: secrets,
    ...(o.envRule ? { envRule: o.envRule } : {}),
    ...(o.chain ? { chain: o.chain } : {}),
    ...(o.scope ? { scope: { ...o.scope, role: "verify" as const } } : {}),
    ...(o.sandbox ? { sandbox: o.sandbox } : {}),
    ...(o.gateway ? { gateway: o.gateway } : {}),
  });
  const started = { pid, startTime: processStartTime(pid), proof };
  // Atomic: a step killed mid-write must not leave a half file that adoption then misreads.
  writeFileAtomic(join(o.dir, VERIFY_FILES.spawned), JSON.stringify(started) + "\n");
  return { ...started, mechanism };
}

function randomHex(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
}

function proofOf(x: unknown): VerifyProof | null {
  const p = x as Partial<VerifyProof> | null | undefined;
  return typeof p?.pass === "string" && typeof p.fail === "string" ? { pass: p.pass, fail: p.fail } : null;
}

/**
 * The exit status as it proves itself against the recorded hashes: `proven` (the secret matching
 * its claim), `forged` (no secret, another one, or the fail secret beside a claimed exit 0), or
 * `unproven` (a verify recorded without hashes, by an older version: taken as it is).
 */
export function judgeExitProof(exit: VerifyExit, recorded: VerifyProof | null | undefined): "proven" | "forged" | "unproven" {
  if (!recorded) return "unproven";
  if (exit.proof === null) return "forged";
  const h = new Bun.CryptoHasher("sha256").update(exit.proof).digest("hex");
  const claimsPass = exit.code === 0 && exit.signal === null && !exit.error;
  if (h === recorded.pass) return claimsPass ? "proven" : "forged";
  if (h === recorded.fail) return claimsPass ? "forged" : "proven";
  return "forged";
}

/** What a verify's folder shows of a reserved verify whose start is not recorded. */
export function verifySpawnEvidence(dir: string): { launched: boolean; found: VerifyProcess | null } {
  const spawned = readJsonOrNull<{ pid?: number; startTime?: string | null; proof?: unknown }>(join(dir, VERIFY_FILES.spawned));
  if (typeof spawned?.pid === "number" && spawned.pid > 0)
    return { launched: true, found: { pid: spawned.pid, startTime: spawned.startTime ?? null, proof: proofOf(spawned.proof) } };
  // Killed between the spawn and verify-spawned.json: the wrapper names itself once it runs.
  const started = readJsonOrNull<{ wrapperPid?: number; wrapperStart?: string | null; proof?: unknown }>(join(dir, VERIFY_FILES.started));
  if (typeof started?.wrapperPid === "number" && started.wrapperPid > 0)
    return {
      launched: true,
      found: { pid: started.wrapperPid, startTime: typeof started.wrapperStart === "string" ? started.wrapperStart : null, proof: proofOf(started.proof) },
    };
  return { launched: existsSync(join(dir, VERIFY_FILES.launch)), found: null };
}

/** The exit status its wrapper wrote, or null while it runs (or if it vanished). */
export function readVerifyExit(dir: string): VerifyExit | null {
  const j = readJsonOrNull<Partial<VerifyExit>>(join(dir, VERIFY_FILES.exit));
  return j ? { code: j.code ?? null, signal: j.signal ?? null, error: j.error ?? null, proof: typeof j.proof === "string" ? j.proof : null } : null;
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

/**
 * The log's digest and tail for verify_finished (a log the wrapper never created is empty). Only
 * the wrapper's own file is read: what a link in its place points to is never recorded, and a FIFO
 * never hangs the step; the tail then says what was found instead.
 */
export function verifyLogSummary(logPath: string, exitCode: number | null): VerifyResult {
  const r = readRegularFile(logPath, { noLinks: true });
  if (r.kind === "error") {
    const said = `[loop: ${logPath} was not read: ${r.message}]`;
    return { exitCode, sha256: sha256Hex(""), tail: said };
  }
  const text = r.kind === "ok" ? r.bytes.toString("utf8") : "";
  return { exitCode, sha256: sha256Hex(text), tail: tail(text) };
}
