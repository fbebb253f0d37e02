// The land phase through a forge (docs/forge.md#landing): push the item branch, open (or reuse)
// its pull request, and with landing "merge" wait for it — a second observed wait with its own
// deadline (timeouts.landing, counted from the passing verify) and a named reason at every tick —
// then merge exactly the sha loop pushed, into the loop's base, while both locks hold. What to do
// at each turn is decided by lib/forge/merge-gate.ts (pure, with named codes); this file asks the
// forge and git and records. The log records transitions (PR recorded, a new waiting reason,
// merged, blocked), never polls. A kill anywhere is recovered from the forge's own state: the PR is
// found by its branch before one is opened, and a merged PR is read as merged before a merge is
// asked for, so nothing is done twice.
import type { Payload } from "../../log/events.ts";
import type { LandingCode } from "../../log/vocabulary.ts";
import { currentAttemptOf, type ItemState } from "../../log/projection.ts";
import { type EndedItem, verifiedAttempt } from "../../log/item-views.ts";
import type { ForgeFailure, ForgePull } from "../../forge/provider.ts";
import { AUTO_MERGE_VAR, autoMergeAllowed } from "../../forge/auto-merge.ts";
import { definitionLock, environmentLock, type Expected, failureGate, type GateDecision, identityGate, mergeGate } from "../../forge/merge-gate.ts";
import { sanitizeLine } from "../../forge/untrusted.ts";
import { formatDuration } from "../../definition/duration.ts";
import { GitError } from "../../shared/errors.ts";
import { failpoint } from "../../shared/failpoint.ts";
import { append, itemNow, repoOf, type StepContext, type StepOutcome } from "../context.ts";
import { forgeLink, type ForgeLink } from "./link.ts";
import { gitTry } from "../../repo/git.ts";
import { forgeFetch, forgePush } from "./remote.ts";
import { reactToPull } from "./react.ts";

/** What landing_finished records of a landing, its code typed (the payload's type also admits an older log's). */
type LandingRecord = Omit<Payload<"landing_finished">, "attempt" | "branch" | "code"> & { code: LandingCode };
type Finish = (l: LandingRecord) => null;

export async function landThroughForge(ctx: StepContext, it: EndedItem): Promise<StepOutcome | null> {
  const link = (await forgeLink(ctx))!;
  const attempt = verifiedAttempt(it);
  const branch = it.session.branch;
  const since = Date.parse(attempt.verify.at);
  const deadline = since + (it.def.timeouts.landing ?? 30 * 60_000);
  const f = it.forge;
  // This attempt's landing wait: an earlier attempt's (before a retry or a rework) is not this one's.
  const waiting = attempt.landingWait;
  const finish: Finish = (l) => {
    append(ctx, [{ type: "landing_finished", item: it.id, payload: { attempt: attempt.n, branch, ...l } }], "landing");
    return null;
  };
  const lastReason = waiting?.reason ?? "no pull request yet";
  if (Date.now() > deadline)
    return finish({
      outcome: "blocked",
      target: ctx.def.base,
      commit: null,
      code: "deadline",
      reason: `landing deadline (timeouts.landing ${formatDuration(deadline - since)}, from the passing verify) passed; last: ${lastReason}${waiting && f?.pr ? `; ${f.pr.url} left open` : ""}`,
    });
  const limited = link.limited();
  if (limited) return { action: "waiting", item: it.id, reason: limited };

  // 1. The pull request of this attempt: pushed and recorded once, with the sha loop pushed.
  if (!waiting || !f?.pr) {
    const pr = await openPull(ctx, link, it, branch);
    if ("wait" in pr) return { action: "waiting", item: it.id, reason: pr.wait };
    if ("block" in pr) return finish({ outcome: "blocked", target: ctx.def.base, commit: null, code: "forge_refused", reason: pr.block });
    append(
      ctx,
      [
        {
          type: "forge_pr_recorded",
          item: it.id,
          payload: { attempt: attempt.n, number: pr.pull.number, url: pr.pull.url, head: pr.pushed, draft: pr.pull.draft, reused: pr.reused },
        },
      ],
      "landing",
    );
    if (ctx.def.landing === "pr")
      return finish({
        outcome: "pr_opened",
        target: ctx.def.base,
        commit: pr.pushed,
        code: "pr_opened",
        reason: `${pr.pull.draft ? "draft " : ""}${pr.pull.label} ${pr.reused ? "(reused) " : ""}${pr.pull.url}`,
      });
    return null; // the next turn of the step evaluates the merge
  }
  const pr = f.pr;
  // What loop pushed for this attempt (forge_pr_recorded; every wait since carries it too).
  const pushed = waiting.head;

  // 2. Is it still loop's PR (merged, the pushed head, the base), and does landing still say "merge"?
  const got = await link.provider.getPull(pr.number);
  if (!got.ok) return failed(ctx, link, it, got, finish, { merging: false, number: pr.number, pushed });
  const pull = got.value;
  const expected: Expected = { head: pushed, base: ctx.def.base, headIsAncestor: pull.headSha !== pushed && isAncestor(ctx, pull.headSha, pushed) };
  const decided = identityGate(pull, expected) ?? definitionLock(ctx.def.landing, pull);
  if (decided) return act(ctx, it, decided, { pull, pushed, finish });

  // 3. What happened on the PR since loop pushed (failed checks, requested changes, a conflict):
  // a reaction, recorded once per signal (./react.ts, docs/forge.md#reactions).
  const checks = await link.provider.checks(pushed, { pull: pr.number });
  if (!checks.ok) return failed(ctx, link, it, checks, finish, { merging: false, number: pr.number, pushed });
  const reacted = await reactToPull(ctx, link, it, { pull, pushed, checks: checks.value });
  if (reacted.kind === "failed") return failed(ctx, link, it, reacted.failure, finish, { merging: false, number: pr.number, pushed });
  if (reacted.kind === "wait") return wait(ctx, it, { code: "forge_error", reason: reacted.reason, head: pushed });
  if (reacted.kind === "recorded") return reacted.outcome;
  if (reacted.kind === "unread") return act(ctx, it, { kind: "block", code: "reviews_unread", reason: reacted.reason }, { pull, pushed, finish });

  // 4. Mergeable, every check green on the pushed sha; then the second lock, read now.
  const gate = mergeGate(pull, checks.value);
  if (gate.kind !== "merge") return act(ctx, it, gate, { pull, pushed, finish });
  const lock = environmentLock(autoMergeAllowed(ctx.options.env), AUTO_MERGE_VAR);
  if (lock) return act(ctx, it, lock, { pull, pushed, finish });

  // 5. Merge with the pushed sha: GitHub refuses (409) if the head is anything else by then.
  ctx.store.assertLease();
  failpoint("landing:before_merge_call");
  const r = await link.provider.merge({
    number: pr.number,
    sha: pushed,
    title: `Merge ${link.provider.threadLabel({ kind: "pull", number: pr.number })}: ${it.id} (loop ${ctx.def.name})`,
  });
  failpoint("landing:after_merge_call");
  if (!r.ok) return failed(ctx, link, it, r, finish, { merging: true, number: pr.number, pushed });
  if (r.value.kind === "merged") return act(ctx, it, { kind: "merged", sha: r.value.sha }, { pull, pushed, finish });
  if (r.value.kind === "merging")
    return act(
      ctx,
      it,
      { kind: "wait", code: "not_mergeable_yet", reason: `the forge is merging ${pull.label} (${sanitizeLine(r.value.message, 120)})` },
      { pull, pushed, finish },
    );
  // A 409 to the pinned sha: at that moment the head was not the sha. Nothing is concluded from it:
  // the next tick reads the PR again (step 2): a moved head blocks there, the same head is merged.
  if (r.value.kind === "head_moved")
    return act(
      ctx,
      it,
      {
        kind: "wait",
        code: "merge_conflict",
        reason: `the forge answered the merge of ${pull.label} with a conflict (${sanitizeLine(r.value.message, 120)}); reading it again: loop merges only the ${pushed.slice(0, 12)} it pushed and verified`,
      },
      { pull, pushed, finish },
    );
  // The provider says whether waiting may fix the refusal (GitHub: the 405's words; GitLab: detailed_merge_status).
  if (r.value.wait)
    return act(
      ctx,
      it,
      { kind: "wait", code: "not_mergeable_yet", reason: `the forge is not ready to merge ${pull.label}: ${r.value.message}` },
      { pull, pushed, finish },
    );
  return act(
    ctx,
    it,
    { kind: "block", code: "merge_refused", reason: `the forge refused to merge ${pull.label}: ${r.value.message}` },
    { pull, pushed, finish },
  );
}

/** Carry out a gate decision: record the merge, the block (the PR left open), the release or the wait. */
function act(ctx: StepContext, it: ItemState, d: GateDecision, o: { pull: ForgePull; pushed: string; finish: Finish }): StepOutcome | null {
  switch (d.kind) {
    case "merged":
      return merged(ctx, o.pull, d.sha, o.finish);
    case "block":
      return o.finish({
        outcome: "blocked",
        target: ctx.def.base,
        commit: null,
        code: d.code,
        reason: o.pull.state === "open" && !o.pull.merged ? `${d.reason}; ${o.pull.url} left open` : d.reason,
      });
    case "release":
      return o.finish({ outcome: "pr_opened", target: ctx.def.base, commit: o.pushed, code: d.code, reason: d.reason });
    case "wait":
      return wait(ctx, it, { code: d.code, reason: d.reason, head: o.pushed });
    case "merge":
      throw new Error(`internal: act() asked to merge #${o.pull.number}`);
  }
}

/** Whether `older` (a sha the forge gave: checked before git sees it) is an ancestor of `sha` in the local repository. */
function isAncestor(ctx: StepContext, older: string, sha: string): boolean {
  if (!/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(older)) return false;
  return gitTry(repoOf(ctx), ["merge-base", "--is-ancestor", older, sha]).code === 0;
}

/** Push the branch and find or open its pull request. */
async function openPull(
  ctx: StepContext,
  link: ForgeLink,
  it: ItemState,
  branch: string,
): Promise<{ pull: ForgePull; reused: boolean; pushed: string } | { wait: string } | { block: string }> {
  const settings = ctx.def.forge!;
  ctx.store.assertLease();
  // What is pushed is the commit whose verify passed (verify_reserved `head`); for a verify recorded
  // before that existed, what the local branch holds now.
  const verified = currentAttemptOf(it)?.verifyRun?.head;
  const head = verified ?? gitTry(repoOf(ctx), ["rev-parse", "--verify", "-q", `refs/heads/${branch}^{commit}`]).stdout.trim();
  if (!head) {
    ctx.errors.push(`${it.id}: branch ${branch} is missing from the repository`);
    return { wait: `branch ${branch} is missing from the repository; nothing to push` };
  }
  // Fast-forward only: a push that would drop commits someone added to the branch is refused. With
  // loop's own credentials (./remote.ts), never a token in a URL or .git/config.
  const push = forgePush({ repo: repoOf(ctx), forge: settings, env: ctx.options.env, head, branch });
  if (push.code !== 0) {
    const why = new GitError(["push", settings.remote, branch], push.code, push.stderr).message;
    ctx.errors.push(`${it.id}: ${why}`);
    return { wait: `could not push ${branch} to ${settings.remote}: ${why}` };
  }
  failpoint("landing:after_push");
  const found = await link.provider.findPull(branch);
  if (!found.ok) return { wait: link.failed(found) };
  if (found.value && (found.value.state === "open" || (found.value.merged && found.value.headSha === head)))
    return { pull: found.value, reused: true, pushed: head };
  const attempt = verifiedAttempt(it);
  const title = `${it.id}: ${sanitizeLine(it.def.prompt.split("\n", 1)[0] ?? "", 80)}`;
  const body = [
    `Opened by loop \`${ctx.def.name}\` for item \`${it.id}\`${it.def.ref ? ` (${it.def.ref})` : ""}, attempt ${attempt.n}.`,
    "",
    `Verify: ${attempt.verify.passed ? "passed" : "failed"} (${sanitizeLine(attempt.verify.reason, 200)}).`,
    "",
    ctx.def.landing === "merge"
      ? `loop merges this ${link.provider.pullNoun} once every check on its head is green (landing \`merge\`).`
      : "A draft: loop does not merge it (landing `pr`).",
  ].join("\n");
  const draft = ctx.def.landing === "pr";
  let created = await link.provider.createPull({ title, body, head: branch, base: ctx.def.base, draft });
  if (created.ok && created.value.kind === "refused" && created.value.code === "draft_unsupported" && draft) {
    // Drafts are not available here (a private repository on some plans): a regular PR that says
    // it awaits review; loop never merges it either way (landing "pr").
    ctx.options.log.warn(
      `forge: the forge refused a draft ${link.provider.pullNoun} (${created.value.message}); opening a regular one that says it awaits review`,
    );
    const awaits = `${body.replace(/\n[^\n]*$/, "")}\nNot a draft only because this repository does not allow drafts: it awaits review, and loop does not merge it (landing \`pr\`).`;
    created = await link.provider.createPull({ title, body: awaits, head: branch, base: ctx.def.base, draft: false });
  }
  if (!created.ok) {
    if (created.kind === "http" && (created.status === 403 || created.status === 404 || created.status === 401))
      return { block: `could not open a ${link.provider.pullNoun}: ${created.message}` };
    return { wait: link.failed(created) };
  }
  if (created.value.kind === "refused") {
    const r = created.value;
    // A 422 is a refusal, named at once; "already exists" is a PR opened since the lookup: found next tick.
    const noun = link.provider.pullNoun;
    if (r.code === "exists") return { wait: `a ${noun} for ${branch} already exists (${r.message}); looking it up again` };
    const why =
      r.code === "no_commits"
        ? `the branch has no commits that ${ctx.def.base} does not have, so there is nothing to open a ${noun} for`
        : r.code === "draft_unsupported"
          ? `the forge refused the ${noun} as a draft`
          : `the forge refused to open the ${noun}`;
    return { block: `${why} (${r.message})` };
  }
  failpoint("landing:after_pr");
  return { pull: created.value.pull, reused: false, pushed: head };
}

function merged(ctx: StepContext, pull: ForgePull, sha: string | null, finish: Finish): null {
  const settings = ctx.def.forge!;
  // The next item branches from the base as merged: fetch it now (a failure here is repaired by the next launch's fetch).
  const r = forgeFetch({
    repo: repoOf(ctx),
    forge: settings,
    env: ctx.options.env,
    branch: ctx.def.base,
    dest: `refs/remotes/${settings.remote}/${ctx.def.base}`,
  });
  if (r.code !== 0) ctx.options.log.warn(`forge: could not fetch ${settings.remote}/${ctx.def.base} after the merge: ${r.stderr.trim()}`);
  return finish({
    outcome: "merged",
    target: ctx.def.base,
    commit: sha ?? pull.mergeCommitSha,
    code: "merged",
    reason: `${pull.label} merged into ${ctx.def.base} (${pull.url})`,
  });
}

/** Still waiting: a transition only when the reason's kind or the head changed; the step reports the reason either way. */
function wait(ctx: StepContext, it: ItemState, w: { code: string; reason: string; head: string }): StepOutcome {
  const now = currentAttemptOf(itemNow(ctx, it.id))?.landingWait;
  if (now?.code !== w.code || now.head !== w.head)
    append(
      ctx,
      [{ type: "forge_landing_waiting", item: it.id, payload: { attempt: it.attempts.length, code: w.code, reason: w.reason, head: w.head } }],
      "landing",
    );
  return { action: "waiting", item: it.id, reason: `landing: ${w.reason}` };
}

/**
 * A failed request while landing (merge-gate.ts failureGate): a rate limit waits and records nothing;
 * no answer or a 5xx is a named wait (status says it, not the last reason before it); a refusal blocks.
 */
function failed(
  ctx: StepContext,
  link: ForgeLink,
  it: ItemState,
  f: ForgeFailure,
  finish: Finish,
  o: { merging: boolean; number: number; pushed: string },
): StepOutcome | null {
  const line = link.failed(f);
  const d = failureGate(f, line, { merging: o.merging, label: link.provider.threadLabel({ kind: "pull", number: o.number }) });
  if (d === "rate_limited") return { action: "waiting", item: it.id, reason: `landing: ${line}` };
  if (d.kind === "block") return finish({ outcome: "blocked", target: ctx.def.base, commit: null, code: d.code, reason: d.reason });
  if (d.kind === "wait") return wait(ctx, it, { code: d.code, reason: d.reason, head: o.pushed });
  throw new Error(`internal: a failed request decided ${d.kind}`);
}
