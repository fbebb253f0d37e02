// The store: one SQLite file holding the append-only, hash-chained event log, the projection
// tables (updated in the same transaction as each event) and the step lease.
import { Database, constants } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { CanonicalJsonError, canonicalJson, sha256Hex } from "./canonical.ts";
import { type EventDraft, GENESIS_HASH, payloadProblem, type StoredEvent } from "./events.ts";
import { failpoint } from "./failpoint.ts";
import { emptyProjection, type Projection, reduceInto, touchedItems } from "./reducer.ts";
import { ITEM_TABLES, type ItemTable, itemRows, loopRow, type LoopRow, projectionFromRows } from "./rows.ts";
import { StoreError } from "./errors.ts";
import { EVENT_COLUMNS, type EventRow } from "./integrity.ts";
export { type EventRow, type EventRowBase, hashInput } from "./integrity.ts";
export { StoreError, type StoreErrorCode } from "./errors.ts";

/**
 * The store's layout version, in `meta`. 2: state.json's items carry the whole session (status reads
 * the file), so `proj_loop.state_sha` of a version-1 store hashes a document this code no longer
 * writes. Writers upgrade older stores on open (`migrate`); read verbs never write, so they refuse
 * an older store with `outdated_store` until a writer has opened it.
 */
export const SCHEMA_VERSION = 2;
const BUSY_TIMEOUT_MS = 10_000;

export function dbPath(stateRoot: string): string {
  return join(stateRoot, "loop.db");
}

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
`;

export function rowToEvent(r: EventRow): StoredEvent {
  return { ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) };
}

function openWith(path: string, flags: number): Database {
  try {
    return new Database(path, flags);
  } catch (err) {
    throw new StoreError("corrupt_store", `cannot open ${path}: ${(err as Error).message}`);
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? "";
  return code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED");
}

export interface Lease {
  owner: string;
  pid: number;
  host: string;
  started: string;
  expires: string;
}

export type LeaseResult = { ok: true; lease: Lease; tookOver: Lease | null } | { ok: false; holder: Lease };

/** Read-write handle: used by `loop init`, `loop run`, `loop ctl`. */
export class Store {
  private constructor(
    readonly db: Database,
    readonly stateRoot: string,
  ) {}

  /** Open (creating when asked) the store under stateRoot. */
  static open(stateRoot: string, opts: { create?: boolean; actor?: string } = {}): Store {
    const path = dbPath(stateRoot);
    if (!existsSync(path) && !opts.create)
      throw new StoreError("missing_store", `no store at ${path} (run \`loop init\` first)`);
    mkdirSync(stateRoot, { recursive: true });
    const db = openWith(path, constants.SQLITE_OPEN_READWRITE | constants.SQLITE_OPEN_CREATE);
    const store = new Store(db, stateRoot);
    try {
      db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      store.retryBusy(() => db.run("PRAGMA journal_mode = WAL"));
      db.run("PRAGMA synchronous = FULL");
      // No automatic checkpoints: a writer checkpoints at close and before a long wait (checkpoint()).
      db.run("PRAGMA wal_autocheckpoint = 0");
      store.retryBusy(() => store.ensureSchema(opts.actor ?? "loop"));
    } catch (err) {
      db.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError("corrupt_store", `cannot use ${path}: ${(err as Error).message}`);
    }
    return store;
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

  private ensureSchema(actor: string) {
    const hasEvents = this.db.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='events'").get();
    if (hasEvents) {
      if (schemaVersion(this.db) < SCHEMA_VERSION) this.db.transaction(() => this.migrate()).immediate();
      checkSchema(this.db, this.stateRoot);
      return;
    }
    this.db
      .transaction(() => {
        // Re-check under the write lock: another process may have created it meanwhile.
        if (this.db.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='events'").get()) return;
        // Only an empty database becomes a loop store: one holding other tables is not ours, and
        // writing our schema into it would change someone else's file.
        const other = this.db.query("SELECT name FROM sqlite_master WHERE type='table' LIMIT 1").get() as { name: string } | null;
        if (other)
          throw new StoreError("corrupt_store", `${dbPath(this.stateRoot)} is not a loop store (it has table "${other.name}" but no events)`);
        this.db.run(SCHEMA);
        this.db.run("INSERT INTO meta(key, value) VALUES ('schema', ?)", [String(SCHEMA_VERSION)]);
        const p = emptyProjection();
        const row = loopRow(p);
        this.db.run("INSERT INTO proj_loop(id, seq, hash, state, body, state_sha) VALUES (1, ?, ?, ?, ?, ?)", [
          row.seq,
          row.hash,
          row.state,
          row.body,
          row.state_sha,
        ]);
        this.append([{ type: "store_opened", payload: { schema: SCHEMA_VERSION, tool: "loop" }, actor }]);
      })
      .immediate();
  }

  /** Bring an older store to SCHEMA_VERSION, under the write lock. No event: the log is unchanged. */
  private migrate() {
    const from = schemaVersion(this.db);
    if (from >= SCHEMA_VERSION || from < 1) return; // another writer did it, or not ours (checkSchema says why)
    // 1 -> 2: the projection's record of the state.json it materializes to is recomputed; the next
    // materialization sees the file differ and rewrites it in the new layout.
    const p = readProjection(this.db);
    this.db.run("UPDATE proj_loop SET state_sha = ? WHERE id = 1", [loopRow(p).state_sha]);
    this.db.run("UPDATE meta SET value = ? WHERE key = 'schema'", [String(SCHEMA_VERSION)]);
  }

  head(): { seq: number; hash: string } {
    return headOf(this.db);
  }

  /**
   * The projection, read from its tables once and kept while nothing changes: a step asks for it
   * several times, and on a loop of many items each read parses thousands of rows. Another
   * connection's commit changes `data_version`; this handle's own writes replace or drop the copy.
   * The object is shared between callers: read it, never change it.
   */
  projection(): Projection {
    const version = this.dataVersion();
    if (this.cached?.version === version) return this.cached.p;
    const p = readProjection(this.db);
    this.cached = { version, p };
    return p;
  }

  private cached: { version: number; p: Projection } | null = null;

  private dataVersion(): number {
    return (this.db.query("PRAGMA data_version").get() as { data_version: number }).data_version;
  }

  /**
   * Append events atomically: validate each payload, fold it into the projection (an illegal
   * sequence aborts everything), insert the rows and rewrite the touched projection rows, all in
   * one BEGIN IMMEDIATE transaction. `expectSeq` is a compare-and-swap on the log head.
   */
  append(drafts: EventDraft[], opts: { expectSeq?: number; actor?: string; now?: string; label?: string } = {}): {
    events: StoredEvent[];
    projection: Projection;
  } {
    for (const d of drafts) {
      const problem = payloadProblem(d.type, d.payload);
      if (problem) throw new StoreError("invalid_event", `${d.type}: ${problem}`);
    }
    this.cached = null;
    const run = this.db.transaction(() => {
      const head = headOf(this.db);
      if (opts.expectSeq !== undefined && head.seq !== opts.expectSeq)
        throw new StoreError("seq_conflict", `log head is seq ${head.seq}, expected ${opts.expectSeq}`);
      const p = readProjection(this.db);
      if (p.seq !== head.seq || p.hash !== head.hash)
        throw new StoreError("corrupt_store", `projection is at seq ${p.seq} but the log is at seq ${head.seq}`);
      // query(), not prepare(): a prepared statement nobody finalizes turns close() into a deferred
      // close (sqlite3_close_v2), leaving -wal/-shm behind until GC closes the file at a random time.
      // Cached statements are finalized by close().
      const insert = this.db.query(
        "INSERT INTO events(seq, id, ts, type, actor, item, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)",
      );
      const touched = new Set<string>();
      const out: StoredEvent[] = [];
      for (const d of drafts) {
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
        const ev: StoredEvent = { ...base, payload: JSON.parse(payloadText), hash };
        reduceInto(p, ev);
        for (const id of touchedItems(p, ev)) touched.add(id);
        try {
          insert.run(seq, base.id, base.ts, base.type, base.actor, base.item, payloadText, base.prev_hash, hash);
        } catch (err) {
          if (String((err as Error).message).includes("UNIQUE constraint failed: events.id"))
            throw new StoreError("duplicate_event", `an event with id "${base.id}" already exists`);
          throw err;
        }
        out.push(ev);
      }
      writeProjection(this.db, p, touched);
      // Killed here, the open transaction is rolled back by SQLite: nothing of it exists.
      if (opts.label) failpoint(`${opts.label}:before_commit`);
      return { events: out, projection: p };
    });
    const result = run.immediate();
    // Committed, unless an enclosing transaction (tx) may still roll it back: then read afresh.
    if (!this.db.inTransaction) this.cached = { version: this.dataVersion(), p: result.projection };
    if (opts.label) failpoint(`${opts.label}:after_commit`);
    return result;
  }

  /** Run fn inside one BEGIN IMMEDIATE transaction (fn must be synchronous). */
  tx<T>(fn: () => T): T {
    this.cached = null; // fn may write projection rows or events behind append's back
    return this.db.transaction(fn).immediate();
  }

  /**
   * Take the step lease. Lease rows are written with synchronous=NORMAL: losing one to a power cut
   * only frees the lease, which a crash does anyway; a takeover appends an event, and events are
   * always written with synchronous=FULL. This halves the fsyncs of a tick that only observes.
   */
  acquireLease(ttlMs: number, isAlive: (pid: number) => boolean, now = new Date()): LeaseResult {
    // The safety level cannot change inside a transaction: a takeover is retried with FULL.
    this.db.run("PRAGMA synchronous = NORMAL");
    let r: LeaseResult | "takeover";
    try {
      r = this.takeLease(ttlMs, isAlive, now, false);
    } finally {
      this.db.run("PRAGMA synchronous = FULL");
    }
    return r === "takeover" ? (this.takeLease(ttlMs, isAlive, now, true) as LeaseResult) : r;
  }

  private takeLease(ttlMs: number, isAlive: (pid: number) => boolean, now: Date, mayTakeOver: boolean): LeaseResult | "takeover" {
    return this.tx(() => {
      const cur = this.db.query("SELECT owner, pid, host, started, expires FROM lease WHERE id = 1").get() as Lease | null;
      const host = hostname();
      let tookOver: Lease | null = null;
      if (cur) {
        const expired = Date.parse(cur.expires) <= now.getTime();
        const dead = cur.host === host && !isAlive(cur.pid);
        if (!expired && !dead) return { ok: false as const, holder: cur };
        if (!mayTakeOver) return "takeover" as const;
        tookOver = cur;
        this.append([
          { type: "lease_taken_over", payload: { previous: { ...cur }, why: dead ? "dead" : "expired" } },
        ]);
      }
      const lease: Lease = {
        owner: crypto.randomUUID(),
        pid: process.pid,
        host,
        started: now.toISOString(),
        expires: new Date(now.getTime() + ttlMs).toISOString(),
      };
      this.db.run("INSERT OR REPLACE INTO lease(id, owner, pid, host, started, expires) VALUES (1,?,?,?,?,?)", [
        lease.owner,
        lease.pid,
        lease.host,
        lease.started,
        lease.expires,
      ]);
      return { ok: true as const, lease, tookOver };
    });
  }

  renewLease(lease: Lease, ttlMs: number): void {
    lease.expires = new Date(Date.now() + ttlMs).toISOString();
    this.db.run("UPDATE lease SET expires = ? WHERE id = 1 AND owner = ?", [lease.expires, lease.owner]);
  }

  releaseLease(lease: Lease): void {
    this.db.run("PRAGMA synchronous = NORMAL");
    try {
      this.db.run("DELETE FROM lease WHERE id = 1 AND owner = ?", [lease.owner]);
    } finally {
      this.db.run("PRAGMA synchronous = FULL");
    }
  }

  /**
   * Copy the WAL into the main file and empty it. A read verb that finds WAL content must copy the
   * whole database to read it without writing (withReadSnapshot), so a writer about to wait a long
   * time (a verify command) checkpoints first; otherwise writers checkpoint only when they close.
   */
  checkpoint(): void {
    try {
      // Blocked by another connection's transaction it only does part of the work (that
      // connection's closer finishes it); it throws only when the database is locked.
      this.db.run("PRAGMA wal_checkpoint(TRUNCATE)");
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

function headOf(db: Database): { seq: number; hash: string } {
  const r = db.query("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").get() as
    | { seq: number; hash: string }
    | null;
  return r ?? { seq: 0, hash: GENESIS_HASH };
}

/** The `meta` schema version, or 0 when it cannot be read (checkSchema then says why). */
function schemaVersion(db: Database): number {
  try {
    const v = db.query("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | null;
    const n = Number(v?.value);
    return Number.isInteger(n) ? n : 0;
  } catch {
    return 0;
  }
}

function checkSchema(db: Database, where: string) {
  try {
    db.query("SELECT value FROM meta LIMIT 0").all();
    // One query for every table: each prepared statement costs a cold read verb a fraction of a ms.
    const tables = new Set((db.query("SELECT name FROM sqlite_master WHERE type = 'table'").values() as [string][]).map(([n]) => n));
    for (const t of ["events", "proj_loop", ...ITEM_TABLES, "lease"]) if (!tables.has(t)) throw new Error(`table ${t} is missing`);
    db.query("SELECT seq, hash, state, body, state_sha FROM proj_loop LIMIT 0").all();
  } catch (err) {
    throw new StoreError("corrupt_store", `store under ${where} is not a loop store: ${(err as Error).message}`);
  }
  const version = schemaVersion(db);
  if (version >= 1 && version < SCHEMA_VERSION)
    throw new StoreError(
      "outdated_store",
      `store under ${where} has schema ${version} from an older loop; \`loop run\` or \`loop ctl\` upgrades it (read verbs never write)`,
    );
  if (version > SCHEMA_VERSION)
    throw new StoreError("corrupt_store", `store under ${where} has schema ${version}, from a newer loop than this one (schema ${SCHEMA_VERSION})`);
  if (version !== SCHEMA_VERSION)
    throw new StoreError("corrupt_store", `store under ${where} has no valid schema version, expected ${SCHEMA_VERSION}`);
}

export function readLoopRow(db: Database): LoopRow {
  const r = db.query("SELECT seq, hash, state, body, state_sha FROM proj_loop WHERE id = 1").get() as LoopRow | null;
  if (!r) throw new StoreError("corrupt_store", "projection table proj_loop has no row");
  return r;
}

export function readItemRows(db: Database): Map<string, Record<ItemTable, string | null>> {
  const items = new Map<string, Record<ItemTable, string | null>>();
  for (const t of ITEM_TABLES) {
    for (const r of db.query(`SELECT item, body FROM ${t}`).all() as { item: string; body: string }[]) {
      let rows = items.get(r.item);
      if (!rows) {
        rows = Object.fromEntries(ITEM_TABLES.map((table) => [table, null])) as Record<ItemTable, string | null>;
        items.set(r.item, rows);
      }
      rows[t] = r.body;
    }
  }
  return items;
}

export function readProjection(db: Database): Projection {
  const items = readItemRows(db);
  for (const [id, rows] of items)
    if (rows.proj_items === null) throw new StoreError("corrupt_store", `projection rows for "${id}" have no proj_items row`);
  return projectionFromRows(readLoopRow(db), items);
}

function writeProjection(db: Database, p: Projection, touched: Set<string>) {
  const lr = loopRow(p);
  db.run("UPDATE proj_loop SET seq = ?, hash = ?, state = ?, body = ?, state_sha = ? WHERE id = 1", [lr.seq, lr.hash, lr.state, lr.body, lr.state_sha]);
  for (const id of touched) {
    const it = p.items[id];
    if (!it) continue;
    const rows = itemRows(it);
    for (const t of ITEM_TABLES) {
      const body = rows[t];
      if (body === null) db.run(`DELETE FROM ${t} WHERE item = ?`, [id]);
      else db.run(`INSERT INTO ${t}(item, body) VALUES (?, ?) ON CONFLICT(item) DO UPDATE SET body = excluded.body`, [id, body]);
    }
  }
}

/** Rewrite every projection row from a projection (used by bulk loading in bench/generate). */
export function writeWholeProjection(db: Database, p: Projection) {
  for (const t of ITEM_TABLES) db.run(`DELETE FROM ${t}`);
  writeProjection(db, p, new Set(Object.keys(p.items)));
}

// ---------------------------------------------------------------------------------------------
// Read-only access. Read verbs must leave the state root byte-identical. With no WAL content the
// main file is opened `immutable` (SQLite then creates no -wal/-shm and takes no locks). When a
// -wal exists (a live step, or one that was killed) the database and its WAL are copied to a
// private temp directory and the copy is opened, so recovery happens there, never in the state root.
// A reader re-checks the files afterwards and reads again if a writer changed them meanwhile.

export interface ReadSnapshot {
  db: Database;
  /** true when the snapshot came from a copy because a -wal was present. */
  copied: boolean;
  /** How db was opened, so another thread can open the same snapshot read-only. */
  open: { path: string; flags: number };
  close(): void;
}

function fileSig(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return "-";
  }
}

function openSnapshot(stateRoot: string): ReadSnapshot {
  const path = dbPath(stateRoot);
  if (!existsSync(path)) throw new StoreError("missing_store", `no store at ${path} (run \`loop init\` first)`);
  let walSize = 0;
  try {
    walSize = statSync(`${path}-wal`).size;
  } catch {}
  let db: Database;
  let tmp: string | null = null;
  let open: ReadSnapshot["open"];
  if (walSize === 0) {
    const uri = `file:${encodeURI(path).replace(/\?/g, "%3f").replace(/#/g, "%23")}?immutable=1`;
    db = openWith(uri, constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI);
    open = { path: uri, flags: constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI };
  } else {
    tmp = mkdtempSync(join(tmpdir(), "loop-snapshot-"));
    try {
      copyFileSync(path, join(tmp, "loop.db"));
      copyFileSync(`${path}-wal`, join(tmp, "loop.db-wal"));
      db = openWith(join(tmp, "loop.db"), constants.SQLITE_OPEN_READWRITE);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      // The writer closed between the stat and the copy: its checkpoint emptied the WAL into the
      // main file, which can now be read in place.
      if ((err as NodeJS.ErrnoException).code === "ENOENT" && !existsSync(`${path}-wal`)) return openSnapshot(stateRoot);
      throw err;
    }
    open = { path: join(tmp, "loop.db"), flags: constants.SQLITE_OPEN_READONLY };
  }
  const close = () => {
    db.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  };
  try {
    checkSchema(db, stateRoot);
  } catch (err) {
    close();
    throw err;
  }
  return { db, copied: tmp !== null, open, close };
}

/** Run fn against a consistent read-only snapshot of the store; nothing under stateRoot changes. */
export function withReadSnapshot<T>(stateRoot: string, fn: (snap: ReadSnapshot) => T): T {
  for (let attempt = 0; ; attempt++) {
    const reading = startRead(stateRoot);
    let result: T;
    try {
      result = fn(reading.snap);
    } catch (err) {
      reading.snap.close();
      if (reading.retryAfter(err, attempt)) continue;
      throw err;
    }
    reading.snap.close();
    if (reading.settled(attempt)) return result;
  }
}

/** withReadSnapshot for a reader that awaits (replay's worker thread reads the same snapshot). */
export async function withReadSnapshotAsync<T>(stateRoot: string, fn: (snap: ReadSnapshot) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const reading = startRead(stateRoot);
    let result: T;
    try {
      result = await fn(reading.snap);
    } catch (err) {
      reading.snap.close();
      if (reading.retryAfter(err, attempt)) continue;
      throw err;
    }
    reading.snap.close();
    if (reading.settled(attempt)) return result;
  }
}

/** One attempt at a consistent read: the snapshot, and whether a writer moved the files meanwhile. */
function startRead(stateRoot: string) {
  const path = dbPath(stateRoot);
  const sig = () => fileSig(path) + "|" + fileSig(`${path}-wal`);
  const before = sig();
  const snap = openSnapshot(stateRoot);
  return {
    snap,
    // An SQLite error while a writer changed the files may be a torn read: read again. Anything
    // else (or files that did not change) is a real error.
    retryAfter(err: unknown, attempt: number): boolean {
      const code = (err as { code?: string }).code ?? "";
      return !(err instanceof StoreError) && attempt < 4 && code.startsWith("SQLITE") && sig() !== before;
    },
    /** The files did not change while reading (or we gave up waiting for a quiet moment). */
    settled(attempt: number): boolean {
      return sig() === before || attempt >= 4;
    },
  };
}

/** Events in seq order, read in pages of rows (bounded memory); replay's passes use one cursor each instead. */
export function* iterateEvents(db: Database, fromSeq = 1, pageSize = 10_000): Generator<EventRow> {
  const page = db.query(
    `SELECT ${EVENT_COLUMNS} FROM events WHERE seq >= ? ORDER BY seq LIMIT ?`,
  );
  for (let next = fromSeq; ; ) {
    const rows = page.all(next, pageSize) as EventRow[];
    yield* rows;
    if (rows.length < pageSize) return;
    next = rows[rows.length - 1]!.seq + 1;
  }
}

export { headOf };
