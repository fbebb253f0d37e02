// The reducer's handlers of spend (docs/spend.md): an attempt's usage as last recorded, folded into
// the loop's totals and its hours, and a budget's stop. Part of the one definition of what the log
// means (reducer.ts spreads them into its table).
import { type BudgetStop, emptyLoopUsage, hourOf, totalTokens } from "./projection.ts";
import { currentAttempt, type Handlers, lowered, need, needStatus } from "./reducer-rules.ts";

export const SPEND_HANDLERS: Pick<Handlers, "usage_recorded" | "budget_stopped"> = {
  usage_recorded(p, e, fail) {
    const it = need(p, e, fail);
    const pl = e.payload;
    const a = currentAttempt(it, pl.attempt, e, fail);
    if (a.startedAt === null) fail("usage_order", `usage for attempt ${a.n} of "${it.id}", whose session never started`);
    const was = a.usage;
    if (was?.final) fail("usage_order", `usage for attempt ${a.n} of "${it.id}" after its final figure`);
    // A figure never goes down: nothing an agent prints can make the loop think it spent less.
    const before = { tokens: was?.tokens ? totalTokens(was.tokens) : null, microUsd: was?.microUsd ?? null };
    const after = { tokens: pl.tokens ? totalTokens(pl.tokens) : null, microUsd: pl.microUsd };
    if (lowered(before.tokens, after.tokens) || lowered(before.microUsd, after.microUsd))
      fail(
        "usage_decreased",
        `usage of attempt ${a.n} of "${it.id}" would go from ${before.tokens} tokens, ${before.microUsd} micro-USD to ${after.tokens}, ${after.microUsd}`,
      );
    a.usage = { source: pl.source, tokens: pl.tokens, microUsd: pl.microUsd, usdFrom: pl.usdFrom, final: pl.final, note: pl.note, at: e.ts };
    // The loop's sums move by what this attempt's figure moved by.
    const u = (p.loop.usage ??= emptyLoopUsage());
    const old = was?.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    if (pl.tokens) {
      u.tokens.input += pl.tokens.input - old.input;
      u.tokens.output += pl.tokens.output - old.output;
      u.tokens.cacheRead += pl.tokens.cacheRead - old.cacheRead;
      u.tokens.cacheWrite += pl.tokens.cacheWrite - old.cacheWrite;
      if (before.tokens === null) u.withTokens += 1;
    }
    if (after.microUsd !== null) {
      u.microUsd += after.microUsd - (before.microUsd ?? 0);
      if (before.microUsd === null) u.withUsd += 1;
    }
    const dTokens = (after.tokens ?? 0) - (before.tokens ?? 0);
    const dUsd = (after.microUsd ?? 0) - (before.microUsd ?? 0);
    if (dTokens > 0 || dUsd > 0) {
      // The hours of the last day only: the rolling day is counted in whole hours, from the event's own time.
      const hour = hourOf(e.ts);
      const oldest = hourOf(new Date(Date.parse(e.ts) - 23 * 3600_000).toISOString());
      const hours = u.hours.filter((h) => h.hour >= oldest);
      const last = hours[hours.length - 1];
      if (last?.hour === hour) {
        last.tokens += dTokens;
        last.microUsd += dUsd;
      } else hours.push({ hour, tokens: dTokens, microUsd: dUsd });
      u.hours = hours;
    }
  },
  budget_stopped(p, e, fail) {
    const pl = e.payload;
    const stop: BudgetStop = { attempt: pl.attempt, window: pl.window, unit: pl.unit, spent: pl.spent, limit: pl.limit, reason: pl.reason, at: e.ts };
    if (pl.scope === "item") {
      // Recorded with the item's settling (or, before a launch, instead of it).
      const it = need(p, e, fail);
      needStatus(it, ["pending", "ended", "needs_input"], e, fail);
      if (pl.attempt !== it.attempts.length) fail("attempt_mismatch", `budget_stopped names attempt ${pl.attempt}, "${it.id}" has ${it.attempts.length}`);
      it.budgetStop = stop;
      return;
    }
    if (e.item !== null) fail("item_required", "budget_stopped of the loop names no item");
    if (p.loop.state !== "running") fail("loop_state", `budget_stopped needs a running loop, it is ${p.loop.state}`);
    if (p.loop.current !== null) fail("one_in_flight", `budget_stopped of the loop while "${p.loop.current}" is in flight`);
    p.loop.state = "paused";
    p.loop.reason = `budget: ${pl.reason}`;
    p.loop.budgetStop = { ...stop, seq: e.seq };
    p.loop.cause = { kind: "budget", seq: e.seq };
  },
};
