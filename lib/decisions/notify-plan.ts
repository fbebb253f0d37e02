// What each notification channel is sent in a step (docs/operations.md#notification-channels), as a
// pure decision: the conditions that need a person (attention, and the budget at 80%) not yet sent to
// it, and the items that passed, failed or landed since its cursor in the log, each filtered by the
// events it asked for. A channel that failed waits out its backoff; a channel new to the loop starts
// at the log's head (it is not sent the loop's history). lib/step/notify.ts carries out the sends and
// records each as `notified`.
import type { NotifyEvent } from "../definition/channels.ts";
import type { AttentionKind } from "./attention.ts";
import type { LoopBudget } from "../definition/normalized.ts";
import type { ChannelState, LoopUsage } from "../log/projection.ts";
import { amount, loopSpend, reached } from "./budget.ts";

/** A condition that needs a person, or the budget's warning, as a channel may be sent it. */
export interface NotifyCondition {
  kind: AttentionKind | "budget_80";
  slot: string;
  key: string;
  item: string | null;
  reason: string;
  fix: string[];
}

/** An item that passed, failed or landed: an event of the log past a channel's cursor. */
export interface NotifyOutcome {
  seq: number;
  event: "passed" | "failed" | "landed";
  item: string;
  code: string | null;
  reason: string;
}

/** One message for one channel: a condition (slot and key) or an outcome (its seq becomes the cursor). */
export type Message = { of: "condition"; event: NotifyEvent; condition: NotifyCondition } | { of: "outcome"; event: NotifyEvent; outcome: NotifyOutcome };

export type ChannelPlan =
  | { id: string; action: "send"; messages: Message[]; cursor: number }
  /** New to the loop: its cursor starts at the head, and it is sent the open conditions only. */
  | { id: string; action: "start"; messages: Message[]; cursor: number }
  | { id: string; action: "wait"; until: string };

/** At most this many outcomes to one channel in one step; the rest go in the next. */
const MAX_MESSAGES_PER_STEP = 10;

/** The events a condition is: every attention kind is `attention`, and a budget or a review is also its own. */
function conditionEvents(kind: NotifyCondition["kind"]): NotifyEvent[] {
  if (kind === "budget_80") return ["budget_80"];
  if (kind === "budget") return ["attention", "budget_100"];
  if (kind === "review") return ["attention", "review"];
  return ["attention"];
}

/** How long a channel waits after its n-th failure in a row: a minute, doubled each time, at most an hour. */
export function retryDelayMs(failures: number): number {
  return Math.min(60 * 60_000, 60_000 * 2 ** Math.max(0, failures - 1));
}

/** The slot of a condition for a channel in `loop.notified` (the command's own slots are bare). */
function channelSlot(channel: string, slot: string): string {
  return `${channel}|${slot}`;
}

export function planChannels(o: {
  channels: readonly { id: string; events: readonly NotifyEvent[] }[];
  state: Readonly<Record<string, ChannelState>>;
  notified: Readonly<Record<string, string>>;
  conditions: readonly NotifyCondition[];
  /** The outcomes past the lowest cursor, in log order, read up to `readTo`. */
  outcomes: readonly NotifyOutcome[];
  /** The last event the outcomes were read from (passed, failed and landed items among others). */
  readTo: number;
  /** The log's head: where a channel new to the loop starts. */
  head: number;
  now: number;
}): ChannelPlan[] {
  return o.channels.map((c): ChannelPlan => {
    const st = o.state[c.id];
    if (st?.retryAt && Date.parse(st.retryAt) > o.now) return { id: c.id, action: "wait", until: st.retryAt };
    const wants = (events: readonly NotifyEvent[]) => events.find((e) => c.events.includes(e)) ?? null;
    // The conditions open now: few by nature (one per kind and item), all of them every step.
    const conditions: Message[] = [];
    for (const cond of o.conditions) {
      const event = wants(conditionEvents(cond.kind));
      if (event && o.notified[channelSlot(c.id, cond.slot)] !== cond.key) conditions.push({ of: "condition", event, condition: cond });
    }
    if (!st) return { id: c.id, action: "start", messages: conditions, cursor: o.head };
    // The outcomes first, in the log's order (they happened before what is open now), at most a page a step.
    const outcomes: Message[] = [];
    let cursor = st.cursor;
    let full = false;
    for (const out of o.outcomes) {
      if (out.seq <= st.cursor || !c.events.includes(out.event)) continue;
      if (outcomes.length === MAX_MESSAGES_PER_STEP) {
        full = true;
        break;
      }
      cursor = out.seq;
      outcomes.push({ of: "outcome", event: out.event, outcome: out });
    }
    // Every outcome read was taken: the cursor moves to the last event read, so the next step reads past it.
    if (!full) cursor = Math.max(cursor, o.readTo);
    return { id: c.id, action: "send", messages: [...outcomes, ...conditions], cursor };
  });
}

/**
 * The loop's budget at 80% or more and not reached: one warning per budget figure (raising the budget
 * warns again at the new 80%), and for the rolling day one per UTC day.
 */
export function budgetWarnings(usage: LoopUsage | undefined, budget: LoopBudget | undefined, now: number): NotifyCondition[] {
  if (!budget) return [];
  const spend = loopSpend(usage, now);
  const out: NotifyCondition[] = [];
  const warn = (
    which: "total" | "daily",
    limit: { tokens?: number; microUsd?: number } | undefined,
    s: { tokens: number | null; microUsd: number | null },
    key: string,
  ) => {
    if (!limit || reached(s, limit)) return;
    const at80 = reached(s, {
      tokens: limit.tokens === undefined ? undefined : Math.ceil(limit.tokens * 0.8),
      microUsd: limit.microUsd === undefined ? undefined : Math.ceil(limit.microUsd * 0.8),
    });
    if (!at80) return;
    const full = at80.unit === "tokens" ? limit.tokens! : limit.microUsd!;
    out.push({
      kind: "budget_80",
      slot: `budget_80:${which}`,
      key: key,
      item: null,
      reason: `the loop has spent ${amount(at80.unit, at80.spent)} of its ${which === "daily" ? "daily " : ""}budget of ${amount(at80.unit, full)} (${Math.floor((at80.spent / full) * 100)}%)`,
      fix: [],
    });
  };
  warn("total", budget, spend.total, `budget_80:total:${budget.tokens ?? "-"}:${budget.microUsd ?? "-"}`);
  warn(
    "daily",
    budget.daily,
    spend.daily,
    `budget_80:daily:${new Date(now).toISOString().slice(0, 10)}:${budget.daily?.tokens ?? "-"}:${budget.daily?.microUsd ?? "-"}`,
  );
  return out;
}
