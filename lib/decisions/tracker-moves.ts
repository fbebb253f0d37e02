// What a step owes a Linear or Jira tracker (docs/trackers.md#states, #outcomes), from the projection
// alone: each issue moved to the state loop.json's tracker.moveTo names when its attempt launches
// (`started`), when the item passes (`completed`) and after a reset (`reset`), and what became of
// the item said on its issue once it settled. Each is owed once per attempt (per reset): the log's
// tracker_issue_moved and tracker_outcome_posted say what was done. Pure.
import { parseRef } from "../definition/refs.ts";
import type { ItemState, Projection } from "../log/projection.ts";
import { isInFlight, isSettled, type SETTLED_OUTCOMES, type TrackerMove } from "../log/vocabulary.ts";

export type TrackerDue =
  | { kind: "move"; item: string; issue: number; move: TrackerMove; state: string; attempt: number }
  | { kind: "outcome"; item: string; issue: number; attempt: number; outcome: (typeof SETTLED_OUTCOMES)[number]; reason: string; pr: string | null };

/** The moves and outcome comments owed, item by item in the loop's order, each item's moves before its outcome. */
export function trackerDue(p: Projection, moveTo: Partial<Record<TrackerMove, string>>): TrackerDue[] {
  return p.order.flatMap((id) => dueOf(p.items[id]!, moveTo));
}

function dueOf(it: ItemState, moveTo: Partial<Record<TrackerMove, string>>): TrackerDue[] {
  if (!it.def.ref || it.status === "withdrawn") return [];
  const issue = parseRef(it.def.ref).number;
  const n = it.attempts.length;
  const moved = it.forge?.trackerMoved ?? {};
  const out: TrackerDue[] = [];
  const move = (m: TrackerMove, attempt: number) => {
    const state = moveTo[m];
    if (state !== undefined && moved[m] !== attempt) out.push({ kind: "move", item: it.id, issue, move: m, state, attempt });
  };
  // After a reset, before its epoch's first launch: once (attempt 0). A launch since makes it moot.
  if (it.reset && n === 0 && it.status === "pending") move("reset", 0);
  if (n > 0 && isInFlight(it.status)) move("started", n);
  if (n > 0 && it.status === "passed") move("completed", n);
  // An agent that gave up is said on the issue already (forge_gave_up_posted); a settle with no attempt (a closed issue) is not loop's to tell.
  if (n > 0 && isSettled(it.status) && it.settleCode !== "gave_up" && it.forge?.outcomePosted?.attempt !== n)
    out.push({ kind: "outcome", item: it.id, issue, attempt: n, outcome: it.status, reason: it.reason ?? "", pr: it.forge?.pr?.url ?? null });
  return out;
}
