// A watcher's stop (docs/cli/loop-run.md#stopping-a-watcher): a `loop run --watch` stopped by a
// signal may take the sessions beside it with it (a pod's end kills every process of the pod; so
// does a node drain, a spot reclaim, a scale-down), and the next step would find them gone without
// an exit status and charge their attempts. So the watcher leaves proof the moment the signal
// arrives (watcher-stop.json, one small write, no lease: within any grace period), and the proof
// becomes a `watcher_stopped` event naming the attempt in flight, recorded by the watcher itself
// after the step at hand, or, if it died first, by the next step. A session (or verify) of that
// attempt later found vanished is then judged drained (lib/decisions/faults.ts drainedReason):
// given back, not counted.
import { existsSync, rmSync } from "node:fs";
import type { StoredEvent } from "../log/events.ts";
import { currentAttemptOf, type ItemState, requireAttempt } from "../log/projection.ts";
import { Store } from "../log/store.ts";
import { dbPath } from "../log/snapshot.ts";
import { withLease, type Writer } from "../log/writer.ts";
import { projectOf } from "../log/ownership.ts";
import { BusyLease } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { statePaths } from "../shared/paths.ts";
import { type RunPid, watcherAlive } from "../writer/run-pid.ts";

/** What watcher-stop.json holds: which watcher, stopped by what, when. */
interface StopProof extends RunPid {
  signal: string;
  at: string;
}

/** Leave the proof: one atomic write, made as the signal arrives. Throws what the write throws. */
export function writeStopProof(stateRoot: string, me: RunPid, signal: string, at = new Date()): void {
  const proof: StopProof = { pid: me.pid, started: me.started, signal, at: at.toISOString() };
  writeFileAtomic(statePaths(stateRoot).watcherStop, JSON.stringify(proof) + "\n");
}

export function readStopProof(stateRoot: string): StopProof | null {
  const p = readJsonOrNull<Partial<StopProof>>(statePaths(stateRoot).watcherStop);
  if (
    !p ||
    !Number.isSafeInteger(p.pid) ||
    (p.pid as number) <= 0 ||
    typeof p.signal !== "string" ||
    typeof p.at !== "string" ||
    Number.isNaN(Date.parse(p.at))
  )
    return null;
  return { pid: p.pid as number, started: typeof p.started === "string" ? p.started : null, signal: p.signal, at: p.at };
}

/** What of the attempt in flight runs beside the watcher: its session, its verify, or nothing. */
function running(it: ItemState): "session" | "verify" | null {
  if (it.status === "launching" || it.status === "running") return "session";
  const a = currentAttemptOf(it);
  return it.status === "ended" && a?.verifyRun && !a.verify ? "verify" : null;
}

/**
 * Under the caller's lease, turn the proof into a `watcher_stopped` event naming the attempt in
 * flight (none in flight: nothing to record), then remove it. A proof of a watcher still alive,
 * other than `self`, is left alone: that watcher is still shutting down and records its own. A
 * proof already recorded (a kill between the record and the removal) is only removed.
 */
export function recordStopProof(w: Writer, stateRoot: string, self: RunPid | null = null): StoredEvent[] {
  const path = statePaths(stateRoot).watcherStop;
  const proof = readStopProof(stateRoot);
  if (!proof) {
    rmSync(path, { force: true }); // none, or one that is not a proof (a torn write cannot happen: it is atomic)
    return [];
  }
  const mine = self !== null && self.pid === proof.pid && self.started === proof.started;
  if (!mine && watcherAlive(proof)) return [];
  const { loop } = w.store.loopView();
  const it = loop.current ? w.store.item(loop.current) : null;
  const what = it ? running(it) : null;
  let events: StoredEvent[] = [];
  if (it && what) {
    const a = requireAttempt(it);
    if (a.drain?.pid !== proof.pid || a.drain.signalledAt !== proof.at)
      events = w.append(
        [{ type: "watcher_stopped", item: it.id, payload: { attempt: a.n, pid: proof.pid, signal: proof.signal, signalledAt: proof.at, running: what } }],
        "watch",
      );
  }
  rmSync(path, { force: true });
  return events;
}

/**
 * The watcher's own record of its stop, after the step at hand: the store opened, the lease taken
 * (a step of cron or `loop ctl` holding it is waited for, at most `waitMs`; then the proof is left
 * for the next step), the proof recorded, the files written. Says what it could not do; never throws.
 */
export async function recordOwnStop(o: {
  root: string;
  stateRoot: string;
  name: string | null;
  actor: string;
  self: RunPid;
  log: { warn(message: string): void };
  waitMs?: number;
}): Promise<void> {
  if (!readStopProof(o.stateRoot)) return;
  failpoint("watch:after_proof");
  // No store yet: nothing was ever launched, so nothing runs beside the watcher.
  if (!existsSync(dbPath(o.stateRoot))) return void rmSync(statePaths(o.stateRoot).watcherStop, { force: true });
  const deadline = Date.now() + (o.waitMs ?? 10_000);
  try {
    const store = Store.open(o.stateRoot, { actor: o.actor, project: projectOf(o.root, o.name) });
    try {
      for (;;) {
        try {
          await withLease(store, { actor: o.actor, ttlMs: 60_000, busy: (holder) => new BusyLease(holder) }, (w) => {
            recordStopProof(w, o.stateRoot, o.self);
            if (w.stale) w.materialize();
          });
          return;
        } catch (err) {
          if (!(err instanceof BusyLease) || Date.now() >= deadline) throw err;
          await Bun.sleep(100);
        }
      }
    } finally {
      store.close();
    }
  } catch (err) {
    o.log.warn(`the watcher's stop was not recorded (${(err as Error).message}); ${statePaths(o.stateRoot).watcherStop} keeps it for the next step`);
  }
}
