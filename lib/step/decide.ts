// Pure decisions of the step: which item runs next, which items are blocked, how a session is
// classified from what was observed, what a finished attempt leads to, how the loop drains.
// Everything here takes plain data and returns plain data; lib/step/step.ts and its phases carry the
// effects out.
import type { ItemState, ItemStatus, LoopRecord, LoopState, Projection } from "../log/reducer.ts";
import { isInFlight, isSettled, ITEM_STATUSES, itemOf } from "../log/reducer.ts";
import { type DrainOutcome, drainsAs, LANDING_OUTCOMES, type LandingOutcome, landed } from "../log/vocabulary.ts";
import type { SessionObservation } from "../supervisor/sessions.ts";

export type NextWork =
  | { kind: "launch"; item: string }
  | { kind: "block"; items: { id: string; reason: string }[] }
  | { kind: "drain"; outcome: DrainOutcome }
  | { kind: "idle"; reason: string };

function active(p: Projection): ItemState[] {
  return p.order.map((id) => p.items[id]!).filter((it) => it.status !== "withdrawn");
}

/**
 * An item as the launch rules see it. The projection has these fields (ItemState, `def.dependsOn`)
 * and so does what `loop status` reads (state.json plus the control rows), so the rules below are
 * written once and both the step and status apply them.
 */
export interface GateItem {
  id: string;
  status: ItemStatus;
  held: boolean;
  started: boolean;
  dependsOn: readonly string[];
}
export type FindItem = (id: string) => GateItem | undefined;

export function gateItem(it: ItemState): GateItem {
  return { id: it.id, status: it.status, held: it.held, started: it.started, dependsOn: it.def.dependsOn };
}

function projectionFinder(p: Projection): FindItem {
  return (id) => {
    const it = itemOf(p, id);
    return it ? gateItem(it) : undefined;
  };
}

/** Why a pending item can never run (a dependency settled without passing, or is gone), or null. */
export function blockingDependency(it: GateItem, find: FindItem): { dependency: string; status: ItemStatus | null; reason: string } | null {
  for (const dep of it.dependsOn) {
    const d = find(dep);
    if (!d) return { dependency: dep, status: null, reason: `dependency "${dep}" is not an item of the loop` };
    if (d.status === "withdrawn") return { dependency: dep, status: d.status, reason: `dependency "${dep}" was removed from the definition` };
    if (isSettled(d.status) && d.status !== "passed") return { dependency: dep, status: d.status, reason: `dependency "${dep}" ${d.status}` };
  }
  return null;
}

/** What of its own keeps a pending item from launching, in the order nextWork checks it; null: nothing. */
export type LaunchGate =
  | { kind: "held"; reason: string }
  | { kind: "awaiting_start"; reason: string }
  | { kind: "dependency"; unmet: { id: string; status: ItemStatus | null }[]; reason: string };

export function launchGate(it: GateItem, find: FindItem, requireStart: boolean): LaunchGate | null {
  if (it.held) return { kind: "held", reason: `${it.id} is held by \`loop ctl stop\` (start or retry it)` };
  if (requireStart && !it.started) return { kind: "awaiting_start", reason: `${it.id} waits for \`loop ctl start --work-item ${it.id}\`` };
  const unmet = it.dependsOn.filter((d) => find(d)?.status !== "passed");
  if (unmet.length)
    return { kind: "dependency", unmet: unmet.map((id) => ({ id, status: find(id)?.status ?? null })), reason: `${it.id} waits for ${unmet.join(", ")}` };
  return null;
}

/** Pending items that can never run because a dependency settled without passing. */
export function itemsToBlock(p: Projection): { id: string; reason: string }[] {
  const find = projectionFinder(p);
  const out: { id: string; reason: string }[] = [];
  for (const it of active(p)) {
    if (it.status !== "pending") continue;
    const b = blockingDependency(gateItem(it), find);
    if (b) out.push({ id: it.id, reason: b.reason });
  }
  return out;
}

/** The worst any active item says (vocabulary.ts drainsAs): Failed, else Stopped, else Succeeded. */
export function drainOutcome(p: Projection): DrainOutcome {
  const says = new Set(active(p).map((it) => drainsAs(it.status)));
  return says.has("Failed") ? "Failed" : says.has("Stopped") ? "Stopped" : "Succeeded";
}

/** What the step should do when nothing is in flight. */
export function nextWork(p: Projection): NextWork {
  const block = itemsToBlock(p);
  if (block.length) return { kind: "block", items: block };
  const requireStart = p.loop.settings?.requireStartCommand ?? false;
  const find = projectionFinder(p);
  const waiting: string[] = [];
  for (const it of active(p)) {
    if (it.status !== "pending") continue;
    const gate = launchGate(gateItem(it), find, requireStart);
    if (gate) {
      waiting.push(gate.reason);
      continue;
    }
    return { kind: "launch", item: it.id };
  }
  if (waiting.length) return { kind: "idle", reason: waiting.join("; ") };
  return { kind: "drain", outcome: drainOutcome(p) };
}

// ---------------------------------------------------------------------------------------------
// Why an item waits, for people (`loop status`): the same rules as nextWork, plus the loop's own
// state, which the step checks before it looks at items at all.

export type WaitReason =
  | "dependency_failed"
  | "held"
  | "awaiting_start"
  | "dependency"
  | "loop_paused"
  | "loop_stopped"
  | "queued"
  | "next"
  | "question";

export interface Waiting {
  reason: WaitReason;
  /** One sentence for people, naming what to do where something can be done. */
  detail: string;
  /** The dependencies concerned (unmet ones, or the one that failed), with their status. */
  dependencies: { id: string; status: ItemStatus | null }[];
}

export interface WaitView {
  loop: { state: LoopState; reason: string | null; current: string | null; requireStartCommand: boolean };
  /** Every item, in presentation order. */
  items: GateItem[];
}

/** The view of a projection (the step's own; status builds the same from state.json). */
export function waitView(p: Projection): WaitView {
  return {
    loop: { state: p.loop.state, reason: p.loop.reason, current: p.loop.current, requireStartCommand: p.loop.settings?.requireStartCommand ?? false },
    items: p.order.map((id) => gateItem(p.items[id]!)),
  };
}

const statusOf = (s: ItemStatus | null) => s ?? "not an item";

/**
 * Why each waiting item waits: every pending item and every item with a question, by id. An item's
 * own obstacle comes first (it stays after the loop is resumed); a launchable item waits for the
 * loop (paused, stopped), for the item in flight, or for its turn behind the one nextWork picks.
 */
export function waitingReasons(v: WaitView): Map<string, Waiting> {
  const byId = new Map(v.items.map((it) => [it.id, it]));
  const find: FindItem = (id) => byId.get(id);
  const out = new Map<string, Waiting>();
  const L = v.loop;
  const loopHalt = L.state === "paused" ? "paused" : L.state === "stopped" ? "stopped" : null;
  const also = loopHalt ? ` (and the loop is ${loopHalt})` : "";
  let first: string | null = null;
  for (const it of v.items) {
    if (it.status === "needs_input") {
      out.set(it.id, {
        reason: "question",
        detail: `the agent asked a question: answer with \`loop ctl reply --work-item ${it.id} "…"\`, then \`loop ctl resume\``,
        dependencies: [],
      });
      continue;
    }
    if (it.status !== "pending") continue;
    const b = blockingDependency(it, find);
    if (b) {
      out.set(it.id, {
        reason: "dependency_failed",
        detail: `${b.reason}: the next \`loop run\` settles it blocked${b.status !== null && b.status !== "withdrawn" ? ` (retry ${b.dependency} to run both)` : ""}`,
        dependencies: [{ id: b.dependency, status: b.status }],
      });
      continue;
    }
    const gate = launchGate(it, find, L.requireStartCommand);
    if (gate?.kind === "held") {
      out.set(it.id, { reason: "held", detail: `held by \`loop ctl stop\`: release it with \`loop ctl start --work-item ${it.id}\`${also}`, dependencies: [] });
      continue;
    }
    if (gate?.kind === "awaiting_start") {
      out.set(it.id, { reason: "awaiting_start", detail: `control.requireStartCommand is on: start it with \`loop ctl start --work-item ${it.id}\`${also}`, dependencies: [] });
      continue;
    }
    if (gate?.kind === "dependency") {
      out.set(it.id, { reason: "dependency", detail: `waits for ${gate.unmet.map((d) => `${d.id} (${statusOf(d.status)})`).join(", ")}${also}`, dependencies: gate.unmet });
      continue;
    }
    // Launchable: only the loop, the item in flight or an earlier launchable item stands in the way.
    if (loopHalt) {
      const why = L.reason ? `: ${L.reason}` : "";
      out.set(it.id, { reason: loopHalt === "paused" ? "loop_paused" : "loop_stopped", detail: `the loop is ${loopHalt}${why} (\`loop ctl resume\` goes on)`, dependencies: [] });
      continue;
    }
    if (L.current !== null) {
      const cur = byId.get(L.current);
      out.set(it.id, { reason: "queued", detail: `waits for the item in flight, ${L.current}${cur ? ` (${cur.status})` : ""}`, dependencies: [] });
      continue;
    }
    if (first === null) {
      first = it.id;
      out.set(it.id, { reason: "next", detail: "launches at the next `loop run`", dependencies: [] });
    } else out.set(it.id, { reason: "queued", detail: `waits its turn: ${first} launches first`, dependencies: [] });
  }
  return out;
}

export function hasOpenWork(p: Projection): boolean {
  return active(p).some((it) => it.status === "pending" || isInFlight(it.status));
}

// ---------------------------------------------------------------------------------------------
// Classifying a session from the outside (docs/cli/loop-run.md, step 5, in this order).

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
    return { kind: "stalled", reason: `no progress in the output for ${Math.round((o.now - last) / 1000)}s (stall timeout ${Math.round(o.timeouts.stall / 1000)}s)` };
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
  // The attempt's own landing: an earlier attempt's (a retry after landing_blocked or a conflict) says nothing of this one.
  if (!attempt.landing) return { kind: "land" };
  return { kind: "settle", landed: landed(attempt.landing.outcome) };
}

/** After an attempt failed: try again or give up. */
export function afterFailure(it: ItemState): "retry" | "settle_failed" {
  return it.failures + 1 < it.def.maxAttempts ? "retry" : "settle_failed";
}

/**
 * Attempts the agent actually ran: those whose session was recorded started. A launch cut short
 * before that (a step killed between the reservation and the spawn, an environment fault after the
 * reservation) keeps its number (its key, its session folder) but is no attempt of the agent's.
 */
export function attemptsRan(attempts: readonly { startedAt: string | null }[]): number {
  return attempts.filter((a) => a.startedAt !== null).length;
}

/**
 * The reason an item settles `failed` with, after its last allowed failure. The budget counts
 * failed attempts only (a question or an operator's stop spends none), so the attempt number can
 * be higher than maxAttempts: both are named, never "attempt 3 of 2".
 */
export function failedReason(it: ItemState, reason: string): string {
  const attempt = attemptsRan(it.attempts);
  const failed = it.failures + 1;
  return `${reason} (failed attempt ${failed} of ${it.def.maxAttempts}${attempt > failed ? `; attempt ${attempt} in all` : ""})`;
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

// ---------------------------------------------------------------------------------------------
// When the loop needs a person (docs/cli/loop-run.md#exit-codes): `loop run` exits 1 while any of
// these holds, and `notify` is run once for each (lib/step/notify.ts).

export type AttentionKind = "question" | "environment" | "failed" | "landing" | "budget";

export interface Attention {
  kind: AttentionKind;
  item: string | null;
  reason: string;
  /** What one notification is for: a new condition in the same slot replaces the last one. */
  slot: string;
  /** This condition, exactly: notify runs once per key. */
  key: string;
}

/** The statuses a drain counts as Failed: once the loop drained Failed, attention names their items. */
export const ATTENTION_STATUSES: readonly ItemStatus[] = ITEM_STATUSES.filter((s) => drainsAs(s) === "Failed");
/** The statuses an item settles with when its landing did not land (lib/step/settle.ts). */
export const LANDING_ATTENTION_STATUSES: readonly ItemStatus[] = ["failed", "landing_blocked"];
/** The landing outcomes that did not land. */
export const UNLANDED_OUTCOMES: readonly LandingOutcome[] = LANDING_OUTCOMES.filter((o) => !landed(o));

/**
 * What attention reads: the loop, the item in flight, and, in the projection's order, the items
 * that may need a person: every item whose landing record has an outcome in UNLANDED_OUTCOMES, every
 * item a budget stopped, and once the loop drained Failed every item whose status is in
 * ATTENTION_STATUSES (more items change nothing). attentionView takes it from a whole projection; a step reads only those items, through
 * the store's indexes (lib/step/notify.ts stepAttentionView).
 */
export interface AttentionView {
  loop: LoopRecord;
  current: ItemState | null;
  items: readonly ItemState[];
}

export function attentionView(p: Projection): AttentionView {
  return { loop: p.loop, current: p.loop.current ? (itemOf(p, p.loop.current) ?? null) : null, items: active(p) };
}

/**
 * The conditions that need a person, in this order: the loop paused on an agent's question or by an
 * environment fault, a budget reached (the loop paused by its own, items settled failed by theirs), items whose landing failed (a merge conflict, a target checked out elsewhere)
 * or was blocked on the forge (`landing_blocked`: a refusal, red checks past the deadline, auto-merge
 * not allowed; its PR is left open for a person), the loop drained `Failed`. An operator's own pause
 * or stop needs nobody else.
 */
export function attention(p: Projection, o: { faultItem?: string | null } = {}): Attention[] {
  return attentionOf(attentionView(p), o);
}

/**
 * attention, from what it reads (AttentionView). `faultItem`: the item the fault event names (the
 * projection keeps only its seq), when the caller read it.
 */
export function attentionOf({ loop, current: cur, items }: AttentionView, o: { faultItem?: string | null } = {}): Attention[] {
  const out: Attention[] = [];
  const troubled = items.filter((it) => ATTENTION_STATUSES.includes(it.status));
  if (loop.state === "paused" && cur?.status === "needs_input")
    out.push({ kind: "question", item: cur.id, reason: loop.reason ?? `${cur.id} needs input`, slot: "question", key: `question:${cur.id}:e${cur.epoch}:a${cur.attempts.length}` });
  if (loop.state === "paused" && loop.fault)
    out.push({ kind: "environment", item: o.faultItem ?? null, reason: loop.reason ?? loop.fault.kind, slot: "environment", key: `environment:${loop.fault.seq}` });
  // Budgets (docs/spend.md#at-a-limit): the loop paused by its own, items settled failed by theirs.
  if (loop.state === "paused" && loop.budgetStop)
    out.push({ kind: "budget", item: null, reason: loop.reason ?? loop.budgetStop.reason, slot: "budget", key: `budget:${loop.budgetStop.seq}` });
  for (const it of items)
    if (it.status === "failed" && it.budgetStop && it.budgetStop.attempt === it.attempts.length)
      out.push({ kind: "budget", item: it.id, reason: `${it.id}: ${it.reason ?? it.budgetStop.reason}`, slot: `budget:${it.id}`, key: `budget:${it.id}:e${it.epoch}:a${it.attempts.length}` });
  // Settled failed or landing_blocked because of its landing (a merge that conflicted or failed, a
  // pull request blocked): settle.ts settles a landing that did not land as exactly these.
  for (const it of troubled)
    if (LANDING_ATTENTION_STATUSES.includes(it.status) && it.landing && !landed(it.landing.outcome))
      out.push({ kind: "landing", item: it.id, reason: `${it.id}: ${it.reason ?? it.landing.reason}`, slot: `landing:${it.id}`, key: `landing:${it.id}:e${it.epoch}:a${it.attempts.length}` });
  if (loop.state === "drained" && loop.outcome === "Failed") {
    const bad = troubled;
    const names = bad.slice(0, 5).map((it) => `${it.id} ${it.status}`).join(", ") + (bad.length > 5 ? `, … ${bad.length} items` : "");
    out.push({ kind: "failed", item: null, reason: `the loop drained Failed: ${names}`, slot: "failed", key: `failed:${loop.drainedSeq}` });
  }
  return out;
}
