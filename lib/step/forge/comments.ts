// Comments from the forge (docs/forge.md#comments), read at most once per poll interval with
// conditional requests (`since` + ETag; the provider decides how: one repository listing on GitHub,
// the changed threads on GitLab), then acted on, each once:
// - loop's own (marked) comments are dropped first; then everyone not authorized (fail closed);
// - `/loop <verb>` on the first line records what `loop ctl <verb>` records, as `<provider>:<login>`;
//   two different verbs are refused with an answering comment; `reset` is never a keyword;
// - the first authorized text after a question loop posted is the reply (and resumes a loop that
//   paused only for that question); other authorized text goes to the agent (inbox file and the
//   next handoff).
// An item's threads are its issue's and its recorded PR's (the provider's `threadKey` says which
// threads are one: a PR is an issue to GitHub). Comment ids share one increasing id space on both
// forges, so each item has one comment high-water mark in its ledger; its threads are baselined on
// first sight, so what was there before is context, not a delivery. Edited old comments come back
// with `since` and stay below the mark. `since` comes from the log (each item's readFrom: the
// creation time of the last comment handled, or its baseline's), unless the cache holds a later
// cursor; the cache only saves requests.
// With a Linear or Jira tracker (docs/trackers.md) the control channel is its issue's comments alone,
// read, answered and authorized through that tracker (ForgeLink.tracker); comments on the pull
// request, on the forge, are another id space and are not read as control.
import { join } from "node:path";
import { commentCursor, commentIntent, isLoopsOwn, loopComment, type CommentVerb } from "../../forge/comments.ts";
import type { ForgeComment, ForgeThread } from "../../forge/provider.ts";
import { fenced, TEXT_CAP, capped, sanitizeLine } from "../../forge/untrusted.ts";
import type { EventDraft } from "../../log/events.ts";
import { isInFlight, isSettled } from "../../log/vocabulary.ts";
import { type CommentId, compareCommentIds, type ItemState, type Projection, requireItem } from "../../log/projection.ts";
import { writeFileAtomic } from "../../shared/fsutil.ts";
import { append, closeInStep, projection, type StepContext } from "../context.ts";
import { issueOf } from "./issue-context.ts";
import { planCtl, type PlannedAction } from "../../decisions/ctl-plan.ts";
import { pausedByQuestionOf } from "../../decisions/attention.ts";
import { RefusedError, UsageError } from "../../shared/errors.ts";
import { forgeLink, type ForgeLink } from "./link.ts";
import { SESSION_FILES } from "../../supervisor/session-wrapper.ts";

/** Poll the repository's comments (when the interval has passed) and act on the new ones. */
export async function pollComments(ctx: StepContext): Promise<void> {
  const link = await forgeLink(ctx);
  if (!link) return;
  await postQuestions(ctx, link);
  await postGaveUp(ctx, link);
  if (link.limited()) return;
  if (Date.now() - link.cache.comments.polledAt < link.pollInterval) return;
  if (!(await baselineNew(ctx, link))) return;
  const p = projection(ctx);
  const items = p.order.map((id) => requireItem(p, id)).filter((it) => it.status !== "withdrawn");
  const threadsOf = threadsIn(link);
  const threads = items.flatMap(threadsOf);
  // From the log (each item's readFrom), or the cache's cursor when that is later: never from the cache alone.
  const since = commentCursor({
    cached: link.cache.comments.since,
    readFrom: items.flatMap((it) => (threadsOf(it).length && it.forge ? [it.forge.readFrom] : [])),
  });
  if (since === null) return; // no item has a thread to read
  const r = await link.tracker.listComments({ since, threads });
  if (!r.ok) return void link.failed(r);
  const comments = [...r.value.items].sort((a, b) => compareCommentIds(a.id, b.id));
  // The cursor moves as each comment is acted on (or needs nothing), never past one not yet done:
  // a step that stops mid-batch (a bug, a lost lease) saves where it got to. A comment left for
  // later (a permission that could not be read) holds it, with every later one on the same item.
  const pending = new Map(comments.map((c) => [c.id, c.updatedAt]));
  const lastRead = latest([since, ...comments.map((c) => c.updatedAt)]);
  const held = new Set<string>();
  for (const c of comments) {
    const item = itemOf(ctx, link, c);
    // A later comment on an item with one left for later waits too: comments are acted on in order.
    if (item && held.has(item)) continue;
    if ((await handle(ctx, link, c)) === "later") {
      if (item) held.add(item);
      continue;
    }
    pending.delete(c.id);
    link.cache.comments.since = pending.size ? earliest([...pending.values()]) : lastRead;
  }
  link.cache.comments.polledAt = Date.now();
  if (r.value.cut) {
    ctx.options.log.warn(`forge: the comment listing was cut after ${r.value.items.length} comments; the rest are read on the next step`);
    link.cache.comments.polledAt = 0; // the rest is not made to wait for the poll interval
  }
  materializeInboxes(ctx, projection(ctx));
}

function earliest(times: string[]): string {
  return times.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

function latest(times: string[]): string {
  return times.reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a));
}

/** The item whose thread a comment is on, if any. */
function itemOf(ctx: StepContext, link: ForgeLink, c: ForgeComment): string | undefined {
  return itemsByThread(projection(ctx), link).get(link.tracker.threadKey(c.thread));
}

/**
 * The threads an item's comments arrive on: its issue's, and its recorded PR's when the forge is the
 * tracker (a Linear or Jira tracker's comments are its issue's alone: the PR is the forge's).
 */
function threadsIn(link: ForgeLink): (it: ItemState) => ForgeThread[] {
  return (it) => {
    const issue = issueOf(it);
    const pr = link.keyed ? null : (it.forge?.pr?.number ?? null);
    return [...(issue !== null ? [{ kind: "issue" as const, number: issue }] : []), ...(pr !== null ? [{ kind: "pull" as const, number: pr }] : [])];
  };
}

/** Items with a thread, by the tracker's key of the thread: not withdrawn. */
function itemsByThread(p: Projection, link: ForgeLink): Map<string, string> {
  const out = new Map<string, string>();
  const threadsOf = threadsIn(link);
  for (const id of p.order) {
    const it = requireItem(p, id);
    if (it.status === "withdrawn") continue;
    for (const t of threadsOf(it)) out.set(link.tracker.threadKey(t), id);
  }
  return out;
}

/** First sight: the comments of the item's threads up to now become its high-water mark. False when the forge did not answer. */
async function baselineNew(ctx: StepContext, link: ForgeLink): Promise<boolean> {
  const p = projection(ctx);
  const threadsOf = threadsIn(link);
  const key = (t: ForgeThread) => link.tracker.threadKey(t);
  for (const id of p.order) {
    const it = requireItem(p, id);
    const all = it.status === "withdrawn" ? [] : threadsOf(it);
    // One listing per thread the tracker tells apart (a GitHub PR whose number is the issue's is one thread).
    const threads = all.filter((t, i) => all.findIndex((u) => key(u) === key(t)) === i);
    if (!threads.length || it.forge?.highWater != null) continue;
    let newest: ForgeComment | null = null;
    let comments = 0;
    for (const n of threads) {
      const list = await link.tracker.listThreadComments(n);
      if (!list.ok) {
        link.failed(list);
        return false;
      }
      // A cut listing still holds the thread's newest page: the mark is right, the count a floor.
      for (const c of list.value.items) if (!newest || compareCommentIds(c.id, newest.id) > 0) newest = c;
      comments += list.value.items.length;
    }
    // `through`: where this item's comments are read from, on the forge's clock (reducer readFrom).
    const payload = { issue: threads[0]!.number, highWater: newest?.id ?? "0", comments, through: newest?.createdAt ?? null };
    append(ctx, [{ type: "forge_thread_baselined", item: id, payload }], "forge");
  }
  return true;
}

/** Act on one comment; "later" when it cannot be decided yet (its author's permission could not be read). */
async function handle(ctx: StepContext, link: ForgeLink, c: ForgeComment): Promise<"done" | "later"> {
  if (isLoopsOwn(c.body)) return "done";
  const p = projection(ctx);
  const id = itemsByThread(p, link).get(link.tracker.threadKey(c.thread));
  if (!id) return "done";
  const it = requireItem(p, id);
  const mark = it.forge?.highWater;
  if (mark == null || compareCommentIds(c.id, mark) <= 0) return "done"; // seen, or an edited old comment
  const allowed = await link.authorized(c.login);
  if (allowed === null) {
    ctx.options.log.warn(
      `forge: comment ${c.id} on ${link.tracker.threadLabel(c.thread)} by ${sanitizeLine(c.login, 40)} waits: the author's permission could not be read; asked again on a later step`,
    );
    return "later";
  }
  if (!allowed) {
    ctx.options.log.debug(`forge: comment ${c.id} on ${link.tracker.threadLabel(c.thread)} by ${sanitizeLine(c.login, 40)} ignored: not an authorized user`);
    return "done";
  }
  const actor = `${link.trackerName}:${c.login}`;
  const handled = (action: "control" | "reply" | "message" | "refused", detail: string): EventDraft => ({
    type: "forge_comment_handled",
    item: id,
    actor,
    payload: { issue: c.thread.number, commentId: c.id, login: c.login, action, detail, createdAt: c.createdAt },
  });
  const intent = commentIntent(c.body);
  if (intent.kind === "conflict") {
    const why = `two different commands in one comment (${intent.verbs.map((v) => `/loop ${v}`).join(", ")}); nothing was done. Write one command per comment.`;
    append(ctx, [handled("refused", why)], "forge");
    await answer(ctx, link, c.thread, `@${c.login}: ${why}`, { once: true });
    return "done";
  }
  if (intent.kind === "command") {
    await command(ctx, link, { it, c, verb: intent.verb, actor, handled });
    return "done";
  }
  if (isSettled(it.status)) return "done"; // text on a settled item reaches no agent
  const text = capped(c.body, TEXT_CAP);
  if (it.status === "needs_input" && it.forge?.questionPosted?.attempt === it.attempts.length) {
    const actions = planCtl(p, "reply", [id], { text, actor, keepCheckout: ctx.def.keepCheckoutOnClose });
    const resume: EventDraft[] = pausedByQuestionOf(p, id) ? [{ type: "loop_resumed", payload: {} }] : [];
    append(ctx, [...actions.flatMap((a) => a.events.map((e) => ({ ...e, actor }) as EventDraft)), ...resume, handled("reply", text)], "forge");
    return "done";
  }
  append(ctx, [handled("message", text)], "forge");
  return "done";
}

/** `/loop <verb>`: the same plan `loop ctl` makes; a live session ended through the close path. */
async function command(
  ctx: StepContext,
  link: ForgeLink,
  o: { it: ItemState; c: ForgeComment; verb: CommentVerb; actor: string; handled: (a: "control" | "refused", d: string) => EventDraft },
): Promise<void> {
  const { it, c, verb, actor } = o;
  let actions: PlannedAction[];
  try {
    const loopVerb = verb === "pause" || verb === "resume";
    actions = planCtl(projection(ctx), verb, loopVerb ? [] : [it.id], {
      actor,
      reason: `/loop ${verb} in comment ${c.id}`,
      keepCheckout: ctx.def.keepCheckoutOnClose,
    });
  } catch (err) {
    // Only a verb that does not apply is answered; anything else is loop's own fault, not the comment's.
    if (!(err instanceof RefusedError || err instanceof UsageError)) throw err;
    const why = `/loop ${verb} refused: ${(err as Error).message}`;
    append(ctx, [o.handled("refused", why)], "forge");
    await answer(ctx, link, c.thread, `@${c.login}: ${why}`, { once: true });
    return;
  }
  const events: EventDraft[] = [];
  for (const a of actions) {
    if (a.close && a.item) {
      const target = requireItem(projection(ctx), a.item);
      const closed = await closeInStep(ctx, { it: target, reason: `/loop ${verb} by ${actor}`, removeCheckout: a.close.removeCheckout });
      if (closed) events.push(...closed.events);
    }
    events.push(...a.events.map((e) => ({ ...e, actor }) as EventDraft));
  }
  const effect = actions.map((a) => a.effect).join("; ");
  append(ctx, [...events, o.handled("control", `/loop ${verb}: ${effect}`)], "forge");
}

/** A marked comment from loop; a failure to post is said, not fatal (the decision is already recorded). */
export async function answer(ctx: StepContext, link: ForgeLink, thread: ForgeThread, text: string, o: { once?: boolean } = {}): Promise<CommentId | null> {
  const r = await link.tracker.createComment(thread, loopComment(text, ctx.def.name));
  if (!r.ok) {
    // A post recorded only once it is made is asked for again by a later step; a reply to a refused comment (`once`) is not.
    const later = o.once ? "it is not posted again" : "tried again on a later step";
    ctx.options.log.warn(`forge: could not comment on ${link.tracker.threadLabel(thread)}: ${link.failed(r, { quiet: true })}; ${later}`);
    return null;
  }
  return r.value.id;
}

/** Post the question of each item waiting for input, once per attempt, then record it. */
async function postQuestions(ctx: StepContext, link: ForgeLink): Promise<void> {
  const p = projection(ctx);
  for (const id of p.order) {
    const it = requireItem(p, id);
    const issue = issueOf(it);
    if (it.status !== "needs_input" || issue === null || it.question === null) continue;
    if (it.forge?.questionPosted?.attempt === it.attempts.length || link.limited()) continue;
    const text = `The agent working on \`${id}\` (attempt ${it.attempts.length}) asks:\n\n${it.question
      .split("\n")
      .map((l) => `> ${l}`)
      .join("\n")}\n\nThe first comment from an authorized user after this one is taken as the reply.`;
    const posted = await answer(ctx, link, { kind: "issue", number: issue }, text);
    if (posted !== null)
      append(ctx, [{ type: "forge_question_posted", item: id, payload: { attempt: it.attempts.length, issue, commentId: posted } }], "forge");
  }
}

/**
 * Say on its issue, once per attempt, that an item's agent gave up (docs/runners.md#giving-up): its
 * reason (the agent's words, cleaned, capped and quoted as untrusted) and what a person can do.
 */
async function postGaveUp(ctx: StepContext, link: ForgeLink): Promise<void> {
  const p = projection(ctx);
  for (const id of p.order) {
    const it = requireItem(p, id);
    const issue = issueOf(it);
    const attempt = it.attempts.at(-1);
    if (it.status !== "failed" || it.settleCode !== "gave_up" || issue === null || !attempt?.verify) continue;
    if (it.forge?.gaveUpPosted?.attempt === attempt.n || link.limited()) continue;
    const text =
      `The agent working on \`${id}\` gave up on attempt ${attempt.n}. Its work is kept on its branch, never landed, and it is not retried until a person decides: ` +
      "edit its prompt and `/loop retry`, or `/loop skip`.\n\n" +
      // Loop's own sentence with the agent's words fenced as untrusted text (lib/decisions/verify-verdict.ts),
      // quoted as a question is: no line starts with `/`, so nothing the agent wrote is a quick action.
      attempt.verify.tail
        .split("\n")
        .map((l) => `> ${l}`)
        .join("\n");
    const posted = await answer(ctx, link, { kind: "issue", number: issue }, text);
    if (posted !== null) append(ctx, [{ type: "forge_gave_up_posted", item: id, payload: { attempt: attempt.n, issue, commentId: posted } }], "forge");
  }
}

/** inbox.md of each in-flight session: the messages for it, rewritten whole (a materialization of the ledger). */
function materializeInboxes(ctx: StepContext, p: Projection): void {
  for (const id of p.order) {
    const it = requireItem(p, id);
    if (!it.session || !isInFlight(it.status) || !it.forge?.messages.length) continue;
    const body = it.forge.messages.map((m) => fenced(`Comment ${m.id} by ${m.login} (${m.at})`, m.text)).join("\n\n");
    try {
      writeFileAtomic(join(it.session.sessionDir, SESSION_FILES.inbox), `# Comments from the issue thread\n\n${body}\n`);
    } catch (err) {
      ctx.options.log.warn(`forge: could not write the inbox of ${id}: ${(err as Error).message}`);
    }
  }
}
