// The observe phase: look at a launched attempt's session from outside and record what became of
// it (started, asked a question, exited, lost, stalled), or report that it is still at work. The
// verdict on what an observation means is classifySession's (lib/decisions/session-verdict.ts).
import { readWrapperTimes } from "../supervisor/wrapper-times.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ItemState, requireAttempt } from "../log/projection.ts";
import { append, closeInStep, itemNow, loopView, type StepContext, type StepOutcome } from "./context.ts";
import { classifyLaunching, classifySession } from "../decisions/session-verdict.ts";
import { drainedReason, interruptedLaunchesFault } from "../decisions/faults.ts";
import { adoptable, observeSession, sessionMark, tmuxSessionName } from "../supervisor/sessions.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { tmuxHasSession } from "../supervisor/tmux.ts";
import { markCarried } from "../shared/process.ts";
import { whileRunning } from "../decisions/budget.ts";
import { recordRunningUsage, stopForBudget } from "./spend.ts";
import { usageDraft } from "./usage-draft.ts";
import { modelRoute } from "../definition/network.ts";

/** A reserved attempt whose start is not recorded: adopt the wrapper, wait for it, or fail the launch. */
export function observeLaunching(ctx: StepContext, it: ItemState): StepOutcome | null {
  const attempt = requireAttempt(it);
  const s = it.session!;
  const found = adoptable(s.sessionDir);
  if (found) {
    // The wrapper was spawned by a step killed before it recorded the start: adopt it.
    append(
      ctx,
      [{ type: "session_started", item: it.id, payload: { attempt: attempt.n, pid: found.pid, tmux: found.tmux, conversationId: null, argv: [], log: join(s.sessionDir, SESSION_FILES.output), resumed: false } }],
      "session_started",
    );
    return null;
  }
  const launched = existsSync(join(s.sessionDir, SESSION_FILES.launch));
  // What the reserving step spawned carries the attempt's mark from its start (in tmux, its session has the name first).
  const carried = launched && (markCarried([sessionMark(s)]) || (ctx.def.tmux && tmuxHasSession(tmuxSessionName(ctx.def.name, it.id, attempt.n, it.epoch))));
  const v = classifyLaunching({ launched, carried, ageMs: Date.now() - Date.parse(attempt.reservedAt), launchTimeoutMs: it.def.timeouts.launch });
  if (v.kind === "waiting") return { action: "waiting", item: it.id, reason: v.reason };
  const { reason, interrupted } = v;
  // Interrupted again and again, it pauses the loop instead (the attempt given back the same way).
  const ended = it.attempts.slice(0, -1).map((a) => a.end?.verdict ?? null);
  const again = !interrupted || loopView(ctx).loop.state !== "running" ? null : interruptedLaunchesFault({ item: it.id, attempt: attempt.n, ended });
  if (again) {
    append(ctx, [{ type: "environment_fault", item: it.id, payload: { kind: again.kind, attempt: attempt.n, reason: again.message, fix: again.fix } }], "launch_failed");
    return { action: "paused", item: it.id, reason: loopView(ctx).loop.reason };
  }
  append(ctx, [{ type: "launch_failed", item: it.id, payload: { attempt: attempt.n, reason, interrupted } }], "launch_failed");
  return null;
}

/**
 * A running session: still working (the step stops here, its figure so far recorded when it changed,
 * unless a budget is reached: then it is ended), asking (the loop pauses), or ended.
 */
export async function observeRunning(ctx: StepContext, it: ItemState): Promise<StepOutcome | null> {
  const attempt = requireAttempt(it);
  const s = it.session!;
  const seen = observeSession(s, attempt, it.def.timeouts, Date.now());
  const v = classifySession(seen);
  const budget = (item: ItemState) => whileRunning({ item, usage: loopView(ctx).loop.usage, budget: ctx.def.budget, now: Date.now() });
  if (v.kind === "waiting") {
    // Recorded in its own commit before the budget is judged: a step killed while ending the
    // session leaves the figure that decides, and the next one stops it the same way.
    recordRunningUsage(ctx, it);
    const now = itemNow(ctx, it.id);
    const reached = budget(now);
    if (reached) return stopForBudget(ctx, now, reached);
    return { action: "waiting", item: it.id, reason: v.reason };
  }
  // Ended, but a budget the recorded figure had reached is still due (the step that stopped it died
  // after ending the session, or loop.json lowered the budget): stopped as it would have been.
  const due = budget(it);
  if (due) return stopForBudget(ctx, it, due);
  if (v.kind === "needs_input") {
    const c = await closeInStep(ctx, { it, reason: "agent asked a question", removeCheckout: false });
    // The close path's final figure and close; the session's end is needs_input's.
    const closeEvents = (c?.events ?? []).filter((e) => e.type === "session_closed" || e.type === "usage_recorded");
    append(
      ctx,
      [
        { type: "needs_input", item: it.id, payload: { attempt: attempt.n, question: v.question } },
        ...closeEvents,
        { type: "loop_paused", payload: { reason: `${it.id} needs input: ${v.question}`, cause: { kind: "question", item: it.id } } },
      ],
      "needs_input",
    );
    return { action: "paused", item: it.id, reason: `${it.id} needs input: ${v.question}` };
  }
  if (v.kind === "exited" && modelRoute({ runner: it.def.runner, network: it.def.network, env: ctx.options.env }).gateway) {
    // Behind a gateway the budget was enforced at the source: a session that ended over it was
    // refused its next model request, so it is stopped as a running one would be. Recorded first:
    // a step killed here leaves the figure that decides, and the next one stops it the same way.
    const final = usageDraft(it, { final: true, prices: ctx.def.prices });
    if (final) append(ctx, [final], "usage");
    const reached = budget(itemNow(ctx, it.id));
    if (reached) return stopForBudget(ctx, itemNow(ctx, it.id), reached);
  }
  if (v.kind === "exited") {
    const usage = usageDraft(itemNow(ctx, it.id), { final: true, prices: ctx.def.prices });
    // The agent's own start and end, as its wrapper saw them: the timeline draws those, not this tick's time.
    const times = readWrapperTimes(it.session!.sessionDir, "session", { from: Date.parse(attempt.reservedAt), to: Date.now() });
    append(ctx, [...(usage ? [usage] : []), { type: "session_ended", item: it.id, payload: { attempt: attempt.n, verdict: "exited", exitCode: v.code, signal: v.signal, reason: v.reason, times } }], "session_ended");
    return null;
  }
  // Gone without an exit status after the watcher named it when it was stopped: it died with the
  // watcher's machine (a pod's end), which spends no attempt (lib/decisions/faults.ts drainedReason).
  const drained = v.kind === "lost" && seen.recordPresent ? drainedReason({ stop: attempt.drain, what: "session", vanished: v.reason }) : null;
  const [verdict, reason] = drained ? (["drained", drained] as const) : ([v.kind, v.reason] as const);
  // lost, never_started, stalled, drained: end whatever is left through the close path.
  const c = await closeInStep(ctx, { it, reason, removeCheckout: false, endVerdict: verdict });
  append(ctx, c ? c.events : [{ type: "session_ended", item: it.id, payload: { attempt: attempt.n, verdict, exitCode: null, signal: null, reason } }], "session_ended");
  return null;
}
