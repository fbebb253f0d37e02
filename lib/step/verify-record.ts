// A verify's verdict as verify_finished records it (lib/step/verify.ts and the observation of its
// command share these): the payload built from a verdict's code and facts, the no-progress guard
// naming it, a gate's refusal written to the verify log, and the pause a tampered object store adds.
import { join } from "node:path";
import type { Payload } from "../log/events.ts";
import { requireAttempt } from "../log/projection.ts";
import { endedAttempt, type SessionItem } from "../log/item-views.ts";
import type { VerifyCode } from "../log/vocabulary.ts";
import { readTextOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { append, type StepContext, type StepOutcome } from "./context.ts";
import { namedObjects, verdictPasses, type VerifyVerdict, verifyReason } from "../decisions/verify-verdict.ts";
import { guardsOf } from "../definition/normalized.ts";
import { noProgressReason } from "../decisions/guards.ts";

/** A verify_finished payload as this phase writes it: with its code and the no-progress flag (an older log's may lack them). */
export type VerifyPayload = Payload<"verify_finished"> & { code: VerifyCode; noProgress: boolean };

/** An attempt a gate refused: no verify runs; the verdict says why (and, for a check that found something, so does the verify log). */
export function refuse(ctx: StepContext, it: SessionItem, v: VerifyVerdict, logPath: string): StepOutcome | null {
  const attempt = requireAttempt(it);
  const said = verifyReason(v);
  if (said.detail === null) return record(ctx, it, notRun(attempt.n, v));
  const payload = refused(attempt.n, v, logPath);
  return v.code === "object_store_tampered" ? objectStoreTampered(ctx, it, v.objects, payload) : record(ctx, it, payload);
}

/** `verify: false`: the verdict judged from the agent's exit and the attempt's commits, named by the no-progress guard when it changed nothing. */
export function judged(ctx: StepContext, it: SessionItem, d: { verdict: VerifyVerdict; noProgress: boolean }, logPath: string): null {
  const attempt = endedAttempt(it);
  const payload = verdictPayload(attempt.n, d.verdict, { exitCode: attempt.end.exitCode, timedOut: false, sha256: null, log: logPath });
  writeFileAtomic(logPath, payload.reason + "\n");
  return d.noProgress ? record(ctx, it, noProgress(payload), { named: true }) : record(ctx, it, payload);
}

/** Record the verdict; `named`: the no-progress guard has already named it. */
export function record(ctx: StepContext, it: SessionItem, payload: VerifyPayload, o: { named?: boolean } = {}): null {
  append(ctx, [{ type: "verify_finished", item: it.id, payload: o.named ? payload : namedNoProgress(ctx, it, payload) }], "verify");
  return null;
}

/**
 * The no-progress guard (docs/spend.md#guards): a failed verdict on an attempt that changed nothing,
 * its verify run on the very commit the attempt started from, says so first.
 */
function namedNoProgress(ctx: StepContext, it: SessionItem, payload: VerifyPayload): VerifyPayload {
  if (payload.passed || !guardsOf(ctx.def).noProgress) return payload;
  const a = requireAttempt(it);
  const head = a.verifyRun?.head;
  const start = readTextOrNull(join(it.session.sessionDir, "start-head"), { noLinks: true })?.trim();
  return head && start && head === start ? noProgress(payload) : payload;
}

/** A failed verdict the no-progress guard names: flagged, and its reason says so first. */
function noProgress(payload: VerifyPayload): VerifyPayload {
  return { ...payload, noProgress: true, reason: noProgressReason(payload.reason) };
}

/** A verdict as verify_finished records it: passed or not, its code, and its reason rendered from its facts (`tail` the reason unless given). */
export function verdictPayload(
  attempt: number,
  v: VerifyVerdict,
  f: Pick<VerifyPayload, "exitCode" | "timedOut" | "sha256" | "log"> & Partial<Pick<VerifyPayload, "tail" | "times">>,
): VerifyPayload {
  const { reason } = verifyReason(v);
  return { attempt, passed: verdictPasses(v), ...f, tail: f.tail ?? reason, code: v.code, noProgress: false, reason };
}

/** An attempt a check before its verify refused (protected paths, the refs loop owns, …): no verify runs; the log says why. */
function refused(attempt: number, v: VerifyVerdict, logPath: string): VerifyPayload {
  const detail = verifyReason(v).detail!;
  writeFileAtomic(logPath, detail + "\n"); // a fresh file: never through a link the agent left there
  return verdictPayload(attempt, v, { exitCode: null, timedOut: false, sha256: null, tail: detail, log: logPath });
}

/**
 * Objects of the repository rewritten during the attempt: the attempt fails (its verify never runs)
 * and, in the same commit, the loop pauses: every later item would build on the damaged store.
 */
function objectStoreTampered(ctx: StepContext, it: SessionItem, tampered: string[], verdict: VerifyPayload): StepOutcome {
  const attempt = requireAttempt(it);
  const fault = {
    kind: "object_store_tampered",
    attempt: null,
    reason: `the repository's object store was rewritten during ${it.id}'s attempt ${attempt.n}: ${namedObjects(tampered)}`,
    fix: "check the repository with `git fsck --full` and restore the objects it names from a backup or another clone (`loop status` lists the items whose branches hold them), then `loop ctl resume`",
  };
  ctx.errors.push(`${it.id}: ${verdict.reason}`);
  ctx.options.log.error(`${it.id}: ${verdict.reason}`);
  const p = append(
    ctx,
    [
      { type: "verify_finished", item: it.id, payload: namedNoProgress(ctx, it, verdict) },
      { type: "environment_fault", payload: fault },
    ],
    "verify",
  );
  return { action: "paused", item: it.id, reason: p.loop.reason };
}

/** A verify that could not run: failed, with the reason as all there is to show (a missing worktree shows nothing). */
export function notRun(attempt: number, v: VerifyVerdict): VerifyPayload {
  const { reason } = verifyReason(v);
  return verdictPayload(attempt, v, { exitCode: null, timedOut: false, sha256: null, tail: v.code === "worktree_missing" ? "" : reason, log: null });
}
