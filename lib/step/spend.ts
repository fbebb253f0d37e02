// Spend in a step (docs/spend.md): an attempt's usage read from its session folder and recorded when
// it changed (lib/supervisor/usage-reader.ts reads, lib/decisions/budget.ts decides), and a budget reached acted
// on: an item's attempt ended through the close path and the item settled failed (`budget_exhausted`),
// or the loop paused. Reading usage never fails a step: what cannot be read is said in the figure's note.
import { modelRoute } from "../definition/network.ts";
import type { EventDraft } from "../log/events.ts";
import type { ItemState } from "../log/projection.ts";
import { failpoint } from "../shared/failpoint.ts";
import { append, closeInStep, type StepContext, type StepOutcome } from "./context.ts";
import type { BudgetVerdict } from "../decisions/budget.ts";
import { usageDraft } from "../writer/usage-draft.ts";
import { readGatewayStop } from "../supervisor/gateway-files.ts";

/** Record the running attempt's figure when it changed (at most once a tick: the step observes once). */
export function recordRunningUsage(ctx: StepContext, it: ItemState): void {
  const u = usageDraft(it, { final: false, prices: ctx.def.prices });
  if (u) append(ctx, [u], "usage");
}

/**
 * A budget reached (lib/decisions/budget.ts): the item's settles it failed with `budget_exhausted` (its
 * session, if one runs, ended through the close path first, its final figure recorded), and the loop
 * goes on; the loop's pauses the loop (an attempt in flight is ended the same way and given back,
 * uncounted). One commit; the operator hears of it once (lib/decisions/attention.ts attention, notify).
 */
export async function stopForBudget(ctx: StepContext, it: ItemState | null, v: NonNullable<BudgetVerdict>): Promise<StepOutcome | null> {
  failpoint("budget:before_close");
  const inFlight = it !== null && (it.status === "running" || it.status === "launching" || it.status === "ended" || it.status === "needs_input");
  const why = v.scope === "item" ? `budget_exhausted: ${v.reason}` : `the loop's budget was reached: ${v.reason}`;
  const closed = it && inFlight ? await closeInStep(ctx, { it, reason: why, removeCheckout: false, endVerdict: "closed" }) : null;
  const drafts: EventDraft[] = [...(closed?.events ?? [])];
  const stop = { window: v.window, unit: v.unit, spent: v.spent, limit: v.limit, reason: v.reason };
  if (v.scope === "item") {
    if (!it) throw new Error("an item's budget was reached with no item to stop");
    const n = it.attempts.length;
    drafts.push(
      { type: "budget_stopped", item: it.id, payload: { attempt: n, scope: "item", ...stop } },
      { type: "item_settled", item: it.id, payload: { attempt: n, outcome: "failed", reason: why, code: "budget_exhausted" } },
    );
    append(ctx, drafts, "budget");
    return null;
  }
  if (it && inFlight)
    drafts.push({
      type: "item_requeued",
      item: it.id,
      payload: { attempt: it.attempts.length, reason: "the loop's budget was reached", failed: false, resetBudget: false },
    });
  drafts.push({ type: "budget_stopped", item: null, payload: { attempt: 0, scope: "loop", ...stop } });
  const p = append(ctx, drafts, "budget");
  return { action: "paused", item: it?.id ?? null, reason: p.loop.reason };
}

/**
 * Behind a gateway: a session whose gateway stopped its model requests because it hung up on too
 * many answers before they said what they used (GATEWAY_FILES.stopped, code `answers_cut_off`) is
 * ended through the close path, its final figure recorded (each cut-off answer charged its worst
 * case), and the item settles failed, `answers_cut_off: …`: no retry, since another attempt would
 * meet the same agent. Null when there is nothing to stop.
 */
export async function stopForCutOffs(ctx: StepContext, it: ItemState): Promise<StepOutcome | null | undefined> {
  const stop =
    modelRoute({ runner: it.def.runner, network: it.def.network, env: ctx.options.env }).gateway && it.session ? readGatewayStop(it.session.sessionDir) : null;
  if (!stop) return undefined;
  const why = `${stop.code}: ${stop.reason} (docs/spend.md#the-gateway)`;
  const closed = await closeInStep(ctx, { it, reason: why, removeCheckout: false, endVerdict: "closed" });
  const n = it.attempts.length;
  append(
    ctx,
    [...(closed?.events ?? []), { type: "item_settled", item: it.id, payload: { attempt: n, outcome: "failed", reason: why, code: "answers_cut_off" } }],
    "budget",
  );
  return null;
}
