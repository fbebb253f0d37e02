// The store: one SQLite file holding the append-only, hash-chained event log, the projection
// tables (updated in the same transaction as each event) and the step lease.
import { type Database, constants } from "bun:sqlite";
import { accessSync, closeSync, constants as fsConstants, fsyncSync, linkSync, lstatSync, openSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { canonicalJson, sha256Hex } from "./canonical.ts";
import { CanonicalJsonError, StoreError } from "../shared/errors.ts";
import { type EventDraft, payloadProblem, type StoredEvent, type StoredEventOf } from "./events.ts";
import { type CommitLabel, failpoint } from "../shared/failpoint.ts";
import { type ItemState, itemOf, type Projection } from "./projection.ts";
import { reduceInto, touchedItems } from "./reducer.ts";
import { copyTouched, putItem, writeProjection } from "./rows.ts";
import { BUDGET_STOPPED, createTables, LANDING_OF, OPEN_SESSION, rebuildTables, STATUS_OF } from "./store-schema.ts";
import { leaseFreed, leaseLost, newLease, writeLease } from "./lease.ts";
import { EVENT_COLUMNS, type EventRow } from "./integrity.ts";
import {
  checkSchema,
  dbPath,
  refuseLostStore,
  headOf,
  type Lease,
  openWith,
  readItems,
  readLease,
  readProjection,
  readProjectionHead,
  SCHEMA_VERSION,
  schemaVersion,
  storeError,
} from "./snapshot.ts";
import type { ItemStatus, LandingOutcome } from "./vocabulary.ts";
import { assertOwnership, bindPayload, noWorkYet, type ProjectIdentity, rebind, sameBinding } from "./ownership.ts";
import { BUSY_TIMEOUT_MS, isBusy, lockedError } from "./locks.ts";
import { ensureStateRoot } from "../shared/state-root.ts";

/** The page size of a store created by this version (an existing store keeps its own). */
export const PAGE_SIZE = 16_384;

/** An event row as the reducer takes it: its payload parsed (not validated: rows come from the log). */
export function rowToEvent(r: EventRow): StoredEvent {
  return { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
}

/** `takeover`: the lease_taken_over event recorded when the lease was taken from a dead or expired holder. */
type LeaseResult = { ok: true; lease: Lease; tookOver: Lease | null; takeover: StoredEventOf<"lease_taken_over"> | null } | { ok: false; holder: Lease };

/** Read-write handle: used by `loop init`, `loop run`, `loop ctl`. */
export class Store {
  /** The lease this handle holds: its appends check, in their transaction, that it still does. */
  private held: Lease | null = null;

  private constructor(
    readonly db: Database,
    readonly stateRoot: string,
  ) {}

  /**
   * The project this handle writes for (lib/log/ownership.ts): checked when the store is opened and
   * again in every append's transaction; the first append to a store bound to no project binds it.
   * Undefined for handles that act for no project (tests, bench).
   */
  private project: ProjectIdentity | null | undefined = undefined;

  /**
   * Open the store under stateRoot. With `create`, a store is created only where there is no file
   * at all: an empty or damaged file is corruption, never a new store. With `project`, a store that
   * belongs to another project is refused (`foreign_store`) before anything is written to it; a
   * new store is bound to it at once.
   */
  static open(stateRoot: string, opts: { create?: boolean; actor?: string; project?: ProjectIdentity | null; ignoreName?: boolean } = {}): Store {
    const path = dbPath(stateRoot);
    // lstat: a (dangling) link in its place is a file that is there, not "no store".
    if (!lstatSync(path, { throwIfNoEntry: false })) {
      if (!opts.create) throw new StoreError("missing_store", `no store at ${path} (run \`loop init\` first)`);
      refuseLostStore(stateRoot);
      ensureStateRoot(stateRoot, { gitignore: true });
      Store.createFile(stateRoot, opts.actor ?? "loop", opts.project ?? null);
    }
    // SQLite opens a file it may not write read-only without a word, and fails at the first write
    // (or the WAL's -shm in a read-only directory): say so here, as what it is.
    for (const p of [path, stateRoot])
      try {
        accessSync(p, fsConstants.W_OK);
      } catch (err) {
        throw new StoreError("io_error", `cannot write ${p}: ${(err as Error).message} (a writer needs to write loop.db and the state root it is in)`);
      }
    const db = openWith(path, constants.SQLITE_OPEN_READWRITE);
    const store = new Store(db, stateRoot);
    try {
      db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // Anything but a loop store is refused before anything below changes it (the WAL switch
      // rewrites its header).
      store.retryBusy(() => store.refuseNonStore());
      store.retryBusy(() => db.run("PRAGMA journal_mode = WAL"));
      db.run("PRAGMA synchronous = FULL");
      // No automatic checkpoints: a writer checkpoints at close and before a long wait (checkpoint()).
      db.run("PRAGMA wal_autocheckpoint = 0");
      store.retryBusy(() => store.upgradeSchema());
      const project = opts.project;
      // A read like the ones above: a step racing to create or recover the store may find it busy.
      if (project !== undefined) store.retryBusy(() => store.actFor(project, { ignoreName: opts.ignoreName }));
    } catch (err) {
      const locked = lockedError(db, stateRoot, err);
      db.close();
      throw storeError(locked, `cannot use ${path}`);
    }
    return store;
  }

  /**
   * Create a store where there is no file: built whole under a temporary name, then linked into
   * place, so that a file at the store's path is always a whole store (an empty one is damage).
   * Several steps racing to create it each build one; the first link wins and the others use it.
   */
  private static createFile(stateRoot: string, actor: string, project: ProjectIdentity | null): void {
    const path = dbPath(stateRoot);
    const tmp = `${path}.new-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const db = openWith(tmp, constants.SQLITE_OPEN_READWRITE | constants.SQLITE_OPEN_CREATE);
      try {
        // 16 KiB pages rather than SQLite's 4 KiB: replay reads every event page, and with a quarter
        // of the page reads its passes cost ~0.3 µs less per event (bench/README.md).
        db.run(`PRAGMA page_size = ${PAGE_SIZE}`);
        db.run("PRAGMA journal_mode = WAL");
        db.run("PRAGMA synchronous = FULL");
        new Store(db, stateRoot).createSchema(actor, project);
        db.run("PRAGMA wal_checkpoint(PASSIVE)"); // the last close below deletes the WAL
      } finally {
        db.close();
      }
      try {
        linkSync(tmp, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err; // another step created it first
      }
      // The new name must survive a power cut as the content does (SQLite synced the file).
      const dir = openSync(dirname(path), "r");
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
    } catch (err) {
      throw storeError(err, `cannot create ${path}`);
    } finally {
      for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
    }
  }

  /**
   * Write for `project` from now on: refused (`foreign_store`) when the store belongs to another
   * project, and checked again in every append's transaction. With `ignoreName`, only the
   * repository and the folder are compared (`loop init` writes the loop.json that names the loop).
   */
  actFor(project: ProjectIdentity | null, o: { ignoreName?: boolean } = {}): void {
    const { loop } = this.loopView();
    assertOwnership(loop.owner, project && o.ignoreName ? { ...project, name: null } : project, this.stateRoot, {
      renameFree: () => noWorkYet(this.projection()),
    });
    this.project = project;
  }

  private retryBusy<T>(fn: () => T): T {
    for (let i = 0; ; i++) {
      try {
        return fn();
      } catch (err) {
        if (!isBusy(err) || i >= 50) throw err;
        Bun.sleepSync(20 + i * 10);
      }
    }
  }

  /**
   * Only a database holding the log is a store. An empty file (truncated, or made by `touch`) or a
   * database of other tables is not: treating it as a new store would relaunch items that had
   * passed and commit again onto their branches.
   */
  private refuseNonStore() {
    if (this.db.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='events'").get()) return;
    const path = dbPath(this.stateRoot);
    const other = this.db.query("SELECT name FROM sqlite_master WHERE type='table' LIMIT 1").get() as { name: string } | null;
    if (other) throw new StoreError("corrupt_store", `${path} is not a loop store (it has table "${other.name}" but no events)`);
    const size = statSync(path).size;
    throw new StoreError(
      "corrupt_store",
      `${path} is ${size === 0 ? "empty (0 bytes)" : "a database with no tables"}, not a loop store: a store is only ever created where there is no file. Restore it from a backup (docs/state.md#backing-up), or move it away and run \`loop init\` to start afresh`,
    );
  }

  private upgradeSchema() {
    if (schemaVersion(this.db) < SCHEMA_VERSION) this.db.transaction(() => this.migrate()).immediate();
    checkSchema(this.db, this.stateRoot);
  }

  /** The schema, the projection's first row and the first events, in one transaction (a new file). */
  private createSchema(actor: string, project: ProjectIdentity | null) {
    this.db
      .transaction(() => {
        createTables(this.db);
        this.append([
          { type: "store_opened", payload: { schema: SCHEMA_VERSION, tool: "loop" }, actor },
          ...(project ? [{ type: "store_bound" as const, payload: bindPayload(project, null, "a new store"), actor }] : []),
        ]);
      })
      .immediate();
  }

  /**
   * Bring an older store to SCHEMA_VERSION, under the write lock. No event: the log is unchanged.
   * The projection tables are a cache of the fold, so whatever their older layout, they are
   * rewritten from a fold of the whole log (state.json is rewritten by the next materialization).
   */
  private migrate() {
    const from = schemaVersion(this.db);
    if (from >= SCHEMA_VERSION || from < 1) return; // another writer did it, or not ours (checkSchema says why)
    rebuildTables(this.db, (row) => rowToEvent(row));
  }

  head(): { seq: number; hash: string } {
    return headOf(this.db);
  }

  /**
   * What this handle has read of the projection, kept while SQLite's `data_version` says no other
   * connection committed: the loop row, and the items read so far (every item once `complete`).
   * This handle's own appends keep it current, copying only the items they touch. A partial copy
   * never leaves the store; `projection()` completes it first.
   */
  private cache: { version: number; p: Projection; complete: boolean } | null = null;

  private dataVersion(): number {
    return (this.db.query("PRAGMA data_version").get() as { data_version: number }).data_version;
  }

  /** The cache, read again (the loop row only) when another connection has committed since. */
  private cached(): { version: number; p: Projection; complete: boolean } {
    const version = this.dataVersion();
    if (this.cache?.version !== version) this.cache = { version, p: readProjectionHead(this.db), complete: false };
    return this.cache;
  }

  /**
   * The whole projection. Read from the tables at most once while nothing else writes; a step asks
   * for it several times. The object is shared between callers: read it, never change it.
   */
  projection(): Projection {
    const c = this.cached();
    if (!c.complete) {
      c.p = readProjection(this.db);
      c.complete = true;
    }
    return c.p;
  }

  /**
   * The loop record, the item order and the log position, without reading any item: what a step
   * looks at before it knows which items it needs. Shared like projection()'s: read it only.
   */
  loopView(): Pick<Projection, "seq" | "hash" | "loop" | "order"> {
    const { p } = this.cached();
    return { seq: p.seq, hash: p.hash, loop: p.loop, order: p.order };
  }

  /** Events of these types after `seq`, in order, at most `limit` (notification channels read the items' outcomes so). */
  eventsAfter<T extends StoredEvent["type"]>(seq: number, types: readonly T[], limit: number): Extract<StoredEvent, { type: T }>[] {
    const rows = this.db
      .query(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > ? AND type IN (${types.map(() => "?").join(",")}) ORDER BY seq LIMIT ?`)
      .all(seq, ...types, limit) as EventRow[];
    return rows.map((r) => rowToEvent(r) as Extract<StoredEvent, { type: T }>);
  }

  /** One item, read alone unless the whole projection already is (shared: read it only). */
  item(id: string): ItemState | undefined {
    const c = this.cached();
    this.load(c, [id]);
    return itemOf(c.p, id);
  }

  /**
   * The items a step must look at without reading every item, in the projection's order: those in
   * one of `status`, those whose landing record has one of the `landing` outcomes, and those whose
   * session is recorded and not closed (`openSession`), and those a budget stopped (`budgetStopped`):
   * any of what is asked. Found through the
   * store's indexes (INDEXES), which hold what they ask, so no other row is read; shared like
   * projection()'s: read them only.
   */
  itemsWhere(q: { status?: readonly ItemStatus[]; landing?: readonly LandingOutcome[]; openSession?: true; budgetStopped?: true }): ItemState[] {
    const c = this.cached();
    const ids = new Set<string>();
    const matching = (expr: string, values: readonly string[]) =>
      (this.db.query(`SELECT item FROM proj_items WHERE ${expr} IN (SELECT value FROM json_each(?))`).values(JSON.stringify(values)) as [string][]).map(
        ([id]) => id,
      );
    if (q.status?.length) for (const id of matching(STATUS_OF, q.status)) ids.add(id);
    if (q.landing?.length) for (const id of matching(LANDING_OF, q.landing)) ids.add(id);
    if (q.openSession) for (const [id] of this.db.query(`SELECT item FROM proj_sessions WHERE ${OPEN_SESSION}`).values() as [string][]) ids.add(id);
    if (q.budgetStopped) for (const [id] of this.db.query(`SELECT item FROM proj_items WHERE ${BUDGET_STOPPED}`).values() as [string][]) ids.add(id);
    this.load(c, [...ids]);
    // In the projection's order, without a pass over every id for the usual few (indexOf is native).
    const order = c.p.order;
    const rank =
      ids.size <= 64
        ? (id: string) => order.indexOf(id)
        : (
            (at) => (id: string) =>
              at.get(id) ?? -1
          )(new Map(order.map((id, i) => [id, i])));
    return [...ids]
      .map((id) => ({ at: rank(id), it: itemOf(c.p, id) }))
      .filter((x): x is { at: number; it: ItemState } => x.it !== undefined)
      .sort((x, y) => x.at - y.at)
      .map((x) => x.it);
  }

  /** Read the items named that the cache lacks, in one query per table. */
  private load(c: { p: Projection; complete: boolean }, ids: readonly string[]): void {
    if (c.complete) return;
    const missing = ids.filter((id) => !Object.hasOwn(c.p.items, id));
    for (const [id, it] of readItems(this.db, missing)) putItem(c.p.items, id, it);
  }

  /**
   * Append events atomically: validate each payload, fold it into the projection (an illegal
   * sequence aborts everything), insert the rows and rewrite the touched projection rows, all in
   * one BEGIN IMMEDIATE transaction. `expectSeq` is a compare-and-swap on the log head. Only the
   * items the events touch are read, copied and written (reducer.ts touchedItems); a definition
   * import touches every item.
   */
  append(drafts: EventDraft[], opts: { expectSeq?: number; actor?: string; now?: string; label?: CommitLabel } = {}): { events: StoredEvent[] } {
    for (const d of drafts) {
      const problem = payloadProblem(d.type, d.payload);
      if (problem) throw new StoreError("invalid_event", `${d.type}: ${problem}`);
    }
    let all = drafts;
    const run = this.db.transaction(() => {
      // A fencing check: a step that outlived its lease (another step took it over) must not write.
      this.assertLease();
      const head = headOf(this.db);
      if (opts.expectSeq !== undefined && head.seq !== opts.expectSeq)
        throw new StoreError("seq_conflict", `log head is seq ${head.seq}, expected ${opts.expectSeq}`);
      // Under the write lock, data_version has seen every other commit: the cache is current or read again.
      const base = this.cached();
      if (base.p.seq !== head.seq || base.p.hash !== head.hash)
        throw new StoreError("corrupt_store", `projection is at seq ${base.p.seq} but the log is at seq ${head.seq}`);
      const loop = base.p.loop;
      // Checked again under the write lock (another project's `init --adopt` may have come
      // between), and a store bound to no project yet is bound by this, its first write.
      if (this.project !== undefined) {
        const renameFree = () => noWorkYet(this.projection());
        assertOwnership(loop.owner, this.project, this.stateRoot, { renameFree });
        const bind = rebind(loop.owner, this.project, { loopName: loop.name, renameFree });
        if (bind) all = [{ type: "store_bound", payload: bindPayload(bind.project, loop.owner, bind.reason), actor: opts.actor ?? "loop" }, ...drafts];
      }
      const touched = new Set<string>();
      let everything = false;
      for (const d of all) {
        const t = touchedItems({ type: d.type, item: d.item ?? null });
        if (t === "all") everything = true;
        else for (const id of t) touched.add(id);
      }
      if (everything) this.projection();
      else this.load(base, [...touched]);
      // Copy on write: the projection handed out before this append stays as it was.
      const p = copyTouched(this.cache!.p, everything ? "all" : touched);
      // query(), not prepare(): a prepared statement nobody finalizes turns close() into a deferred
      // close (sqlite3_close_v2), leaving -wal/-shm behind until GC closes the file at a random time.
      // Cached statements are finalized by close().
      const insert = this.db.query("INSERT INTO events(seq, id, ts, type, actor, item, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)");
      const out: StoredEvent[] = [];
      for (const d of all) {
        const seq = p.seq + 1;
        const base = {
          seq,
          id: d.id ?? crypto.randomUUID(),
          ts: d.ts ?? opts.now ?? new Date().toISOString(),
          type: d.type,
          actor: d.actor ?? opts.actor ?? "loop",
          item: d.item ?? null,
          prev_hash: p.hash,
        };
        let payloadText: string, hash: string;
        try {
          payloadText = canonicalJson(d.payload);
          hash = sha256Hex(canonicalJson({ ...base, payload: d.payload }));
        } catch (err) {
          if (err instanceof CanonicalJsonError) throw new StoreError("invalid_event", `${d.type}: ${err.message}`);
          throw err;
        }
        const ev = { ...base, payload: JSON.parse(payloadText), hash } as StoredEvent;
        reduceInto(p, ev);
        try {
          insert.run(seq, base.id, base.ts, base.type, base.actor, base.item, payloadText, base.prev_hash, hash);
        } catch (err) {
          if (String((err as Error).message).includes("UNIQUE constraint failed: events.id"))
            throw new StoreError("duplicate_event", `an event with id "${base.id}" already exists`);
          throw err;
        }
        out.push(ev);
      }
      writeProjection(this.db, p, everything ? Object.keys(p.items) : touched);
      // Killed here, the open transaction is rolled back by SQLite: nothing of it exists.
      if (opts.label) failpoint(`${opts.label}:before_commit`);
      return { events: out, p, complete: this.cache!.complete };
    });
    let result: ReturnType<typeof run.immediate>;
    try {
      result = run.immediate();
    } catch (err) {
      // Nothing of it committed, and the cache was not folded into (a copy was); what it read is
      // still true, but reading afresh is cheap and needs no argument.
      this.cache = null;
      throw lockedError(this.db, this.stateRoot, err);
    }
    // Committed, unless an enclosing transaction (tx) may still roll it back: then read afresh.
    this.cache = this.db.inTransaction ? null : { version: this.dataVersion(), p: result.p, complete: result.complete };
    if (opts.label) failpoint(`${opts.label}:after_commit`);
    return { events: result.events };
  }

  /**
   * Record that state.json, as materialized from the projection at `seq`, hashes to `sha`
   * (materialize.ts); nothing when the projection has moved on. Written with synchronous=NORMAL:
   * lost to a power cut, the next materialization renders the file once more and records it.
   */
  recordStateSha(seq: number, sha: string): void {
    this.relaxed(() => this.db.run("UPDATE proj_loop SET state_sha = ? WHERE id = 1 AND seq = ?", [sha, seq]));
  }

  /**
   * The loop.json this store's step last read in full (lib/step/definition.ts), if any: its bytes'
   * hash, what it normalized to, and the part of it the log does not record. A `meta` row, not an
   * event: it says nothing about the loop, only what a step may skip reading again.
   */
  knownDefinition(): string | null {
    return (this.db.query("SELECT value FROM meta WHERE key = 'definition'").get() as { value: string } | null)?.value ?? null;
  }

  /** Record what knownDefinition() returns, under this handle's lease (synchronous=NORMAL, as recordStateSha). */
  rememberDefinition(value: string): void {
    // IMMEDIATE: a deferred transaction that reads (the lease) before it writes does not wait for the
    // write lock, SQLite answers "database is locked" at once while another process holds it (a
    // racing `loop run` asking for the lease).
    this.relaxed(() => {
      try {
        this.db
          .transaction(() => {
            this.assertLease();
            this.db.run("INSERT INTO meta(key, value) VALUES ('definition', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [value]);
          })
          .immediate();
      } catch (err) {
        throw lockedError(this.db, this.stateRoot, err);
      }
    });
  }

  /** A write that may be lost to a power cut: synchronous=NORMAL (it cannot change inside a transaction). */
  private relaxed(fn: () => void): void {
    this.db.run("PRAGMA synchronous = NORMAL");
    try {
      fn();
    } finally {
      this.db.run("PRAGMA synchronous = FULL");
    }
  }

  /**
   * Record `project` as the store's owner (`loop init` for its loop's name, `loop init --adopt` for
   * a moved or renamed project): one store_bound event naming what it replaces, or nothing when
   * the store is bound to exactly that already. From then on this handle writes for `project`.
   */
  bindProject(project: ProjectIdentity, reason: string, actor: string): StoredEvent | null {
    this.project = undefined; // the binding itself replaces whatever this handle was checked against
    try {
      const view = this.loopView();
      if (sameBinding(view.loop.owner, project)) return null;
      // No failpoint label: like store_opened, the store's own bookkeeping, one event in one transaction.
      return this.append([{ type: "store_bound", payload: bindPayload(project, view.loop.owner, reason), actor }], { actor, expectSeq: view.seq }).events[0]!;
    } finally {
      this.project = project;
    }
  }

  /** Run fn inside one BEGIN IMMEDIATE transaction (fn must be synchronous). */
  tx<T>(fn: () => T): T {
    this.cache = null; // fn may write projection rows or events behind append's back
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      throw lockedError(this.db, this.stateRoot, err);
    } finally {
      this.cache = null;
    }
  }

  /**
   * Take the step lease. Lease rows are written with synchronous=NORMAL: losing one to a power cut
   * only frees the lease, which a crash does anyway; a takeover appends an event, and events are
   * always written with synchronous=FULL. This halves the fsyncs of a tick that only observes.
   */
  acquireLease(ttlMs: number, isAlive: (pid: number) => boolean, now = new Date(), tag?: string): LeaseResult {
    this.held = null; // a lease this handle held before (lost or not) no longer fences its writes
    // The safety level cannot change inside a transaction: a takeover is retried with FULL.
    this.db.run("PRAGMA synchronous = NORMAL");
    let r: LeaseResult | "takeover";
    try {
      r = this.takeLease(ttlMs, isAlive, now, false, tag);
    } finally {
      this.db.run("PRAGMA synchronous = FULL");
    }
    const got = r === "takeover" ? (this.takeLease(ttlMs, isAlive, now, true, tag) as LeaseResult) : r;
    if (got.ok) this.held = got.lease;
    return got;
  }

  private takeLease(ttlMs: number, isAlive: (pid: number) => boolean, now: Date, mayTakeOver: boolean, tag?: string): LeaseResult | "takeover" {
    return this.tx(() => {
      const cur = readLease(this.db);
      let tookOver: Lease | null = null;
      let takeover: StoredEventOf<"lease_taken_over"> | null = null;
      if (cur) {
        const why = leaseFreed(cur, now, isAlive);
        if (!why) return { ok: false as const, holder: cur };
        if (!mayTakeOver) return "takeover" as const;
        tookOver = cur;
        takeover = this.append([{ type: "lease_taken_over", payload: { previous: { ...cur }, why } }]).events[0] as StoredEventOf<"lease_taken_over">;
      }
      const lease = newLease(ttlMs, now, tag);
      writeLease(this.db, lease);
      return { ok: true as const, lease, tookOver, takeover };
    });
  }

  renewLease(lease: Lease, ttlMs: number): void {
    const expires = new Date(Date.now() + ttlMs).toISOString();
    const { changes } = this.db.run("UPDATE lease SET expires = ? WHERE id = 1 AND owner = ?", [expires, lease.owner]);
    if (changes === 0) this.checkHeld(lease);
    lease.expires = expires;
  }

  releaseLease(lease: Lease): void {
    if (this.held?.owner === lease.owner) this.held = null;
    this.db.run("PRAGMA synchronous = NORMAL");
    try {
      // Only our own row: a lease taken over meanwhile belongs to the step that took it.
      this.db.run("DELETE FROM lease WHERE id = 1 AND owner = ?", [lease.owner]);
    } finally {
      this.db.run("PRAGMA synchronous = FULL");
    }
  }

  /**
   * Throws LeaseLostError unless this handle still holds its lease. Appends check by themselves; a
   * step also asks before effects outside the store (git, killing a session), so a step that
   * outlived its lease stops before acting, not only before recording.
   */
  assertLease(): void {
    if (this.held) this.checkHeld(this.held);
  }

  private checkHeld(lease: Lease): void {
    const cur = readLease(this.db);
    // `held` stays set: every later write of this handle is refused too, until it releases.
    if (cur?.owner === lease.owner) return;
    throw leaseLost(lease, cur);
  }

  /**
   * Copy the WAL into the main file, without waiting for anyone. Writers checkpoint before a long
   * wait (a verify command) and when they close; the last connection to close also deletes the
   * WAL (SQLite does), so a read verb finds none and reads the main file in place.
   *
   * PASSIVE, never TRUNCATE or RESTART: those wait (the busy timeout, 10 s) for every reader to
   * leave the WAL, and a replicator such as Litestream holds a read transaction on it at all times,
   * so each step paid 10 s at close (measured: 10,024 ms with TRUNCATE, ~1 ms with PASSIVE, under
   * litestream 0.3.13). A WAL restarted under Litestream before it copied the frames would also
   * force it to start a new generation (docs/operations.md#litestream).
   */
  checkpoint(): void {
    try {
      this.db.run("PRAGMA wal_checkpoint(PASSIVE)");
    } catch (err) {
      if (!isBusy(err)) throw err;
    }
  }

  close(): void {
    try {
      this.checkpoint();
    } finally {
      this.db.close();
    }
  }
}
