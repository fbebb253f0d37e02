// `loop run --watch`: steps in the foreground, one per interval, until the loop drains, pauses or
// stops (or, with `forever`, until a signal). The watcher owns the state root's run.pid (one
// watcher per loop, lib/writer/run-pid.ts), SIGINT/SIGTERM (proof of the stop at once, the step at
// hand finished, the stop recorded, exit 130: lib/step/drain.ts), the
// wait between turns, and which failures of a turn are worth another turn: a busy lease and a
// loop.json invalid for a moment are; anything else ends the watch with its error.
import { existsSync } from "node:fs";
import { formatDuration } from "../definition/duration.ts";
import { BusyError, DefinitionError, EXIT } from "../shared/errors.ts";
import { statePaths } from "../shared/paths.ts";
import { ensureStateRoot } from "../shared/state-root.ts";
import { projectOf, refuseForeignStateRoot } from "../log/ownership.ts";
import { printable } from "../shared/printable.ts";
import { claimRunPid, releaseRunPid, type RunPid, selfRunPid } from "../writer/run-pid.ts";
import { recordOwnStop, writeStopProof } from "./drain.ts";
import { preflight, type RunResult, stepExitCode } from "./step.ts";
import type { RunAction } from "./context.ts";

export interface WatchOptions {
  /** The project root: checked before anything is created (preflight); once it is gone, the watcher stops. */
  root: string;
  /** Where run.pid is claimed (the folder is created if missing). */
  stateRoot: string;
  /** One turn's step (runStep, for the command). */
  step: () => Promise<RunResult>;
  /** Each step's result, as it comes. */
  onResult: (r: RunResult) => void;
  /** A turn that will be tried again: busy, or loop.json invalid for now. */
  log: { warn(message: string): void };
  /** The wait between turns. */
  intervalMs: number;
  /** Keep watching after the loop drains, pauses or stops. */
  forever?: boolean;
  /** Stops the watch as SIGINT and SIGTERM do: after the step at hand, exit 130. */
  signal?: AbortSignal;
  /** The process signals that stop the watch (default SIGINT and SIGTERM). */
  signals?: NodeJS.Signals[];
  /** The wait itself, which must end early when `abort` fires (tests pass their own clock). */
  sleep?: (ms: number, abort: AbortSignal) => Promise<void>;
  /** This process as run.pid records it (default: this process). */
  me?: RunPid;
  /** Who records the watcher's stop (the step's actor). */
  actor?: string;
}

/** Where a watch ends unless `forever`. */
const SETTLED_ACTIONS: readonly RunAction[] = ["drained", "paused", "stopped", "review"];

/**
 * Watch the loop. Returns the exit code: the last step's (stepExitCode: 1 with environment errors
 * or when the loop needs a person, which is how a watch without `forever` ends on a pause or a
 * Failed drain), 130 when stopped by a signal. Throws what a step throws that is not worth another turn, and before
 * the first: preflight's errors (exit 2), BusyError when another watcher holds run.pid (exit 75).
 * run.pid and the signal handlers are released either way.
 */
export async function watchSteps(o: WatchOptions): Promise<number> {
  const def = preflight(o.root); // before run.pid: a watcher that cannot step creates nothing
  refuseForeignStateRoot(o.stateRoot, projectOf(o.root, def.name)); // nor in another project's state root
  const pidFile = statePaths(o.stateRoot).runPid;
  ensureStateRoot(o.stateRoot);
  const me = o.me ?? selfRunPid();
  claimRunPid(pidFile, me);
  const stop = new AbortController();
  // The first stop leaves its proof at once (lib/step/drain.ts): what runs beside the watcher may
  // die with it before the step at hand ends, and the proof is what spares its attempt.
  let stoppedBy: string | null = null;
  const stopBy = (why: string) => () => {
    if (stoppedBy === null) {
      stoppedBy = why;
      try {
        writeStopProof(o.stateRoot, me, why);
      } catch (err) {
        o.log.warn(
          `the watcher's stop (${why}) could not be written down (${(err as Error).message}): a session that dies with this watcher will be counted as lost`,
        );
      }
    }
    stop.abort();
  };
  const signals = o.signals ?? ["SIGINT", "SIGTERM"];
  const handlers = signals.map((s) => [s, stopBy(s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  const onAbort = stopBy("abort");
  // Stopped before its first step: nothing of this watcher's runs, nothing to prove.
  if (o.signal?.aborted) stop.abort();
  o.signal?.addEventListener("abort", onAbort);
  const sleep = o.sleep ?? sleepUnlessAborted;
  let last: RunResult | null = null;
  try {
    while (!stop.signal.aborted) {
      const r = await watchTurn(o);
      if (stop.signal.aborted) break;
      if (r && SETTLED_ACTIONS.includes(r.action) && !o.forever) {
        last = r;
        break;
      }
      await sleep(o.intervalMs, stop.signal);
    }
  } finally {
    // Recorded before run.pid is released: until then no other watcher starts on this state root.
    if (stoppedBy !== null) await recordOwnStop({ root: o.root, stateRoot: o.stateRoot, name: def.name, actor: o.actor ?? "loop", self: me, log: o.log });
    releaseRunPid(pidFile, me);
    for (const [s, h] of handlers) process.off(s, h);
    o.signal?.removeEventListener("abort", onAbort);
  }
  // The loop ends on a settled step or a signal (or throws).
  return stop.signal.aborted || !last ? EXIT.interrupted : stepExitCode(last);
}

/** One turn: a step's result, or null after a failure the next turn may get past. */
async function watchTurn(o: WatchOptions): Promise<RunResult | null> {
  try {
    const r = await o.step();
    o.onResult(r);
    return r;
  } catch (err) {
    // Busy: another step holds the lease, or this one lost it to another `loop run` (it outlived
    // the lease). Either way the next turn tries again.
    if (err instanceof BusyError) {
      o.log.warn(err.message);
      return null;
    }
    // loop.json was valid when the watcher started (preflight) and the step refused before
    // touching anything: an editor saving it, most likely. A root that is gone (the repository
    // deleted) is no edit in progress: the watcher stops.
    if (err instanceof DefinitionError && existsSync(o.root)) {
      o.log.warn(`${err.lines().map(printable).join("\n")}\n(the watcher tries again in ${formatDuration(o.intervalMs)})`);
      return null;
    }
    throw err;
  }
}

/** Wait `ms`, or less if `abort` fires; the timer is cleared so that nothing holds the process open. */
function sleepUnlessAborted(ms: number, abort: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (abort.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      abort.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    abort.addEventListener("abort", done);
  });
}
