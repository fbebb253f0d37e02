// When the loop needs a person (docs/cli/loop-run.md#exit-codes): `loop run` exits 1 while any of
// these holds, and `notify` is run once for each (lib/step/notify.ts). Pure.
import type { ItemState, LoopRecord, Projection } from "../log/projection.ts";
import type { ItemStatus } from "../log/vocabulary.ts";
import { ITEM_STATUSES } from "../log/vocabulary.ts";
import { itemOf } from "../log/projection.ts";
import { drainsAs, LANDING_OUTCOMES, type LandingOutcome, landed } from "../log/vocabulary.ts";
import { activeItems } from "./next-work.ts";

export type AttentionKind = "question" | "environment" | "failed" | "landing" | "budget";

export interface Attention {
  kind: AttentionKind;
  item: string | null;
  reason: string;
  /** What one notification is for: a new condition in the same slot replaces the last one. */
  slot: string;
  /** This condition, exactly: notify runs once per key. */
  key: string;
}

/** The statuses a drain counts as Failed: once the loop drained Failed, attention names their items. */
export const ATTENTION_STATUSES: readonly ItemStatus[] = ITEM_STATUSES.filter((s) => drainsAs(s) === "Failed");
/** The statuses an item settles with when its landing did not land (lib/step/settle.ts). */
export const LANDING_ATTENTION_STATUSES: readonly ItemStatus[] = ["failed", "landing_blocked"];
/** The landing outcomes that did not land. */
export const UNLANDED_OUTCOMES: readonly LandingOutcome[] = LANDING_OUTCOMES.filter((o) => !landed(o));

/**
 * What attention reads: the loop, the item in flight, and, in the projection's order, the items
 * that may need a person: every item whose landing record has an outcome in UNLANDED_OUTCOMES, every
 * item a budget stopped, and once the loop drained Failed every item whose status is in
 * ATTENTION_STATUSES (more items change nothing). attentionView takes it from a whole projection; a step reads only those items, through
 * the store's indexes (lib/step/notify.ts stepAttentionView).
 */
export interface AttentionView {
  loop: LoopRecord;
  current: ItemState | null;
  items: readonly ItemState[];
}

export function attentionView(p: Projection): AttentionView {
  return { loop: p.loop, current: p.loop.current ? (itemOf(p, p.loop.current) ?? null) : null, items: activeItems(p) };
}

/**
 * The conditions that need a person, in this order: the loop paused on an agent's question or by an
 * environment fault, a budget reached (the loop paused by its own, items settled failed by theirs), items whose landing failed (a merge conflict, a target checked out elsewhere)
 * or was blocked on the forge (`landing_blocked`: a refusal, red checks past the deadline, auto-merge
 * not allowed; its PR is left open for a person), the loop drained `Failed`. An operator's own pause
 * or stop needs nobody else.
 */
export function attention(p: Projection, o: { faultItem?: string | null } = {}): Attention[] {
  return attentionOf(attentionView(p), o);
}

/**
 * attention, from what it reads (AttentionView). `faultItem`: the item the fault event names (the
 * projection keeps only its seq), when the caller read it.
 */
export function attentionOf({ loop, current: cur, items }: AttentionView, o: { faultItem?: string | null } = {}): Attention[] {
  const out: Attention[] = [];
  const troubled = items.filter((it) => ATTENTION_STATUSES.includes(it.status));
  if (loop.state === "paused" && cur?.status === "needs_input")
    out.push({ kind: "question", item: cur.id, reason: loop.reason ?? `${cur.id} needs input`, slot: "question", key: `question:${cur.id}:e${cur.epoch}:a${cur.attempts.length}` });
  if (loop.state === "paused" && loop.fault)
    out.push({ kind: "environment", item: o.faultItem ?? null, reason: loop.reason ?? loop.fault.kind, slot: "environment", key: `environment:${loop.fault.seq}` });
  // Budgets (docs/spend.md#at-a-limit): the loop paused by its own, items settled failed by theirs.
  if (loop.state === "paused" && loop.budgetStop)
    out.push({ kind: "budget", item: null, reason: loop.reason ?? loop.budgetStop.reason, slot: "budget", key: `budget:${loop.budgetStop.seq}` });
  for (const it of items)
    if (it.status === "failed" && it.budgetStop && it.budgetStop.attempt === it.attempts.length)
      out.push({ kind: "budget", item: it.id, reason: `${it.id}: ${it.reason ?? it.budgetStop.reason}`, slot: `budget:${it.id}`, key: `budget:${it.id}:e${it.epoch}:a${it.attempts.length}` });
  // Settled failed or landing_blocked because of its landing (a merge that conflicted or failed, a
  // pull request blocked): settle.ts settles a landing that did not land as exactly these.
  for (const it of troubled)
    if (LANDING_ATTENTION_STATUSES.includes(it.status) && it.landing && !landed(it.landing.outcome))
      out.push({ kind: "landing", item: it.id, reason: `${it.id}: ${it.reason ?? it.landing.reason}`, slot: `landing:${it.id}`, key: `landing:${it.id}:e${it.epoch}:a${it.attempts.length}` });
  if (loop.state === "drained" && loop.outcome === "Failed") {
    const bad = troubled;
    const names = bad.slice(0, 5).map((it) => `${it.id} ${it.status}`).join(", ") + (bad.length > 5 ? `, … ${bad.length} items` : "");
    out.push({ kind: "failed", item: null, reason: `the loop drained Failed: ${names}`, slot: "failed", key: `failed:${loop.drainedSeq}` });
  }
  return out;
}
