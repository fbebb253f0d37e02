// The observe phase: look at a launched attempt's session from outside and record what became of
// it (started, asked a question, exited, lost, stalled), or report that it is still at work. The
// verdict on what an observation means is classifySession's (lib/decisions/session-verdict.ts).
import { readWrapperTimes } from "../supervisor/wrapper-times.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ItemState, requireAttempt } from "../log/projection.ts";
import type { LaunchingItem, RunningItem } from "../log/item-views.ts";
import { append, closeInStep, itemNow, loopView, type StepContext, type StepOutcome } from "./context.ts";
import { classifyLaunching, classifySession } from "../decisions/session-verdict.ts";
import { interruptedLaunchesFault } from "../decisions/faults.ts";
import { type RunningFacts, runningNext } from "../decisions/running-order.ts";
import { adoptable, observeSession, sessionMark, tmuxSessionName } from "../supervisor/sessions.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { tmuxHasSession } from "../supervisor/tmux.ts";
import { markCarried } from "../shared/process.ts";
import { whileRunning } from "../decisions/budget.ts";
import { recordRunningUsage, stopForBudget, stopForCutOffs } from "./spend.ts";
import { usageDraft } from "../writer/usage-draft.ts";
import { modelRoute } from "../definition/network.ts";

/** A reserved attempt whose start is not recorded: adopt the wrapper, wait for it, or fail the launch. */
export function observeLaunching(ctx: StepContext, it: LaunchingItem): StepOutcome | null {
  const attempt = requireAttempt(it);
  const s = it.session;
  const found = adoptable(s.sessionDir);
  if (found) {
    // The wrapper was spawned by a step killed before it recorded the start: adopt it.
    append(
      ctx,
      [
        {
          type: "session_started",
          item: it.id,
          payload: {
            attempt: attempt.n,
            pid: found.pid,
            tmux: found.tmux,
            conversationId: null,
            argv: [],
            log: join(s.sessionDir, SESSION_FILES.output),
            resumed: false,
          },
        },
      ],
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
    append(
      ctx,
      [{ type: "environment_fault", item: it.id, payload: { kind: again.kind, attempt: attempt.n, reason: again.message, fix: again.fix } }],
      "launch_failed",
    );
    return { action: "paused", item: it.id, reason: loopView(ctx).loop.reason };
  }
  append(ctx, [{ type: "launch_failed", item: it.id, payload: { attempt: attempt.n, reason, interrupted } }], "launch_failed");
  return null;
}

/**
 * A running session: still working (the step stops here, its figure so far recorded when it changed,
 * unless a budget is reached: then it is ended), asking (the loop pauses), or ended. The order of
 * these is lib/decisions/running-order.ts's; this looks, gathers the budget facts it asks for, and acts.
 */
export async function observeRunning(ctx: StepContext, it: RunningItem): Promise<StepOutcome | null> {
  const attempt = requireAttempt(it);
  const s = it.session;
  const seen = observeSession(s, attempt, it.def.timeouts, Date.now());
  const budget = (item: ItemState) => whileRunning({ item, usage: loopView(ctx).loop.usage, budget: ctx.def.budget, now: Date.now() });
  // Its gateway stopped its model requests (too many answers cut off): ended, whatever else it did.
  const cut = await stopForCutOffs(ctx, it);
  if (cut !== undefined) return cut;
  const facts: RunningFacts = {
    verdict: classifySession(seen),
    recordPresent: seen.recordPresent,
    behindGateway: modelRoute({ runner: it.def.runner, network: it.def.network, env: ctx.options.env }).gateway,
    drain: attempt.drain,
  };
  for (;;) {
    const next = runningNext(facts);
    switch (next.kind) {
      case "gather":
        if (next.fact === "budgetWhileWorking") {
          recordRunningUsage(ctx, it);
          facts.budgetWhileWorking = budget(itemNow(ctx, it.id));
        } else if (next.fact === "budgetDue") facts.budgetDue = budget(it);
        else {
          const final = usageDraft(it, { final: true, prices: ctx.def.prices });
          if (final) append(ctx, [final], "usage");
          facts.budgetAtExit = budget(itemNow(ctx, it.id));
        }
        continue;
      case "budget":
        return stopForBudget(ctx, itemNow(ctx, it.id), next.reached);
      case "waiting":
        return { action: "waiting", item: it.id, reason: next.reason };
      case "needs_input": {
        const c = await closeInStep(ctx, { it, reason: "agent asked a question", removeCheckout: false });
        // The close path's final figure and close; the session's end is needs_input's.
        const closeEvents = (c?.events ?? []).filter((e) => e.type === "session_closed" || e.type === "usage_recorded");
        append(
          ctx,
          [
            { type: "needs_input", item: it.id, payload: { attempt: attempt.n, question: next.question } },
            ...closeEvents,
            { type: "loop_paused", payload: { reason: `${it.id} needs input: ${next.question}`, cause: { kind: "question", item: it.id } } },
          ],
          "needs_input",
        );
        return { action: "paused", item: it.id, reason: `${it.id} needs input: ${next.question}` };
      }
      case "exited": {
        const usage = usageDraft(itemNow(ctx, it.id), { final: true, prices: ctx.def.prices });
        // The agent's own start and end, as its wrapper saw them: the timeline draws those, not this tick's time.
        const times = readWrapperTimes(s.sessionDir, "session", { from: Date.parse(attempt.reservedAt), to: Date.now() });
        append(
          ctx,
          [
            ...(usage ? [usage] : []),
            {
              type: "session_ended",
              item: it.id,
              payload: { attempt: attempt.n, verdict: "exited", exitCode: next.code, signal: next.signal, reason: next.reason, times },
            },
          ],
          "session_ended",
        );
        return null;
      }
      case "close": {
        // lost, never_started, stalled, drained: end whatever is left through the close path.
        const { verdict, reason } = next;
        const c = await closeInStep(ctx, { it, reason, removeCheckout: false, endVerdict: verdict });
        append(
          ctx,
          c ? c.events : [{ type: "session_ended", item: it.id, payload: { attempt: attempt.n, verdict, exitCode: null, signal: null, reason } }],
          "session_ended",
        );
        return null;
      }
    }
  }
}
