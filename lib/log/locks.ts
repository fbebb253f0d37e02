// Who holds a lock on the store. SQLite locks loop.db and its WAL index (loop.db-shm) with POSIX
// advisory locks, which Linux lists in /proc/locks by device and inode. A write lock there held by
// a process that is not a loop step (an agent running `sqlite3 .loop/loop.db 'BEGIN EXCLUSIVE'`, a
// stuck tool) makes every writer wait for its busy timeout and give up: the writer's error and
// `loop status` name it instead of saying "database is locked" or "healthy" (lockedError: a writer's
// answer once it waited out the lock). Linux only; elsewhere nothing is found.
import type { Database } from "bun:sqlite";
import { readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { StoreError } from "../shared/errors.ts";
import { dbPath, type Lease, readLease } from "./snapshot.ts";

/** How long a writer waits for SQLite's write lock before it names who holds it. */
export const BUSY_TIMEOUT_MS = 10_000;

/** One lock line of /proc/locks, for a file we asked about. */
interface HeldLock {
  pid: number;
  /** The file's name as the caller gave it (loop.db, loop.db-shm). */
  file: string;
  write: boolean;
  start: number;
  /** Inclusive; Infinity for EOF. */
  end: number;
}

/** SQLite's WAL-index lock bytes a writer takes exclusively: the write lock, checkpoint, recovery. */
const SHM_WRITER_BYTES = { from: 120, to: 122 };

/**
 * The locks /proc/locks lists on the given files (`key` is `<major hex>:<minor hex>:<inode>`, as
 * /proc/locks prints it). Waiters (`->` lines) and locks without a pid (OFD locks) are left out. Pure.
 */
export function parseProcLocks(text: string, files: ReadonlyMap<string, string>): HeldLock[] {
  const out: HeldLock[] = [];
  for (const line of text.split("\n")) {
    if (line.includes("->")) continue;
    const f = line.trim().split(/\s+/);
    // "<n>: POSIX ADVISORY WRITE <pid> <maj:min:inode> <start> <end>"
    if (f.length < 8) continue;
    const file = files.get(f[5]!);
    const pid = Number(f[4]);
    if (file === undefined || !Number.isSafeInteger(pid) || pid <= 0) continue;
    out.push({ pid, file, write: f[3] === "WRITE", start: Number(f[6]), end: f[7] === "EOF" ? Infinity : Number(f[7]) });
  }
  return out;
}

/** The locks that stop a writer: any write lock on loop.db, or on the writer bytes of loop.db-shm. Pure. */
export function blockingLocks(locks: HeldLock[]): HeldLock[] {
  return locks.filter((l) => l.write && (l.file === "loop.db" || (l.start <= SHM_WRITER_BYTES.to && l.end >= SHM_WRITER_BYTES.from)));
}

/** The /proc/locks key of a file: device as major:minor in hex, then the inode. */
function lockKey(path: string): string | null {
  try {
    const st = statSync(path, { bigint: true });
    const dev = st.dev;
    const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
    const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
    return `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}:${st.ino}`;
  } catch {
    return null;
  }
}

function commandOf(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    return argv.length > 200 ? `${argv.slice(0, 200)}…` : argv;
  } catch {
    return "";
  }
}

/** Processes (other than those in `except`) holding a lock that stops the store's writers, each once. */
export function storeLockHolders(dbPath: string, except: number[] = []): { pid: number; file: string; command: string }[] {
  const files = new Map<string, string>();
  for (const [path, name] of [
    [dbPath, "loop.db"],
    [`${dbPath}-shm`, "loop.db-shm"],
  ] as const) {
    const key = lockKey(path);
    if (key) files.set(key, name);
  }
  let text: string;
  try {
    text = readFileSync("/proc/locks", "utf8");
  } catch {
    return [];
  }
  const seen = new Set<number>(except);
  const out: { pid: number; file: string; command: string }[] = [];
  for (const l of blockingLocks(parseProcLocks(text, files))) {
    if (seen.has(l.pid)) continue;
    seen.add(l.pid);
    out.push({ pid: l.pid, file: l.file, command: commandOf(l.pid) });
  }
  return out;
}

/** One sentence naming the holders, for an error or a finding (their command lines are quoted, never raw). */
export function describeLockHolders(holders: { pid: number; file: string; command: string }[]): string {
  const who = holders.map((h) => `process ${h.pid}${h.command ? ` (${JSON.stringify(h.command)})` : ""} holds a write lock on ${h.file}`).join("; ");
  return `${who}: every writer of the store waits for it and gives up. It is not a loop step; end it, and find out who started it (an agent run without the sandbox can reach loop.db)`;
}

export function isBusy(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? "";
  return code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED");
}

/**
 * A write that waited out the busy timeout: `store_locked`, naming who holds the lock (another
 * process's write lock, from /proc/locks: lib/log/locks.ts), instead of SQLite's "database is
 * locked". Any other error is returned as it is.
 */
export function lockedError(db: Database, stateRoot: string, err: unknown): unknown {
  if (!isBusy(err) || err instanceof StoreError) return err;
  const path = dbPath(stateRoot);
  let lease: Lease | null = null;
  try {
    lease = readLease(db);
  } catch {
    // the lease cannot even be read: name whoever holds the lock
  }
  const stepPid = lease && lease.host === hostname() ? lease.pid : null;
  const others = storeLockHolders(path, [process.pid, ...(stepPid !== null ? [stepPid] : [])]);
  if (others.length) return new StoreError("store_locked", `${path} is locked: ${describeLockHolders(others)}`);
  const byStep = stepPid !== null && storeLockHolders(path, [process.pid]).some((h) => h.pid === stepPid);
  return new StoreError(
    "store_locked",
    byStep
      ? `${path} stayed locked for ${BUSY_TIMEOUT_MS / 1000} s by the step holding the lease (pid ${stepPid}); try again later`
      : `${path} stayed locked for ${BUSY_TIMEOUT_MS / 1000} s (${(err as Error).message}), by no process this machine lists: another machine sharing the file, or a process of another pid namespace`,
  );
}
