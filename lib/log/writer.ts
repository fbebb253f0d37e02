// The one path every command that writes the log takes (a `loop run` step, `loop ctl`, `loop reset`,
// `loop init --adopt`): open the store for the command's project (a store of another project is
// refused before anything changes: lib/log/ownership.ts), take the step lease (a live holder: busy,
// exit 75, nothing done), plan again under it from the projection as it is now, append, materialize
// the files, release. A command that asks first (a dry run, a prompt) plans before the lease from a
// read-only snapshot, so that a dry run, a refusal or a declined prompt leaves the state root as it
// was, not even a -wal or -shm file; what it asked about is planned again under the lease, because
// the state may have moved while the prompt was open.
import type { EventDraft, StoredEvent, StoredEventOf } from "./events.ts";
import { materialize as writeFiles } from "./materialize.ts";
import { assertOwnership, noWorkYet, type ProjectIdentity } from "./ownership.ts";
import type { Projection } from "./projection.ts";
import { existsSync, realpathSync } from "node:fs";
import { Store } from "./store.ts";
import { dbPath, type Lease, readLease, readProjection, withReadSnapshot } from "./snapshot.ts";
import { StoreError } from "./../shared/errors.ts";
import { type CommitLabel, failpoint } from "../shared/failpoint.ts";
import { pidAlive } from "../shared/process.ts";

/** A command's hold on the store: its lease, its appends, its files. */
export interface Writer {
  readonly store: Store;
  readonly lease: Lease;
  /** The lease_taken_over event recorded when this writer took the lease of a dead or expired holder, else null. */
  readonly takeover: StoredEventOf<"lease_taken_over"> | null;
  /** Record `drafts` in one commit labelled `label` (its failpoints), each as the command's actor unless it names its own. */
  append(drafts: EventDraft[], label: CommitLabel): StoredEvent[];
  /** Bring state.json, terminal_state.json and RUNLOG.md in line with the log (lib/log/materialize.ts). */
  materialize(): void;
  /** Something was appended since the files were last materialized. */
  readonly stale: boolean;
}

/** What a command says about the lease it takes. */
interface LeaseTerms {
  actor: string;
  /** How long the lease lasts: a writer waits on no agent and no verify (only a step's notify command renews it). */
  ttlMs: number;
  /** The error a live holder makes (a BusyError, exit 75), saying what the command did not do. */
  busy: (holder: Lease) => Error;
  /** What kind of holder this is, kept in the lease's owner (lib/log/lease.ts newLease). */
  tag?: string;
}

class LeasedWriter implements Writer {
  stale = false;
  constructor(
    readonly store: Store,
    readonly lease: Lease,
    readonly takeover: StoredEventOf<"lease_taken_over"> | null,
    private readonly actor: string,
  ) {
    if (takeover) this.stale = true;
  }
  append(drafts: EventDraft[], label: CommitLabel): StoredEvent[] {
    if (drafts.length === 0) return [];
    const { events } = this.store.append(drafts.map((d) => ({ actor: this.actor, ...d })) as EventDraft[], { label, actor: this.actor });
    this.stale = true;
    return events;
  }
  materialize(): void {
    writeFiles(this.store.stateRoot, this.store);
    this.stale = false;
  }
}

/**
 * Run `fn` under the step lease of an open store: taken (a dead or expired holder's is taken over,
 * and says so with lease_taken_over), then released whatever `fn` does. A live holder throws
 * `terms.busy` before anything is done.
 */
export async function withLease<T>(store: Store, terms: LeaseTerms, fn: (w: Writer) => Promise<T> | T): Promise<T> {
  const w = acquireWriter(store, terms);
  try {
    return await fn(w);
  } finally {
    w.release();
  }
}

/**
 * Take the lease as withLease does, for a holder that cannot put its work in one call (a test's
 * step context): it must call `release()`.
 */
export function acquireWriter(store: Store, terms: LeaseTerms): Writer & { release(): void } {
  const got = store.acquireLease(terms.ttlMs, pidAlive, new Date(), terms.tag);
  if (!got.ok) throw terms.busy(got.holder);
  failpoint("lease:after_acquire");
  const w = new LeasedWriter(store, got.lease, got.takeover, terms.actor);
  return Object.assign(w, { release: () => store.releaseLease(got.lease) });
}

/** What a command plans from before it takes the lease. */
interface WriterView {
  p: Projection;
  /** The lease row as it was read (a step may hold it), or null. */
  lease: Lease | null;
}

export interface WriterCommand<R> extends LeaseTerms {
  stateRoot: string;
  /** The project the command acts for: a store of another project is refused before any plan (`foreign_store`). */
  project: ProjectIdentity | null;
  /**
   * Before the lease: plan from `view` (throwing a usage error or a refusal), and return the result
   * when the command ends here without writing (a dry run, nothing to do), or null to go on (after
   * asking, for a command that asks).
   */
  before(view: WriterView): Promise<R | null> | R | null;
  /** Under the lease: plan again from `w.store`, act, append; the files are materialized after it. */
  under(w: Writer): Promise<R> | R;
}

/**
 * A command that plans, maybe asks, then acts under the lease (`loop ctl`, `loop reset`). The store
 * is opened for writing only to act, or when only it can show the state (see readBeforeLease).
 */
export async function runWriter<R>(o: WriterCommand<R>): Promise<R> {
  const snap = readBeforeLease(o.stateRoot);
  if (snap) assertOwnership(snap.p.loop.owner, o.project, o.stateRoot, { renameFree: noWorkYet(snap.p) });
  const open = () => Store.open(o.stateRoot, { actor: o.actor, project: o.project });
  let store: Store | null = snap ? null : open();
  try {
    const done = await o.before(snap ?? { p: store!.projection(), lease: readLease(store!.db) });
    if (done !== null) return done;
    store ??= open();
    return await withLease(store, o, async (w) => {
      const r = await o.under(w);
      if (w.stale) w.materialize();
      return r;
    });
  } finally {
    store?.close();
  }
}

/**
 * The projection and the lease row, read without writing anything; null when only the store itself
 * can give them: a -wal present (a step running, or one killed: the store reads it in place, where a
 * snapshot would copy the whole database) or a store of an older schema (which a writer upgrades).
 */
function readBeforeLease(stateRoot: string): WriterView | null {
  const db = dbPath(stateRoot);
  if (existsSync(db) && existsSync(`${realpathSync(db)}-wal`)) return null; // beside the real file
  try {
    return withReadSnapshot(stateRoot, ({ db }) => ({ p: readProjection(db), lease: readLease(db) }));
  } catch (err) {
    if (err instanceof StoreError && err.code === "outdated_store") return null;
    throw err;
  }
}
