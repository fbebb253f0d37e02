// Real stores for tests: a realistic history appended through Store.append and materialized.
import { Database } from "bun:sqlite";
import type { EventDraft } from "../../lib/log/events.ts";
import { materialize } from "../../lib/log/materialize.ts";
import { Store } from "../../lib/log/store.ts";
import { dbPath } from "../../lib/log/snapshot.ts";
import type { EventRow } from "../../lib/log/integrity.ts";
import { control, definition, drained, failingAttempt, itemDef, loopStarted, passingAttempt, reset, settled } from "./events.ts";

/**
 * The realistic history: a definition with three items (b depends on a), a passes on its first
 * attempt, b fails (maxAttempts 1), is reset and passes in its new epoch, c is skipped by an
 * operator, and the loop drains (unless drain is false). Returns the drafts in order (seq = index + 2).
 */
export function realisticDrafts(opts: { drain?: boolean } = {}): EventDraft[] {
  const drafts: EventDraft[] = [
    definition(1, [itemDef("a"), itemDef("b", { dependsOn: ["a"], maxAttempts: 1, ref: "github:acme/api#7" }), itemDef("c")]),
    loopStarted,
    ...passingAttempt({ item: "a" }),
    ...failingAttempt({ item: "b", attempt: 1, last: true }),
    reset("b"),
    ...passingAttempt({ item: "b", attempt: 1, epoch: 1 }),
    control("c", "skip", "not needed any more", "Zoë"),
    settled({ item: "c", attempt: 0, outcome: "skipped", reason: "skipped by Zoë" }),
  ];
  if (opts.drain !== false) drafts.push(drained("Succeeded", { passed: 2, skipped: 1 }));
  return drafts;
}

/** Create a store under stateRoot, append the drafts one event per append, materialize, close. */
export function buildStore(stateRoot: string, drafts: EventDraft[], opts: { keepOpen?: boolean } = {}): Store {
  const store = Store.open(stateRoot, { create: true, actor: "tester" });
  for (const d of drafts) store.append([d]);
  materialize(stateRoot, store);
  if (!opts.keepOpen) store.close();
  return store;
}

export function readRows(stateRoot: string): EventRow[] {
  const db = new Database(dbPath(stateRoot), { readonly: true });
  try {
    return db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as EventRow[];
  } finally {
    db.close();
  }
}

/**
 * Run fn on a raw read-write connection with the append-only triggers dropped, then recreate the
 * triggers exactly as they were (tampering "behind the triggers' back"), and checkpoint so the
 * state root is left without a -wal.
 */
export function tamper(stateRoot: string, fn: (db: Database) => void): void {
  const db = new Database(dbPath(stateRoot));
  try {
    const triggers = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").all() as { name: string; sql: string }[];
    if (triggers.length !== 2) throw new Error(`expected 2 triggers on events, found ${triggers.length}`);
    db.transaction(() => {
      for (const t of triggers) db.run(`DROP TRIGGER ${t.name}`);
      fn(db);
      for (const t of triggers) db.run(t.sql);
    })();
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}
