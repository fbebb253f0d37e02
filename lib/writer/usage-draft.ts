// An attempt's usage as the next usage_recorded (docs/spend.md): read from its session folder
// (lib/supervisor/usage-reader.ts), priced at the operator's prices when the agent gave no dollars, and
// never lower than the figure recorded (lib/decisions/budget.ts nextUsage). Used by the observe phase and
// by the close path, for the figure of a session that ends.
import type { EventDraft } from "../log/events.ts";
import { currentAttemptOf, type ItemState } from "../log/projection.ts";
import type { ModelPrice } from "../definition/normalized.ts";
import { priced, usageSourceOf } from "../definition/usage-parsers.ts";
import { readSessionUsage, type UsageRead } from "../supervisor/usage-reader.ts";
import { conversationBase, nextUsage } from "../decisions/budget.ts";

/**
 * The usage_recorded the item's current attempt needs now: its figure read from the session folder
 * (at the session's end with `final`), priced at the operator's prices when the agent gave no
 * dollars, never lower than the one recorded; null when there is nothing new to record (or the
 * session never started).
 */
export function usageDraft(it: ItemState, o: { final: boolean; prices?: Record<string, ModelPrice> }): EventDraft | null {
  const s = it.session;
  const a = currentAttemptOf(it);
  if (!s || !a || a.n !== s.attempt || a.startedAt === null || a.usage?.final) return null;
  const reader = usageSourceOf(s.runner);
  let read: UsageRead;
  try {
    read = readSessionUsage({ dir: s.sessionDir, source: reader, final: o.final, base: conversationBase(it.attempts, a.n) });
  } catch (err) {
    // Never a failed step: the figure stays as recorded, and the note says why.
    read = { figure: null, note: `its usage could not be read: ${(err as Error).message}` };
  }
  const f = read.figure;
  // Behind a gateway the tokens are what the model API's answers said (docs/spend.md#the-gateway).
  const source = read.gateway ? "gateway" : reader;
  // The gateway's per-call prices are already the operator's: kept as they are, never re-priced.
  if (read.usdFrom === "prices" && f) {
    const next = nextUsage(a.usage, { tokens: f.tokens, microUsd: f.microUsd, usdFrom: "prices", note: read.note }, o.final);
    return next
      ? {
          type: "usage_recorded",
          item: it.id,
          payload: { attempt: a.n, final: o.final, source, tokens: next.tokens, microUsd: next.microUsd, usdFrom: next.usdFrom, note: next.note },
        }
      : null;
  }
  const agentUsd = f?.microUsd ?? null;
  // The model the attempt was launched with names its price; else the one the agent reported.
  const model = s.model ?? f?.model ?? null;
  const fromPrices = agentUsd === null && f?.tokens && model !== null && o.prices && Object.hasOwn(o.prices, model) ? priced(f.tokens, o.prices[model]) : null;
  const next = nextUsage(
    a.usage,
    {
      tokens: f?.tokens ?? null,
      microUsd: agentUsd ?? fromPrices,
      usdFrom: agentUsd !== null ? "agent" : fromPrices !== null ? "prices" : null,
      note: read.note,
    },
    o.final,
  );
  if (!next) return null;
  return {
    type: "usage_recorded",
    item: it.id,
    payload: { attempt: a.n, final: o.final, source, tokens: next.tokens, microUsd: next.microUsd, usdFrom: next.usdFrom, note: next.note },
  };
}
