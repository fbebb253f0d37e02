// The land phase through a forge (docs/forge.md#landing): push the item branch, open (or reuse)
// its pull request, and with landing "merge" wait for it — a second observed wait with its own
// deadline (timeouts.landing, counted from the passing verify) and a named reason at every tick —
// then merge with the head sha whose checks were all seen green. The log records transitions (PR
// recorded, head moved, waiting for something else, merged, blocked), never polls. A kill anywhere
// is recovered from the forge's own state: the PR is found by its branch before one is opened, and
// a merged PR is read as merged before a merge is asked for, so nothing is done twice.
import type { Payload } from "../../log/events.ts";
import type { ItemState } from "../../log/reducer.ts";
import type { ForgeFailure, ForgePull } from "../../forge/provider.ts";
import { AUTO_MERGE_VAR, autoMergeAllowed } from "../../forge/auto-merge.ts";
import { mergeGate } from "../../forge/merge-gate.ts";
import { sanitizeLine } from "../../forge/untrusted.ts";
import { formatDuration } from "../../definition/duration.ts";
import { GitError } from "../../shared/errors.ts";
import { failpoint } from "../../shared/failpoint.ts";
import { append, repoOf, type StepContext, type StepOutcome } from "../context.ts";
import { forgeLink, type ForgeLink } from "./link.ts";
import { gitTry } from "../git.ts";

type Landing = Omit<Payload<"landing_finished">, "attempt" | "branch">;


export async function landThroughForge(ctx: StepContext, it: ItemState): Promise<StepOutcome | null> {
  const link = (await forgeLink(ctx))!;
  const attempt = it.attempts[it.attempts.length - 1]!;
  const branch = it.session!.branch;
  const since = Date.parse(attempt.verify!.at);
  const deadline = since + (it.def.timeouts.landing ?? 30 * 60_000);
  const f = it.forge;
  const finish = (l: Landing) => {
    append(ctx, [{ type: "landing_finished", item: it.id, payload: { attempt: attempt.n, branch, ...l } }], "landing");
    return null;
  };
  const lastReason = f?.landing?.reason ?? "no pull request yet";
  if (Date.now() > deadline)
    return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: `landing deadline (timeouts.landing ${formatDuration(deadline - since)}, from the passing verify) passed; last: ${lastReason}${f?.pr ? `; ${f.pr.url} left open` : ""}` });
  const limited = link.limited();
  if (limited) return { action: "waiting", item: it.id, reason: limited };

  // 1. The pull request of this attempt: pushed and recorded once.
  if (!f?.landing) {
    const pr = await openPull(ctx, link, it, branch);
    if ("wait" in pr) return { action: "waiting", item: it.id, reason: pr.wait };
    if ("block" in pr) return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: pr.block });
    append(ctx, [{ type: "forge_pr_recorded", item: it.id, payload: { attempt: attempt.n, number: pr.pull.number, url: pr.pull.url, head: pr.pull.headSha, draft: pr.pull.draft, reused: pr.reused } }], "landing");
    if (ctx.def.landing === "pr")
      return finish({ outcome: "pr_opened", target: ctx.def.base, commit: pr.pull.headSha, reason: `${pr.pull.draft ? "draft " : ""}${pr.pull.label} ${pr.reused ? "(reused) " : ""}${pr.pull.url}` });
    return null; // the next turn of the step evaluates the merge
  }
  const pr = f.pr!;

  // 2. landing "merge": is it merged, mergeable, or still waiting?
  const got = await link.provider.getPull(pr.number);
  if (!got.ok) return failure(ctx, link, it, got, finish);
  let pull = got.value;
  if (!pull.merged && pull.headSha !== pr.head) {
    // Someone (or a retry) moved the head: what was seen green no longer counts.
    append(ctx, [{ type: "forge_landing_waiting", item: it.id, payload: { attempt: attempt.n, code: "head_moved", reason: `head of ${pull.label} moved to ${pull.headSha.slice(0, 12)}; checking it again`, head: pull.headSha } }], "landing");
  }
  const checks = pull.merged ? null : await link.provider.checks(pull.headSha);
  if (checks && !checks.ok) return failure(ctx, link, it, checks, finish);
  const gate = mergeGate(pull, checks ? checks.value : null);
  if (gate.kind === "merged") return merged(ctx, it, pull, gate.sha, finish);
  if (gate.kind === "block") return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: `${gate.reason}; ${pr.url} left open` });
  if (gate.kind === "wait") return wait(ctx, it, { code: gate.code, reason: gate.reason, head: pull.headSha });

  // Green: the second lock, read now.
  if (!autoMergeAllowed(ctx.options.env))
    return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: `checks are green, but ${AUTO_MERGE_VAR}=1 is not set in the environment of loop run, so nothing was merged; ${pr.url} left open` });
  ctx.store.assertLease();
  failpoint("landing:before_merge_call");
  const r = await link.provider.merge({ number: pr.number, sha: gate.sha, title: `Merge #${pr.number}: ${it.id} (loop ${ctx.def.name})` });
  failpoint("landing:after_merge_call");
  if (!r.ok) return failure(ctx, link, it, r, finish);
  if (r.value.kind === "merged") {
    pull = { ...pull, merged: true, mergeCommitSha: r.value.sha };
    return merged(ctx, it, pull, r.value.sha, finish);
  }
  if (r.value.kind === "merging") return wait(ctx, it, { code: "not_mergeable_yet", reason: `the forge is merging ${pull.label} (${sanitizeLine(r.value.message, 120)})`, head: pull.headSha });
  if (r.value.kind === "head_moved") {
    // 409: never merge a sha whose checks were not seen green; read the new head next tick.
    return wait(ctx, it, { code: "head_moved", reason: `head of ${pull.label} moved while merging (${sanitizeLine(r.value.message, 120)}); checking the new head`, head: pull.headSha });
  }
  if (r.value.wait) return wait(ctx, it, { code: "not_mergeable_yet", reason: `the forge is not ready to merge ${pull.label}: ${r.value.message}`, head: pull.headSha });
  return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: `the forge refused to merge ${pull.label}: ${r.value.message}; ${pr.url} left open` });
}

/** Push the branch and find or open its pull request. */
async function openPull(ctx: StepContext, link: ForgeLink, it: ItemState, branch: string): Promise<{ pull: ForgePull; reused: boolean } | { wait: string } | { block: string }> {
  const settings = ctx.def.forge!;
  ctx.store.assertLease();
  // Fast-forward only: a push that would drop commits someone added to the branch is refused.
  const push = gitTry(repoOf(ctx), ["push", "--quiet", settings.remote, `refs/heads/${branch}:refs/heads/${branch}`]);
  if (push.code !== 0) {
    const why = new GitError(["push", settings.remote, branch], push.code, push.stderr).message;
    ctx.errors.push(`${it.id}: ${why}`);
    return { wait: `could not push ${branch} to ${settings.remote}: ${why}` };
  }
  failpoint("landing:after_push");
  const found = await link.provider.findPull(branch);
  if (!found.ok) return { wait: link.failed(found) };
  const head = gitTry(repoOf(ctx), ["rev-parse", `refs/heads/${branch}`]).stdout.trim();
  if (found.value && (found.value.state === "open" || (found.value.merged && found.value.headSha === head))) return { pull: found.value, reused: true };
  const attempt = it.attempts[it.attempts.length - 1]!;
  const title = `${it.id}: ${sanitizeLine(it.def.prompt.split("\n", 1)[0] ?? "", 80)}`;
  const body = [
    `Opened by loop \`${ctx.def.name}\` for item \`${it.id}\`${it.def.ref ? ` (${it.def.ref})` : ""}, attempt ${attempt.n}.`,
    "",
    `Verify: ${attempt.verify!.passed ? "passed" : "failed"} (${sanitizeLine(attempt.verify!.reason, 200)}).`,
    "",
    ctx.def.landing === "merge" ? `loop merges this ${link.provider.pullNoun} once every check on its head is green (landing \`merge\`).` : "A draft: loop does not merge it (landing `pr`).",
  ].join("\n");
  const draft = ctx.def.landing === "pr";
  let created = await link.provider.createPull({ title, body, head: branch, base: ctx.def.base, draft });
  if (created.ok && created.value.kind === "refused" && created.value.code === "draft_unsupported" && draft) {
    // Drafts are not available here (a private repository on some plans): a regular PR that says
    // it awaits review; loop never merges it either way (landing "pr").
    ctx.options.log.warn(`forge: the forge refused a draft ${link.provider.pullNoun} (${created.value.message}); opening a regular one that says it awaits review`);
    const awaits = `${body.replace(/\n[^\n]*$/, "")}\nNot a draft only because this repository does not allow drafts: it awaits review, and loop does not merge it (landing \`pr\`).`;
    created = await link.provider.createPull({ title, body: awaits, head: branch, base: ctx.def.base, draft: false });
  }
  if (!created.ok) {
    if (created.kind === "http" && (created.status === 403 || created.status === 404 || created.status === 401)) return { block: `could not open a ${link.provider.pullNoun}: ${created.message}` };
    return { wait: link.failed(created) };
  }
  if (created.value.kind === "refused") {
    const r = created.value;
    // A 422 is a refusal, named at once; "already exists" is a PR opened since the lookup: found next tick.
    const noun = link.provider.pullNoun;
    if (r.code === "exists") return { wait: `a ${noun} for ${branch} already exists (${r.message}); looking it up again` };
    const why = r.code === "no_commits" ? `the branch has no commits that ${ctx.def.base} does not have, so there is nothing to open a ${noun} for` : r.code === "draft_unsupported" ? `the forge refused the ${noun} as a draft` : `the forge refused to open the ${noun}`;
    return { block: `${why} (${r.message})` };
  }
  failpoint("landing:after_pr");
  return { pull: created.value.pull, reused: false };
}

function merged(ctx: StepContext, it: ItemState, pull: ForgePull, sha: string | null, finish: (l: Landing) => null): null {
  const settings = ctx.def.forge!;
  // The next item branches from the base as merged: fetch it now (a failure here is repaired by the next launch's fetch).
  const r = gitTry(repoOf(ctx), ["fetch", "--quiet", settings.remote, `refs/heads/${ctx.def.base}:refs/remotes/${settings.remote}/${ctx.def.base}`]);
  if (r.code !== 0) ctx.options.log.warn(`forge: could not fetch ${settings.remote}/${ctx.def.base} after the merge: ${r.stderr.trim()}`);
  return finish({ outcome: "merged", target: ctx.def.base, commit: sha ?? pull.mergeCommitSha, reason: `${pull.label} merged into ${ctx.def.base} (${pull.url})` });
}

/** Still waiting: a transition only when the reason's kind or the head changed; the step reports the reason either way. */
function wait(ctx: StepContext, it: ItemState, w: { code: string; reason: string; head: string }): StepOutcome {
  const f = ctx.store.projection().items[it.id]!.forge;
  if (f?.landing?.code !== w.code || f.landing.head !== w.head)
    append(ctx, [{ type: "forge_landing_waiting", item: it.id, payload: { attempt: it.attempts.length, code: w.code, reason: w.reason, head: w.head } }], "landing");
  return { action: "waiting", item: it.id, reason: `landing: ${w.reason}` };
}

/** A failed request while landing: a rate limit or no answer waits; a 403/404 that is not a rate limit blocks at once. */
function failure(ctx: StepContext, link: ForgeLink, it: ItemState, f: ForgeFailure, finish: (l: Landing) => null): StepOutcome | null {
  const line = link.failed(f);
  if (f.kind === "http" && (f.status === 403 || f.status === 404 || f.status === 401))
    return finish({ outcome: "blocked", target: ctx.def.base, commit: null, reason: `the forge refused: ${line}` });
  return { action: "waiting", item: it.id, reason: `landing: ${line}` };
}
