// What every handler of the reducer checks of an event: it names a known item, in a status the
// event is allowed from, about its current attempt. Throwing through `fail` makes the event illegal
// (IllegalEventError, with the rule broken).
import type { EventType, StoredEvent, StoredEventOf } from "./events.ts";
import type { ItemStatus } from "./vocabulary.ts";
import { type AttemptRecord, currentAttemptOf, type ItemState, itemOf, type Projection } from "./projection.ts";

export type Fail = (rule: string, detail: string) => never;
/** One handler per event type, each given that type's event: an event type without a handler does not compile. */
export type Handlers = { [T in EventType]: (p: Projection, e: StoredEventOf<T>, fail: Fail) => void };

/**
 * The item's view of its current attempt: the landing record and the forge landing wait it shows
 * (status, state.json, attention's index) are its current attempt's, never an earlier one's. The
 * one place they are derived: reduceInto applies it after every event that names the item, so a new
 * attempt starts with neither, and a retried item lands again.
 */

export function need(p: Projection, e: StoredEvent, fail: (r: string, d: string) => never): ItemState {
  if (!e.item) return fail("item_required", `${e.type} must name an item`);
  const it = itemOf(p, e.item);
  if (!it) return fail("unknown_item", `${e.type} names unknown item "${e.item}"`);
  return it;
}

export function needStatus(it: ItemState, allowed: readonly ItemStatus[], e: StoredEvent, fail: (r: string, d: string) => never) {
  if (!allowed.includes(it.status)) fail("item_status", `${e.type} needs item "${it.id}" in ${allowed.join("|")}, it is ${it.status}`);
}

export function currentAttempt(it: ItemState, n: number, e: StoredEvent, fail: (r: string, d: string) => never): AttemptRecord {
  const a = currentAttemptOf(it);
  if (!a || a.n !== n) return fail("attempt_mismatch", `${e.type} names attempt ${n}, current is ${a?.n ?? "none"}`);
  return a;
}

/** b lowered to a: a known figure that became unknown or smaller. */
export function lowered(b: number | null, a: number | null): boolean {
  return b !== null && (a === null || a < b);
}
