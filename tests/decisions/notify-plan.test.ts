// What each notification channel is sent in a step (lib/decisions/notify-plan.ts,
// docs/operations.md#notification-channels), with plain data: the filter, the cursor, the start at the
// head, the backoff, the page of outcomes, and the budget's 80% warning.
import { describe, expect, test } from "bun:test";
import { budgetWarnings, type NotifyCondition, type NotifyOutcome, planChannels, retryDelayMs } from "../../lib/decisions/notify-plan.ts";
import { emptyLoopUsage } from "../../lib/log/projection.ts";

const NOW = Date.parse("2026-12-07T12:00:00Z");
const cond = (kind: NotifyCondition["kind"], key = `${kind}:1`): NotifyCondition => ({ kind, slot: kind, key, item: null, reason: kind, fix: [] });
const out = (seq: number, event: NotifyOutcome["event"], item = `i${seq}`): NotifyOutcome => ({ seq, event, item, code: null, reason: event });
const ok = { cursor: 10, failures: 0, retryAt: null, lastError: null };

function plan(o: Partial<Parameters<typeof planChannels>[0]> & { events?: string[] }) {
  return planChannels({
    channels: [{ id: "c", events: (o.events ?? ["attention", "passed", "failed", "landed", "budget_80", "budget_100", "review"]) as any }],
    state: { c: ok },
    notified: {},
    conditions: [],
    outcomes: [],
    readTo: 10,
    head: 20,
    now: NOW,
    ...o,
  })[0]!;
}
const sent = (p: ReturnType<typeof plan>) =>
  p.action === "wait" ? p.action : p.messages.map((m) => (m.of === "condition" ? `${m.event}:${m.condition.kind}` : `${m.event}:${m.outcome.seq}`));

describe("planChannels", () => {
  test.each([
    [
      "every event: outcomes in log order, then what is open",
      {},
      [out(11, "landed"), out(12, "passed"), out(13, "failed")],
      [cond("failed")],
      ["landed:11", "passed:12", "failed:13", "attention:failed"],
    ],
    ["failures only", { events: ["failed"] }, [out(11, "passed"), out(12, "failed")], [cond("question")], ["failed:12"]],
    ["a budget reached is attention and budget_100", { events: ["budget_100"] }, [], [cond("budget"), cond("question")], ["budget_100:budget"]],
    ["a budget reached, for a channel of attention", { events: ["attention"] }, [], [cond("budget")], ["attention:budget"]],
    ["the 80% warning is its own event", { events: ["attention"] }, [], [cond("budget_80")], []],
    ["outcomes at or before the cursor are not sent again", {}, [out(9, "passed"), out(10, "failed"), out(11, "passed")], [], ["passed:11"]],
  ] as const)("%s", (_name, o, outcomes, conditions, expected) => {
    expect(sent(plan({ ...o, outcomes, conditions, readTo: 13 } as any))).toEqual(expected as any);
  });

  test("a condition already sent to this channel (its slot holds the key) is not sent again; a new key is", () => {
    expect(sent(plan({ conditions: [cond("question", "q:1")], notified: { "c|question": "q:1" } }))).toEqual([]);
    expect(sent(plan({ conditions: [cond("question", "q:2")], notified: { "c|question": "q:1", question: "q:2" } }))).toEqual(["attention:question"]);
  });

  test("a channel new to the loop starts at the head: the open conditions, none of the history", () => {
    const p = plan({ state: {}, outcomes: [out(11, "passed")], conditions: [cond("environment")] });
    expect(p).toMatchObject({ action: "start", cursor: 20 });
    expect(sent(p)).toEqual(["attention:environment"]);
  });

  test("the cursor moves to the last event read, or to the last outcome sent when a page is full", () => {
    expect(plan({ outcomes: [out(12, "passed")], readTo: 15 })).toMatchObject({ action: "send", cursor: 15 });
    expect(plan({ outcomes: [], readTo: 10 })).toMatchObject({ cursor: 10 });
    const many = Array.from({ length: 14 }, (_, i) => out(11 + i, "passed"));
    const p = plan({ outcomes: many, readTo: 24 });
    expect(p.action === "send" && p.messages.length).toBe(10);
    expect(p).toMatchObject({ cursor: 20 });
  });

  test("a channel in its backoff waits; once the time is past it is sent again", () => {
    const failing = { cursor: 10, failures: 2, retryAt: new Date(NOW + 1000).toISOString(), lastError: "answered HTTP 500" };
    expect(plan({ state: { c: failing }, conditions: [cond("question")] })).toEqual({ id: "c", action: "wait", until: failing.retryAt });
    expect(sent(plan({ state: { c: { ...failing, retryAt: new Date(NOW - 1).toISOString() } }, conditions: [cond("question")] }))).toEqual([
      "attention:question",
    ]);
  });

  test("the backoff: a minute, doubled each failure, at most an hour", () => {
    expect([1, 2, 3, 6, 7, 20].map(retryDelayMs)).toEqual([60_000, 120_000, 240_000, 1_920_000, 3_600_000, 3_600_000]);
  });
});

describe("budgetWarnings", () => {
  const usage = (tokens: number, microUsd: number) => ({
    ...emptyLoopUsage(),
    sessions: 1,
    withTokens: 1,
    withUsd: 1,
    tokens: { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 },
    microUsd,
    hours: [{ hour: "2026-12-07T11", tokens, microUsd }],
  });
  test.each([
    ["below 80%", usage(790, 0), { tokens: 1000 }, []],
    ["at 80%", usage(800, 0), { tokens: 1000 }, ["budget_80:total:1000:-"]],
    ["reached: that is budget_100's, not a warning", usage(1000, 0), { tokens: 1000 }, []],
    ["dollars", usage(0, 4_500_000), { microUsd: 5_000_000 }, ["budget_80:total:-:5000000"]],
    ["the rolling day, keyed by the day", usage(90, 0), { daily: { tokens: 100 } }, ["budget_80:daily:2026-12-07:100:-"]],
    ["no budget", usage(10 ** 9, 0), undefined, []],
  ] as const)("%s", (_name, u, budget, keys) => {
    expect(budgetWarnings(u, budget as any, NOW).map((w) => w.key)).toEqual(keys as any);
  });
  test("says how much of which budget", () => {
    expect(budgetWarnings(usage(850, 0), { tokens: 1000 }, NOW)[0]!.reason).toBe("the loop has spent 850 tokens of its budget of 1,000 tokens (85%)");
  });
});
