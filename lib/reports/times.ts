// Where an item's time went (issue 48), for `loop status`: each attempt of the item's current epoch
// cut into the phases the page's timeline draws (./history.ts `phasesOf`), each with its duration,
// and loop's own time: the attempt's wall-clock less what the work itself took (the agent, setup and
// the verify command). Pure: plain history in, plain data out; `now` ends what is still going.
// docs/cli/loop-status.md#where-the-time-went says what each figure is.
import { type AttemptHistory, type ItemHistory, type PhaseKind, phasesOf } from "./history.ts";

/** The phases that are the work itself; every other phase (and any gap between phases) is loop's own time. */
const WORK: readonly PhaseKind[] = ["agent", "setup", "verify"];

interface PhaseTime {
  phase: PhaseKind;
  from: string;
  /** null: still going (its `ms` runs to the report's time). */
  to: string | null;
  ms: number;
}

interface AttemptTimes {
  attempt: number;
  /** The attempt's fate: the item's settlement (passed, failed, …), requeued or failed (given back), or null while in flight. */
  fate: string | null;
  /** `launch_reserved` → the last thing the log says of the attempt (now, while in flight). */
  from: string;
  to: string | null;
  wallMs: number;
  phases: PhaseTime[];
  agentMs: number;
  setupMs: number;
  verifyMs: number;
  /** wallMs − agentMs − setupMs − verifyMs. */
  ownMs: number;
  /** Of wallMs, what no phase covers (the log has no event that starts or ends a phase there). */
  unaccountedMs: number;
}

export interface ItemTimes {
  /** The current epoch's attempts, oldest first. */
  attempts: AttemptTimes[];
  /** Sums over `attempts`: the time between attempts (waiting for a step, other items) is in none of them. */
  wallMs: number;
  agentMs: number;
  setupMs: number;
  verifyMs: number;
  ownMs: number;
}

const iso = (t: number) => new Date(t).toISOString();

/** The length of the union of the spans, each clipped to [lo, hi]. */
function covered(spans: { from: number; to: number }[], lo: number, hi: number): number {
  const sorted = spans.map((s) => ({ from: Math.max(lo, s.from), to: Math.min(hi, s.to) })).filter((s) => s.to > s.from);
  sorted.sort((x, y) => x.from - y.from);
  let total = 0;
  let end = lo;
  for (const s of sorted) {
    if (s.to <= end) continue;
    total += s.to - Math.max(s.from, end);
    end = s.to;
  }
  return total;
}

function attemptTimes(a: AttemptHistory, now: number): AttemptTimes {
  const fate = a.outcome?.kind ?? null;
  const phases = phasesOf(a).map((p) => ({ kind: p.kind, from: p.from, to: p.to, end: p.to ?? Math.max(now, p.from) }));
  // Settled: to the last thing the log says of it (a phase's end, its fate, its close); in flight (or a phase still going): to now.
  const last = Math.max(a.reservedAt, ...phases.map((p) => p.end), a.outcome?.at ?? 0, a.closed?.at ?? 0, a.abandonedAt ?? 0);
  const open = (fate === null && a.closed === null) || phases.some((p) => p.to === null);
  const to = open ? Math.max(last, now) : last;
  const wallMs = to - a.reservedAt;
  const out = phases.map((p) => ({ phase: p.kind, from: iso(p.from), to: p.to === null ? null : iso(p.to), ms: Math.max(0, p.end - p.from) }));
  const sum = (k: PhaseKind) => out.filter((p) => p.phase === k).reduce((s, p) => s + p.ms, 0);
  const [agentMs, setupMs, verifyMs] = [sum("agent"), sum("setup"), sum("verify")];
  return {
    attempt: a.n,
    fate,
    from: iso(a.reservedAt),
    to: open ? null : iso(to),
    wallMs,
    phases: out,
    agentMs,
    setupMs,
    verifyMs,
    ownMs: wallMs - WORK.reduce((s, k) => s + sum(k), 0),
    unaccountedMs:
      wallMs -
      covered(
        phases.map((p) => ({ from: p.from, to: p.end })),
        a.reservedAt,
        to,
      ),
  };
}

/** An item's times: its current epoch's attempts; null before any attempt of it. */
export function itemTimes(it: ItemHistory | undefined, now: number): ItemTimes | null {
  const attempts = (it?.attempts ?? []).filter((a) => a.epoch === it!.epoch).map((a) => attemptTimes(a, now));
  if (!attempts.length) return null;
  const total = (f: (a: AttemptTimes) => number) => attempts.reduce((s, a) => s + f(a), 0);
  return {
    attempts,
    wallMs: total((a) => a.wallMs),
    agentMs: total((a) => a.agentMs),
    setupMs: total((a) => a.setupMs),
    verifyMs: total((a) => a.verifyMs),
    ownMs: total((a) => a.ownMs),
  };
}

/** The event types the phases are read from (status reads only these, of the items it reports). */
export const TIMES_EVENT_TYPES = [
  "launch_reserved",
  "workspace_prepared",
  "session_started",
  "launch_failed",
  "session_ended",
  "needs_input",
  "environment_fault",
  "verify_reserved",
  "verify_started",
  "verify_finished",
  "forge_pr_recorded",
  "forge_reaction_recorded",
  "landing_finished",
  "item_requeued",
  "item_settled",
  "session_closed",
  "work_item_reset",
] as const;
