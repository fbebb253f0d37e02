// The reducer's part of spend (docs/spend.md, docs/events.md): usage_recorded folded onto its
// attempt and summed for the loop (resets give nothing back), figures that never go down, nothing
// after a final figure; budget_stopped on an item and on the loop, and what clears it.
import { describe, expect, test } from "bun:test";
import type { EventDraft, Payload } from "../../lib/log/events.ts";
import { apply, fold } from "../../lib/log/reducer.ts";
import { IllegalEventError } from "../../lib/shared/errors.ts";
import type { Projection } from "../../lib/log/projection.ts";
import { itemRow } from "../../lib/log/rows.ts";
import { fullUsage, itemUsage, loopUsage, stateDocument } from "../../lib/log/documents.ts";
import { definition, ended, itemDef, launch, LogBuilder, loopStarted, resetDone, settled, started } from "../helpers/events.ts";

function usage(item: string, attempt: number, o: Partial<Payload<"usage_recorded">> = {}, ts?: string): EventDraft {
  return {
    type: "usage_recorded",
    item,
    ...(ts ? { ts } : {}),
    payload: {
      attempt,
      final: false,
      source: "usage_file",
      tokens: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 },
      microUsd: 1000,
      usdFrom: "agent",
      note: null,
      ...o,
    },
  };
}

function running(): LogBuilder {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a"), itemDef("b")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
  return b;
}

function rule(b: LogBuilder, d: EventDraft): string {
  try {
    apply(fold(b.events), b.next(d));
  } catch (err) {
    if (err instanceof IllegalEventError) return err.rule;
    throw err;
  }
  return "accepted";
}

describe("usage_recorded", () => {
  test("folds onto the attempt and into the loop's sums; a later figure replaces the attempt's and moves the sums by the difference", () => {
    const b = running();
    b.push(usage("a", 1), usage("a", 1, { tokens: { input: 300, output: 50, cacheRead: 1000, cacheWrite: 10 }, microUsd: 5000, final: true }));
    const p = fold(b.events);
    const a = p.items.a!.attempts[0]!;
    expect(a.usage).toMatchObject({ tokens: { input: 300, output: 50, cacheRead: 1000, cacheWrite: 10 }, microUsd: 5000, final: true, source: "usage_file" });
    expect(p.loop.usage).toMatchObject({
      sessions: 1,
      withTokens: 1,
      withUsd: 1,
      tokens: { input: 300, output: 50, cacheRead: 1000, cacheWrite: 10 },
      microUsd: 5000,
    });
    expect(loopUsage(p.loop)).toMatchObject({ tokens: 1360, usd: 0.005, attempts: 1, unknown: { tokens: 0, usd: 0 } });
    expect(itemUsage(p.items.a!)).toMatchObject({ tokens: 1360, usd: 0.005, attempts: 1, attempt: { n: 1, tokens: 1360, final: true } });
  });

  test("a figure never goes down: fewer tokens, fewer dollars, or known becoming unknown is refused (usage_decreased)", () => {
    const b = running();
    b.push(usage("a", 1));
    expect(rule(b, usage("a", 1, { tokens: { input: 10, output: 20, cacheRead: 0, cacheWrite: 0 } }))).toBe("usage_decreased");
    expect(rule(b, usage("a", 1, { microUsd: 999 }))).toBe("usage_decreased");
    expect(rule(b, usage("a", 1, { tokens: null }))).toBe("usage_decreased");
    expect(rule(b, usage("a", 1, { microUsd: null }))).toBe("usage_decreased");
    expect(rule(b, usage("a", 1, { microUsd: 1000, note: "3 lines could not be read" }))).toBe("accepted");
  });

  test("nothing after the final figure; only the current attempt, and only once its session started", () => {
    const b = running();
    b.push(usage("a", 1, { final: true }));
    expect(rule(b, usage("a", 1, { microUsd: 2000 }))).toBe("usage_order");
    const c = new LogBuilder();
    c.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }));
    expect(rule(c, usage("a", 1))).toBe("usage_order");
    expect(rule(c, usage("a", 2))).toBe("attempt_mismatch");
  });

  test("unknown stays unknown: an attempt that reported nothing counts in the unknowns, never as zero", () => {
    const b = running();
    b.push(usage("a", 1, { tokens: null, microUsd: 4000, final: true }));
    const p = fold(b.events);
    expect(loopUsage(p.loop)).toMatchObject({ tokens: null, usd: 0.004, unknown: { tokens: 1, usd: 0 } });
    expect(fullUsage(itemUsage(p.items.a!))).toMatchObject({ tokens: null, input: null, usd: 0.004, unknown: { tokens: 1, usd: 0 } });
    expect(itemUsage(p.items.b!)).toBeNull();
  });

  test("a reset gives the item a fresh start but the loop keeps what was spent", () => {
    const b = running();
    b.push(usage("a", 1, { final: true }), ended({ item: "a", attempt: 1 }), settled({ item: "a", attempt: 1, outcome: "failed" }), resetDone("a"));
    const p = fold(b.events);
    expect(p.items.a!.attempts).toEqual([]);
    expect(loopUsage(p.loop)).toMatchObject({ tokens: 120, usd: 0.001, attempts: 1 });
  });

  test("the rolling day keeps the spend of the last 24 hours, hour by hour, from the events' own times", () => {
    const b = running();
    b.push(usage("a", 1, {}, "2025-01-01T00:10:00.000Z"));
    b.push(usage("a", 1, { tokens: { input: 200, output: 20, cacheRead: 0, cacheWrite: 0 }, microUsd: 1500 }, "2025-01-01T00:40:00.000Z"));
    b.push(usage("a", 1, { tokens: { input: 300, output: 20, cacheRead: 0, cacheWrite: 0 }, microUsd: 1600 }, "2025-01-02T02:00:00.000Z"));
    const p = fold(b.events);
    // The hour of 2025-01-01T00 is more than 23 hours before 2025-01-02T02: only the last hour stays.
    expect(p.loop.usage!.hours).toEqual([{ hour: "2025-01-02T02", tokens: 100, microUsd: 100 }]);
  });

  test("the fold and the projection rows agree on an item's usage and budget stop", () => {
    const b = running();
    b.push(usage("a", 1, { final: true }), ended({ item: "a", attempt: 1 }));
    b.push({
      type: "budget_stopped",
      item: "a",
      payload: { attempt: 1, scope: "item", window: "total", unit: "tokens", spent: 120, limit: 100, reason: "a spent 120 tokens of 100" },
    });
    b.push(settled({ item: "a", attempt: 1, outcome: "failed", reason: "budget_exhausted: a spent 120 tokens of 100", code: "budget_exhausted" }));
    const p = fold(b.events);
    expect(JSON.parse(itemRow(p.items.a!, "proj_items")!).budgetStop).toMatchObject({ attempt: 1, unit: "tokens", spent: 120, limit: 100 });
    expect(JSON.parse(itemRow(p.items.a!, "proj_ledgers")!).attempts[0].usage).toMatchObject({ final: true, microUsd: 1000 });
    expect(stateDocument(p).items[0]!.budget).toMatchObject({ tokens: null, stopped: { unit: "tokens", spent: 120, limit: 100 } });
  });
});

describe("budget_stopped", () => {
  test("of the loop: pauses it with the reason and remembers the stop until resumed", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted);
    b.push({
      type: "budget_stopped",
      item: null,
      payload: {
        attempt: 0,
        scope: "loop",
        window: "total",
        unit: "usd",
        spent: 10_000_000,
        limit: 10_000_000,
        reason: "the loop spent $10.00 of its budget of $10.00",
      },
    });
    let p: Projection = fold(b.events);
    expect(p.loop.state).toBe("paused");
    expect(p.loop.reason).toBe("budget: the loop spent $10.00 of its budget of $10.00");
    expect(p.loop.budgetStop).toMatchObject({ window: "total", unit: "usd", seq: 4 });
    b.push({ type: "loop_resumed", payload: {} });
    p = fold(b.events);
    expect(p.loop.state).toBe("running");
    expect(p.loop.budgetStop).toBeNull();
  });

  test("of the loop: needs a running loop with nothing in flight, and names no item", () => {
    const stop = (item: string | null): EventDraft => ({
      type: "budget_stopped",
      item,
      payload: { attempt: 0, scope: "loop", window: "daily", unit: "tokens", spent: 5, limit: 5, reason: "r" },
    });
    expect(rule(running(), stop(null))).toBe("one_in_flight");
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted);
    expect(rule(b, stop("a"))).toBe("item_required");
    b.push({ type: "loop_paused", payload: { reason: "by alice" } });
    expect(rule(b, stop(null))).toBe("loop_state");
  });

  test("of an item: needs the item pending or its attempt ended, and its last attempt", () => {
    const stop = (attempt: number): EventDraft => ({
      type: "budget_stopped",
      item: "a",
      payload: { attempt, scope: "item", window: "total", unit: "tokens", spent: 5, limit: 5, reason: "r" },
    });
    expect(rule(running(), stop(1))).toBe("item_status");
    const b = running();
    b.push(ended({ item: "a", attempt: 1 }));
    expect(rule(b, stop(2))).toBe("attempt_mismatch");
    expect(rule(b, stop(1))).toBe("accepted");
  });
});
