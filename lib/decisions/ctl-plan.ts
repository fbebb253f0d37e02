// What an operator's verb does (`loop ctl`, and the same verbs as `/loop <verb>` in a forge comment:
// lib/step/forge/comments.ts), decided from the projection alone: pure, tested with plain data
// (tests/decisions/decide.test.ts). lib/control/ctl.ts carries a plan out under the lease; a step's
// forge comments carry it out in the step. It sits below both, beside the step's other decisions.
import type { EventDraft } from "../log/events.ts";
import { type CtlVerb, isInFlight, isSettled, type ItemStatus } from "../log/vocabulary.ts";
import { itemOf, type Projection, requireItem } from "../log/projection.ts";
import { RefusedError, UsageError } from "../shared/errors.ts";
import { blockedBecauseOf, blockingDependency, gateItem } from "./next-work.ts";
import { pausedByQuestionOf } from "./attention.ts";

export interface PlannedAction {
  /** Item id, or null for the loop itself. */
  item: string | null;
  /** What will happen, for people and for --dry-run. */
  effect: string;
  noop: boolean;
  /** End this item's live session first (close path). */
  close: { removeCheckout: boolean } | null;
  /** Events to append after the close (the close path's own events come first). */
  events: EventDraft[];
}

/**
 * `accept` (`loop ctl resume --yes`): a loop paused because the default verify failed on the base is
 * resumed with that failure accepted for its verify and setup (base_verify_accepted), not run again.
 */
export function planCtl(
  p: Projection,
  verb: CtlVerb,
  items: string[],
  o: { text?: string | null; reason?: string | null; actor: string; keepCheckout: boolean; accept?: boolean },
): PlannedAction[] {
  const out: PlannedAction[] = [];
  const loopAction = (effect: string, events: EventDraft[], noop = false): PlannedAction => ({ item: null, effect, noop, close: null, events });
  const control = (id: string, text: string | null = null): EventDraft => ({ type: "control_recorded", item: id, payload: { verb: verb as never, text } });
  const closeFor = (id: string) => {
    const it = requireItem(p, id);
    return it.session && !it.session.closed && isInFlight(it.status) ? { removeCheckout: !o.keepCheckout } : null;
  };

  if (items.length === 0) {
    const st = p.loop.state;
    switch (verb) {
      case "start": {
        // control.review: the start a review waits for (docs/cli/loop-ctl.md#review-and-start), then the loop's own start or resume.
        const waiting = p.loop.review?.waiting;
        if (waiting) {
          const then: EventDraft[] =
            st === "new" ? [{ type: "loop_started", payload: {} }] : st === "paused" || st === "stopped" ? [{ type: "loop_resumed", payload: {} }] : [];
          return [
            loopAction(
              `start the loop after its review (revision ${p.loop.revision})${st === "paused" || st === "stopped" ? `, resuming the ${st} loop` : ""}`,
              [{ type: "loop_reviewed", payload: { revision: p.loop.revision } }, ...then],
            ),
          ];
        }
        if (st === "new") return [loopAction("start the loop", [{ type: "loop_started", payload: {} }])];
        if (st === "paused" || st === "stopped") return [loopAction(`resume the ${st} loop`, [{ type: "loop_resumed", payload: {} }])];
        return [loopAction(`the loop is already ${st}`, [], true)];
      }
      case "resume": {
        if (st !== "paused" && st !== "stopped") return [loopAction(`the loop is ${st}, not paused or stopped`, [], true)];
        const base = p.loop.baseVerify;
        const onBase = st === "paused" && p.loop.cause?.kind === "fault" && p.loop.cause.fault === "base_verify_failed" && base?.status === "failed";
        if (onBase && o.accept)
          return [
            loopAction(`accept the failure of the verify on the base (${JSON.stringify(base.verify)}) for this verify and setup, and resume the loop`, [
              { type: "base_verify_accepted", payload: { key: base.key } },
              { type: "loop_resumed", payload: {} },
            ]),
          ];
        return [
          loopAction(`resume the ${st} loop${onBase ? " (the verify on the base runs again; --yes accepts its failure)" : ""}`, [
            { type: "loop_resumed", payload: {} },
          ]),
        ];
      }
      case "pause":
        if (st === "paused") return [loopAction("the loop is already paused", [], true)];
        return [
          loopAction("pause the loop", [
            { type: "loop_paused", payload: { reason: o.reason ?? `paused by ${o.actor}`, cause: { kind: "operator", verb: "pause" } } },
          ]),
        ];
      case "stop": {
        if (st === "stopped") return [loopAction("the loop is already stopped", [], true)];
        const cur = p.loop.current;
        if (cur) {
          const it = requireItem(p, cur);
          out.push({
            item: cur,
            effect: `end the session of ${cur} (attempt ${it.attempts.length}); the item stays pending`,
            noop: false,
            close: closeFor(cur),
            events: [
              {
                type: "item_requeued",
                item: cur,
                payload: { attempt: it.attempts.length, reason: `stopped by ${o.actor}`, failed: false, resetBudget: false },
              },
            ],
          });
        }
        out.push(loopAction("stop the loop", [{ type: "loop_stopped", payload: { reason: o.reason ?? `stopped by ${o.actor}` } }]));
        return out;
      }
      default:
        // A usage error (exit 2), like the same mistake caught by the command line (docs/cli/loop-ctl.md).
        throw new UsageError(`loop ctl ${verb} needs --work-item`);
    }
  }

  /** Items this plan requeues (retry), and the retried item each is requeued with. */
  const requeued = new Map<string, string>();
  for (const id of items) {
    const it = requireItem(p, id);
    const n = it.attempts.length;
    const settled = isSettled(it.status);
    const flying = isInFlight(it.status);
    switch (verb) {
      case "start":
        out.push({
          item: id,
          effect: it.held ? `release ${id} (held by stop) and allow it to start` : `allow ${id} to start`,
          noop: false,
          close: null,
          events: [control(id)],
        });
        break;
      case "stop":
        if (settled || it.status === "withdrawn") {
          out.push({ item: id, effect: `${id} is ${it.status}; nothing to stop`, noop: true, close: null, events: [] });
          break;
        }
        out.push({
          item: id,
          effect: flying ? `end the session of ${id} and hold it (start or retry releases it)` : `hold ${id} (start or retry releases it)`,
          noop: false,
          close: closeFor(id),
          events: [
            control(id, o.reason ?? null),
            ...(flying
              ? [{ type: "item_requeued" as const, item: id, payload: { attempt: n, reason: `stopped by ${o.actor}`, failed: false, resetBudget: false } }]
              : []),
          ],
        });
        break;
      case "skip":
      case "cancel": {
        if (settled || it.status === "withdrawn") {
          out.push({ item: id, effect: `${id} is ${it.status}; nothing to ${verb}`, noop: true, close: null, events: [] });
          break;
        }
        const outcome = verb === "skip" ? "skipped" : "cancelled";
        out.push({
          item: id,
          effect: `${flying ? `end the session of ${id} and settle it` : `settle ${id}`} ${outcome}`,
          noop: false,
          close: closeFor(id),
          events: [
            control(id, o.reason ?? null),
            {
              type: "item_settled",
              item: id,
              payload: {
                attempt: n,
                outcome,
                reason: `${outcome} by ${o.actor}${o.reason ? `: ${o.reason}` : ""}`,
                code: outcome === "skipped" ? "operator_skipped" : "operator_cancelled",
              },
            },
          ],
        });
        break;
      }
      case "retry": {
        if (it.status === "passed") throw new RefusedError(`${id} passed; retry is for items that failed, were blocked, skipped or cancelled`);
        if (flying) {
          out.push({ item: id, effect: `${id} is in flight; nothing to retry`, noop: true, close: null, events: [] });
          break;
        }
        // Already requeued by this plan, as a dependent of an item retried before it (--all-failed
        // --all-blocked, or both named): requeuing it twice would be an illegal event.
        if (requeued.has(id)) {
          out.push({ item: id, effect: `${id} is requeued with ${requeued.get(id)}`, noop: true, close: null, events: [] });
          continue;
        }
        // A pending item that nothing holds is already going to run: nothing to release or requeue.
        if (!settled && !it.held) {
          out.push({ item: id, effect: `${id} is ${it.status} and not held; nothing to retry`, noop: true, close: null, events: [] });
          break;
        }
        const events: EventDraft[] = [control(id)];
        if (settled) events.push({ type: "item_requeued", item: id, payload: { attempt: n, reason: `retry by ${o.actor}`, failed: false, resetBudget: true } });
        if (settled) requeued.set(id, id);
        for (const dep of settled ? blockedBecauseOf(p, id).filter((d) => !requeued.has(d)) : []) {
          events.push({
            type: "item_requeued",
            item: dep,
            payload: { attempt: requireItem(p, dep).attempts.length, reason: `retry of ${id} by ${o.actor}`, failed: false, resetBudget: false },
          });
          requeued.set(dep, id);
        }
        out.push({
          item: id,
          effect: settled
            ? `requeue ${id} with a fresh attempt budget${
                events.length > 2
                  ? ` and unblock ${events
                      .slice(2)
                      .map((e) => e.item)
                      .join(", ")}`
                  : ""
              }`
            : `release ${id}`,
          noop: false,
          close: null,
          events,
        });
        break;
      }
      case "reply": {
        if (settled || it.status === "withdrawn") throw new RefusedError(`${id} is ${it.status}; a reply can no longer reach it`);
        out.push({
          item: id,
          effect: `record a reply for ${id}${it.status === "needs_input" ? " (it asked a question; `loop ctl resume` continues)" : " (delivered with its next attempt)"}`,
          noop: false,
          close: null,
          events: [control(id, o.text ?? null), { type: "reply_recorded", item: id, payload: { text: o.text ?? "" } }],
        });
        break;
      }
      case "pause":
      case "resume":
        throw new UsageError(`loop ctl ${verb} acts on the whole loop; drop --work-item`);
    }
  }
  if (verb === "retry") warnBlockedAgain(p, out, requeued);
  // An item that asked a question paused the loop; once it is skipped or stopped the question is moot.
  const askedBy = (id: string) => pausedByQuestionOf(p, id);
  if ((verb === "skip" || verb === "stop") && items.some(askedBy))
    out.push(loopAction(`resume the loop (it was paused by the question of ${items.filter(askedBy).join(", ")})`, [{ type: "loop_resumed", payload: {} }]));
  if (verb === "cancel" && out.some((a) => !a.noop) && p.loop.state === "running")
    out.push(
      loopAction("pause the loop (cancel means stop spending)", [
        { type: "loop_paused", payload: { reason: `cancelled ${items.join(", ")} by ${o.actor}`, cause: { kind: "operator", verb: "cancel" } } },
      ]),
    );
  return out;
}

/**
 * A retried item whose dependency stays failed (not retried by this plan) is blocked again by the
 * next step, by nextWork's own rule: say so in its effect, naming the dependency to retry.
 */
function warnBlockedAgain(p: Projection, actions: PlannedAction[], requeued: Map<string, string>): void {
  const find = (id: string) => {
    const it = itemOf(p, id);
    if (!it) return undefined;
    return requeued.has(id) ? { ...gateItem(it), status: "pending" as const } : gateItem(it);
  };
  for (const a of actions) {
    if (a.noop || a.item === null || !requeued.has(a.item)) continue;
    const b = blockingDependency(find(a.item)!, find);
    if (b) a.effect += `; but ${b.reason}, so the next step blocks it again${b.status !== null && isSettled(b.status) ? ` (retry ${b.dependency} too)` : ""}`;
  }
}

/** The items with one of these statuses, in presentation order: what `retry --all-failed` / `--all-blocked` select. */
export function itemsWithStatus(p: Projection, statuses: readonly ItemStatus[]): string[] {
  return p.order.filter((id) => statuses.includes(requireItem(p, id).status));
}

/** `loop ctl retry --all-failed` / `--all-blocked`: retry every such item; none is a no-op (exit 0). */
export function planRetryAll(p: Projection, statuses: readonly ItemStatus[], o: { actor: string; keepCheckout: boolean }): PlannedAction[] {
  const ids = itemsWithStatus(p, statuses);
  if (ids.length === 0) return [{ item: null, effect: `no ${statuses.join(" or ")} items; nothing to retry`, noop: true, close: null, events: [] }];
  return planCtl(p, "retry", ids, o);
}
