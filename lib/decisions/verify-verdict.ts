// Classifying an attempt's verify command, a detached process like the session
// (docs/cli/loop-run.md). Pure: lib/step/verify.ts looks at its folder and process, this judges.

/** A verify reserved whose start is not recorded: what its folder shows. */
export interface VerifyStartObservation {
  /** verify-launch.json exists: the reserving step got as far as starting the wrapper. */
  launched: boolean;
  /** The wrapper it spawned, from verify-spawned.json or verify-started.json. */
  found: { pid: number; startTime: string | null } | null;
  /**
   * A live process carries the verify's mark (what the reserving step spawned carries it from its
   * start), or this machine cannot tell (no /proc): something may be running.
   */
  marked: boolean;
  reservedAt: number;
  now: number;
  /** How long a launched wrapper may take to show itself (the item's launch timeout). */
  launchTimeout: number;
}

type VerifyStartVerdict =
  /** The wrapper was spawned: record its start instead of starting another. */
  | { kind: "adopt"; pid: number; startTime: string | null }
  /** No launch record: nothing can have been spawned for the reservation, so start it now (the first and only time). */
  | { kind: "spawn" }
  | { kind: "waiting"; reason: string }
  | { kind: "never_started"; reason: string };

export function classifyVerifyStart(o: VerifyStartObservation): VerifyStartVerdict {
  if (o.found) return { kind: "adopt", pid: o.found.pid, startTime: o.found.startTime };
  if (!o.launched) return { kind: "spawn" };
  // A launch record, no wrapper on record and nothing alive with the mark: the reserving step was
  // stopped before its spawn (or the wrapper died before its first record). Nothing runs, so it is
  // started now, rather than waited for until the launch timeout and counted as a failed attempt.
  if (!o.marked) return { kind: "spawn" };
  if (o.now - o.reservedAt <= o.launchTimeout) return { kind: "waiting", reason: "verify is starting" };
  return { kind: "never_started", reason: `verify did not start within ${Math.round(o.launchTimeout / 1000)}s` };
}

export interface VerifyObservation {
  /** verify-exit.json, written by the wrapper when the command ended. */
  exit: { code: number | null; signal: string | null; error: string | null } | null;
  /** Its process group (the one recorded, never a later one reusing the pid) has a live member. */
  alive: boolean;
  startedAt: number;
  deadline: number;
  now: number;
}

type VerifyVerdict =
  | { kind: "exited"; code: number | null; signal: string | null; error: string | null }
  /** Past its deadline: end it (the close path) and record it timed out. */
  | { kind: "timed_out" }
  | { kind: "lost"; reason: string }
  | { kind: "waiting"; reason: string };

/** An exit seen before the deadline was noticed counts, however late the step that saw it came. */
export function classifyVerify(o: VerifyObservation): VerifyVerdict {
  if (o.exit) return { kind: "exited", code: o.exit.code, signal: o.exit.signal, error: o.exit.error };
  if (!o.alive) return { kind: "lost", reason: "verify process vanished without an exit status" };
  if (o.now > o.deadline) return { kind: "timed_out" };
  const secs = (ms: number) => Math.max(0, Math.round(ms / 1000));
  return { kind: "waiting", reason: `verify running for ${secs(o.now - o.startedAt)}s (deadline ${new Date(o.deadline).toISOString()}, in ${secs(o.deadline - o.now)}s)` };
}

/** The verdict on a verify command that ended: passed only on exit 0, in the words verify_finished has always used. */
export function verifyExitVerdict(o: { code: number | null; signal: string | null; error: string | null }): { passed: boolean; reason: string } {
  const passed = o.error === null && o.signal === null && o.code === 0;
  const reason = o.error !== null ? `could not run: ${o.error}` : o.signal !== null ? `killed by ${o.signal}` : passed ? "exit 0" : `exit ${o.code}`;
  return { passed, reason };
}
