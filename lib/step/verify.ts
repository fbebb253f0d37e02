// The verify phase: an attempt whose agent exited is judged, and verify_finished records the
// verdict. Whatever the agent left uncommitted is committed on its branch first, so the verify
// sees (and landing merges) exactly what the branch holds.
//
// The item's verify command is a detached process observed like the agent's session, never waited
// on: it is reserved (verify_reserved, under the key verify:<item>:e<epoch>:a<n>, so one attempt
// has one verify, ever), started through the session wrapper (lib/supervisor/verify-command.ts) and
// recorded (verify_started, with its deadline); the step then stops, `waiting`. Later steps observe
// it: ended → verify_finished; past its deadline → ended through the close path and recorded timed
// out; gone without an exit status → failed. Without a command (`verify: false`) nothing runs: the
// verdict is "the agent exited 0 and this attempt committed something", decided inline.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Payload } from "../log/events.ts";
import type { ItemState, VerifyRun } from "../log/reducer.ts";
import { GitError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { readTextOrNull } from "../shared/fsutil.ts";
import { endVerifyRun } from "../supervisor/end.ts";
import { append, itemNow, repoOf, type StepContext, type StepOutcome } from "./context.ts";
import { classifyVerify, classifyVerifyStart, verifyExitVerdict } from "./decide.ts";
import { graceMs, SESSION_FILES, sessionMark } from "../supervisor/sessions.ts";
import { endVerify, readVerifyExit, startVerify, verifyAlive, verifyLogSummary, verifySpawnEvidence, type VerifyProcess } from "../supervisor/verify-command.ts";
import type { SessionMechanism } from "../supervisor/scope.ts";
import { commitLeftovers, commitsAhead, startPointFor } from "./workspace.ts";

type VerifyPayload = Payload<"verify_finished">;

/**
 * Verify the current attempt of `it` (its session ended with an exit): start its verify command,
 * or observe the one already reserved. Returns `waiting` while the command runs; null once the
 * step may go on (verify_finished recorded, or a start recorded that the next turn observes).
 */
export async function verifyAttempt(ctx: StepContext, it: ItemState): Promise<StepOutcome | null> {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const run = attempt.verifyRun;
  if (run) return run.pid === null ? resumeReserved(ctx, it, run) : observeVerify(ctx, it, run);
  const s = it.session!;
  if (!existsSync(s.worktree)) return record(ctx, it, notRun(attempt.n, "worktree is missing", ""));
  try {
    ctx.store.assertLease();
    commitLeftovers(s.worktree, `loop: ${it.id} attempt ${attempt.n}: changes the agent left uncommitted`);
  } catch (err) {
    return record(ctx, it, notRun(attempt.n, gitFailure("could not commit the changes the agent left", err)));
  }
  failpoint("verify:before");
  const logPath = join(s.sessionDir, SESSION_FILES.verify);
  if (it.def.verify === false) {
    let ahead: number;
    try {
      ahead = commitsOfAttempt(ctx, it);
    } catch (err) {
      return record(ctx, it, notRun(attempt.n, gitFailure("could not count the branch's commits", err)));
    }
    return record(ctx, it, judgeWithoutCommand({ attempt: attempt.n, exitCode: attempt.end!.exitCode, ahead, logPath }));
  }
  const key = `verify:${it.id}:e${it.epoch}:a${attempt.n}`;
  append(
    ctx,
    [{ type: "verify_reserved", item: it.id, id: key, payload: { attempt: attempt.n, key, command: it.def.verify, log: logPath, timeoutMs: it.def.timeouts.verify } }],
    "verify_reserve",
  );
  failpoint("verify:after_reserve");
  const now = itemNow(ctx, it.id);
  return spawnReserved(ctx, now, now.attempts[now.attempts.length - 1]!.verifyRun!);
}

function record(ctx: StepContext, it: ItemState, payload: VerifyPayload): null {
  append(ctx, [{ type: "verify_finished", item: it.id, payload }], "verify");
  return null;
}

/** Start the reserved verify (the first and only start of this reservation) and record it. */
function spawnReserved(ctx: StepContext, it: ItemState, run: VerifyRun): StepOutcome | null {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const s = it.session!;
  ctx.store.assertLease();
  let started: ReturnType<typeof startVerify>;
  try {
    started = startVerify({
      dir: s.sessionDir,
      command: run.command,
      cwd: s.worktree,
      env: { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(attempt.n), LOOP_WORKDIR: s.worktree },
      mark: sessionMark(s),
      // A scope of its own, as its session has: under a oneshot step's unit it would die with the step.
      scope: { loopName: ctx.def.name, item: it.id, epoch: it.epoch, attempt: attempt.n, stateRoot: ctx.options.stateRoot },
    });
  } catch (err) {
    // Loop's own wrapper could not be started: an error of the environment, and the attempt's verify.
    const reason = `could not run: ${(err as Error).message}`;
    ctx.errors.push(`${it.id}: verify ${reason}`);
    ctx.options.log.error(`${it.id}: verify ${reason}`);
    return record(ctx, it, notRun(attempt.n, reason));
  }
  failpoint("verify:after_spawn");
  return recordStarted(ctx, it, run, started, false, started.mechanism);
}

function recordStarted(ctx: StepContext, it: ItemState, run: VerifyRun, p: VerifyProcess, adopted: boolean, mechanism: SessionMechanism | null = null): StepOutcome {
  const attempt = it.attempts[it.attempts.length - 1]!;
  // Counted from the reservation, which comes right before the spawn: an adopted verify has been
  // running since then, not since the step that found it.
  const deadline = new Date(Date.parse(run.reservedAt) + run.timeoutMs).toISOString();
  append(
    ctx,
    [{ type: "verify_started", item: it.id, payload: { attempt: attempt.n, pid: p.pid, pgid: p.pid, startTime: p.startTime, log: run.log, deadline, adopted, ...(mechanism ? { mechanism } : {}) } }],
    "verify_started",
  );
  return { action: "waiting", item: it.id, reason: `verify running (deadline ${deadline})` };
}

/** A reserved verify whose start is not recorded: adopt its wrapper, start it (nothing was spawned), wait, or fail it. */
function resumeReserved(ctx: StepContext, it: ItemState, run: VerifyRun): StepOutcome | null {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const ev = verifySpawnEvidence(it.session!.sessionDir);
  const v = classifyVerifyStart({ ...ev, reservedAt: Date.parse(run.reservedAt), now: Date.now(), launchTimeout: it.def.timeouts.launch });
  switch (v.kind) {
    case "adopt":
      return recordStarted(ctx, it, run, { pid: v.pid, startTime: v.startTime }, true);
    case "spawn":
      return spawnReserved(ctx, it, run);
    case "waiting":
      return { action: "waiting", item: it.id, reason: v.reason };
    case "never_started":
      return record(ctx, it, notRun(attempt.n, v.reason));
  }
}

/** A started verify: still running (the step stops here), ended, past its deadline, or gone. */
async function observeVerify(ctx: StepContext, it: ItemState, run: VerifyRun): Promise<StepOutcome | null> {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const dir = it.session!.sessionDir;
  const proc: VerifyProcess = { pid: run.pid!, startTime: run.startTime };
  const exit = readVerifyExit(dir);
  const alive = exit === null && verifyAlive(proc);
  // Re-read the exit status after seeing the group gone: it may have been written in between.
  const v = classifyVerify({ exit: exit ?? (alive ? null : readVerifyExit(dir)), alive, startedAt: Date.parse(run.reservedAt), deadline: Date.parse(run.deadline!), now: Date.now() });
  if (v.kind === "waiting") return { action: "waiting", item: it.id, reason: v.reason };
  let payload: VerifyPayload;
  if (v.kind === "timed_out") {
    ctx.store.assertLease();
    await endVerifyRun(it, graceMs(ctx.options.env));
    const r = verifyLogSummary(run.log, null);
    payload = { attempt: attempt.n, passed: false, timedOut: true, ...r, log: run.log, reason: `timed out after ${Math.round(run.timeoutMs / 1000)}s` };
  } else if (v.kind === "lost") {
    // The wrapper vanished without an exit status; whatever it started may still sit in its scope.
    await endVerify({ proc, dir, graceMs: 0 });
    payload = { attempt: attempt.n, passed: false, timedOut: false, ...verifyLogSummary(run.log, null), log: run.log, reason: v.reason };
  } else {
    // The shell is gone, but something it started may linger in its group: end it too.
    await endVerify({ proc, dir, graceMs: 0 });
    const { passed, reason } = verifyExitVerdict(v);
    payload = { attempt: attempt.n, passed, timedOut: false, ...verifyLogSummary(run.log, v.code), log: run.log, reason };
  }
  failpoint("verify:before_record");
  return record(ctx, it, payload);
}

/** A verify that could not run: failed, with the reason as all there is to show. */
function notRun(attempt: number, reason: string, tail = reason): VerifyPayload {
  return { attempt, passed: false, exitCode: null, timedOut: false, sha256: null, tail, log: null, reason };
}

/**
 * A git failure here (say, an index.lock the agent left behind) fails the attempt with git's
 * reason; thrown, it would stop every later step at the same place. Anything else is thrown.
 */
function gitFailure(what: string, err: unknown): string {
  if (!(err instanceof GitError)) throw err;
  return `${what}: ${err.message}`;
}

/** Commits this attempt made on the item branch: counted from the head it started at (start-head). */
function commitsOfAttempt(ctx: StepContext, it: ItemState): number {
  const s = it.session!;
  const repo = repoOf(ctx);
  const startHead = readTextOrNull(join(s.sessionDir, "start-head"))?.trim();
  const base = startHead || startPointFor({ repo, landing: ctx.def.landing, base: ctx.def.base, target: ctx.def.target });
  return commitsAhead({ repo, base, branch: s.branch });
}

/** `verify: false`: passed when the agent exited 0 and the attempt left a change on the branch. */
function judgeWithoutCommand(o: { attempt: number; exitCode: number | null; ahead: number; logPath: string }): VerifyPayload {
  const passed = o.exitCode === 0 && o.ahead > 0;
  const reason =
    o.exitCode !== 0
      ? `no verify command; agent exited ${o.exitCode}`
      : o.ahead > 0
        ? `no verify command; agent exited 0 with ${o.ahead} commit(s)`
        : "no verify command; agent exited 0 but left no change";
  writeFileSync(o.logPath, reason + "\n");
  return { attempt: o.attempt, passed, exitCode: o.exitCode, timedOut: false, sha256: null, tail: reason, log: o.logPath, reason };
}
