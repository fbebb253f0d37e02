// Pure decisions of the step: which item runs next, which items are blocked, how a session is
// classified from what was observed, what a finished attempt leads to, how the loop drains.
// Everything here takes plain data and returns plain data; lib/step/step.ts carries the effects out.
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
// Classifying a session from the outside (DESIGN §6 step 3, in this order).

export interface SessionObservation {
  /** The session folder and its launch record exist and name a process or tmux target. */
  recordPresent: boolean;
  /** exit.json written by the session wrapper when the agent ended. */
  exit: { code: number | null; signal: string | null } | null;
  /** Non-empty text of the ask file. */
  question: string | null;
  /** Why something in the ask file's place was not read (a link, a FIFO), or null. */
  askIgnored?: string | null;
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
      reason: `${o.exit.signal ? `agent killed by ${o.exit.signal}` : `agent exited with code ${o.exit.code}`}${o.askIgnored ? `; ${o.askIgnored}` : ""}`,
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

/** After an attempt failed: try again or give up. */
export function afterFailure(it: ItemState): "retry" | "settle_failed" {
  return it.failures + 1 < it.def.maxAttempts ? "retry" : "settle_failed";
}

/**
 * The reason an item settles `failed` with, after its last allowed failure. The budget counts
 * failed attempts only (a question or an operator's stop spends none), so the attempt number can
 * be higher than maxAttempts: both are named, never "attempt 3 of 2".
 */
export function failedReason(it: ItemState, reason: string): string {
  const attempt = it.attempts.length;
  const failed = it.failures + 1;
  return `${reason} (failed attempt ${failed} of ${it.def.maxAttempts}${attempt !== failed ? `; attempt ${attempt} in all` : ""})`;
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
