// What happened to each item and to the loop, in time, folded from the event log (docs/events.md):
// every attempt of every epoch with the times of its phases, its verdict, verify, pull request and
// landing, and the waits (a question, a pause, a stop, an environment fault). `loop status` says what
// *is*; this says *when*: for the timeline and the item pages of `loop serve`, and for where each
// item's time went in `loop status` (./times.ts).
//
// It reads the events' documented payloads, not the projection's tables: the projection is a cache
// whose shape may change, the log's vocabulary is a contract. Pure: `foldEvent` takes plain events and
// mutates a history the caller owns (the server folds each new event once, as the log grows). An
// event type this fold does not know is counted and otherwise ignored: a newer writer's events never
// stop the page.
import { pullTerms } from "../forge/provider.ts";
import { landingCodeOf, settleCodeOf, verifyCodeOf } from "../log/legacy-codes.ts";
import type { EventType, NormItemPayload, Payload } from "../log/events.ts";
import { faultSentence, type LandingCode, type SettleCode, type VerifyCode } from "../log/vocabulary.ts";

/** An event as read from the log, its payload parsed (any version's: the fold reads each field it uses defensively). */
interface LogEvent {
  seq: number;
  ts: string;
  type: string;
  actor: string;
  item: string | null;
  payload: unknown;
}

/** An event of one type as the fold sees it: a payload of that type's schema, any field of which an older writer may not have written. */
interface LogEventOf<T extends EventType> extends LogEvent {
  type: T;
  payload: Partial<Payload<T>> | null | undefined;
}

/** The phases an attempt's bar is split into (docs/cli/loop-serve.md#the-timeline). */
export const PHASE_KINDS = ["launching", "setup", "agent", "step", "airlock", "verify", "landing", "checks", "closing", "rework"] as const;
export type PhaseKind = (typeof PHASE_KINDS)[number];

/**
 * A stretch of time; `to` null: still going. Times are ms since the epoch, parsed once when the
 * event is folded (the log's ISO 8601 text is exact to the ms; parsing it on every render would be
 * most of the render: bench/README.md, loop serve).
 */
interface Span {
  from: number;
  to: number | null;
}

interface Phase extends Span {
  kind: PhaseKind;
}

interface VerifyHistory {
  command: string | null;
  log: string | null;
  reservedAt: number | null;
  startedAt: number | null;
  deadline: string | null;
  finishedAt: number | null;
  /** When its wrapper saw the command start and end (verify_finished `times`), where recorded. */
  ran: { from: number | null; to: number | null };
  passed: boolean | null;
  exitCode: number | null;
  timedOut: boolean;
  /** Why the verdict is what it is (verify_finished's code; an older log's given one by lib/log/legacy-codes.ts). */
  code: VerifyCode | null;
  reason: string | null;
  tail: string | null;
}

export interface AttemptHistory {
  epoch: number;
  n: number;
  runner: string | null;
  model: string | null;
  branch: string | null;
  sessionDir: string | null;
  /** The agent's output log (session_started). */
  log: string | null;
  reservedAt: number;
  /** When `workspace.setup` ran in the launch (workspace_prepared's `setup.ms`, ending at that event), where it ran. */
  setup: { from: number; to: number } | null;
  startedAt: number | null;
  /** How the agent's session ended (session_ended, launch_failed, needs_input, environment_fault). */
  end: { at: number; verdict: string; exitCode: number | null; signal: string | null; reason: string } | null;
  /** When its wrapper saw the agent start and end (session_ended `times`), where recorded. */
  ran: { from: number | null; to: number | null };
  question: string | null;
  verify: VerifyHistory | null;
  /** `label`: how people write it on the loop's forge, "#12" or a GitLab "!12" (lib/forge/provider.ts pullTerms). */
  pr: { at: number; number: number; url: string; head: string; draft: boolean; reused: boolean; label: string } | null;
  /** Each change of the landing wait through a forge (forge_landing_waiting), oldest first. */
  landingWaits: { at: number; code: string; reason: string }[];
  landing: { at: number; outcome: string; code: LandingCode | null; target: string | null; commit: string | null; reason: string } | null;
  /** The attempt's fate: requeued (failed or not), or the item's settlement (with its code). */
  outcome: { at: number; kind: string; code: SettleCode | null; reason: string } | null;
  closed: { at: number; how: string; reason: string } | null;
  /** When a reset ended an attempt that had not finished. */
  abandonedAt: number | null;
  /**
   * Phases recorded by events of their own rather than derived from the attempt's times (reworks,
   * once forge reactions record them): `phasesOf` draws them after the derived ones.
   */
  extraPhases: Phase[];
}

type ItemWaitKind = "needs_input";
interface ItemWait extends Span {
  kind: ItemWaitKind;
  label: string;
}

export interface ItemHistory {
  id: string;
  ref: string | null;
  prompt: string | null;
  /** The current epoch (work_item_reset boundaries so far). */
  epoch: number;
  attempts: AttemptHistory[];
  /** Forge reactions that sent the item back to work (forge_reaction_recorded, decision retry), in every epoch. */
  reworks: number;
  waits: ItemWait[];
  resets: { at: number; actor: string }[];
  replies: { at: number; actor: string }[];
  controls: { at: number; actor: string; verb: string }[];
}

export type LoopWaitKind = "paused" | "stopped" | "environment";
interface LoopWait extends Span {
  kind: LoopWaitKind;
  label: string;
}

export interface History {
  seq: number;
  hash: string;
  name: string | null;
  /** The first and the last event's time (ms). */
  firstTs: number | null;
  lastTs: number | null;
  /** Item ids in the latest definition's order, then items no longer in it. */
  order: string[];
  items: Map<string, ItemHistory>;
  waits: LoopWait[];
  /** Attempts reserved, in every epoch: a counter that only goes up. */
  attempts: number;
  /** Events of types this fold does not know, by type. */
  unknown: Record<string, number>;
  /** The forge provider of the latest definition that named one (its PRs keep their labels after the forge section is removed). */
  provider: string | null;
}

export function emptyHistory(): History {
  return { seq: 0, hash: "", name: null, firstTs: null, lastTs: null, order: [], items: new Map(), waits: [], attempts: 0, unknown: {}, provider: null };
}

function item(h: History, id: string): ItemHistory {
  let it = h.items.get(id);
  if (!it) {
    it = { id, ref: null, prompt: null, epoch: 0, attempts: [], reworks: 0, waits: [], resets: [], replies: [], controls: [] };
    h.items.set(id, it);
    h.order.push(id);
  }
  return it;
}

/** The attempt an item event names: the latest attempt of the current epoch with that number. */
function attemptOf(it: ItemHistory, n: unknown): AttemptHistory | null {
  const a = it.attempts.at(-1);
  return a && a.epoch === it.epoch && (n === undefined || a.n === n) ? a : null;
}

function closeItemWait(it: ItemHistory, ts: number): void {
  for (const w of it.waits) if (w.to === null) w.to = ts;
}

function openLoopWait(h: History, kind: LoopWaitKind, label: string, ts: number): void {
  closeLoopWait(h, ts);
  h.waits.push({ kind, label, from: ts, to: null });
}

function closeLoopWait(h: History, ts: number): void {
  const w = h.waits[h.waits.length - 1];
  if (w && w.to === null) w.to = ts;
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}
function num(v: unknown): number | null {
  return typeof v === "number" ? v : null;
}

type Handler<T extends EventType> = (h: History, e: LogEventOf<T>, it: ItemHistory | null, t: number) => void;

/**
 * What each event type means for the timeline: every type of the log's vocabulary has its entry (a
 * new event type fails the typecheck until the page knows it), its payload typed by its schema. A
 * rework pushes a `{kind: "rework", from, to}` onto its attempt's `extraPhases` and closes it when
 * the rework ends.
 */
const HANDLERS: { [T in EventType]: Handler<T> } = {
  store_opened() {},
  store_bound() {},
  lease_taken_over() {},
  notified() {},
  definition_imported(h, e, _it, t) {
    h.name = str(e.payload?.name) ?? h.name;
    h.provider = str(e.payload?.settings?.forge?.provider) ?? h.provider;
    const defs: Partial<NormItemPayload>[] = Array.isArray(e.payload?.items) ? e.payload.items : [];
    const ids = new Set<string>();
    for (const d of defs) {
      if (typeof d?.id !== "string") continue;
      ids.add(d.id);
      const it = item(h, d.id);
      it.ref = str(d.ref);
      it.prompt = str(d.prompt);
    }
    h.order = [...defs.map((d) => d?.id).filter((id): id is string => typeof id === "string"), ...h.order.filter((id) => !ids.has(id))];
  },
  loop_started() {},
  // control.review: nothing launches from the ask until a person starts the loop.
  review_required(h, e, _it, t) {
    const reasons: Partial<Payload<"review_required">["reasons"][number]>[] = Array.isArray(e.payload?.reasons) ? e.payload.reasons : [];
    openLoopWait(h, "paused", `waits for review: ${reasons.map((r) => str(r?.code) ?? "?").join(", ")}`, t);
  },
  loop_reviewed(h, _e, _it, t) {
    closeLoopWait(h, t);
  },
  loop_paused(h, e, _it, t) {
    openLoopWait(h, "paused", str(e.payload?.reason) ?? "paused", t);
  },
  loop_stopped(h, e, _it, t) {
    openLoopWait(h, "stopped", str(e.payload?.reason) ?? "stopped", t);
  },
  loop_resumed(h, e, _it, t) {
    closeLoopWait(h, t);
  },
  loop_drained() {},
  loop_reopened() {},
  // Spend is the status document's (items[].usage, loop.usage): the timeline draws time, not money.
  usage_recorded() {},
  budget_stopped(h, e, _it, t) {
    // The loop's budget pauses it, as loop_paused would; an item's is told by its item_settled.
    if (e.payload?.scope === "loop") openLoopWait(h, "paused", `budget: ${str(e.payload?.reason) ?? "the loop's budget was reached"}`, t);
  },
  environment_fault(h, e, it, t) {
    const reason = str(e.payload?.reason) ?? "environment fault";
    // As the reducer reads it: an attempt whose agent had ended waits for its verify; a reserved one never ran.
    // A fault that names no attempt was met before a reservation: the item waits to launch.
    const a = it && e.payload?.attempt != null ? attemptOf(it, e.payload.attempt) : null;
    const verifying = (a !== null && a.end !== null) || e.payload?.kind === "setup_missing";
    if (a && !verifying) {
      a.end = { at: t, verdict: "environment_fault", exitCode: null, signal: null, reason };
      a.outcome = { at: t, kind: "requeued", code: null, reason: `environment fault (${str(e.payload?.kind) ?? "?"})` };
    }
    openLoopWait(h, "environment", faultSentence({ reason, fix: str(e.payload?.fix) ?? "", item: e.item, doing: verifying ? "verifying" : "launching" }), t);
  },
  control_recorded(h, e, it, t) {
    it?.controls.push({ at: t, actor: e.actor, verb: str(e.payload?.verb) ?? "?" });
  },
  reply_recorded(h, e, it, t) {
    it?.replies.push({ at: t, actor: e.actor });
  },
  launch_reserved(h, e, it, t) {
    if (!it) return;
    const p = e.payload ?? {};
    h.attempts++;
    // A rework phase lasts until the attempt that does the rework is reserved.
    for (const ph of it.attempts.at(-1)?.extraPhases ?? []) if (ph.kind === "rework" && ph.to === null) ph.to = t;
    it.attempts.push({
      epoch: it.epoch,
      n: num(p.attempt) ?? it.attempts.filter((a) => a.epoch === it.epoch).length + 1,
      runner: str(p.runner),
      model: str(p.model),
      branch: str(p.branch),
      sessionDir: str(p.sessionDir),
      log: null,
      reservedAt: t,
      setup: null,
      startedAt: null,
      end: null,
      ran: { from: null, to: null },
      question: null,
      verify: null,
      pr: null,
      landingWaits: [],
      landing: null,
      outcome: null,
      closed: null,
      abandonedAt: null,
      extraPhases: [],
    });
  },
  workspace_prepared(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    const ms = num((e.payload?.setup as { ms?: unknown } | null | undefined)?.ms);
    if (!a || ms === null || ms < 0) return;
    a.setup = { from: Math.max(a.reservedAt, t - ms), to: t };
  },
  session_started(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.startedAt = t;
    a.log = str(e.payload?.log);
  },
  launch_failed(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.end = {
      at: t,
      verdict: e.payload?.interrupted ? "launch_interrupted" : "launch_failed",
      exitCode: null,
      signal: null,
      reason: str(e.payload?.reason) ?? "",
    };
  },
  session_ended(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    const p = e.payload ?? {};
    a.end = { at: t, verdict: str(p.verdict) ?? "?", exitCode: num(p.exitCode), signal: str(p.signal), reason: str(p.reason) ?? "" };
    a.ran = wrapperTimes(p.times, a.reservedAt, t);
  },
  needs_input(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a || !it) return;
    const q = str(e.payload?.question) ?? "";
    a.question = q;
    a.end = { at: t, verdict: "needs_input", exitCode: null, signal: null, reason: "asked a question" };
    it.waits.push({ kind: "needs_input", label: `needs input: ${q}`, from: t, to: null });
  },
  verify_reserved(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.verify = { ...emptyVerify(), command: str(e.payload?.command), log: str(e.payload?.log), reservedAt: t };
  },
  verify_started(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.verify ??= { ...emptyVerify(), reservedAt: t };
    a.verify.startedAt = t;
    a.verify.deadline = str(e.payload?.deadline);
    a.verify.log ??= str(e.payload?.log);
  },
  verify_finished(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    const p = e.payload ?? {};
    // verify: false, or a verify that never ran: the verdict is all there is (a zero-length phase).
    a.verify ??= { ...emptyVerify(), reservedAt: t };
    Object.assign(a.verify, {
      finishedAt: t,
      passed: p.passed === true,
      exitCode: num(p.exitCode),
      timedOut: p.timedOut === true,
      code: typeof p.reason === "string" ? verifyCodeOf(p as Payload<"verify_finished">).code : null,
      reason: str(p.reason),
      tail: str(p.tail),
      log: str(p.log) ?? a.verify.log,
      ran: wrapperTimes(p.times, a.verify.reservedAt ?? t, t),
    });
  },
  forge_pr_recorded(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    const p = e.payload ?? {};
    const number = num(p.number) ?? 0;
    a.pr = {
      at: a.pr?.at ?? t,
      number,
      url: str(p.url) ?? "",
      head: str(p.head) ?? "",
      draft: p.draft === true,
      reused: p.reused === true,
      label: `${pullTerms(h.provider).sign}${number}`,
    };
  },
  forge_reaction_recorded(_h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a || e.payload?.decision !== "retry") return;
    it!.reworks++;
    a.extraPhases.push({ kind: "rework", from: t, to: null });
  },
  forge_landing_waiting(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.landingWaits.push({ at: t, code: str(e.payload?.code) ?? "?", reason: str(e.payload?.reason) ?? "" });
  },
  // The worktree's move aside, a stopped watcher and the verify on the base are status's to say: a
  // failed base verify pauses the loop by the environment_fault recorded with it.
  worktree_moved() {},
  watcher_stopped() {},
  base_verify_started() {},
  base_verify_finished() {},
  base_verify_accepted() {},
  forge_thread_baselined() {},
  forge_comment_handled() {},
  forge_question_posted() {},
  forge_gave_up_posted() {},
  tracker_issue_moved() {},
  tracker_outcome_posted() {},
  landing_finished(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    const p = e.payload ?? {};
    const code = typeof p.reason === "string" && typeof p.outcome === "string" ? landingCodeOf(p as Payload<"landing_finished">) : null;
    a.landing = { at: t, outcome: str(p.outcome) ?? "?", code, target: str(p.target), commit: str(p.commit), reason: str(p.reason) ?? "" };
  },
  item_requeued(h, e, it, t) {
    if (!it) return;
    closeItemWait(it, t);
    const a = attemptOf(it, undefined);
    if (a && a.outcome === null && a.abandonedAt === null)
      a.outcome = { at: t, kind: e.payload?.failed ? "failed" : "requeued", code: null, reason: str(e.payload?.reason) ?? "" };
  },
  item_settled(h, e, it, t) {
    if (!it) return;
    closeItemWait(it, t);
    const a = attemptOf(it, undefined);
    const kind = str(e.payload?.outcome) ?? "?";
    // An attempt without an outcome is the one in flight (every requeue gives the one before its
    // outcome): a settlement ends it. An item settled while pending has none such.
    if (a && a.outcome === null && a.abandonedAt === null)
      a.outcome = {
        at: t,
        kind,
        code: typeof e.payload?.reason === "string" ? (settleCodeOf(e.payload as Payload<"item_settled">) ?? null) : null,
        reason: str(e.payload?.reason) ?? "",
      };
  },
  session_closed(h, e, it, t) {
    const a = it && attemptOf(it, e.payload?.attempt);
    if (!a) return;
    a.closed = { at: t, how: str(e.payload?.how) ?? "?", reason: str(e.payload?.reason) ?? "" };
  },
  work_item_reset(h, e, it, t) {
    if (!it) return;
    const p = e.payload ?? {};
    // As the reducer reads it: only a reset that removed something starts a new epoch.
    const pieces: unknown[] = Array.isArray(p.pieces) ? p.pieces : [];
    if (p.found === false || (p.found === true && pieces.length === 0)) return;
    closeItemWait(it, t);
    for (const a of it.attempts) if (a.epoch === it.epoch && !settledAttempt(a)) a.abandonedAt = t;
    it.epoch++;
    it.resets.push({ at: t, actor: e.actor });
  },
};

/** A wrapper's recorded times (session_ended, verify_finished `times`) as ms, each kept only within [from, to]. */
function wrapperTimes(v: unknown, from: number, to: number): { from: number | null; to: number | null } {
  const at = (x: unknown, lo: number) => {
    const ms = typeof x === "string" ? Date.parse(x) : NaN;
    return Number.isFinite(ms) && ms >= lo && ms <= to ? ms : null;
  };
  const times = v && typeof v === "object" ? (v as { started?: unknown; ended?: unknown }) : {};
  const started = at(times.started, from);
  return { from: started, to: at(times.ended, started ?? from) };
}

function emptyVerify(): VerifyHistory {
  return {
    command: null,
    log: null,
    reservedAt: null,
    startedAt: null,
    deadline: null,
    finishedAt: null,
    ran: { from: null, to: null },
    passed: null,
    exitCode: null,
    timedOut: false,
    code: null,
    reason: null,
    tail: null,
  };
}

function settledAttempt(a: AttemptHistory): boolean {
  return a.outcome !== null || a.closed !== null;
}

/** Fold one event into `h` (the next one of the log: the caller reads them in seq order). */
export function foldEvent(h: History, e: LogEvent & { hash?: string }): void {
  const t = Date.parse(e.ts);
  h.seq = e.seq;
  if (e.hash !== undefined) h.hash = e.hash;
  h.firstTs ??= t;
  h.lastTs = t;
  if (!Object.hasOwn(HANDLERS, e.type)) {
    // A newer writer's event: counted, and said on the page (timeline.ts), never a stop.
    h.unknown[e.type] = (h.unknown[e.type] ?? 0) + 1;
    return;
  }
  const handler = HANDLERS[e.type as EventType] as Handler<EventType>;
  handler(h, e as LogEventOf<EventType>, e.item === null ? null : item(h, e.item), t);
}

export function foldEvents(events: Iterable<LogEvent & { hash?: string }>, h: History = emptyHistory()): History {
  for (const e of events) foldEvent(h, e);
  return h;
}

/** The first of the times that is not null. */
function first(...ts: (number | null | undefined)[]): number | null {
  for (const t of ts) if (t !== null && t !== undefined) return t;
  return null;
}

/**
 * An attempt's phases, in order: launching (reserved → the agent started; setup, where it ran, drawn
 * apart inside it), the agent (its start → its end, as its wrapper saw them where recorded, else the
 * events that record them), waiting for a step (the agent's end as its wrapper saw it → the step that
 * saw it; the verify's likewise), the airlock (that step → the verify reserved), verify
 * (reserved → the command's end, else its verdict), landing (a passing verdict → a pull request or
 * the landing), checks (the pull request → the landing), closing (the landing, or the last phase
 * of an attempt that did not land → the session closed: the worktree's removal), then the phases of
 * their own (reworks). A phase the log has no end for
 * ends at the attempt's outcome, its close or its reset; failing those it is still going (`to` null).
 */
export function phasesOf(a: AttemptHistory): Phase[] {
  const stop = first(a.outcome?.at, a.closed?.at, a.abandonedAt);
  const out: Phase[] = [];
  const agentFrom = first(a.ran.from, a.startedAt);
  const agentTo = first(a.ran.to, a.end?.at, stop);
  const launched = first(agentFrom, a.end?.at, stop);
  // Setup, within the launch: the launch's own work before and after it stays "launching".
  if (a.setup) {
    out.push({ kind: "launching", from: a.reservedAt, to: a.setup.from });
    out.push({ kind: "setup", from: a.setup.from, to: a.setup.to });
    out.push({ kind: "launching", from: a.setup.to, to: launched });
  } else out.push({ kind: "launching", from: a.reservedAt, to: launched });
  if (agentFrom !== null) out.push({ kind: "agent", from: agentFrom, to: agentTo });
  const v = a.verify;
  // The agent's end as its wrapper saw it, and the step that saw it: the wait between them is cron's.
  if (a.ran.to !== null && a.end && a.end.at > a.ran.to) out.push({ kind: "step", from: a.ran.to, to: a.end.at });
  // The agent exited: the airlock (its leftovers sealed, its objects imported and proven, the gates) until the verify is reserved (or its verdict given without one).
  if (a.end?.verdict === "exited") {
    const to = first(v?.reservedAt, stop);
    if (to === null || to > a.end.at) out.push({ kind: "airlock", from: a.end.at, to });
  }
  if (v?.reservedAt && v.reservedAt !== v.finishedAt) {
    const ended = v.ran.to !== null && v.finishedAt !== null && v.finishedAt > v.ran.to ? v.ran.to : null;
    out.push({ kind: "verify", from: v.reservedAt, to: first(ended, v.finishedAt, stop) });
    if (ended !== null) out.push({ kind: "step", from: ended, to: v.finishedAt });
  }
  if (v?.passed && v.finishedAt) {
    const landed = first(a.landing?.at, stop);
    if (a.pr) {
      if (a.pr.at !== v.finishedAt) out.push({ kind: "landing", from: v.finishedAt, to: a.pr.at });
      out.push({ kind: "checks", from: a.pr.at, to: landed });
    } else if (landed !== v.finishedAt) out.push({ kind: "landing", from: v.finishedAt, to: landed });
    // What settling took after the landing (the worktree removed, the session closed).
    if (a.landing && a.closed && a.closed.at > a.landing.at) out.push({ kind: "closing", from: a.landing.at, to: a.closed.at });
  }
  // Any other attempt the step closed after its last phase (a failed verdict, an agent that did not
  // exit): closing too, from that phase's end to the session closed (the worktree's removal included).
  const last = out.at(-1)!;
  if (a.closed && last.kind !== "closing" && last.to !== null && a.closed.at > last.to) out.push({ kind: "closing", from: last.to, to: a.closed.at });
  out.push(...a.extraPhases);
  return out;
}
