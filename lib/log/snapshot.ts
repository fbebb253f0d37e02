// The read side of the store: opening a consistent read-only snapshot that leaves every file under
// the state root byte-identical, and reading the log head and the projection rows from it. Read
// verbs (status, replay) need nothing else, so this module does not load the event schemas or the
// reducer: a cold `loop status` pays for what it uses (bench/README.md).
import { Database, constants } from "bun:sqlite";
import { copyFileSync, existsSync, lstatSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, type Stats, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { loopLeftovers } from "../shared/state-root.ts";
import { StoreError } from "../shared/errors.ts";
import { pidAlive } from "../shared/process.ts";
import { EVENT_COLUMNS, type EventRow } from "./integrity.ts";
import { GENESIS_HASH } from "./canonical.ts";
import type { ItemState, LoopRecord, Projection } from "./projection.ts";
import { ITEM_TABLES, itemFromRows, type ItemTable, parseControlBody, parseLoopBody, putItem, REQUIRED_TABLES, type StoredLoopRow } from "./rows.ts";

/**
 * The store's layout version, in `meta`. 2: state.json's items carry the whole session (status reads
 * the file), so `proj_loop.state_sha` of a version-1 store hashes a document this code no longer
 * writes. 3: the loop row (and state.json's loop) carries `owner`, the project the store belongs to.
 * 4: the projection tables hold every field of the fold (none left out to keep older rows' bytes),
 * `state_sha` is recorded when state.json is written, and the tables have indexes on an item's
 * status, on its landing's outcome and on open sessions. 5: an attempt holds its own landing, landing
 * wait and reaction (the item shows its current attempt's: reducer.ts refreshItemView). 6: an item's forge
 * ledger carries `readFrom`, where its comments are read from. 7: usage (docs/spend.md): attempts
 * carry their usage, the loop record its sums and a budget pause, an item a budget stop (indexed).
 * 8: the loop record carries `cause`, why it is paused or stopped. 9: verdicts carry their codes: an
 * attempt's verify (`code`, `noProgress`) and landing (`code`), a settled item its `settleCode`, each
 * given to an older log's events by the fold (lib/log/legacy-codes.ts). 10: comment ids are strings
 * (a tracker's own ids, docs/trackers.md#comment-ids); an older log's numbers are read as theirs.
 * Writers upgrade older stores on open by folding the log again and
 * rewriting the tables (`migrate`); read verbs never write, so they refuse an older store with
 * `outdated_store` until a writer has opened it.
 */
export const SCHEMA_VERSION = 10;

export function dbPath(stateRoot: string): string {
  return join(stateRoot, "loop.db");
}

export function openWith(path: string, flags: number): Database {
  try {
    return new Database(path, flags);
  } catch (err) {
    throw storeError(err, `cannot open ${path}`);
  }
}

/** SQLite codes that say the environment refused (permissions, a read-only or full disk), not that the file is damaged. */
const ENVIRONMENT_CODES = /^SQLITE_(READONLY|CANTOPEN|IOERR|FULL|PERM|AUTH)/;

/** What went wrong opening a store, as a StoreError: an environment fault is `io_error` (exit 1), anything else `corrupt_store`. */
export function storeError(err: unknown, what: string): StoreError {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: string })?.code ?? "";
  // The cause is kept: a step tells a full disk from the SQLite code (lib/shared/disk.ts).
  if (ENVIRONMENT_CODES.test(code) || /^E[A-Z]+$/.test(code))
    return Object.assign(new StoreError("io_error", `${what}: ${(err as Error).message} (${code})`), { cause: err });
  return new StoreError("corrupt_store", `${what}: ${(err as Error).message}`);
}

/** The step lease (one row): who holds it and until when. Every writer takes it (lib/log/writer.ts). */
export interface Lease {
  owner: string;
  pid: number;
  host: string;
  started: string;
  expires: string;
}

/** The lease row, or null when no writer holds the lease. */
export function readLease(db: Database): Lease | null {
  return (db.query("SELECT owner, pid, host, started, expires FROM lease WHERE id = 1").get() as Lease | null) ?? null;
}

export function headOf(db: Database): { seq: number; hash: string } {
  const r = db.query("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").get() as { seq: number; hash: string } | null;
  return r ?? { seq: 0, hash: GENESIS_HASH };
}

/** The `meta` schema version, or 0 when it cannot be read (checkSchema then says why). */
export function schemaVersion(db: Database): number {
  try {
    const v = db.query("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | null;
    const n = Number(v?.value);
    return Number.isInteger(n) ? n : 0;
  } catch {
    return 0;
  }
}

export function checkSchema(db: Database, where: string) {
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
  if (version !== SCHEMA_VERSION) throw new StoreError("corrupt_store", `store under ${where} has no valid schema version, expected ${SCHEMA_VERSION}`);
}

/** The projection's loop row, or null when the table has none. */
export function findLoopRow(db: Database): StoredLoopRow | null {
  return db.query("SELECT seq, hash, state, body, state_sha FROM proj_loop WHERE id = 1").get() as StoredLoopRow | null;
}

export function readLoopRow(db: Database): StoredLoopRow {
  const r = findLoopRow(db);
  if (!r) throw new StoreError("corrupt_store", "projection table proj_loop has no row");
  return r;
}

/** The loop record and the item order, from the loop row: what a projection holds besides its items. */
export function readProjectionHead(db: Database): Projection {
  const row = readLoopRow(db);
  const { loop, order } = parsed(() => parseLoopBody(row.body), "proj_loop");
  return { seq: row.seq, hash: row.hash, loop, order, items: {} };
}

/** The loop record alone, from a loop row already read. */
export function loopRecordOf(row: StoredLoopRow): LoopRecord {
  return parsed(() => parseLoopBody(row.body), "proj_loop").loop;
}

/** Each item's control flags (held by `loop ctl stop`, started by `start` or `retry`), by item. */
export function readControlFlags(db: Database): Map<string, { held: boolean; started: boolean }> {
  const out = new Map<string, { held: boolean; started: boolean }>();
  for (const [id, body] of db.query("SELECT item, body FROM proj_control").values() as [string, string][]) {
    const { held, started } = parsed(() => parseControlBody(body), `of "${id}"`);
    out.set(id, { held, started });
  }
  return out;
}

/** Every item's rows, by item. */
export function readItemRows(db: Database): Map<string, Record<ItemTable, string | null>> {
  return collectRows(db, (t) => db.query(`SELECT item, body FROM ${t}`).values() as [string, string][]);
}

/** The rows of the items named (any number of them, in one query per table). */
function readItemRowsOf(db: Database, ids: readonly string[]): Map<string, Record<ItemTable, string | null>> {
  const list = JSON.stringify(ids);
  return collectRows(db, (t) => db.query(`SELECT item, body FROM ${t} WHERE item IN (SELECT value FROM json_each(?))`).values(list) as [string, string][]);
}

function collectRows(db: Database, rowsOf: (table: ItemTable) => [string, string][]): Map<string, Record<ItemTable, string | null>> {
  const items = new Map<string, Record<ItemTable, string | null>>();
  for (const t of ITEM_TABLES) {
    for (const [item, body] of rowsOf(t)) {
      let rows = items.get(item);
      if (!rows) {
        rows = { proj_items: null, proj_sessions: null, proj_control: null, proj_ledgers: null, proj_workspaces: null };
        items.set(item, rows);
      }
      rows[t] = body;
    }
  }
  return items;
}

/** An item from its rows; a required row missing, or a row that is not JSON, is damage (corrupt_store). */
function itemOfRows(id: string, rows: Record<ItemTable, string | null>): ItemState {
  // Every item has these three rows (rows.ts itemRow); a missing one is damage, not a default.
  for (const t of REQUIRED_TABLES) if (rows[t] === null) throw new StoreError("corrupt_store", `projection rows for "${id}" have no ${t} row`);
  return parsed(() => itemFromRows(rows), `of "${id}"`);
}

function parsed<T>(fn: () => T, what: string): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new StoreError("corrupt_store", `a projection row ${what} is not valid JSON: ${err.message}`);
  }
}

/** One item's rows, as readProjection reads them for every item, or null when it has none. */
export function readItem(db: Database, id: string): ItemState | null {
  return readItems(db, [id]).get(id) ?? null;
}

/** The items named that the projection has (an id without rows is left out), by id. */
export function readItems(db: Database, ids: readonly string[]): Map<string, ItemState> {
  const out = new Map<string, ItemState>();
  if (ids.length === 0) return out;
  for (const [id, rows] of readItemRowsOf(db, ids)) out.set(id, itemOfRows(id, rows));
  return out;
}

/** The whole projection: the loop row and every item's rows. */
export function readProjection(db: Database): Projection {
  const p = readProjectionHead(db);
  for (const [id, rows] of readItemRows(db)) putItem(p.items, id, itemOfRows(id, rows));
  return p;
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

/**
 * The store's file with symlinks resolved: SQLite keeps the -wal beside the real file, so a reader
 * looking beside a link would miss committed events (and open the file immutable).
 */
function realDbPath(stateRoot: string): string {
  const path = dbPath(stateRoot);
  if (!existsSync(path)) {
    refuseLostStore(stateRoot);
    throw new StoreError("missing_store", `no store at ${path} (run \`loop init\` first)`);
  }
  const real = realpathSync(path);
  const why = notRegular(real);
  if (why) throw new StoreError("corrupt_store", `store under ${stateRoot} is not a loop store: ${real} is ${why}, not a regular file, and was not opened`);
  return real;
}

/**
 * What a store file is when it is not a regular file (null when it is, or is gone): SQLite would
 * open a FIFO in its place and wait in the open for ever (every page of `loop serve`, `/metrics`
 * included, and `loop status`), and a device or a folder is no store either.
 */
function notRegular(path: string): string | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return null;
  }
  if (st.isFile()) return null;
  return st.isFIFO() ? "a FIFO" : st.isSymbolicLink() ? "a symbolic link" : st.isDirectory() ? "a folder" : st.isSocket() ? "a socket" : "a device";
}

const SNAPSHOT_PREFIX = "loop-snapshot-";
const SNAPSHOT_NAME = new RegExp(`^${SNAPSHOT_PREFIX}(\\d+)-(\\d+)-`);
/** A copy from another pid namespace (or of an older name) is swept only this old: its pid means nothing here. */
const FOREIGN_COPY_MAX_AGE_MS = 24 * 3_600_000;

/** This process's pid namespace, or "0" where /proc cannot say: a pid means something only within it. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0";
  } catch {
    return "0";
  }
}

/**
 * Remove the snapshot copies of readers that died before they could (`timeout`, Ctrl-C, SIGKILL
 * during a replay): each copy is a whole copy of the store, named after its reader's pid namespace
 * and pid. A copy of this user from this namespace whose pid is gone is removed at once; one from
 * another namespace (a container sharing /tmp) only after a day. Symlinks and other users' entries
 * are never touched, and a copy that cannot be removed is left: sweeping never fails a read.
 */
function sweepStaleSnapshots(ns: string): void {
  const dir = tmpdir();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // mkdtemp below reports an unusable temp directory
  }
  const uid = process.getuid?.();
  for (const name of names) {
    if (!name.startsWith(SNAPSHOT_PREFIX)) continue;
    // A name of another form (an older loop's copy) is judged by its age alone, like another namespace's.
    const m = SNAPSHOT_NAME.exec(name);
    const pid = Number(m?.[2]);
    const here = m !== null && ns !== "0" && m[1] === ns;
    if (here && pid === process.pid) continue;
    try {
      const st = lstatSync(join(dir, name));
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      if (here ? pidAlive(pid) : Date.now() - st.mtimeMs < FOREIGN_COPY_MAX_AGE_MS) continue;
      rmSync(join(dir, name), { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
}

function openSnapshot(stateRoot: string): ReadSnapshot {
  const path = realDbPath(stateRoot);
  const walWhy = notRegular(`${path}-wal`);
  if (walWhy)
    throw new StoreError("corrupt_store", `store under ${stateRoot} is not a loop store: ${path}-wal is ${walWhy}, not a regular file, and was not opened`);
  let walSize = 0;
  try {
    walSize = lstatSync(`${path}-wal`).size;
  } catch {}
  let db: Database;
  let tmp: string | null = null;
  let open: ReadSnapshot["open"];
  if (walSize === 0) {
    const uri = `file:${encodeURI(path).replace(/\?/g, "%3f").replace(/#/g, "%23")}?immutable=1`;
    db = openWith(uri, constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI);
    open = { path: uri, flags: constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI };
  } else {
    const ns = pidNamespace();
    sweepStaleSnapshots(ns);
    tmp = mkdtempSync(join(tmpdir(), `${SNAPSHOT_PREFIX}${ns}-${process.pid}-`));
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
    let outcome: ReadOutcome<T>;
    try {
      outcome = { ok: true, value: fn(reading.snap) };
    } catch (err) {
      outcome = { ok: false, err };
    }
    const done = reading.conclude(outcome, attempt);
    if (done) return done.value;
  }
}

/** withReadSnapshot for a reader that awaits (replay's worker thread reads the same snapshot). */
export async function withReadSnapshotAsync<T>(stateRoot: string, fn: (snap: ReadSnapshot) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const reading = startRead(stateRoot);
    let outcome: ReadOutcome<T>;
    try {
      outcome = { ok: true, value: await fn(reading.snap) };
    } catch (err) {
      outcome = { ok: false, err };
    }
    const done = reading.conclude(outcome, attempt);
    if (done) return done.value;
  }
}

type ReadOutcome<T> = { ok: true; value: T } | { ok: false; err: unknown };

/** One attempt at a consistent read: the snapshot, and whether a writer moved the files meanwhile. */
function startRead(stateRoot: string) {
  const path = realDbPath(stateRoot);
  const sig = () => fileSig(path) + "|" + fileSig(`${path}-wal`);
  const before = sig();
  const snap = openSnapshot(stateRoot);
  return {
    snap,
    /**
     * Close the snapshot and decide: the value (the files did not change while reading, or we gave
     * up waiting for a quiet moment), null to read again, or the error thrown. An SQLite error while
     * a writer changed the files may be a torn read: read again. Anything else is a real error.
     */
    conclude<T>(o: ReadOutcome<T>, attempt: number): { value: T } | null {
      snap.close();
      const moved = sig() !== before;
      if (!o.ok) {
        const code = (o.err as { code?: string }).code ?? "";
        if (!(o.err instanceof StoreError) && attempt < 4 && code.startsWith("SQLITE") && moved) return null;
        throw o.err;
      }
      return !moved || attempt >= 4 ? { value: o.value } : null;
    },
  };
}

/** Events in seq order, read in pages of rows (bounded memory); replay's passes use one cursor each instead. */
export function* iterateEvents(db: Database, fromSeq = 1, pageSize = 10_000): Generator<EventRow> {
  const page = db.query(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq >= ? ORDER BY seq LIMIT ?`);
  for (let next = fromSeq; ; ) {
    const rows = page.all(next, pageSize) as EventRow[];
    yield* rows;
    if (rows.length < pageSize) return;
    next = rows[rows.length - 1]!.seq + 1;
  }
}

/** A state root that has seen a loop run, without its store: never taken for a new loop (docs/state.md#a-lost-store). */
export function refuseLostStore(stateRoot: string): void {
  const leftovers = loopLeftovers(stateRoot);
  if (!leftovers.length) return;
  const path = dbPath(stateRoot);
  // Looked at again after the leftovers: a concurrent first step makes loop.db before any of them, so
  // a store there now was made meanwhile (the caller's own look came before it), not lost.
  if (lstatSync(path, { throwIfNoEntry: false })) return;
  throw new StoreError(
    "store_missing",
    `${path} is missing, but ${stateRoot} holds a loop's files (${leftovers.map((f) => basename(f)).join(", ")}): a new store would run passed items again and forget what was spent. Restore loop.db from a backup (\`loop backup\`'s copy or Litestream: docs/state.md#backing-up), or, to start this loop afresh, move ${stateRoot} away first`,
  );
}
