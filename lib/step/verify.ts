// The verify phase: an attempt whose agent exited is judged, and verify_finished records the
// verdict. Whatever the agent left uncommitted is committed on its branch first, so the verify
// sees (and landing merges) exactly what the branch holds. The item's verify command runs in
// lib/step/verify-command.ts; without one (`verify: false`), the verdict is "the agent exited 0
// and this attempt committed something".
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Payload } from "../log/events.ts";
import type { ItemState } from "../log/reducer.ts";
import { GitError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { readTextOrNull } from "../shared/fsutil.ts";
import { append, materialize, repoOf, type StepContext } from "./context.ts";
import { SESSION_FILES } from "./sessions.ts";
import { runVerify } from "./verify-command.ts";
import { commitLeftovers, commitsAhead, startPointFor } from "./workspace.ts";

type VerifyPayload = Payload<"verify_finished">;

/** Verify the current attempt of `it` (its session ended with an exit) and record the verdict. */
export async function verifyAttempt(ctx: StepContext, it: ItemState): Promise<void> {
  const attempt = it.attempts[it.attempts.length - 1]!;
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
  let payload: VerifyPayload;
  if (it.def.verify === false) {
    let ahead: number;
    try {
      ahead = commitsOfAttempt(ctx, it);
    } catch (err) {
      return record(ctx, it, notRun(attempt.n, gitFailure("could not count the branch's commits", err)));
    }
    payload = judgeWithoutCommand({ attempt: attempt.n, exitCode: attempt.end!.exitCode, ahead, logPath });
  } else payload = await runVerifyCommand(ctx, it, { command: it.def.verify, logPath });
  failpoint("verify:after_run");
  record(ctx, it, payload);
}

function record(ctx: StepContext, it: ItemState, payload: VerifyPayload): void {
  append(ctx, [{ type: "verify_finished", item: it.id, payload }], "verify");
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

/** Run the item's verify command in its worktree, inside this step (the lease renewed to cover it). */
async function runVerifyCommand(ctx: StepContext, it: ItemState, o: { command: string; logPath: string }): Promise<VerifyPayload> {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const worktree = it.session!.worktree;
  ctx.store.renewLease(ctx.lease, it.def.timeouts.verify + 10 * 60_000);
  // A verify may run for minutes: bring the files up to date with what this step committed
  // (or `loop status` would report them stale meanwhile), and leave no WAL behind (or every
  // read verb meanwhile would copy the whole database to read it; see Store.checkpoint).
  materialize(ctx);
  ctx.store.checkpoint();
  const r = await runVerify({
    command: o.command,
    cwd: worktree,
    logPath: o.logPath,
    timeoutMs: it.def.timeouts.verify,
    env: { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(attempt.n), LOOP_WORKDIR: worktree },
  });
  return { attempt: attempt.n, passed: r.passed, exitCode: r.exitCode, timedOut: r.timedOut, sha256: r.sha256, tail: r.tail, log: o.logPath, reason: r.reason };
}
