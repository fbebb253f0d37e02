// Spend and budgets as decisions (docs/spend.md): what an item and the loop have spent, whether a
// budget is reached before a launch or while an attempt runs, what the next recorded figure of an
// attempt is (never lower than the last), and what a resumed conversation already cost. Pure: plain
// data in, plain data out; lib/step/spend.ts and the phases carry the effects out.
import type { Limit, LoopBudget } from "../definition/normalized.ts";
import type { TokenCounts } from "../log/events.ts";
import { type AttemptRecord, type AttemptUsage, hourOf, type ItemState, type LoopUsage, totalTokens } from "../log/projection.ts";

/** What was spent: tokens and micro-dollars, each null when nothing of it is known. */
interface Spend {
  tokens: number | null;
  microUsd: number | null;
}

/** The sum of known figures: null when no attempt reported that unit (unknown, never zero). */
export function attemptsSpend(attempts: readonly Pick<AttemptRecord, "usage">[]): Spend {
  let tokens: number | null = null;
  let microUsd: number | null = null;
  for (const a of attempts) {
    const u = a.usage;
    if (!u) continue;
    if (u.tokens) tokens = (tokens ?? 0) + totalTokens(u.tokens);
    if (u.microUsd !== null) microUsd = (microUsd ?? 0) + u.microUsd;
  }
  return { tokens, microUsd };
}

/** The loop's spend over every attempt ever made, and over the rolling day ending at `now` (whole hours). */
export function loopSpend(u: LoopUsage | undefined, now: number): { total: Spend; daily: Spend } {
  if (!u) return { total: { tokens: null, microUsd: null }, daily: { tokens: null, microUsd: null } };
  const total = { tokens: u.withTokens > 0 ? totalTokens(u.tokens) : null, microUsd: u.withUsd > 0 ? u.microUsd : null };
  const since = hourOf(new Date(now - 23 * 3600_000).toISOString());
  let tokens = 0;
  let microUsd = 0;
  for (const h of u.hours)
    if (h.hour >= since) {
      tokens += h.tokens;
      microUsd += h.microUsd;
    }
  return { total, daily: { tokens: total.tokens === null ? null : tokens, microUsd: total.microUsd === null ? null : microUsd } };
}

type Unit = "tokens" | "usd";

/** A limit reached: the unit, what was spent and the limit (micro-dollars for usd). */
interface Reached {
  unit: Unit;
  spent: number;
  limit: number;
}

/** The first unit of `limit` that `spend` has reached (spent ≥ limit); an unknown spend reaches nothing. */
export function reached(spend: Spend, limit: Limit | undefined): Reached | null {
  if (!limit) return null;
  if (limit.tokens !== undefined && spend.tokens !== null && spend.tokens >= limit.tokens) return { unit: "tokens", spent: spend.tokens, limit: limit.tokens };
  if (limit.microUsd !== undefined && spend.microUsd !== null && spend.microUsd >= limit.microUsd)
    return { unit: "usd", spent: spend.microUsd, limit: limit.microUsd };
  return null;
}

/** A figure for people: "12,345 tokens" or "$1.234567" (trailing zeros past the cents dropped). */
export function amount(unit: Unit, n: number): string {
  if (unit === "tokens") return `${n.toLocaleString("en-US")} tokens`;
  return `$${usdText(n)}`;
}

/** Micro-dollars as dollars: at least two decimals, at most six. */
export function usdText(micro: number): string {
  const s = (micro / 1e6).toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = s.split(".");
  return `${whole}.${frac.padEnd(2, "0")}`;
}

/** A budget decision: nothing to do, the item's budget (it settles failed), or the loop's (it pauses). */
export type BudgetVerdict = {
  scope: "item" | "loop";
  window: "total" | "daily";
  unit: Unit;
  spent: number;
  limit: number;
  /** For the log and for people: the figures and how to raise the budget. */
  reason: string;
} | null;

function itemVerdict(it: Pick<ItemState, "id" | "attempts" | "def">): BudgetVerdict {
  const r = reached(attemptsSpend(it.attempts), it.def.budget);
  if (!r) return null;
  return {
    scope: "item",
    window: "total",
    ...r,
    reason: `${it.id} spent ${amount(r.unit, r.spent)} of its budget of ${amount(r.unit, r.limit)} over its attempts (budget.${r.unit}); to go on, raise items[].budget (or defaults.budget) in loop.json, then \`loop ctl retry --work-item ${it.id}\``,
  };
}

function loopVerdict(u: LoopUsage | undefined, budget: LoopBudget | undefined, now: number): BudgetVerdict {
  if (!budget) return null;
  const spend = loopSpend(u, now);
  const total = reached(spend.total, budget);
  if (total)
    return {
      scope: "loop",
      window: "total",
      ...total,
      reason: `the loop spent ${amount(total.unit, total.spent)} of its budget of ${amount(total.unit, total.limit)} (budget.${total.unit} in loop.json); no attempt starts until it is raised: raise it, then \`loop ctl resume\``,
    };
  const daily = reached(spend.daily, budget.daily);
  if (daily)
    return {
      scope: "loop",
      window: "daily",
      ...daily,
      reason: `the loop spent ${amount(daily.unit, daily.spent)} in the last 24 hours, its daily budget is ${amount(daily.unit, daily.limit)} (budget.daily.${daily.unit} in loop.json); no attempt starts until it is raised or the day's spend falls below it: raise it (or wait), then \`loop ctl resume\``,
    };
  return null;
}

/**
 * Before a launch: the item's budget already spent (it settles failed, no attempt starts); the
 * loop's budget reached; or what is left of the loop's budget cannot cover what the item may still
 * spend by its own budget (the loop pauses, no attempt starts).
 */
export function beforeLaunch(o: {
  item: Pick<ItemState, "id" | "attempts" | "def">;
  usage: LoopUsage | undefined;
  budget: LoopBudget | undefined;
  now: number;
}): BudgetVerdict {
  const own = itemVerdict(o.item);
  if (own) return own;
  const loop = loopVerdict(o.usage, o.budget, o.now);
  if (loop || !o.budget || !o.item.def.budget) return loop;
  // Never start an attempt the loop's remaining budget cannot cover by the item's own limit.
  const spent = attemptsSpend(o.item.attempts);
  const spend = loopSpend(o.usage, o.now);
  for (const [window, limit, s] of [
    ["total", o.budget, spend.total],
    ["daily", o.budget.daily, spend.daily],
  ] as const) {
    if (!limit) continue;
    for (const unit of ["tokens", "usd"] as const) {
      const key = unit === "tokens" ? "tokens" : "microUsd";
      const loopLimit = limit[key];
      const itemLimit = o.item.def.budget[key];
      if (loopLimit === undefined || itemLimit === undefined) continue;
      const left = loopLimit - (s[key] ?? 0);
      const need = itemLimit - (spent[key] ?? 0);
      if (left < need) {
        const where = window === "daily" ? `budget.daily.${unit}` : `budget.${unit}`;
        return {
          scope: "loop",
          window,
          unit,
          spent: s[key] ?? 0,
          limit: loopLimit,
          reason: `the loop has ${amount(unit, Math.max(0, left))} of its ${window === "daily" ? "daily " : ""}budget left (${where} in loop.json), less than ${o.item.id} may spend by its own budget (${amount(unit, need)} more); raise the loop's budget (or lower the item's), then \`loop ctl resume\``,
        };
      }
    }
  }
  return null;
}

/** While an attempt runs (its figure so far recorded): the item's budget reached, or the loop's. */
export function whileRunning(o: {
  item: Pick<ItemState, "id" | "attempts" | "def">;
  usage: LoopUsage | undefined;
  budget: LoopBudget | undefined;
  now: number;
}): BudgetVerdict {
  return itemVerdict(o.item) ?? loopVerdict(o.usage, o.budget, o.now);
}

/**
 * What an agent CLI with a cap of its own (claude's --max-budget-usd) may spend in the next attempt:
 * the least of what is left of the item's, the loop's and the day's dollar budgets; null when none is
 * set. Known spend only: an unknown one is taken as none (the loop's own check still stops it).
 */
export function remainingMicroUsd(o: {
  item: Pick<ItemState, "attempts" | "def">;
  usage: LoopUsage | undefined;
  budget: LoopBudget | undefined;
  now: number;
}): number | null {
  const spend = loopSpend(o.usage, o.now);
  const left: number[] = [];
  if (o.item.def.budget?.microUsd !== undefined) left.push(o.item.def.budget.microUsd - (attemptsSpend(o.item.attempts).microUsd ?? 0));
  if (o.budget?.microUsd !== undefined) left.push(o.budget.microUsd - (spend.total.microUsd ?? 0));
  if (o.budget?.daily?.microUsd !== undefined) left.push(o.budget.daily.microUsd - (spend.daily.microUsd ?? 0));
  return left.length ? Math.max(0, Math.min(...left)) : null;
}

/**
 * The tokens a session behind its gateway may still use (the gateway refuses the model request
 * after the one that reaches it): the least of what is left of the item's, the loop's and the day's
 * token budgets; null when none is set.
 */
export function remainingTokens(o: {
  item: Pick<ItemState, "attempts" | "def">;
  usage: LoopUsage | undefined;
  budget: LoopBudget | undefined;
  now: number;
}): number | null {
  const spend = loopSpend(o.usage, o.now);
  const left: number[] = [];
  if (o.item.def.budget?.tokens !== undefined) left.push(o.item.def.budget.tokens - (attemptsSpend(o.item.attempts).tokens ?? 0));
  if (o.budget?.tokens !== undefined) left.push(o.budget.tokens - (spend.total.tokens ?? 0));
  if (o.budget?.daily?.tokens !== undefined) left.push(o.budget.daily.tokens - (spend.daily.tokens ?? 0));
  return left.length ? Math.max(0, Math.min(...left)) : null;
}

/** What a figure is made of, as an attempt's next usage_recorded would say it. */
interface UsageReading {
  tokens: TokenCounts | null;
  microUsd: number | null;
  usdFrom: "agent" | "prices" | null;
  note: string | null;
}

/**
 * The figure to record next: what was read, but never lower than what is recorded (a figure that
 * would go down keeps the recorded one, so the log only ever holds figures that grow); null when it
 * says nothing new (a running figure is recorded only when it changed).
 */
export function nextUsage(recorded: AttemptUsage | undefined, read: UsageReading, final: boolean): UsageReading | null {
  let tokens = read.tokens;
  if (recorded?.tokens && (tokens === null || totalTokens(tokens) < totalTokens(recorded.tokens))) tokens = recorded.tokens;
  let microUsd = read.microUsd;
  let usdFrom = read.usdFrom;
  if (recorded?.microUsd !== null && recorded?.microUsd !== undefined && (microUsd === null || microUsd < recorded.microUsd)) {
    microUsd = recorded.microUsd;
    usdFrom = recorded.usdFrom;
  }
  const next = { tokens, microUsd, usdFrom, note: read.note };
  if (final) return recorded || tokens !== null || microUsd !== null || read.note !== null ? next : null;
  // A note alone is recorded too: what is unknown while the session runs is said (codex inside its first turn).
  if (!recorded) return tokens !== null || microUsd !== null || read.note !== null ? next : null;
  // Field by field: the recorded figure comes back from the store with its keys in another order.
  const same = sameTokens(recorded.tokens, tokens) && recorded.microUsd === microUsd && recorded.note === read.note;
  return same ? null : next;
}

function sameTokens(a: TokenCounts | null | undefined, b: TokenCounts | null): boolean {
  if (!a || !b) return (a ?? null) === b;
  return a.input === b.input && a.output === b.output && a.cacheRead === b.cacheRead && a.cacheWrite === b.cacheWrite;
}

/**
 * What the loop recorded for the conversation an attempt resumed, before it: the attempts before it
 * back to the one that began the conversation (each attempt after that one resumed it). Null for an
 * attempt that did not resume one.
 */
export function conversationBase(
  attempts: readonly Pick<AttemptRecord, "n" | "usage" | "resumed">[],
  n: number,
): { tokens: TokenCounts | null; microUsd: number | null } | null {
  const i = attempts.findIndex((a) => a.n === n);
  if (i < 1 || !attempts[i]!.resumed) return null;
  let tokens: TokenCounts | null = null;
  let microUsd: number | null = null;
  for (let k = i - 1; k >= 0; k--) {
    const u = attempts[k]!.usage;
    if (u?.tokens) {
      const t: TokenCounts = tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      tokens = {
        input: t.input + u.tokens.input,
        output: t.output + u.tokens.output,
        cacheRead: t.cacheRead + u.tokens.cacheRead,
        cacheWrite: t.cacheWrite + u.tokens.cacheWrite,
      };
    }
    if (u?.microUsd !== null && u?.microUsd !== undefined) microUsd = (microUsd ?? 0) + u.microUsd;
    if (!attempts[k]!.resumed) break;
  }
  return { tokens, microUsd };
}
