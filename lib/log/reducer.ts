// The reducer: the one definition of what the log means (the projection it folds into, and the
// read helpers, are lib/log/projection.ts). `apply` is pure (it never touches its
// input); `fold` and the store's append path use `reduceInto`, which mutates a projection the caller
// owns, so a million-event replay does not copy the whole state per event. Both run the same code.
import type { NormItemPayload, StoredEvent } from "./events.ts";
import { IllegalEventError } from "../shared/errors.ts";
import { faultSentence, type ItemStatus, IN_FLIGHT, isSettled, type SettleCode, SETTLED_OUTCOMES } from "./vocabulary.ts";
import { FORGE_HANDLERS } from "./reducer-forge.ts";
import { SPEND_HANDLERS } from "./reducer-spend.ts";
import { BASE_HANDLERS } from "./reducer-base.ts";
import { currentAttempt, type Fail, type Handlers, need, needStatus } from "./reducer-rules.ts";
import { landingCodeOf, settleCodeOf, verifyCodeOf } from "./legacy-codes.ts";
import { sessionItem } from "./item-views.ts";
import {
  currentAttemptOf,
  emptyLoopUsage,
  emptyProjection,
  itemOf,
  type ItemState,
  type OwnerRecord,
  type Projection,
  recordedPieces,
  requireItem,
} from "./projection.ts";

export function apply(p: Projection, e: StoredEvent): Projection {
  const next = structuredClone(p);
  reduceInto(next, e);
  return next;
}

export function fold(events: Iterable<StoredEvent>, from: Projection = emptyProjection()): Projection {
  const p = structuredClone(from);
  for (const e of events) reduceInto(p, e);
  return p;
}

/**
 * Which items an event may change: every item for a definition import, else the one it names.
 * Every other item is untouched by it, which the store relies on (it copies and rewrites only these).
 */
export function touchedItems(e: Pick<StoredEvent, "type" | "item">): "all" | string[] {
  if (e.type === "definition_imported") return "all";
  return e.item ? [e.item] : [];
}

function fresh(def: NormItemPayload, epoch: number): ItemState {
  return {
    id: def.id,
    def,
    inDefinition: true,
    status: "pending",
    reason: null,
    settleCode: null,
    epoch,
    settledAt: null,
    attempts: [],
    failures: 0,
    replies: [],
    question: null,
    control: [],
    held: false,
    started: false,
    session: null,
    workspace: null,
    landing: null,
    forge: null,
    reset: null,
  };
}

function refreshItemView(it: ItemState): void {
  const a = currentAttemptOf(it);
  it.landing = a?.landing ?? null;
  if (it.forge) it.forge.landing = a?.landingWait ?? null;
}

function settle(p: Projection, it: ItemState, status: ItemStatus, reason: string, code: SettleCode, ts: string) {
  it.status = status;
  it.reason = reason;
  it.settleCode = code;
  it.settledAt = ts;
  it.question = null;
  if (p.loop.current === it.id) p.loop.current = null;
}

function sameOwner(a: OwnerRecord | null, b: OwnerRecord | null): boolean {
  if (a === null || b === null) return a === b;
  return a.repo === b.repo && a.gitDir === b.gitDir && a.root === b.root && a.name === b.name;
}

/** The loop is no longer paused by an environment fault, nor by its budget. */
function clearFault(p: Projection) {
  p.loop.fault = null;
  if (p.loop.budgetStop) p.loop.budgetStop = null;
}

/** A drained loop that is paused or stopped is no longer drained: its outcome would go stale. */
function leaveDrained(p: Projection) {
  p.loop.outcome = null;
  p.loop.drainedAt = null;
  p.loop.drainedSeq = null;
}

const HANDLERS: Handlers = {
  ...FORGE_HANDLERS,
  ...SPEND_HANDLERS,
  ...BASE_HANDLERS,
  store_opened(p, e, fail) {
    if (e.seq !== 1) fail("store_opened_first", "store_opened may only be the first event");
  },
  store_bound(p, e, fail) {
    const { previous, project } = e.payload;
    // The record says what it replaced: a binding that names another predecessor was not made
    // over this store's owner.
    if (!sameOwner(previous, p.loop.owner))
      fail("store_bound_previous", `previous owner ${JSON.stringify(previous)} is not the recorded ${JSON.stringify(p.loop.owner)}`);
    p.loop.owner = { repo: project.repo, gitDir: project.gitDir, root: project.root, name: project.name };
  },
  definition_imported(p, e, fail) {
    const pl = e.payload;
    if (pl.revision !== p.loop.revision + 1) fail("revision_order", `revision ${pl.revision} after ${p.loop.revision}`);
    p.loop.name = pl.name;
    p.loop.revision = pl.revision;
    p.loop.definitionHash = pl.hash;
    p.loop.settings = pl.settings;
    const seen = new Set<string>();
    for (const def of pl.items as NormItemPayload[]) {
      seen.add(def.id);
      const it = itemOf(p, def.id);
      if (!it) {
        p.items[def.id] = fresh(def, 0);
        continue;
      }
      // A settled or in-flight item keeps its status and history; only its definition changes.
      // What a launch took (runner, model, prompt) stays; timeouts and verify are read when used.
      it.def = def;
      it.inDefinition = true;
      if (it.status === "withdrawn") {
        it.status = "pending";
        it.reason = null;
      }
    }
    for (const id of Object.keys(p.items)) {
      if (seen.has(id)) continue;
      const it = requireItem(p, id);
      it.inDefinition = false;
      if (it.status === "pending") {
        it.status = "withdrawn";
        it.reason = `removed from the definition in revision ${pl.revision}`;
      }
    }
    const defOrder = (pl.items as NormItemPayload[]).map((d) => d.id);
    p.order = [...defOrder, ...p.order.filter((id) => !seen.has(id))];
  },
  loop_started(p, e, fail) {
    if (p.loop.state !== "new") fail("loop_state", `loop_started needs state new, it is ${p.loop.state}`);
    p.loop.state = "running";
    p.loop.reason = null;
    p.loop.startedAt = e.ts;
  },
  review_required(p, e, fail) {
    if (e.payload.revision !== p.loop.revision) fail("revision_order", `review_required of revision ${e.payload.revision}, the loop is at ${p.loop.revision}`);
    p.loop.review = { waiting: { reasons: e.payload.reasons, seq: e.seq }, reviewed: p.loop.review?.reviewed ?? null };
  },
  loop_reviewed(p, e, fail) {
    if (!p.loop.review?.waiting) fail("loop_state", "loop_reviewed while the loop waits for no review");
    if (e.payload.revision !== p.loop.revision) fail("revision_order", `loop_reviewed of revision ${e.payload.revision}, the loop is at ${p.loop.revision}`);
    p.loop.review = { waiting: null, reviewed: e.payload.revision };
  },
  loop_paused(p, e, fail) {
    if (p.loop.state === "paused") fail("loop_state", "loop_paused while already paused");
    leaveDrained(p);
    clearFault(p);
    p.loop.state = "paused";
    p.loop.reason = e.payload.reason;
    const c = e.payload.cause;
    if (c?.kind === "question") {
      const it = itemOf(p, c.item);
      if (it?.status !== "needs_input") fail("item_status", `loop_paused by a question of "${c.item}", which is ${it ? it.status : "not an item"}`);
      p.loop.cause = { kind: "question", item: c.item, seq: e.seq };
    } else if (c?.kind === "operator") p.loop.cause = { kind: "operator", verb: c.verb, seq: e.seq };
    else {
      // Logs written before the cause was recorded: a step paused for the question of the item in
      // flight in the same commit as its needs_input, and only then could an item be needs_input.
      const cur = p.loop.current ? itemOf(p, p.loop.current) : undefined;
      p.loop.cause = cur?.status === "needs_input" ? { kind: "question", item: cur.id, seq: e.seq } : { kind: "operator", verb: "pause", seq: e.seq };
    }
  },
  loop_resumed(p, e, fail) {
    if (p.loop.state !== "paused" && p.loop.state !== "stopped") fail("loop_state", `loop_resumed needs paused|stopped, it is ${p.loop.state}`);
    clearFault(p);
    p.loop.state = "running";
    p.loop.reason = null;
    p.loop.cause = null;
    p.loop.startedAt ??= e.ts;
  },
  loop_stopped(p, e, fail) {
    if (p.loop.state === "stopped") fail("loop_state", "loop_stopped while already stopped");
    leaveDrained(p);
    clearFault(p);
    p.loop.state = "stopped";
    p.loop.reason = e.payload.reason;
    p.loop.cause = { kind: "operator", verb: "stop", seq: e.seq };
  },
  control_recorded(p, e, fail) {
    const it = need(p, e, fail);
    it.control.push({ verb: e.payload.verb, actor: e.actor, text: e.payload.text, ts: e.ts });
    if (e.payload.verb === "start" || e.payload.verb === "retry") {
      it.started = true;
      it.held = false;
    } else if (e.payload.verb === "stop") {
      it.held = true;
    }
  },
  launch_reserved(p, e, fail) {
    const it = need(p, e, fail);
    if (p.loop.state !== "running") fail("loop_state", `launch_reserved needs a running loop, it is ${p.loop.state}`);
    if (p.loop.current !== null) fail("one_in_flight", `launch_reserved while "${p.loop.current}" is in flight`);
    needStatus(it, ["pending"], e, fail);
    const pl = e.payload;
    if (pl.attempt !== it.attempts.length + 1) fail("attempt_order", `attempt ${pl.attempt} reserved after ${it.attempts.length}`);
    it.attempts.push({
      n: pl.attempt,
      key: pl.key,
      reservedAt: e.ts,
      startedAt: null,
      end: null,
      launchFailed: null,
      question: null,
      verify: null,
      verifyRun: null,
      outcome: null,
      ...("gitExec" in pl ? { gitExec: pl.gitExec } : {}),
      landing: null,
      landingWait: null,
      reaction: null,
    });
    const deliveries: number[] = [];
    it.replies.forEach((r, i) => {
      if (r.delivered === null) {
        r.delivered = pl.attempt;
        deliveries.push(i);
      }
    });
    it.session = {
      attempt: pl.attempt,
      runner: pl.runner,
      model: pl.model,
      sessionId: pl.sessionId,
      conversationId: null,
      pid: null,
      tmux: null,
      argv: [],
      sessionDir: pl.sessionDir,
      log: null,
      worktree: pl.worktree,
      branch: pl.branch,
      startedAt: null,
      endedAt: null,
      closed: null,
      deliveries,
    };
    // What the branch was built on stays while the branch does (a later attempt reuses it).
    const builtOn = it.workspace?.branch === pl.branch ? it.workspace.builtOn : undefined;
    // So does how setup's products came into the checkout, while the checkout does.
    const setup = it.workspace?.present && it.workspace.worktree === pl.worktree ? it.workspace.setup : undefined;
    it.workspace = { branch: pl.branch, worktree: pl.worktree, present: true, ...(builtOn ? { builtOn } : {}), ...(setup ? { setup } : {}) };
    // A new attempt lands anew (its landing and landing wait are its own); its PR (if any) is kept, to be reused.
    it.status = "launching";
    it.reason = null;
    it.question = null;
    p.loop.current = it.id;
  },
  session_started(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["launching"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    a.startedAt = e.ts;
    if (e.payload.resumed) a.resumed = true;
    if ("start" in e.payload) a.start = e.payload.start;
    if ("base" in e.payload) a.base = e.payload.base;
    const s = sessionItem(it).session;
    s.pid = e.payload.pid;
    s.tmux = e.payload.tmux;
    s.conversationId = e.payload.conversationId;
    s.argv = e.payload.argv;
    s.log = e.payload.log;
    s.startedAt = e.ts;
    it.status = "running";
    (p.loop.usage ??= emptyLoopUsage()).sessions += 1;
  },
  worktree_moved(p, e, fail) {
    if (e.item === null) return;
    const it = need(p, e, fail);
    if (it.workspace?.worktree === e.payload.from) it.workspace.worktree = e.payload.to;
  },
  workspace_prepared(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["launching"], e, fail);
    currentAttempt(it, e.payload.attempt, e, fail);
    if (e.payload.builtOn && it.workspace) it.workspace.builtOn = { ref: e.payload.builtOn.ref, commit: e.payload.builtOn.commit };
    // Only logs that say whether setup ran or was copied (older ones leave the projection as it was).
    const s = e.payload.setup;
    if (s && s.reusedFrom !== undefined && it.workspace) it.workspace.setup = { ms: s.ms, reusedFrom: s.reusedFrom };
  },
  launch_failed(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["launching"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    a.launchFailed = e.payload.reason;
    const verdict = e.payload.interrupted ? "launch_interrupted" : "launch_failed";
    a.end = { verdict, exitCode: null, signal: null, reason: e.payload.reason, at: e.ts };
    sessionItem(it).session.endedAt = e.ts;
    it.status = "ended";
    it.reason = e.payload.reason;
  },
  environment_fault(p, e, fail) {
    if (p.loop.state !== "running") fail("loop_state", `environment_fault needs a running loop, it is ${p.loop.state}`);
    const pl = e.payload;
    if (e.item) {
      const it = need(p, e, fail);
      if (pl.attempt === null) {
        // Found before a reservation, which only happens with nothing in flight.
        if (p.loop.current !== null) fail("one_in_flight", `environment_fault before a launch while "${p.loop.current}" is in flight`);
        needStatus(it, ["pending"], e, fail);
      } else if (it.status === "ended") {
        // Met before the attempt's verify could start (the sandbox it runs in): the attempt waits as
        // it is, and its verify starts once the loop is resumed.
        const a = currentAttempt(it, pl.attempt, e, fail);
        if (a.verify) fail("verify_order", `environment_fault for attempt ${a.n} of "${it.id}", whose verify already finished`);
      } else {
        // The reserved attempt never ran: it ends here and is given back, not counted.
        needStatus(it, ["launching"], e, fail);
        const a = currentAttempt(it, pl.attempt, e, fail);
        a.launchFailed = pl.reason;
        a.end = { verdict: "environment_fault", exitCode: null, signal: null, reason: pl.reason, at: e.ts };
        a.outcome = `requeued: environment fault (${pl.kind})`;
        sessionItem(it).session.endedAt = e.ts;
        it.status = it.inDefinition ? "pending" : "withdrawn";
        it.reason = `environment fault: ${pl.reason}`;
        if (p.loop.current === it.id) p.loop.current = null;
      }
    } else if (pl.attempt !== null) fail("item_required", "environment_fault with an attempt must name its item");
    p.loop.state = "paused";
    // setup_missing is met by a verify, recorded once its attempt is given back (the item pending again).
    const verifying = p.items[e.item ?? ""]?.status === "ended" || pl.kind === "setup_missing";
    p.loop.reason = faultSentence({ reason: pl.reason, fix: pl.fix, item: e.item, doing: verifying ? "verifying" : "launching" });
    p.loop.fault = { kind: pl.kind, seq: e.seq };
    p.loop.cause = { kind: "fault", fault: pl.kind, item: e.item, fix: pl.fix, seq: e.seq };
  },
  session_ended(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["launching", "running"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    const pl = e.payload;
    a.end = { verdict: pl.verdict, exitCode: pl.exitCode, signal: pl.signal, reason: pl.reason, at: e.ts };
    // The wrapper's own time of the agent's exit where it was read: a tick sees it later.
    sessionItem(it).session.endedAt = pl.times?.ended ?? e.ts;
    it.status = "ended";
    it.reason = pl.reason;
  },
  needs_input(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["launching", "running"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    a.question = e.payload.question;
    a.end = { verdict: "needs_input", exitCode: null, signal: null, reason: "asked a question", at: e.ts };
    sessionItem(it).session.endedAt = e.ts;
    it.status = "needs_input";
    it.question = e.payload.question;
    it.reason = `needs input: ${e.payload.question}`;
  },
  reply_recorded(p, e, fail) {
    const it = need(p, e, fail);
    if (isSettled(it.status) || it.status === "withdrawn") fail("item_status", `reply_recorded for settled item "${it.id}" (${it.status})`);
    it.replies.push({ text: e.payload.text, actor: e.actor, ts: e.ts, delivered: null });
  },
  verify_reserved(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    if (a.end?.verdict !== "exited")
      fail("verify_order", `verify_reserved for attempt ${a.n} of "${it.id}", whose session did not exit (${a.end?.verdict ?? "no end"})`);
    if (a.verify || a.verifyRun) fail("verify_order", `verify_reserved for attempt ${a.n} of "${it.id}", which already has a verify`);
    const pl = e.payload;
    a.verifyRun = {
      key: pl.key,
      command: pl.command,
      log: pl.log,
      timeoutMs: pl.timeoutMs,
      reservedAt: e.ts,
      pid: null,
      startTime: null,
      startedAt: null,
      deadline: null,
      ...("head" in pl ? { head: pl.head } : {}),
    };
    it.reason = "verify reserved";
  },
  verify_started(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    const run = a.verifyRun;
    if (!run || run.pid !== null || a.verify)
      return fail("verify_order", `verify_started for attempt ${a.n} of "${it.id}" needs a reserved verify not yet started or finished`);
    const pl = e.payload;
    Object.assign(run, { pid: pl.pid, startTime: pl.startTime, startedAt: e.ts, deadline: pl.deadline, ...("proof" in pl ? { proof: pl.proof } : {}) });
    it.reason = `verify running (deadline ${pl.deadline})`;
  },
  verify_finished(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    // The code (and the no-progress flag) an older log's verdict did not carry, given once, here.
    a.verify = { ...e.payload, ...verifyCodeOf(e.payload), at: e.ts };
    // A verify judged without a command (verify: false, or run inside its step by an older
    // version) leaves the reason as the session's end.
    if (a.verifyRun) it.reason = `verify ${e.payload.passed ? "passed" : "failed"} (${e.payload.reason})`;
  },
  item_requeued(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended", "needs_input", ...SETTLED_OUTCOMES], e, fail);
    const a = currentAttemptOf(it);
    if ((it.status === "ended" || it.status === "needs_input") && a && a.outcome === null) {
      // Only a failed attempt spends the budget; a question or an operator's stop does not. A
      // rework (a reaction that decided "retry") spends it too, and says it was one.
      a.outcome = e.payload.failed ? (a.reaction?.decision === "retry" ? "rework" : "failed") : `requeued: ${e.payload.reason}`;
      if (e.payload.failed) it.failures += 1;
      else if (e.payload.drained) a.drained = true;
    }
    if (e.payload.resetBudget) it.failures = 0;
    // An item removed from the definition while in flight finishes its attempt, but is not given
    // another one: back to pending outside the definition means withdrawn (as after a reset).
    it.status = it.inDefinition ? "pending" : "withdrawn";
    it.reason = it.inDefinition ? e.payload.reason : `removed from the definition: ${e.payload.reason}`;
    it.settleCode = null;
    it.settledAt = null;
    it.question = null;
    if (p.loop.current === it.id) p.loop.current = null;
  },
  item_settled(p, e, fail) {
    const it = need(p, e, fail);
    const outcome = e.payload.outcome;
    const a = currentAttemptOf(it);
    if (outcome === "passed") {
      needStatus(it, ["ended"], e, fail);
      if (!a?.verify?.passed) fail("passed_unverified", `item "${it.id}" settled passed without a passing verify`);
    } else if (outcome === "failed") {
      needStatus(it, ["ended", "needs_input", "pending"], e, fail);
    } else if (outcome === "blocked") {
      needStatus(it, ["pending"], e, fail);
    } else if (outcome === "landing_blocked") {
      needStatus(it, ["ended"], e, fail);
      if (a?.landing?.outcome !== "blocked") fail("landing_not_blocked", `item "${it.id}" settled landing_blocked without a blocked landing_finished`);
    } else {
      needStatus(it, ["pending", ...IN_FLIGHT], e, fail);
    }
    if (a && a.outcome === null && it.status !== "pending") {
      a.outcome = outcome;
      if (outcome === "failed") it.failures += 1;
    }
    settle(p, it, outcome, e.payload.reason, settleCodeOf(e.payload), e.ts);
  },
  landing_finished(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    if (!a.verify?.passed) fail("landing_unverified", `landing for "${it.id}" before a passing verify`);
    if (a.landing) fail("already_landed", `landing for "${it.id}" attempt ${a.n}, whose landing already finished`);
    const pl = e.payload;
    a.landing = { outcome: pl.outcome, code: landingCodeOf(pl), target: pl.target, commit: pl.commit, reason: pl.reason };
    // Through a forge, the landing wait ends with the code and reason it ended on: status never shows a stale wait.
    if (pl.code !== undefined && a.landingWait) a.landingWait = { ...a.landingWait, code: pl.code, reason: pl.reason };
  },
  session_closed(p, e, fail) {
    const it = need(p, e, fail);
    const s = it.session;
    if (!s) return fail("no_session", `session_closed for "${it.id}" which has no session`);
    if (s.attempt !== e.payload.attempt) fail("attempt_mismatch", `session_closed for attempt ${e.payload.attempt}, session is ${s.attempt}`);
    if (s.closed) fail("already_closed", `session of "${it.id}" attempt ${s.attempt} already closed`);
    s.closed = { how: e.payload.how, reason: e.payload.reason, at: e.ts, ...(e.payload.head !== undefined ? { head: e.payload.head } : {}) };
    s.endedAt ??= e.ts;
    if (e.payload.worktreeRemoved && it.workspace) {
      it.workspace.present = false;
      delete it.workspace.setup;
    }
  },
  loop_drained(p, e, fail) {
    if (p.loop.state !== "running") fail("loop_state", `loop_drained needs running, it is ${p.loop.state}`);
    if (p.loop.current !== null) fail("one_in_flight", `loop_drained while "${p.loop.current}" is in flight`);
    p.loop.state = "drained";
    p.loop.outcome = e.payload.outcome;
    p.loop.reason = null;
    p.loop.drainedAt = e.ts;
    p.loop.drainedSeq = e.seq;
  },
  loop_reopened(p, e, fail) {
    if (p.loop.state !== "drained") fail("loop_state", `loop_reopened needs drained, it is ${p.loop.state}`);
    leaveDrained(p);
    p.loop.state = "running";
    p.loop.reason = null;
  },
  watcher_stopped(p, e, fail) {
    // A fact about the attempt in flight, kept on it: its end, if its session or verify is then found gone, is no fault of its own.
    const it = need(p, e, fail);
    needStatus(it, ["launching", "running", "ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    const verifying = it.status === "ended" && a.verifyRun !== null && a.verify === null;
    if ((e.payload.running === "verify") !== verifying)
      fail(
        "verify_order",
        `watcher_stopped says the ${e.payload.running} of attempt ${a.n} of "${it.id}" ran, but it is ${it.status}${verifying ? " with its verify running" : ""}`,
      );
    const { pid, signal, signalledAt, running } = e.payload;
    a.drain = { seq: e.seq, pid, signal, signalledAt, running };
  },
  lease_taken_over() {},
  notified(p, e) {
    const { channel, slot, key, ok, cursor } = e.payload;
    if (channel === undefined) {
      p.loop.notified[slot] = key;
      return;
    }
    const channels = (p.loop.channels ??= {});
    const st = (channels[channel] ??= { cursor: 0, failures: 0, retryAt: null, lastError: null });
    if (cursor !== undefined) st.cursor = Math.max(st.cursor, cursor);
    if (ok) {
      // A condition sent is not sent again; an outcome's place is its cursor.
      if (slot !== "") p.loop.notified[`${channel}|${slot}`] = key;
      Object.assign(st, { failures: 0, retryAt: null, lastError: null });
    } else Object.assign(st, { failures: st.failures + 1, retryAt: e.payload.retryAt ?? null, lastError: e.payload.reason });
  },
  work_item_reset(p, e, fail) {
    const it = need(p, e, fail);
    const pl = e.payload;
    if (pl.found === false) {
      // The audit record of a reset that found nothing: legal only when the log holds nothing for it.
      const held = recordedPieces(it);
      if (pl.pieces.length > 0 || held.length > 0)
        fail(
          "reset_found_nothing",
          `work_item_reset of "${it.id}" says nothing was found, but ${pl.pieces.length ? `it names pieces (${pl.pieces.join(", ")})` : `the item holds ${held.join(", ")}`}`,
        );
      return;
    }
    // A reset that found state but removed nothing (it could not end the session) is an audit
    // record too. Events of the first format (no `found`) are always a boundary.
    if (pl.found === true && pl.pieces.length === 0) return;
    // Epoch boundary: nothing from before the reset survives in the fold except the definition.
    const next = fresh(it.def, it.epoch + 1);
    next.reset = { actor: e.actor, at: e.ts };
    next.inDefinition = it.inDefinition;
    if (!it.inDefinition) {
      next.status = "withdrawn";
      next.reason = "reset while not in the definition";
    }
    p.items[it.id] = next;
    if (p.loop.current === it.id) p.loop.current = null;
  },
};

export function reduceInto(p: Projection, e: StoredEvent): void {
  const fail = (rule: string, detail: string): never => {
    throw new IllegalEventError(e.seq, rule, detail);
  };
  if (e.seq !== p.seq + 1) fail("seq_gap", `expected seq ${p.seq + 1}, got ${e.seq}`);
  if (e.prev_hash !== p.hash) fail("prev_hash", `prev_hash does not match the hash of seq ${p.seq}`);
  if (p.seq === 0 && e.type !== "store_opened") fail("store_opened_first", `first event is ${e.type}`);
  if (!Object.hasOwn(HANDLERS, e.type)) fail("unknown_type", `unknown event type "${e.type}"`);
  // The one place the union meets the table: each handler is typed for its own event.
  (HANDLERS[e.type] as (p: Projection, e: StoredEvent, fail: Fail) => void)(p, e, fail);
  // The item's view of its current attempt, derived in one place (refreshItemView); only the item the event names changed.
  const named = e.item ? itemOf(p, e.item) : undefined;
  if (named) refreshItemView(named);
  p.seq = e.seq;
  p.hash = e.hash;
  p.loop.updatedAt = e.ts;
}
