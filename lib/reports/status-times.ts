// Which items' times `loop status` reports (./times.ts), and their events, read from the snapshot:
// the item in flight and the last few settled by default, every item reported with `--times`.
// Status reads the projection, never the whole log (its cost is the items', not the log's:
// bench/README.md): an item's events are read from its current epoch's first reservation, found by
// its key (the event id, `launch:<item>:e<epoch>:a1`, a unique index), to the log's head.
import type { Database } from "bun:sqlite";
import { emptyHistory, foldEvent } from "./history.ts";
import { type ItemTimes, itemTimes, TIMES_EVENT_TYPES } from "./times.ts";

/** How many settled items' times status reports without `--times`: the latest settled. */
export const RECENT_SETTLED = 3;

/** The items whose times are reported: every one given (`all`), else the one in flight and the last RECENT_SETTLED settled of them. */
function chosen(db: Database, ids: string[], current: string | null, all: boolean): string[] {
  if (all) return ids;
  const settled = db
    .query(
      `SELECT item FROM proj_items WHERE item IN (SELECT value FROM json_each(?)) AND json_extract(body, '$.settledAt') IS NOT NULL
       ORDER BY json_extract(body, '$.settledAt') DESC, item LIMIT ?`,
    )
    .all(JSON.stringify(ids), RECENT_SETTLED) as { item: string }[];
  const out = settled.map((r) => r.item);
  if (current !== null && ids.includes(current) && !out.includes(current)) out.push(current);
  return out;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Each reported item's times (null: not chosen, or no attempt in its current epoch); `now` ends what is still going. */
export function timesOf(db: Database, ids: string[], o: { current: string | null; all: boolean; now: number }): Map<string, ItemTimes | null> {
  const want = chosen(db, ids, o.current, o.all);
  const out = new Map<string, ItemTimes | null>();
  if (!want.length) return out;
  const first = db
    .query(
      `SELECT min(seq) AS seq FROM events WHERE id IN (
         SELECT json_extract(body, '$.attempts[0].key') FROM proj_ledgers WHERE item IN (SELECT value FROM json_each(?)))`,
    )
    .get(JSON.stringify(want)) as { seq: number | null } | null;
  if (first?.seq == null) return out;
  const rows = db
    .query(
      `SELECT seq, ts, type, actor, item, payload FROM events
       WHERE seq >= ? AND item IN (SELECT value FROM json_each(?)) AND type IN (SELECT value FROM json_each(?)) ORDER BY seq`,
    )
    .all(first.seq, JSON.stringify(want), JSON.stringify(TIMES_EVENT_TYPES)) as {
    seq: number;
    ts: string;
    type: string;
    actor: string;
    item: string;
    payload: string;
  }[];
  // Folded from the epoch's first reservation: the fold's epoch counts from there, and the attempts of the current epoch are the fold's last.
  const h = emptyHistory();
  for (const r of rows) foldEvent(h, { ...r, payload: parse(r.payload) });
  for (const id of want) out.set(id, itemTimes(h.items.get(id), o.now));
  return out;
}
