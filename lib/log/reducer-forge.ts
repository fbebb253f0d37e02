// The reducer's handlers of a forge's events (docs/forge.md): pull requests recorded, landing
// waits, comment threads baselined and handled, reactions, questions posted. Part of the one
// definition of what the log means (reducer.ts spreads them into its table).
import { commentIdOf, compareCommentIds, emptyForge } from "./projection.ts";
import { currentAttempt, type Handlers, need, needStatus } from "./reducer-rules.ts";
import { isSettled } from "./vocabulary.ts";

type ForgeEvent =
  | "forge_pr_recorded"
  | "forge_landing_waiting"
  | "forge_thread_baselined"
  | "forge_comment_handled"
  | "forge_reaction_recorded"
  | "forge_question_posted"
  | "forge_gave_up_posted"
  | "tracker_issue_moved"
  | "tracker_outcome_posted";

export const FORGE_HANDLERS: Pick<Handlers, ForgeEvent> = {
  forge_pr_recorded(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    if (!a.verify?.passed) fail("landing_unverified", `pull request for "${it.id}" before a passing verify`);
    if (a.landing) fail("already_landed", `pull request recorded for "${it.id}" after its landing finished`);
    const f = (it.forge ??= emptyForge());
    const pl = e.payload;
    f.pr = { number: pl.number, url: pl.url, head: pl.head, draft: pl.draft };
    // The landing wait starts when the PR is first recorded for this attempt.
    a.landingWait = { since: a.landingWait?.since ?? e.ts, code: "pr_recorded", reason: `pull request #${pl.number} recorded`, head: pl.head };
  },
  forge_landing_waiting(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    const f = it.forge;
    if (!f?.pr || !a.landingWait) return fail("no_pull_request", `landing wait for "${it.id}" without a recorded pull request`);
    if (a.landing) fail("already_landed", `landing wait for "${it.id}" after its landing finished`);
    const pl = e.payload;
    a.landingWait = { since: a.landingWait.since, code: pl.code, reason: pl.reason, head: pl.head };
    f.pr.head = pl.head;
    it.reason = `landing: ${pl.reason}`;
  },
  forge_thread_baselined(p, e, fail) {
    const it = need(p, e, fail);
    const f = (it.forge ??= emptyForge());
    if (f.highWater !== null) fail("already_baselined", `thread of "${it.id}" baselined twice in one epoch`);
    f.highWater = commentIdOf(e.payload.highWater);
    // A baseline recorded before `through` was: its own time, after the listing it was made from.
    f.readFrom = e.payload.through ?? e.ts;
  },
  forge_comment_handled(p, e, fail) {
    const it = need(p, e, fail);
    const f = it.forge;
    if (!f || f.highWater === null) return fail("not_baselined", `comment on "${it.id}" handled before its thread was baselined`);
    const pl = e.payload;
    // Each comment is acted on once: ids only go up (in the tracker's order of its ids).
    const id = commentIdOf(pl.commentId);
    if (compareCommentIds(id, f.highWater) <= 0) fail("comment_seen", `comment ${id} is at or below the high-water mark ${f.highWater}`);
    f.highWater = id;
    // A comment handled before `createdAt` was recorded leaves the start where it was (earlier: safe).
    if (pl.createdAt !== undefined) f.readFrom = pl.createdAt;
    f.lastComment = { id, login: pl.login, action: pl.action, detail: pl.detail, at: e.ts };
    if (pl.action === "message") f.messages.push({ id, login: pl.login, text: pl.detail, at: e.ts });
  },
  forge_reaction_recorded(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["ended"], e, fail);
    const a = currentAttempt(it, e.payload.attempt, e, fail);
    const pl = e.payload;
    if (!a.landingWait) fail("no_pull_request", `reaction for "${it.id}" without a recorded pull request`);
    if (a.landing) fail("already_landed", `reaction for "${it.id}" after its landing finished`);
    if (a.reaction) fail("already_reacted", `attempt ${a.n} of "${it.id}" was already reacted to`);
    if (pl.signals.length === 0) fail("no_signal", `reaction for "${it.id}" names no signal`);
    // The same signal never triggers twice: its key is new to the item (in this epoch).
    const seen = new Set(it.attempts.flatMap((x) => x.reaction?.signals.map((s) => s.key) ?? []));
    for (const s of pl.signals) if (seen.has(s.key)) fail("signal_seen", `signal ${s.key} of "${it.id}" was already reacted to`);
    a.reaction = { head: pl.head, signals: pl.signals, decision: pl.decision, reason: pl.reason, feedback: pl.feedback, at: e.ts };
    it.reason = `reaction (${pl.decision}): ${pl.reason}`;
  },
  forge_question_posted(p, e, fail) {
    const it = need(p, e, fail);
    needStatus(it, ["needs_input"], e, fail);
    const f = (it.forge ??= emptyForge());
    f.questionPosted = { attempt: e.payload.attempt, commentId: commentIdOf(e.payload.commentId) };
  },
  forge_gave_up_posted(p, e, fail) {
    const it = need(p, e, fail);
    if (it.status !== "failed" || it.settleCode !== "gave_up") fail("not_gave_up", `"${it.id}" did not settle gave_up`);
    const f = (it.forge ??= emptyForge());
    f.gaveUpPosted = { attempt: e.payload.attempt, commentId: commentIdOf(e.payload.commentId) };
  },
  tracker_issue_moved(p, e, fail) {
    const it = need(p, e, fail);
    const pl = e.payload;
    if (pl.attempt > it.attempts.length) fail("no_attempt", `"${it.id}" has no attempt ${pl.attempt}`);
    const f = (it.forge ??= emptyForge());
    f.trackerMoved = { ...f.trackerMoved, [pl.move]: pl.attempt };
  },
  tracker_outcome_posted(p, e, fail) {
    const it = need(p, e, fail);
    if (!isSettled(it.status)) fail("not_settled", `outcome of "${it.id}" posted before it settled`);
    const f = (it.forge ??= emptyForge());
    f.outcomePosted = { attempt: e.payload.attempt, commentId: commentIdOf(e.payload.commentId) };
  },
};
