// The settle phase: an attempt's fate is decided and recorded, together with the close of its
// session in the same commit: settled passed or failed, or requeued for another attempt. Also the
// sweep that closes the session of an item settled by a step killed before it closed it.
import type { EventDraft } from "../log/events.ts";
import { isInFlight } from "../log/vocabulary.ts";
import { type ItemState, requireAttempt } from "../log/projection.ts";
import { type EndedItem, landedAttempt } from "../log/item-views.ts";
import { append, closeInStep, loopView, type StepContext } from "./context.ts";
import { afterFailureOf } from "../decisions/attempt.ts";
import { settledByLanding } from "../decisions/landing.ts";
import { guardsOf } from "../definition/normalized.ts";

/** Verified and landed (or not): close the session and settle the item passed (or failed, when landing failed). */
export async function settleAttempt(ctx: StepContext, it: EndedItem, o: { landed: boolean }): Promise<void> {
  const attempt = landedAttempt(it);
  // A landed item's checkout is kept as the spare the next launch takes (lib/writer/spare-checkout.ts).
  const remove = o.landed && !ctx.def.keepCheckoutOnClose;
  const c = await closeInStep(ctx, {
    it,
    reason: o.landed ? "item passed" : "landing failed",
    removeCheckout: remove,
    ...(remove ? { spareIn: ctx.worktrees } : {}),
  });
  const { landing } = attempt;
  const settled = settledByLanding({ landed: o.landed, outcome: landing.outcome, landingReason: landing.reason, verifyReason: attempt.verify.reason });
  const settle: EventDraft = {
    type: "item_settled",
    item: it.id,
    payload: { attempt: attempt.n, outcome: settled.outcome, reason: settled.reason, code: settled.code },
  };
  append(ctx, [...(c?.events ?? []), settle], "settle");
}

/** The attempt failed: close its session, then try again or settle the item failed (its attempts are spent). */
export async function failAttempt(
  ctx: StepContext,
  it: ItemState,
  failed: { reason: string; code: "session_failed" | "verify_failed" | "gave_up" },
): Promise<void> {
  const attempt = requireAttempt(it);
  const { reason } = failed;
  const c = await closeInStep(ctx, { it, reason, removeCheckout: false });
  const after = afterFailureOf(it, { identicalFailure: guardsOf(ctx.def).identicalFailure, reason, code: failed.code });
  const next: EventDraft =
    after.decision === "retry"
      ? { type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason, failed: true, resetBudget: false } }
      : { type: "item_settled", item: it.id, payload: { attempt: attempt.n, outcome: "failed", reason: after.reason, code: after.code } };
  append(ctx, [...(c?.events ?? []), next], after.decision === "retry" ? "requeue" : "settle");
}

/** Back to pending without counting a failure: an interrupted launch, an answered question, a session that died with a stopped watcher (`drained`). */
export function requeueUncounted(ctx: StepContext, it: ItemState, reason: string, o: { drained?: boolean; before?: EventDraft[] } = {}): void {
  const attempt = requireAttempt(it);
  const payload = { attempt: attempt.n, reason, failed: false, resetBudget: false, ...(o.drained ? { drained: true as const } : {}) };
  append(ctx, [...(o.before ?? []), { type: "item_requeued", item: it.id, payload }], "requeue");
}

/**
 * Close the sessions of items no longer in flight that were never recorded closed (a kill between
 * settle and close, a requeue). True if it closed any. Only items with an open session are read
 * (the store's index finds them).
 */
export async function sweepClosedSessions(ctx: StepContext): Promise<boolean> {
  let closed = false;
  const { current } = loopView(ctx).loop;
  for (const it of ctx.store.itemsWhere({ openSession: true })) {
    if (!it.session || it.session.closed || it.id === current) continue;
    if (!isInFlight(it.status)) {
      const remove = it.status === "passed" ? !ctx.def.keepCheckoutOnClose : false;
      const c = await closeInStep(ctx, { it, reason: "closing a session left open", removeCheckout: remove });
      if (c) {
        append(ctx, c.events, "close");
        closed = true;
      }
    }
  }
  return closed;
}
