// Pure decisions of the step: which item runs next, which items are blocked, how a session is
// classified from what was observed, what a finished attempt leads to, how the loop drains.
// Everything here takes plain data and returns plain data; lib/step/step.ts and its phases carry the
// effects out.
import type { ItemState, Projection } from "../log/reducer.ts";
import { isInFlight, isSettled, itemOf } from "../log/reducer.ts";

export type NextWork =
  | { kind: "launch"; item: string }
  | { kind: "block"; items: { id: string; reason: string }[] }
  | { kind: "drain"; outcome: "Succeeded" | "Failed" | "Stopped" }
  | { kind: "idle"; reason: string };

function active(p: Projection): ItemState[] {
  return p.order.map((id) => p.items[id]!).filter((it) => it.status !== "withdrawn");
}

/** Pending items that can never run because a dependency settled without passing. */
export function itemsToBlock(p: Projection): { id: string; reason: string }[] {
  const out: { id: string; reason: string }[] = [];
  for (const it of active(p)) {
    if (it.status !== "pending") continue;
    for (const dep of it.def.dependsOn) {
      const d = itemOf(p, dep);
      if (!d) {
        out.push({ id: it.id, reason: `dependency "${dep}" is not an item of the loop` });
        break;
      }
      if (d.status === "withdrawn") {
        out.push({ id: it.id, reason: `dependency "${dep}" was removed from the definition` });
        break;
      }
      if (isSettled(d.status) && d.status !== "passed") {
        out.push({ id: it.id, reason: `dependency "${dep}" ${d.status}` });
        break;
      }
    }
  }
  return out;
}

export function drainOutcome(p: Projection): "Succeeded" | "Failed" | "Stopped" {
  const items = active(p);
  if (items.some((it) => it.status === "failed" || it.status === "blocked")) return "Failed";
  if (items.some((it) => it.status === "cancelled")) return "Stopped";
  return "Succeeded";
}

/** What the step should do when nothing is in flight. */
export function nextWork(p: Projection): NextWork {
  const block = itemsToBlock(p);
  if (block.length) return { kind: "block", items: block };
  const requireStart = p.loop.settings?.requireStartCommand ?? false;
  const waiting: string[] = [];
  for (const it of active(p)) {
    if (it.status !== "pending") continue;
    if (it.held) {
      waiting.push(`${it.id} is held by \`loop ctl stop\` (start or retry it)`);
      continue;
    }
    if (requireStart && !it.started) {
      waiting.push(`${it.id} waits for \`loop ctl start --work-item ${it.id}\``);
      continue;
    }
    const unmet = it.def.dependsOn.filter((d) => itemOf(p, d)?.status !== "passed");
    if (unmet.length) {
      waiting.push(`${it.id} waits for ${unmet.join(", ")}`);
      continue;
    }
    return { kind: "launch", item: it.id };
  }
  if (waiting.length) return { kind: "idle", reason: waiting.join("; ") };
  return { kind: "drain", outcome: drainOutcome(p) };
}

export function hasOpenWork(p: Projection): boolean {
  return active(p).some((it) => it.status === "pending" || isInFlight(it.status));
}

// ---------------------------------------------------------------------------------------------
// Classifying a session from the outside (docs/cli/loop-run.md, step 5, in this order).

export interface SessionObservation {
  /** The session folder and its launch record exist and name a process or tmux target. */
  recordPresent: boolean;
  /** exit.json written by the session wrapper when the agent ended. */
  exit: { code: number | null; signal: string | null } | null;
  /** Non-empty text of the ask file. */
  question: string | null;
  /** The wrapper wrote its started marker (the agent process was spawned). */
  started: boolean;
  alive: boolean;
  /** Epoch ms of the last output growth (log mtime), or null without a log yet. */
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

export function classifySession(o: SessionObservation): SessionVerdict {
  if (!o.recordPresent) return { kind: "lost", reason: "session record is missing" };
  if (o.question !== null) return { kind: "needs_input", question: o.question };
  if (o.exit)
    return {
      kind: "exited",
      code: o.exit.code,
      signal: o.exit.signal,
      reason: o.exit.signal ? `agent killed by ${o.exit.signal}` : `agent exited with code ${o.exit.code}`,
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
    return { kind: "stalled", reason: `no output for ${Math.round((o.now - last) / 1000)}s (stall timeout ${Math.round(o.timeouts.stall / 1000)}s)` };
  return { kind: "waiting", reason: "agent is working" };
}

// ---------------------------------------------------------------------------------------------
// Classifying an attempt's verify command, a detached process like the session (docs/cli/loop-run.md).

/** A verify reserved whose start is not recorded: what its folder shows. */
export interface VerifyStartObservation {
  /** verify-launch.json exists: the reserving step got as far as starting the wrapper. */
  launched: boolean;
  /** The wrapper it spawned, from verify-spawned.json or verify-started.json. */
  found: { pid: number; startTime: string | null } | null;
  reservedAt: number;
  now: number;
  /** How long a launched wrapper may take to show itself (the item's launch timeout). */
  launchTimeout: number;
}

export type VerifyStartVerdict =
  /** The wrapper was spawned: record its start instead of starting another. */
  | { kind: "adopt"; pid: number; startTime: string | null }
  /** No launch record: nothing can have been spawned for the reservation, so start it now (the first and only time). */
  | { kind: "spawn" }
  | { kind: "waiting"; reason: string }
  | { kind: "never_started"; reason: string };

export function classifyVerifyStart(o: VerifyStartObservation): VerifyStartVerdict {
  if (o.found) return { kind: "adopt", pid: o.found.pid, startTime: o.found.startTime };
  if (!o.launched) return { kind: "spawn" };
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

export type VerifyVerdict =
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

/**
 * What an attempt whose session has ended needs next, read from what the log already holds: each
 * phase records one event, and the next step picks up after it.
 */
export type AfterSession =
  /** The launch was interrupted (the loop's failure, not the agent's): run the attempt again, uncounted. */
  | { kind: "requeue"; reason: string }
  /** The session or its verify failed: close it, then retry or settle failed (afterFailure). */
  | { kind: "fail"; reason: string }
  /** Start its verify, or observe the verify already reserved (the attempt's verifyRun). */
  | { kind: "verify" }
  | { kind: "land" }
  /** Verified and landed (or not): close the session and settle the item. */
  | { kind: "settle"; landed: boolean };

export function afterSession(it: ItemState): AfterSession {
  const attempt = it.attempts[it.attempts.length - 1]!;
  const end = attempt.end!;
  if (end.verdict === "launch_interrupted") return { kind: "requeue", reason: end.reason };
  if (end.verdict !== "exited") return { kind: "fail", reason: end.reason };
  if (!attempt.verify) return { kind: "verify" };
  if (!attempt.verify.passed) return { kind: "fail", reason: `verify failed: ${attempt.verify.reason}` };
  if (!it.landing) return { kind: "land" };
  return { kind: "settle", landed: it.landing.outcome === "none" || it.landing.outcome === "merged" };
}

/** After an attempt failed: try again or give up. */
export function afterFailure(it: ItemState): "retry" | "settle_failed" {
  return it.failures + 1 < it.def.maxAttempts ? "retry" : "settle_failed";
}

/** Items blocked, directly or through other blocked items, because of `id`. */
export function blockedBecauseOf(p: Projection, id: string): string[] {
  const out: string[] = [];
  const frontier = [id];
  while (frontier.length) {
    const cur = frontier.pop()!;
    for (const it of active(p)) {
      if (it.status === "blocked" && it.def.dependsOn.includes(cur) && !out.includes(it.id)) {
        out.push(it.id);
        frontier.push(it.id);
      }
    }
  }
  return out;
}
