// The channels' part of the notify phase (docs/operations.md#notification-channels): what each channel
// is owed (lib/decisions/notify-plan.ts), sent all channels at once within each one's deadline, each
// send recorded as `notified` after it went (at least once: a step killed in between sends it again).
// A failed send is recorded with the time the channel may be tried again, and never fails the step.
import { hostname } from "node:os";
import type { ChannelDef } from "../definition/normalized.ts";
import {
  budgetWarnings,
  type ChannelPlan,
  type Message,
  type NotifyCondition,
  type NotifyOutcome,
  planChannels,
  retryDelayMs,
} from "../decisions/notify-plan.ts";
import type { Attention } from "../decisions/attention.ts";
import type { EventDraft } from "../log/events.ts";
import type { ChannelState } from "../log/projection.ts";
import { landed } from "../log/vocabulary.ts";
import { notificationDocument, type MessageContext } from "../notify/message.ts";
import { channelTarget, sendOne } from "../notify/send.ts";
import { append, loopView, type StepContext } from "./context.ts";

/** At most this many events of the log are read for outcomes in one step; the cursor says where the next step goes on. */
const OUTCOME_PAGE = 500;

/** What one notification did, as the step's result lists it. */
export interface NotifyReport {
  /** The channel's id, or null for the command. */
  channel: string | null;
  kind: string;
  item: string | null;
  ok: boolean;
  reason: string;
}

export async function channelsPhase(
  ctx: StepContext,
  channels: readonly ChannelDef[],
  pageUrl: string | null,
  attention: readonly Attention[],
): Promise<NotifyReport[]> {
  const { seq, loop } = loopView(ctx);
  const state = loop.channels ?? {};
  const now = Date.now();
  const conditions: NotifyCondition[] = [
    ...attention.map((a) => ({ kind: a.kind, slot: a.slot, key: a.key, item: a.item, reason: a.reason, fix: a.fix })),
    ...budgetWarnings(loop.usage, ctx.def.budget, now),
  ];
  const from = Math.min(...channels.map((c) => state[c.id]?.cursor ?? seq));
  const events = from < seq ? ctx.store.eventsAfter(from, ["item_settled", "landing_finished"], OUTCOME_PAGE) : [];
  const readTo = events.at(-1)?.seq ?? from;
  const outcomes: NotifyOutcome[] = [];
  for (const e of events) {
    if (!e.item) continue;
    if (e.type === "item_settled" && (e.payload.outcome === "passed" || e.payload.outcome === "failed"))
      outcomes.push({
        seq: e.seq,
        event: e.payload.outcome,
        item: e.item,
        code: "code" in e.payload ? (e.payload.code ?? null) : null,
        reason: e.payload.reason,
      });
    if (e.type === "landing_finished" && landed(e.payload.outcome) && e.payload.outcome !== "none")
      outcomes.push({ seq: e.seq, event: "landed", item: e.item, code: e.payload.code ?? null, reason: e.payload.reason });
  }
  const plans = planChannels({ channels, state, notified: loop.notified, conditions, outcomes, readTo, head: seq, now });
  const context: MessageContext = {
    loop: { name: loop.name, state: loop.state, reason: loop.reason },
    seq,
    at: new Date(now).toISOString(),
    host: hostname(),
    root: ctx.options.root,
    page: pageUrl,
  };
  const byId = new Map(channels.map((c) => [c.id, c]));
  ctx.store.renewLease(ctx.lease, Math.max(...channels.map((c) => c.timeout)) + 10 * 60_000);
  const done = await Promise.all(plans.map((p) => runPlan(byId.get(p.id)!, p, state[p.id] ?? null, ctx.options.env, context)));
  const drafts = done.flatMap((d) => d.drafts);
  if (drafts.length) {
    ctx.store.assertLease();
    append(ctx, drafts, "notify");
  }
  const reports = done.flatMap((d) => d.reports);
  for (const r of reports)
    if (!r.ok)
      ctx.options.log.warn(
        `notify channel ${r.channel} (${r.kind}${r.item ? ` ${r.item}` : ""}) failed: ${r.reason}; the loop goes on, and it is tried again later`,
      );
  return reports;
}

/** One channel's turn: its sends in order, stopped at the first failure, and the events that record them. */
async function runPlan(
  c: ChannelDef,
  plan: ChannelPlan,
  st: ChannelState | null,
  env: Record<string, string | undefined>,
  context: MessageContext,
): Promise<{ drafts: EventDraft[]; reports: NotifyReport[] }> {
  if (plan.action === "wait") return { drafts: [], reports: [] };
  const drafts: EventDraft[] = [];
  const reports: NotifyReport[] = [];
  const record = (m: Message | null, ok: boolean, reason: string, failures: number) => {
    const slot = m?.of === "condition" ? m.condition.slot : "";
    const key = m?.of === "condition" ? m.condition.key : m ? `${m.outcome.event}:${m.outcome.seq}` : "";
    const kind = m ? (m.of === "condition" ? m.condition.kind : m.outcome.event) : plan.action;
    const item = m ? (m.of === "condition" ? m.condition.item : m.outcome.item) : null;
    const cursor = m?.of === "outcome" && ok ? m.outcome.seq : undefined;
    const retryAt = ok ? undefined : new Date(Date.now() + retryDelayMs(failures)).toISOString();
    drafts.push({
      type: "notified",
      item,
      payload: { slot, key, kind, ok, exitCode: null, reason, channel: c.id, ...(cursor !== undefined ? { cursor } : {}), ...(retryAt ? { retryAt } : {}) },
    });
    if (m) reports.push({ channel: c.id, kind, item, ok, reason });
  };
  const failures = (st?.failures ?? 0) + 1;
  const target = channelTarget(c, env);
  if ("problem" in target) {
    if (plan.messages.length) record(plan.messages[0]!, false, target.problem, failures);
    return { drafts, reports };
  }
  const deadline = AbortSignal.timeout(c.timeout);
  for (const m of plan.messages) {
    const r = await sendOne(c, target, notificationDocument(m, context), deadline);
    if (!r.ok) {
      record(m, false, r.reason, failures);
      return { drafts, reports };
    }
    record(m, true, "sent", 0);
  }
  // Every message went: the cursor moves past what was read, recorded only when it moved (a paused
  // loop ticking every minute appends nothing); a channel new to the loop starts at the head.
  const last = Math.max(st?.cursor ?? 0, ...drafts.map((d) => (d.type === "notified" ? (d.payload.cursor ?? 0) : 0)));
  if (plan.action === "start" || plan.cursor > last)
    drafts.push({
      type: "notified",
      item: null,
      payload: {
        slot: "",
        key: "",
        kind: plan.action === "start" ? "start" : "cursor",
        ok: true,
        exitCode: null,
        reason: plan.action === "start" ? "the channel starts at the log's head" : "read past",
        channel: c.id,
        cursor: plan.cursor,
      },
    });
  return { drafts, reports };
}
