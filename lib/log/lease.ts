// The step lease's own rules: who may take it over, the row a new lease writes, and what a step
// that lost it is told. The store (store.ts) takes, renews and fences with them.
import type { Database } from "bun:sqlite";
import { hostname } from "node:os";
import { LeaseLostError } from "../shared/errors.ts";
import type { Lease } from "./snapshot.ts";

/** Owners of the leases this process took (any handle): the only leases its pid can hold. */
const leasesTakenHere = new Set<string>();

/**
 * A lease naming this process's pid that this process never took was another process's (a
 * container restarted and counted pids from 1 again): its holder is gone, though the pid is alive.
 */
function pidReusedSince(lease: Lease): boolean {
  return lease.pid === process.pid && !leasesTakenHere.has(lease.owner);
}

/** Why `cur` may be taken over now (its holder on this host is gone, or it ran out), or null while it holds. */
export function leaseFreed(cur: Lease, now: Date, isAlive: (pid: number) => boolean): "dead" | "expired" | null {
  if (cur.host === hostname() && (!isAlive(cur.pid) || pidReusedSince(cur))) return "dead";
  if (Date.parse(cur.expires) <= now.getTime()) return "expired";
  return null;
}

/** A new lease for this process, remembered as taken here. */
export function newLease(ttlMs: number, now: Date, tag?: string): Lease {
  const lease: Lease = {
    // A tag says what kind of holder it is (`chained`: a step a wrapper started), for a busy answer's words.
    owner: tag ? `${tag}:${crypto.randomUUID()}` : crypto.randomUUID(),
    pid: process.pid,
    host: hostname(),
    started: now.toISOString(),
    expires: new Date(now.getTime() + ttlMs).toISOString(),
  };
  leasesTakenHere.add(lease.owner);
  return lease;
}

export function writeLease(db: Database, lease: Lease): void {
  db.run("INSERT OR REPLACE INTO lease(id, owner, pid, host, started, expires) VALUES (1,?,?,?,?,?)", [
    lease.owner,
    lease.pid,
    lease.host,
    lease.started,
    lease.expires,
  ]);
}

/** What a step that outlived its lease is told (`cur`: the lease row now, if any). */
export function leaseLost(lease: Lease, cur: Lease | null): LeaseLostError {
  const took = `the lease this process took at ${lease.started} (expiring ${lease.expires})`;
  return new LeaseLostError(
    cur
      ? `${took} was taken over by pid ${cur.pid} on ${cur.host} at ${cur.started}; it stops without writing more`
      : `${took} is gone; it stops without writing more`,
  );
}
