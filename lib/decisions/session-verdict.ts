// Classifying a session from the outside (docs/cli/loop-run.md, step 5, in this order). Pure: the
// supervisor looks (lib/supervisor/sessions.ts observeSession), this judges what it saw.

/** What a look from outside saw of a session. */
export interface SessionObservation {
  /** The session folder and its launch record exist and name a process or tmux target. */
  recordPresent: boolean;
  /** exit.json written by the session wrapper when the agent ended; `outputError`: the disk refused some of its output. */
  exit: { code: number | null; signal: string | null; outputError?: string | null } | null;
  /** Non-empty text of the ask file. */
  question: string | null;
  /** Why something in the ask file's place was not read (a link, a FIFO), or null. */
  askIgnored?: string | null;
  /** When the question was written (the ask file's modification time), epoch ms; null or absent: unknown. */
  askedAt?: number | null;
  /** The wrapper wrote its started marker (the agent process was spawned). */
  started: boolean;
  alive: boolean;
  /** Epoch ms of the last output growth that showed progress (lib/supervisor/progress.ts), or null without any. */
  lastOutputAt: number | null;
  startedAt: number;
  reservedAt: number;
  now: number;
  timeouts: { launch: number; stall: number };
}

export type SessionVerdict =
  | { kind: "lost"; reason: string }
  | { kind: "needs_input"; question: string }
  | { kind: "exited"; code: number | null; signal: string | null; reason: string }
  | { kind: "never_started"; reason: string }
  | { kind: "stalled"; reason: string }
  | { kind: "waiting"; reason: string };

/**
 * How long an agent that asked and still runs is given to exit by itself (the protocol: write the
 * question, then exit). Ended at once, a CLI that reports its usage at the end of its turn (codex)
 * would never say what the turn used. An agent that stays longer is ended; one whose ask file says
 * it was written in the future is no worse than one that never asks (the stall timeout and the
 * budget still hold it).
 */
export const ASK_EXIT_GRACE_MS = 30_000;

export function classifySession(o: SessionObservation): SessionVerdict {
  if (!o.recordPresent) return { kind: "lost", reason: "session record is missing" };
  const exiting = o.question !== null && o.exit === null && o.alive && o.started && o.askedAt != null && o.now - o.askedAt < ASK_EXIT_GRACE_MS;
  if (o.question !== null && !exiting) return { kind: "needs_input", question: o.question };
  if (o.exit)
    return {
      kind: "exited",
      code: o.exit.code,
      signal: o.exit.signal,
      reason: `${o.exit.signal ? `agent killed by ${o.exit.signal}` : `agent exited with code ${o.exit.code}`}${o.exit.outputError ? `; the disk refused some of its output (${o.exit.outputError}): output.log says where` : ""}${o.askIgnored ? `; ${o.askIgnored}` : ""}`,
    };
  if (!o.alive && o.started) return { kind: "lost", reason: "session process vanished without an exit status" };
  if (!o.started) {
    if (o.now - o.reservedAt > o.timeouts.launch)
      return { kind: "never_started", reason: `session did not start within ${Math.round(o.timeouts.launch / 1000)}s` };
    if (!o.alive) return { kind: "lost", reason: "session process vanished before the agent started" };
    return { kind: "waiting", reason: "session is starting" };
  }
  const last = Math.max(o.startedAt, o.lastOutputAt ?? 0);
  if (o.now - last > o.timeouts.stall)
    return {
      kind: "stalled",
      reason: `no progress in the output for ${Math.round((o.now - last) / 1000)}s (stall timeout ${Math.round(o.timeouts.stall / 1000)}s)`,
    };
  if (exiting) return { kind: "waiting", reason: `agent asked a question and is given ${ASK_EXIT_GRACE_MS / 1000}s to exit` };
  return { kind: "waiting", reason: "agent is working" };
}

/** What a look at a reserved attempt whose start is not recorded saw (its wrapper was not adoptable). */
interface LaunchingObservation {
  /** The reserving step wrote the launch record (it got as far as spawning). */
  launched: boolean;
  /** A process carries the attempt's mark, or its tmux session exists: what was spawned is alive. */
  carried: boolean;
  /** Since the reservation, ms. */
  ageMs: number;
  launchTimeoutMs: number;
}

type LaunchingVerdict = { kind: "waiting"; reason: string } | { kind: "failed"; reason: string; interrupted: boolean };

/**
 * A launch record with nothing alive carrying the attempt's mark: the step was stopped between the
 * record and the spawn, and nothing runs. No launch record: it stopped before launching. Either is
 * the loop's failure, not the agent's (`interrupted`: not counted).
 */
export function classifyLaunching(o: LaunchingObservation): LaunchingVerdict {
  const cutShort = o.launched && !o.carried;
  if (o.launched && !cutShort && o.ageMs <= o.launchTimeoutMs) return { kind: "waiting", reason: "session is starting" };
  if (!o.launched) return { kind: "failed", reason: "the step that reserved this attempt stopped before launching it; not relaunched", interrupted: true };
  if (cutShort)
    return {
      kind: "failed",
      reason: "the step that launched this attempt stopped before its session started (nothing runs); not relaunched",
      interrupted: true,
    };
  return { kind: "failed", reason: `session did not start within ${Math.round(o.launchTimeoutMs / 1000)}s`, interrupted: false };
}
