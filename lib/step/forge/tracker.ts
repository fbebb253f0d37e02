// A Linear or Jira tracker's share of a step (docs/trackers.md#states, #outcomes): carry out what
// lib/decisions/tracker-moves.ts says is owed, each recorded once the tracker did it
// (tracker_issue_moved, tracker_outcome_posted), so a crash between the two does it again (a move to
// where the issue is changes nothing), never once more after it. A tracker that does not answer (a
// 5xx, no answer, a rate limit) is said once and asked again on a later step (not by the same step's
// second pass): nothing is spent, nothing recorded. A state the tracker does not have is the environment fault `tracker_state_unknown`,
// naming tracker.moveTo: the loop pauses until loop.json is fixed and the loop resumed.
import { trackerDue } from "../../decisions/tracker-moves.ts";
import { sanitizeLine } from "../../forge/untrusted.ts";
import { append, projection, type StepContext } from "../context.ts";
import { answer } from "./comments.ts";
import { forgeLink } from "./link.ts";

/** Steps whose tracker failed a move or an outcome: their second pass asks nothing more. */
const failedIn = new WeakSet<StepContext>();

export async function trackerPhase(ctx: StepContext): Promise<void> {
  const settings = ctx.def.tracker;
  const link = settings ? await forgeLink(ctx) : null;
  if (!settings || !link?.keyed || failedIn.has(ctx)) return;
  for (const due of trackerDue(projection(ctx), settings.moveTo)) {
    if (link.limited()) return;
    const label = link.tracker.threadLabel({ kind: "issue", number: due.issue });
    if (due.kind === "move") {
      const r = await link.keyed.moveIssue(due.issue, due.state);
      if (!r.ok) {
        failedIn.add(ctx);
        ctx.options.log.warn(
          `tracker: could not move ${label} to ${JSON.stringify(due.state)} (tracker.moveTo.${due.move}): ${link.failed(r, { quiet: true })}; tried again on a later step`,
        );
        return;
      }
      if (r.value.kind === "unknown_state") {
        const reason = `${label} could not be moved to ${JSON.stringify(due.state)} (tracker.moveTo.${due.move}): ${sanitizeLine(r.value.message, 300)}`;
        const fix = `name in loop.json's tracker.moveTo.${due.move} a state ${settings.provider} has (and can reach from the issue's), or remove it, then \`loop ctl resume\``;
        if (projection(ctx).loop.state !== "running") ctx.options.log.warn(`tracker: ${reason}; to fix: ${fix}`);
        else append(ctx, [{ type: "environment_fault", payload: { kind: "tracker_state_unknown", attempt: null, reason, fix } }], "fault");
        return;
      }
      append(
        ctx,
        [{ type: "tracker_issue_moved", item: due.item, payload: { attempt: due.attempt, issue: due.issue, move: due.move, state: due.state } }],
        "forge",
      );
      continue;
    }
    const text = [
      `\`${due.item}\` ${due.outcome} (attempt ${due.attempt}): ${sanitizeLine(due.reason, 500) || "no reason given"}.`,
      ...(due.pr ? ["", `Pull request: ${due.pr}`] : []),
    ].join("\n");
    const posted = await answer(ctx, link, { kind: "issue", number: due.issue }, text);
    if (posted === null) {
      failedIn.add(ctx);
      return;
    }
    append(
      ctx,
      [{ type: "tracker_outcome_posted", item: due.item, payload: { attempt: due.attempt, issue: due.issue, outcome: due.outcome, commentId: posted } }],
      "forge",
    );
  }
}
