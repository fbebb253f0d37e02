// The store on real SQLite files in temp dirs: the append-only hash-chained log, the projection
// tables kept equal to the fold, the lease, and several handles/processes on one file.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { canonicalJson, GENESIS_HASH, sha256Hex } from "../../lib/log/canonical.ts";
import type { EventDraft } from "../../lib/log/events.ts";
import { pidAlive } from "../../lib/shared/process.ts";
import { fold } from "../../lib/log/reducer.ts";
import { BusyError, IllegalEventError, LeaseLostError, StoreError } from "../../lib/shared/errors.ts";
import { compareProjection, foldAndCheck } from "../../lib/reports/replay.ts";
import { ITEM_TABLES, loopRow } from "../../lib/log/rows.ts";
import { PAGE_SIZE, rowToEvent, Store } from "../../lib/log/store.ts";
import { dbPath, readProjection } from "../../lib/log/snapshot.ts";
import { type EventRow, hashInput } from "../../lib/log/integrity.ts";
import { control, definition, itemDef, launch, loopStarted, passingAttempt, settled, started } from "../helpers/events.ts";
import { TempDirs } from "../helpers/fs.ts";
import { realisticDrafts } from "../helpers/store.ts";
import { testEnv } from "../helpers/env.ts";

const temp = new TempDirs();
const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});
afterAll(() => temp.cleanup());

const LIB = join(import.meta.dir, "..", "..", "lib");

function newStore(): { root: string; store: Store } {
  const root = temp.make();
  const store = Store.open(root, { create: true });
  open.push(store);
  return { root, store };
}

function handle(root: string): Store {
  const s = Store.open(root);
  open.push(s);
  return s;
}

function rows(db: Database): EventRow[] {
  return db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as EventRow[];
}

/** Every projection row, as text, for "unchanged" comparisons. */
function dumpProjection(db: Database): string {
  const out: unknown[] = [db.query("SELECT * FROM proj_loop").all()];
  for (const t of ITEM_TABLES) out.push(db.query(`SELECT item, body FROM ${t} ORDER BY item`).all());
  return JSON.stringify(out);
}

function storeError(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (e) {
    if (e instanceof StoreError) return e;
    throw e;
  }
  throw new Error("no StoreError was thrown");
}

const DEF: EventDraft = definition(1, [itemDef("a"), itemDef("b")]);

describe("the log", () => {
  test("a new store has 16 KiB pages; an existing store keeps the page size it was created with", () => {
    const { store } = newStore();
    expect(store.db.query("PRAGMA page_size").get()).toEqual({ page_size: PAGE_SIZE });
    store.close();
    open.splice(open.indexOf(store), 1);
    // A store made by an earlier version (SQLite's default 4 KiB pages) opens and appends as before.
    const old = temp.make();
    Store.open(old, { create: true }).close();
    const raw = new Database(dbPath(old));
    raw.run("PRAGMA journal_mode = DELETE"); // the page size of a WAL database cannot change
    raw.run("PRAGMA page_size = 4096");
    raw.run("VACUUM");
    raw.run("PRAGMA journal_mode = WAL");
    raw.close();
    const s = Store.open(old, { create: true });
    open.push(s);
    s.append([DEF]);
    expect(s.db.query("PRAGMA page_size").get()).toEqual({ page_size: 4096 });
    expect(s.head().seq).toBe(2);
  });

  test("a new store starts with store_opened at seq 1; seqs are gapless and every hash verifies", () => {
    const { root, store } = newStore();
    expect(rows(store.db).map((r) => [r.seq, r.type, r.prev_hash])).toEqual([[1, "store_opened", GENESIS_HASH]]);
    store.append([DEF, loopStarted]);
    store.append([control("a", "start")]);
    store.append([control("b", "stop", "hold on"), control("b", "start")]);
    // Reopening does not append a second store_opened.
    store.close();
    open.splice(open.indexOf(store), 1);
    const again = handle(root);
    const all = rows(again.db);
    expect(all.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(all.map((r) => r.type)).toEqual(["store_opened", "definition_imported", "loop_started", "control_recorded", "control_recorded", "control_recorded"]);
    let prev = GENESIS_HASH;
    for (const r of all) {
      expect(r.prev_hash).toBe(prev);
      expect(sha256Hex(hashInput(r, r.payload))).toBe(r.hash);
      prev = r.hash;
    }
    expect(again.head()).toEqual({ seq: 6, hash: prev });
  });

  test("a duplicate id is refused with duplicate_event and nothing of the batch is appended", () => {
    const { store } = newStore();
    store.append([DEF, loopStarted]);
    store.append([{ ...control("a", "start"), id: "ctl-1" }]);
    const before = rows(store.db);
    const proj = dumpProjection(store.db);
    const e1 = storeError(() => store.append([{ ...control("a", "stop"), id: "ctl-1" }]));
    expect(e1.code).toBe("duplicate_event");
    expect(e1.message).toContain("ctl-1");
    // The duplicate comes second in a batch: the first event is not kept either.
    const e2 = storeError(() =>
      store.append([
        { ...control("b", "start"), id: "fresh" },
        { ...control("a", "stop"), id: "ctl-1" },
      ]),
    );
    expect(e2.code).toBe("duplicate_event");
    // Two equal new ids inside one batch.
    const e3 = storeError(() =>
      store.append([
        { ...control("b", "start"), id: "twin" },
        { ...control("a", "start"), id: "twin" },
      ]),
    );
    expect(e3.code).toBe("duplicate_event");
    expect(rows(store.db)).toEqual(before);
    expect(dumpProjection(store.db)).toBe(proj);
    expect(rows(store.db).some((r) => r.id === "fresh")).toBe(false);
  });

  test("UPDATE and DELETE on events are rejected by triggers, from any connection", () => {
    const { root, store } = newStore();
    store.append([DEF]);
    const before = rows(store.db);
    expect(() => store.db.run("UPDATE events SET actor = 'mallory' WHERE seq = 1")).toThrow(/append-only/);
    expect(() => store.db.run("DELETE FROM events WHERE seq = 2")).toThrow(/append-only/);
    expect(() => store.db.run("DELETE FROM events")).toThrow(/append-only/);
    const raw = new Database(dbPath(root));
    try {
      expect(() => raw.run("UPDATE events SET payload = '{}' WHERE seq = 2")).toThrow(/append-only/);
      expect(() => raw.run("DELETE FROM events WHERE seq = 1")).toThrow(/append-only/);
    } finally {
      raw.close();
    }
    expect(rows(store.db)).toEqual(before);
  });

  test("expectSeq is a compare-and-swap on the head: a stale head writes nothing", () => {
    const { store } = newStore();
    store.append([DEF], { expectSeq: 1 });
    const before = rows(store.db);
    const proj = dumpProjection(store.db);
    const err = storeError(() => store.append([loopStarted], { expectSeq: 1 }));
    expect(err.code).toBe("seq_conflict");
    expect(err.message).toContain("seq 2");
    expect(storeError(() => store.append([loopStarted], { expectSeq: 3 })).code).toBe("seq_conflict");
    expect(rows(store.db)).toEqual(before);
    expect(dumpProjection(store.db)).toBe(proj);
    const { events } = store.append([loopStarted], { expectSeq: 2 });
    expect(events.map((e) => e.seq)).toEqual([3]);
  });

  test("an illegal event aborts the whole batch: no partial append, projection unchanged", () => {
    const { store } = newStore();
    store.append([DEF, loopStarted]);
    const before = rows(store.db);
    const proj = dumpProjection(store.db);
    let err: unknown;
    try {
      store.append([control("a", "start"), launch({ item: "a", attempt: 1 }), launch({ item: "b", attempt: 1 })]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IllegalEventError);
    expect((err as IllegalEventError).seq).toBe(6);
    expect((err as IllegalEventError).rule).toBe("one_in_flight");
    expect(rows(store.db)).toEqual(before);
    expect(dumpProjection(store.db)).toBe(proj);
    expect(store.projection().items.a!.status).toBe("pending");
    expect(store.head().seq).toBe(3);
  });

  test("an invalid payload is rejected before anything is written", () => {
    const { store } = newStore();
    store.append([DEF, loopStarted]);
    const before = rows(store.db);
    const proj = dumpProjection(store.db);
    const bad: any[] = [
      { type: "loop_paused", payload: {} }, // missing field
      { type: "loop_paused", payload: { reason: "x", extra: 1 } }, // unknown field
      { type: "loop_paused", payload: { reason: 7 } }, // wrong type
      { type: "launch_failed", item: "a", payload: { attempt: 1.5, reason: "x" } }, // fraction
      { type: "launch_failed", item: "a", payload: { attempt: 0, reason: "x" } }, // attempt must be >= 1
      { type: "control_recorded", item: "a", payload: { verb: "explode", text: null } }, // not a verb
      { type: "no_such_event", payload: {} }, // unknown type
    ];
    for (const d of bad) {
      const err = storeError(() => store.append([d]));
      expect(err.code).toBe("invalid_event");
      expect(err.message.startsWith(`${d.type}: `)).toBe(true);
    }
    // A valid event before an invalid one in the same batch is not written either.
    expect(storeError(() => store.append([control("a", "start"), bad[0]])).code).toBe("invalid_event");
    expect(rows(store.db)).toEqual(before);
    expect(dumpProjection(store.db)).toBe(proj);
  });

  test("the projection tables equal the fold of the log after every append", () => {
    const { store } = newStore();
    const drafts = realisticDrafts();
    // Singles and batches of different sizes.
    const batches: EventDraft[][] = [];
    for (let i = 0; i < drafts.length; ) {
      const size = (batches.length % 3) + 1;
      batches.push(drafts.slice(i, i + size));
      i += size;
    }
    for (const batch of batches) {
      const res = store.append(batch);
      const events = rows(store.db).map(rowToEvent);
      const folded = fold(events);
      expect(compareProjection(store.db, folded)).toEqual([]);
      expect(res.events.at(-1)!.seq).toBe(folded.seq);
      expect(store.projection()).toEqual(folded);
    }
    expect(store.projection().loop.state).toBe("drained");
    // The comparison is not vacuous: the fold of a shorter log differs from the tables.
    const shorter = fold(rows(store.db).map(rowToEvent).slice(0, -2));
    expect(compareProjection(store.db, shorter).length).toBeGreaterThan(0);
  });

  test("opening a missing store without create is missing_store; a non-loop file is corrupt_store", () => {
    const root = temp.make();
    expect(storeError(() => Store.open(root)).code).toBe("missing_store");
    const other = new Database(dbPath(root));
    other.run("CREATE TABLE unrelated(x)");
    other.close();
    const bytes = readFileSync(dbPath(root));
    expect(storeError(() => Store.open(root)).code).toBe("corrupt_store");
    // Refused before anything changed it: not even switched to WAL (header bytes 18-19).
    expect(readFileSync(dbPath(root))).toEqual(bytes);
    expect(existsSync(`${dbPath(root)}-wal`)).toBe(false);
    // Not even with create: a database holding other tables is never turned into a loop store.
    expect(storeError(() => Store.open(root, { create: true })).code).toBe("corrupt_store");
    const check = new Database(dbPath(root), { readonly: true });
    try {
      expect(check.query("SELECT name FROM sqlite_master").all()).toEqual([{ name: "unrelated" }]);
    } finally {
      check.close();
    }
    writeFileSync(dbPath(root), Buffer.alloc(4096, 0x5a));
    expect(storeError(() => Store.open(root)).code).toBe("corrupt_store");
  });

  test("projection rows for an item called __proto__ (a tampered store) make an item, not a prototype", () => {
    const { store } = newStore();
    store.append([DEF, loopStarted, control("a", "start")]);
    for (const t of ITEM_TABLES) store.db.run(`INSERT INTO ${t}(item, body) SELECT '__proto__', body FROM ${t} WHERE item = 'a'`);
    const p = readProjection(store.db);
    expect(Object.getPrototypeOf(p.items)).toBe(Object.prototype);
    expect(Object.hasOwn(p.items, "__proto__")).toBe(true);
    expect(Object.keys(p.items)).toContain("__proto__");
  });

  test("a projection missing an item's control or ledger row, or holding a row that is not JSON, is corrupt_store (never filled in with defaults)", () => {
    for (const damage of [
      "DELETE FROM proj_control WHERE item = 'a'",
      "DELETE FROM proj_ledgers WHERE item = 'a'",
      "DELETE FROM proj_items WHERE item = 'a'",
      "UPDATE proj_ledgers SET body = '{\"attempts\":' WHERE item = 'a'",
    ]) {
      const { root, store } = newStore();
      store.append([DEF, loopStarted, control("a", "start")]);
      store.db.run(damage);
      const err = storeError(() => readProjection(store.db));
      expect(err.code).toBe("corrupt_store");
      expect(err.message).toContain(damage.startsWith("UPDATE") ? 'row of "a" is not valid JSON' : 'for "a"');
      // A writer refuses to append on top of it: any handle that reads the damaged item (an
      // append reads only the items it touches; replay and status read them all).
      const w = handle(root);
      expect(storeError(() => w.append([control("a", "stop")])).code).toBe("corrupt_store");
      expect(storeError(() => w.item("a")).code).toBe("corrupt_store");
    }
  });
});

describe("the lease", () => {
  const alwaysAlive = () => true;

  test("the holder's writes wait out a short write lock of another process (a racing step asking for the lease) instead of failing with 'database is locked'", async () => {
    const { root, store } = newStore();
    const mine = store.acquireLease(60_000, pidAlive);
    if (!mine.ok) throw new Error("acquire refused");
    // Another process takes the write lock as a racing step's lease check does, holds it a moment, gives it back.
    const racer = Bun.spawn(
      [
        process.execPath,
        "-e",
        `const { Database } = require("bun:sqlite"); const db = new Database(${JSON.stringify(dbPath(root))}); db.run("BEGIN IMMEDIATE"); console.log("locked"); setTimeout(() => { db.run("ROLLBACK"); db.close(); }, 500);`,
      ],
      { stdout: "pipe", stderr: "inherit", env: testEnv() },
    );
    const reader = racer.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("locked");
    // It reads the lease before it writes: as a deferred transaction it was refused at once.
    store.rememberDefinition('{"known":true}');
    expect(store.knownDefinition()).toBe('{"known":true}');
    expect(await racer.exited).toBe(0);
    store.releaseLease(mine.lease);
  });

  test("acquire, refused while held, release, acquire again without a takeover", () => {
    const { root, store } = newStore();
    const first = store.acquireLease(60_000, pidAlive);
    if (!first.ok) throw new Error("first acquire refused");
    expect(first.tookOver).toBeNull();
    expect(first.lease.pid).toBe(process.pid);
    const headBefore = store.head();
    // A second handle (as a second `loop run` would) is refused while the holder lives.
    const other = handle(root);
    const second = other.acquireLease(60_000, pidAlive);
    expect(second.ok).toBe(false);
    if (second.ok) return;
    expect(second.holder).toEqual(first.lease);
    expect(other.head()).toEqual(headBefore);
    // Releasing with someone else's lease does nothing.
    other.releaseLease({ ...first.lease, owner: "not-the-owner" });
    expect(other.acquireLease(60_000, pidAlive).ok).toBe(false);
    store.releaseLease(first.lease);
    expect(store.db.query("SELECT COUNT(*) AS n FROM lease").get()).toEqual({ n: 0 });
    const third = other.acquireLease(60_000, pidAlive);
    expect(third.ok).toBe(true);
    if (third.ok) expect(third.tookOver).toBeNull();
    expect(other.head()).toEqual(headBefore); // no lease_taken_over for a released lease
  });

  test("a holder whose lease was taken over can no longer write: appends and renewals throw, nothing is written", () => {
    const { root, store } = newStore();
    const mine = store.acquireLease(60_000, alwaysAlive);
    if (!mine.ok) throw new Error("acquire refused");
    store.append([DEF]); // while held, appends go through
    // Another step finds the lease expired (its clock is past the expiry) and takes it over.
    const other = handle(root);
    const theirs = other.acquireLease(60_000, alwaysAlive, new Date(Date.now() + 120_000));
    expect(theirs.ok).toBe(true);
    const head = other.head();
    const err = (() => {
      try {
        store.append([loopStarted]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(LeaseLostError);
    expect(err).toBeInstanceOf(BusyError); // exit 75, like any busy store
    expect((err as Error).message).toContain(`was taken over by pid ${process.pid}`);
    expect(() => store.renewLease(mine.lease, 60_000)).toThrow(LeaseLostError);
    // Refused once, refused again: a caller that caught the first refusal still cannot write.
    expect(() => store.append([loopStarted])).toThrow(LeaseLostError);
    expect(() => store.assertLease()).toThrow(LeaseLostError);
    expect(other.head()).toEqual(head);
    // Releasing the lost lease leaves the new holder's row alone; the new holder writes on.
    store.releaseLease(mine.lease);
    if (!theirs.ok) return;
    expect(other.db.query("SELECT owner FROM lease").get()).toEqual({ owner: theirs.lease.owner });
    other.renewLease(theirs.lease, 60_000);
    other.append([loopStarted]);
    expect(other.head().seq).toBe(head.seq + 1);
    // A handle that never took the lease (a test, bench/generate) appends without the check.
    other.releaseLease(theirs.lease);
    expect(() => other.append([control("a", "start")])).not.toThrow();
  });

  test("a lease whose holder process is dead is taken over, and the takeover is recorded", () => {
    const root = temp.make();
    Store.open(root, { create: true }).close();
    const script = join(temp.make(), "hold.ts");
    writeFileSync(
      script,
      `import { Store } from ${JSON.stringify(join(LIB, "log", "store.ts"))};
const s = Store.open(process.argv[2]);
const r = s.acquireLease(3_600_000, () => true);
s.close();
process.stdout.write(JSON.stringify(r));
`,
    );
    const child = Bun.spawnSync([process.execPath, script, root], { env: testEnv(), stderr: "pipe" });
    expect(child.exitCode).toBe(0);
    const held = JSON.parse(child.stdout.toString());
    expect(held.ok).toBe(true);
    expect(held.lease.pid).toBe(child.pid);
    expect(pidAlive(child.pid)).toBe(false);

    const store = handle(root);
    // Not expired, so only the dead holder makes it available.
    const r = store.acquireLease(60_000, pidAlive);
    if (!r.ok) throw new Error("takeover refused");
    expect(r.tookOver).toEqual(held.lease);
    expect(r.lease.pid).toBe(process.pid);
    const last = rows(store.db).at(-1)!;
    expect(last.type).toBe("lease_taken_over");
    expect(JSON.parse(last.payload)).toEqual({ previous: held.lease, why: "dead" });
    expect(compareProjection(store.db, fold(rows(store.db).map(rowToEvent)))).toEqual([]);
    expect(foldAndCheck(store.db).findings).toEqual([]);
  });

  test("a lease naming this process's pid that this process never took (a restarted container) is a dead holder's", () => {
    const { store } = newStore();
    const stale = {
      owner: "before-the-restart",
      pid: process.pid,
      host: hostname(),
      started: new Date().toISOString(),
      expires: new Date(Date.now() + 3_600_000).toISOString(),
    };
    store.db.run("INSERT INTO lease(id, owner, pid, host, started, expires) VALUES (1, ?, ?, ?, ?, ?)", [
      stale.owner,
      stale.pid,
      stale.host,
      stale.started,
      stale.expires,
    ]);
    const r = store.acquireLease(60_000, alwaysAlive);
    if (!r.ok) throw new Error("stale lease of our own pid not taken over");
    expect(r.tookOver).toEqual(stale);
    expect(JSON.parse(rows(store.db).at(-1)!.payload).why).toBe("dead");
    // One this process did take stays its own: another handle here is refused while it lasts.
    expect(handle(store.stateRoot).acquireLease(60_000, alwaysAlive).ok).toBe(false);
  });

  test("an expired lease is taken over even when its holder lives", () => {
    const { store } = newStore();
    const t0 = new Date("2025-03-01T12:00:00.000Z");
    const first = store.acquireLease(1000, alwaysAlive, t0);
    if (!first.ok) throw new Error("first acquire refused");
    expect(first.lease.expires).toBe("2025-03-01T12:00:01.000Z");
    const seq = store.head().seq;
    expect(store.acquireLease(1000, alwaysAlive, new Date(t0.getTime() + 999)).ok).toBe(false);
    expect(store.head().seq).toBe(seq);
    const later = store.acquireLease(1000, alwaysAlive, new Date(t0.getTime() + 1000));
    if (!later.ok) throw new Error("expired lease not taken over");
    expect(later.tookOver).toEqual(first.lease);
    expect(later.lease.owner).not.toBe(first.lease.owner);
    const last = rows(store.db).at(-1)!;
    expect([last.seq, last.type]).toEqual([seq + 1, "lease_taken_over"]);
    expect(JSON.parse(last.payload).why).toBe("expired");
  });
});

describe("an append costs what it changes", () => {
  /** A store with items a, b and c, and item a's ledger row damaged by another connection. */
  function damagedA() {
    const { root, store } = newStore();
    store.append([definition(1, [itemDef("a"), itemDef("b"), itemDef("c")]), loopStarted, control("a", "start")]);
    const raw = new Database(dbPath(root));
    raw.run("UPDATE proj_ledgers SET body = 'not json' WHERE item = 'a'");
    raw.close();
    return { root, store };
  }

  test("it reads and writes only the items its events name: another item's damaged row is neither read nor rewritten", () => {
    const { root, store } = damagedA();
    // Another connection committed: the handle reads again, but only the loop row and item b.
    store.append([control("b", "start")]);
    expect(store.item("b")!.started).toBe(true);
    expect((store.db.query("SELECT body FROM proj_ledgers WHERE item = 'a'").get() as { body: string }).body).toBe("not json");
    // Any reader of item a finds the damage: the append that touches it, and replay.
    expect(storeError(() => handle(root).append([control("a", "stop")])).code).toBe("corrupt_store");
    expect(compareProjection(store.db, fold(rows(store.db).map(rowToEvent))).map((f) => f.message.split(" ")[0])).toEqual(["proj_ledgers[a]"]);
  });

  test("a definition import touches every item: it reads them all", () => {
    const { store } = damagedA();
    expect(storeError(() => store.append([definition(2, [itemDef("a"), itemDef("b"), itemDef("c"), itemDef("d")])])).code).toBe("corrupt_store");
  });

  test("the projection handed out before an append stays as it was; the items the append did not touch are shared", () => {
    const { store } = newStore();
    store.append([DEF, loopStarted]);
    const before = store.projection();
    const a = before.items.a!;
    store.append([control("a", "stop")]);
    const after = store.projection();
    expect(a.held).toBe(false);
    expect(before.items.a).toBe(a);
    expect(after.items.a!.held).toBe(true);
    expect(after.items.b).toBe(before.items.b);
    expect(before.seq + 1).toBe(after.seq);
    expect(after).toEqual(readProjection(store.db));
  });

  test("itemsWhere finds items by status and by an open session through the indexes, in the projection's order", () => {
    const { store } = newStore();
    store.append([definition(1, [itemDef("a"), itemDef("b"), itemDef("c")]), loopStarted]);
    store.append(passingAttempt({ item: "c" }));
    store.append([settled({ item: "a", attempt: 0, outcome: "skipped" })]);
    store.append([launch({ item: "b", attempt: 1 }), started({ item: "b", attempt: 1 })]);
    const ids = (q: Parameters<Store["itemsWhere"]>[0]) =>
      handle(store.stateRoot)
        .itemsWhere(q)
        .map((it) => it.id);
    expect(ids({ status: ["passed", "skipped"] })).toEqual(["a", "c"]);
    expect(ids({ status: ["running"] })).toEqual(["b"]);
    expect(ids({ openSession: true })).toEqual(["b"]);
    expect(ids({ status: ["skipped"], openSession: true })).toEqual(["a", "b"]);
    expect(ids({ status: ["failed"] })).toEqual([]);
    expect(ids({ landing: ["none"] })).toEqual(["c"]);
    expect(ids({ landing: ["conflict", "failed"] })).toEqual([]);
    expect(ids({ status: ["skipped"], landing: ["none"] })).toEqual(["a", "c"]);
    // SQLite answers from the indexes, not by reading every row.
    const plan = (sql: string) => (store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join("; ");
    expect(plan("SELECT item FROM proj_items WHERE json_extract(body, '$.status') IN ('failed')")).toContain("USING INDEX proj_items_status");
    expect(plan("SELECT item FROM proj_sessions WHERE json_extract(body, '$.closed') IS NULL")).toContain("proj_sessions_open");
    expect(plan("SELECT item FROM proj_items WHERE json_extract(body, '$.landing.outcome') IN ('conflict')")).toContain("USING INDEX proj_items_landing");
  });
});

describe("several writers on one file", () => {
  test("two Store handles appending alternately keep the chain intact", () => {
    const { root, store: a } = newStore();
    const b = handle(root);
    a.append([DEF, loopStarted]);
    for (let i = 0; i < 20; i++) {
      const w = i % 2 === 0 ? b : a;
      const { events } = w.append([control(i % 3 === 0 ? "a" : "b", "start", `round ${i}`)]);
      expect(events[0]!.seq).toBe(4 + i);
    }
    // Each handle sees the other's events, and a stale CAS from either is refused.
    expect(a.head()).toEqual(b.head());
    expect(storeError(() => a.append([loopStarted], { expectSeq: 3 })).code).toBe("seq_conflict");
    const all = rows(a.db);
    expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
    const check = foldAndCheck(b.db);
    expect(check.findings).toEqual([]);
    expect(compareProjection(a.db, check.projection!)).toEqual([]);
    expect(check.projection!.items.b!.control).toHaveLength(13);
  });

  test("projection() is read once while nothing changes; another handle's commit or a rolled-back append makes it read again", () => {
    const { root, store: a } = newStore();
    const b = handle(root);
    a.append([DEF, loopStarted]);
    const p1 = a.projection();
    expect(a.projection()).toBe(p1); // nothing changed: the same object
    expect(p1.seq).toBe(3);
    // This handle's own append keeps it current: a new projection, the one before left as it was.
    a.append([control("a", "start")]);
    const p2 = a.projection();
    expect(p2).not.toBe(p1);
    expect(p1.seq).toBe(3);
    expect(p2.seq).toBe(4);
    expect(a.projection()).toBe(p2);
    // Another connection's commit changes data_version: read afresh.
    b.append([control("b", "start")]);
    const p3 = a.projection();
    expect(p3.seq).toBe(5);
    expect(p3.items.b!.started).toBe(true);
    expect(p3).toEqual(readProjection(a.db));
    // An append refused inside a transaction leaves nothing cached that did not commit.
    expect(() =>
      a.tx(() => {
        a.append([control("a", "stop")]);
        throw new Error("roll back");
      }),
    ).toThrow("roll back");
    expect(a.projection().seq).toBe(5);
    expect(a.projection().items.a!.held).toBe(false);
    expect(a.projection()).toEqual(readProjection(a.db));
  });

  test("two processes appending at the same time lose nothing and keep the chain intact", async () => {
    const { root, store } = newStore();
    store.append([DEF, loopStarted]);
    const script = join(temp.make(), "writer.ts");
    writeFileSync(
      script,
      `import { Store } from ${JSON.stringify(join(LIB, "log", "store.ts"))};
const [root, name] = process.argv.slice(2);
const s = Store.open(root);
for (let i = 0; i < 25; i++)
  s.append([{ type: "control_recorded", item: "a", actor: name, payload: { verb: "reply", text: name + " " + i } }]);
s.close();
`,
    );
    const procs = ["w1", "w2"].map((n) => Bun.spawn([process.execPath, script, root, n], { env: testEnv(), stderr: "pipe" }));
    const codes = await Promise.all(procs.map((p) => p.exited));
    expect(codes).toEqual([0, 0]);
    const all = rows(store.db);
    expect(all).toHaveLength(3 + 50);
    expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 53 }, (_, i) => i + 1));
    for (const n of ["w1", "w2"]) {
      const texts = all.filter((r) => r.actor === n).map((r) => JSON.parse(r.payload).text);
      expect(texts).toEqual(Array.from({ length: 25 }, (_, i) => `${n} ${i}`));
    }
    const check = foldAndCheck(store.db);
    expect(check.findings).toEqual([]);
    expect(compareProjection(store.db, check.projection!)).toEqual([]);
  });
});

test("the loop row's body is the canonical JSON of the loop record and the order, however often the order is reused", () => {
  const { store } = newStore();
  store.append([DEF, loopStarted]);
  for (let i = 0; i < 3; i++) store.append([control("a", "start", `round ${i}`)]);
  const p = store.projection();
  const { body } = store.db.query("SELECT body FROM proj_loop").get() as { body: string };
  expect(body).toBe(canonicalJson({ loop: p.loop, order: p.order }));
  expect(loopRow(p).body).toBe(body);
});
