// The store's tables and indexes, a new store's first rows, and the migration that rebuilds the
// projection tables from the log (they are a cache of the fold: docs/state.md).
import type { Database } from "bun:sqlite";
import { EVENT_COLUMNS, type EventRow } from "./integrity.ts";
import type { StoredEvent } from "./events.ts";
import { emptyProjection } from "./projection.ts";
import { reduceInto } from "./reducer.ts";
import { ITEM_TABLES, loopRow, writeWholeProjection } from "./rows.ts";
import { SCHEMA_VERSION } from "./snapshot.ts";

/**
 * SQLite's own indexes over the row bodies, so a step finds the few items it must look at (the
 * sessions left open, the items needing a person) without reading every item. Derived by SQLite
 * from the bodies on every write: they cannot disagree with the rows.
 */
export const STATUS_OF = "json_extract(body, '$.status')";
export const LANDING_OF = "json_extract(body, '$.landing.outcome')";
export const OPEN_SESSION = "json_extract(body, '$.closed') IS NULL";
export const BUDGET_STOPPED = "json_extract(body, '$.budgetStop') IS NOT NULL";
const INDEXES = `
CREATE INDEX IF NOT EXISTS proj_items_status ON proj_items(${STATUS_OF});
CREATE INDEX IF NOT EXISTS proj_items_budget ON proj_items(item) WHERE ${BUDGET_STOPPED};
CREATE INDEX IF NOT EXISTS proj_items_landing ON proj_items(${LANDING_OF}) WHERE ${LANDING_OF} IS NOT NULL;
CREATE INDEX IF NOT EXISTS proj_sessions_open ON proj_sessions(item) WHERE ${OPEN_SESSION};
`;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, ts TEXT NOT NULL, type TEXT NOT NULL,
  actor TEXT NOT NULL, item TEXT, payload TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TABLE IF NOT EXISTS proj_loop(id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL,
  hash TEXT NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL, state_sha TEXT NOT NULL);
${ITEM_TABLES.map((t) => `CREATE TABLE IF NOT EXISTS ${t}(item TEXT PRIMARY KEY, body TEXT NOT NULL);`).join("\n")}
CREATE TABLE IF NOT EXISTS lease(id INTEGER PRIMARY KEY CHECK (id = 1), owner TEXT NOT NULL,
  pid INTEGER NOT NULL, host TEXT NOT NULL, started TEXT NOT NULL, expires TEXT NOT NULL);
${INDEXES}
`;

/** The tables of a new store, its schema version and the empty projection's loop row. */
export function createTables(db: Database): void {
  db.run(SCHEMA);
  db.run("INSERT INTO meta(key, value) VALUES ('schema', ?)", [String(SCHEMA_VERSION)]);
  const row = loopRow(emptyProjection());
  db.run("INSERT INTO proj_loop(id, seq, hash, state, body, state_sha) VALUES (1, ?, ?, ?, ?, '')", [row.seq, row.hash, row.state, row.body]);
}

/** Fold the whole log again and rewrite every projection row and index, at SCHEMA_VERSION (inside the caller's transaction). */
export function rebuildTables(db: Database, toEvent: (row: EventRow) => StoredEvent): void {
  const p = emptyProjection();
  for (const r of db.query(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY seq`).iterate() as IterableIterator<EventRow>) reduceInto(p, toEvent(r));
  db.run(INDEXES);
  writeWholeProjection(db, p);
  db.run("UPDATE meta SET value = ? WHERE key = 'schema'", [String(SCHEMA_VERSION)]);
}
