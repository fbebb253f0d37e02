// Reactions (docs/forge.md#reactions), the landing phase's effects: at each turn of a landing wait,
// what happened on the pull request loop waits to merge — failed checks on the head it pushed, an
// authorized reviewer's request for changes or comment on the diff, a base it no longer merges into —
// is read (conditional requests: a poll that sees nothing new costs 304s and records nothing), the
// new signals are decided by lib/forge/reactions.ts, and the decision is recorded in one commit:
// a rework (the reaction, the close of the session, the item requeued as a failed attempt; the next
// launch starts from the branch as loop pushed it, with the feedback in its handoff) or a block (the
// reaction, and the landing ended `blocked`). A signal's key is recorded with it, so the same signal
// on the same head never triggers twice, however often a kill makes a step see it again.
import type { EventDraft } from "../../log/events.ts";
import type { ForgeBlockCode } from "../../log/vocabulary.ts";
import { type ItemState, requireAttempt } from "../../log/projection.ts";
import type { EndedItem } from "../../log/item-views.ts";
import type { CheckFailure, ForgeCheck, ForgeChecks, ForgePull, ReviewFeedback } from "../../forge/provider.ts";
import { decideReaction, FEEDBACK_BOUNDS, newSignals, type Reactions, reactionFeedback } from "../../forge/reactions.ts";
import { reactionsOf } from "../../definition/normalize.ts";
import { sanitizeLine } from "../../forge/untrusted.ts";
import { failpoint } from "../../shared/failpoint.ts";
import { append, closeInStep, repoOf, type StepContext, type StepOutcome } from "../context.ts";
import { afterFailure, attemptsRan } from "../../decisions/attempt.ts";
import { gitTry } from "../../repo/git.ts";
import type { ForgeLink } from "./link.ts";
import { forgeFetch } from "./remote.ts";

/** What a turn of the landing does after looking: nothing new (go on to the merge gate), wait, or stop here having recorded a reaction. */
type ReactionTurn =
  | { kind: "none" }
  | { kind: "wait"; reason: string }
  | { kind: "unread"; reason: string }
  | { kind: "failed"; failure: Parameters<ForgeLink["failed"]>[0] }
  | { kind: "recorded"; outcome: StepOutcome | null };

/** The item's reactions: its definition's, or (a definition imported before reactions existed) the defaults for the loop's landing. */
function itemReactions(ctx: StepContext, it: ItemState): Reactions {
  return it.def.reactions ?? reactionsOf(ctx.def.landing, undefined, undefined);
}

/** Every signal key the item's attempts reacted to (in this epoch). */
function reactedKeys(it: ItemState): Set<string> {
  return new Set(it.attempts.flatMap((a) => a.reaction?.signals.map((s) => s.key) ?? []));
}

/**
 * Look at the PR for signals, and react to new ones. `checks`: what the landing read on the pushed
 * head. Review feedback from someone not authorized is left out (fail closed); an authorization
 * that could not be read is waited for, not guessed.
 */
export async function reactToPull(
  ctx: StepContext,
  link: ForgeLink,
  it: EndedItem,
  o: { pull: ForgePull; pushed: string; checks: ForgeChecks },
): Promise<ReactionTurn> {
  const reviews = await link.provider.reviewFeedback(o.pull.number);
  if (!reviews.ok) return { kind: "failed", failure: reviews };
  const trusted: ReviewFeedback[] = [];
  for (const r of reviews.value.items) {
    const ok = await link.authorized(r.login);
    if (ok === null)
      return { kind: "wait", reason: `could not read the permission of ${sanitizeLine(r.login, 40)}, who reviewed ${o.pull.label}; asking again next tick` };
    if (ok) trusted.push(r);
  }
  const failing = o.checks.checks.filter((c) => c.verdict === "failing");
  const conflict = o.pull.mergeability.kind === "block" && o.pull.mergeability.code === "conflict";
  const reacted = reactedKeys(it);
  const signals = newSignals({ head: o.pushed, failing, conflict, reviews: trusted }, reacted);
  // Nothing to react to in what was read; but what was not read may hold a change request: no merge
  // past feedback loop did not see (docs/forge.md#what-each-code-means, reviews_unread).
  if (signals.length === 0 && reviews.value.cut)
    return {
      kind: "unread",
      reason: `not every review of ${o.pull.label} could be read (more than loop reads, or a page on another host): a change request may be among them, so it is not merged`,
    };
  if (signals.length === 0) return { kind: "none" };
  // Seen, not yet recorded: a kill here is seen again by the next step, and recorded once.
  failpoint("reaction:after_seen");
  ctx.store.assertLease();
  const { decision, why } = decideReaction(signals, itemReactions(ctx, it), afterFailure(it) === "retry");
  const attempt = requireAttempt(it);
  const summary = signals.map((s) => s.summary).join("; ");
  const base = { attempt: attempt.n, head: o.pushed, signals };
  if (decision === "block") {
    const reason = why === "no attempt is left" ? `${summary}; no attempt is left: ${history(it, summary)}` : `${summary}; ${why}`;
    const code: ForgeBlockCode = signals[0]!.kind === "checksFailed" ? "checks_failed" : signals[0]!.kind === "conflict" ? "conflict" : "changes_requested";
    const left = o.pull.state === "open" && !o.pull.merged ? `; ${o.pull.url} left open` : "";
    append(
      ctx,
      [
        { type: "forge_reaction_recorded", item: it.id, payload: { ...base, decision, reason, feedback: "" } },
        {
          type: "landing_finished",
          item: it.id,
          payload: { attempt: attempt.n, branch: it.session.branch, outcome: "blocked", target: ctx.def.base, commit: null, code, reason: `${reason}${left}` },
        },
      ],
      "reaction",
    );
    return { kind: "recorded", outcome: null };
  }
  const feedback = reactionFeedback({
    label: o.pull.label,
    url: o.pull.url,
    head: o.pushed,
    base: ctx.def.base,
    baseRef: `${ctx.def.forge!.remote}/${ctx.def.base}`,
    signals,
    checks: signals.some((s) => s.kind === "checksFailed") ? await failureDetails(link, failing) : [],
    reviews: trusted.filter((r) => signals.some((s) => s.key === r.id)),
    conflictPaths: signals.some((s) => s.kind === "conflict") ? conflictPaths(ctx, o.pushed) : [],
  });
  const reason = `rework after ${summary}`;
  const c = await closeInStep(ctx, { it, reason, removeCheckout: false });
  const drafts: EventDraft[] = [
    { type: "forge_reaction_recorded", item: it.id, payload: { ...base, decision, reason: summary, feedback } },
    ...(c?.events ?? []),
    { type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason, failed: true, resetBudget: false } },
  ];
  append(ctx, drafts, "reaction");
  return { kind: "recorded", outcome: null };
}

/** What each failed check says about itself (bounded: FEEDBACK_BOUNDS); one that cannot be read says why. */
async function failureDetails(
  link: ForgeLink,
  failing: readonly ForgeCheck[],
): Promise<{ check: ForgeCheck; failures: CheckFailure[] | null; unread?: string }[]> {
  const out: { check: ForgeCheck; failures: CheckFailure[] | null; unread?: string }[] = [];
  for (const check of failing.slice(0, FEEDBACK_BOUNDS.checks)) {
    const r = await link.provider.checkFailures(check, { tailBytes: FEEDBACK_BOUNDS.logBytes });
    out.push(r.ok ? { check, failures: r.value } : { check, failures: null, unread: link.failed(r) });
  }
  // Those not described are counted by the digest.
  for (const check of failing.slice(FEEDBACK_BOUNDS.checks)) out.push({ check, failures: [] });
  return out;
}

/** The paths the pushed head and the base, fetched now, conflict on (git merge-tree); null when git cannot tell. */
function conflictPaths(ctx: StepContext, head: string): string[] | null {
  const { remote } = ctx.def.forge!;
  const ref = `refs/remotes/${remote}/${ctx.def.base}`;
  const fetched = forgeFetch({ repo: repoOf(ctx), forge: ctx.def.forge!, env: ctx.options.env, branch: ctx.def.base, dest: ref });
  if (fetched.code !== 0) ctx.options.log.warn(`forge: could not fetch ${remote}/${ctx.def.base} to name the conflicting paths: ${fetched.stderr.trim()}`);
  const r = gitTry(repoOf(ctx), ["merge-tree", "--write-tree", "--name-only", "--no-messages", ref, head]);
  // Exit 1: conflicts, the tree's id then one path per line; 0: none (the forge saw a base git has not fetched).
  if (r.code !== 0 && r.code !== 1) return null;
  return r.stdout.split("\n").slice(1).filter(Boolean);
}

/** The item's history for a block with no attempt left: each attempt the agent ran, and how it ended. */
function history(it: ItemState, now: string): string {
  const ran = it.attempts.filter((a) => a.startedAt !== null);
  const lines = ran.map((a, i) => {
    const why = a.reaction
      ? `rework after ${a.reaction.reason}`
      : a.verify
        ? `verify ${a.verify.passed ? "passed" : "failed"} (${a.verify.reason})`
        : (a.end?.reason ?? a.outcome ?? "no result");
    return `attempt ${i + 1}: ${i === ran.length - 1 ? now : why}`;
  });
  return `${lines.join("; ")} (${attemptsRan(it.attempts)} attempts; ${it.failures} failed of ${it.def.maxAttempts} allowed)`;
}
