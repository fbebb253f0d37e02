// Before an item with a forge issue is launched (docs/forge.md#items-from-issues): read the issue
// and its comments. A closed, transferred or deleted issue is not launched (the item settles
// skipped, saying so); a missing issue or a pull request's number settles it blocked (its ref needs
// a person); an open one gives the handoff its title, body and thread as fenced, untrusted text.
// A forge that does not answer is waited for, but not forever: past the item's timeouts.launch
// from the first failed read, the item settles blocked with the last failure. The first sight of
// the thread baselines it: the comments already there are context, never new deliveries. The issue
// is the tracker's (docs/trackers.md): the forge's own, or Linear's or Jira's when loop.json's
// `tracker` names one (ForgeLink.tracker), read and judged the same way. A read that gets no answer,
// a 5xx or a refused key asks the tracker whether it answers at all (Tracker.reachable): when it does
// not, or refuses loop's key, that is no issue's trouble but the environment fault `tracker_down` or
// `tracker_unauthorized` (lib/decisions/tracker-down.ts), and the loop pauses, no attempt spent.
import { parseRef } from "../../definition/refs.ts";
import { fenced, sanitizeLine } from "../../forge/untrusted.ts";
import { describeFailure, type ForgeComment, type ForgeFailure } from "../../forge/provider.ts";
import type { EnvironmentFault } from "../../decisions/faults.ts";
import { asksReachable, judgeUnreadIssue, trackerFault } from "../../decisions/tracker-down.ts";
import { formatDuration } from "../../definition/duration.ts";
import { compareCommentIds, type ItemState } from "../../log/projection.ts";
import type { SettleCode } from "../../log/vocabulary.ts";
import { append, type StepContext } from "../context.ts";
import { forgeLink, type ForgeLink } from "./link.ts";
import { isLoopsOwn } from "../../forge/comments.ts";

type ForgeLaunch =
  | { kind: "launch"; context: string | null }
  | { kind: "skip"; reason: string; code: Extract<SettleCode, "issue_closed" | "issue_gone"> }
  | { kind: "block"; reason: string; code: Extract<SettleCode, "issue_ref_invalid" | "issue_unreadable"> }
  | { kind: "wait"; reason: string }
  /** The tracker as a whole does not answer, or refuses loop's key: the loop pauses before anything is reserved. */
  | { kind: "fault"; fault: EnvironmentFault };

/** Comments of a thread shown in a handoff at most (the newest), and the characters of each. */
const THREAD_COMMENTS = 20;
const COMMENT_CAP = 4_000;

/**
 * The number of the issue an item's ref names in the loop's tracker, or null (no ref): a forge's
 * issue, or with a Linear or Jira tracker its issue within the team or project (`linear:ENG-12` is
 * 12). Definition checks keep every ref to the loop's tracker (its repository, team or project).
 */
export function issueOf(it: ItemState): number | null {
  return it.def.ref ? parseRef(it.def.ref).number : null;
}

export async function prepareForgeLaunch(ctx: StepContext, it: ItemState): Promise<ForgeLaunch> {
  const number = issueOf(it);
  const link = await forgeLink(ctx);
  if (!link || number === null) return { kind: "launch", context: null };
  const limited = link.limited();
  if (limited) return { kind: "wait", reason: `${it.id}: ${limited}` };
  const r = await readIssue(link, number);
  if ("failure" in r) return await unanswered(ctx, link, it, r.failure);
  delete link.cache.launchWaits[it.id];
  return r.launch(ctx, it);
}

type Read = { failure: ForgeFailure | string } | { launch: (ctx: StepContext, it: ItemState) => ForgeLaunch };

async function readIssue(link: ForgeLink, number: number): Promise<Read> {
  const got = await link.tracker.getIssue(number);
  if (!got.ok) return { failure: got };
  const lookup = got.value;
  if (lookup.kind === "gone") {
    const reason = `${lookup.message}${lookup.why === "missing" || lookup.why === "pull_request" ? "; fix the item's ref" : ""}`;
    return {
      launch: () =>
        lookup.why === "transferred" || lookup.why === "deleted"
          ? { kind: "skip", reason, code: "issue_gone" }
          : { kind: "block", reason, code: "issue_ref_invalid" },
    };
  }
  const issue = lookup.issue;
  const label = link.tracker.threadLabel({ kind: "issue", number });
  if (issue.state === "closed") return { launch: () => ({ kind: "skip", reason: `issue ${label} is closed (${issue.url})`, code: "issue_closed" }) };
  const comments = await link.tracker.listThreadComments({ kind: "issue", number });
  if (!comments.ok) return { failure: comments };
  // Only authorized users' comments reach an agent (fail closed); loop's own are dropped first. A
  // permission that could not be read is asked again later, not taken as "no"; a rate limit on it
  // is a wait, not a failure. Permissions are asked newest first, only until the handoff has the
  // comments it shows: older ones are never asked about.
  const thread: ForgeComment[] = [];
  let unchecked = 0;
  const items = comments.value.items;
  for (let i = items.length - 1; i >= 0; i--) {
    const c = items[i]!;
    if (isLoopsOwn(c.body)) continue;
    if (thread.length === THREAD_COMMENTS) {
      unchecked++;
      continue;
    }
    const ok = await link.authorized(c.login);
    // The step's permission budget spent: what is not checked is not shown (fail closed), and the launch goes on.
    if (ok === null && link.permissionUnread?.kind === "budget") {
      unchecked++;
      continue;
    }
    if (ok === null) {
      const why = `could not read the permission of ${sanitizeLine(c.login, 40)} on the repository (${link.permissionUnread?.message ?? "no answer"})`;
      if (link.permissionUnread?.kind === "rate_limited") return { launch: () => ({ kind: "wait", reason: why }) };
      return { failure: why };
    }
    if (ok) thread.unshift(c);
  }
  return {
    launch: (ctx, it) => {
      const all = comments.value.items;
      if (it.forge?.highWater == null) {
        const highWater = all.map((c) => c.id).reduce((a, b) => (compareCommentIds(b, a) > 0 ? b : a), "0");
        append(ctx, [{ type: "forge_thread_baselined", item: it.id, payload: { issue: number, highWater, comments: all.length } }], "forge");
      }
      const shown = thread;
      // The title is the issue author's text like the body: inside the fence, never a line of loop's.
      const parts = [
        `Issue ${label} (${issue.url})`,
        "",
        fenced(`The issue's title and body`, `${sanitizeLine(issue.title, 200)}\n\n${issue.body || "(empty)"}`),
      ];
      const left = all.length - thread.length - unchecked;
      if (left) parts.push("", `(${left} comments by users who are not authorized, or by loop itself, are left out)`);
      if (comments.value.cut)
        parts.push("", "(the thread is longer than loop reads at once: its first and newest comments were read, some in between were not)");
      if (unchecked) parts.push("", `(${unchecked} earlier comments not shown: their authors' permissions were not read)`);
      for (const c of shown) parts.push("", fenced(`Comment ${c.id} by ${c.login} (${c.createdAt})`, c.body, COMMENT_CAP));
      return { kind: "launch", context: parts.join("\n") };
    },
  };
}

/**
 * The issue could not be read. The tracker down or refusing loop's key (its probe failing too): a
 * fault. Else wait, from the first failure until the item's timeouts.launch; then block, naming the
 * last failure.
 */
async function unanswered(ctx: StepContext, link: ForgeLink, it: ItemState, f: ForgeFailure | string): Promise<ForgeLaunch> {
  const line = typeof f === "string" ? f : link.failed(f);
  const label = link.tracker.threadLabel({ kind: "issue", number: issueOf(it)! });
  const reason = `${it.id}: could not read issue ${label}: ${line}`;
  if (typeof f !== "string") {
    const probe = await askReachable(link, f);
    const verdict = judgeUnreadIssue(f, probe === null ? null : probe.ok ? "ok" : probe);
    // A rate limit says when to go on; only other failures run the clock.
    if (verdict.kind === "wait") return { kind: "wait", reason };
    if (verdict.kind === "fault") {
      delete link.cache.launchWaits[it.id];
      const probed = probe && !probe.ok ? describeFailure(probe) : "no answer";
      return { kind: "fault", fault: trackerFault(verdict.fault, { ...trackerNamed(ctx, link), issue: label, read: line, probe: probed }) };
    }
  }
  const since = (link.cache.launchWaits[it.id] ??= Date.now());
  const limit = it.def.timeouts.launch;
  if (Date.now() - since < limit) return { kind: "wait", reason };
  delete link.cache.launchWaits[it.id];
  return {
    kind: "block",
    code: "issue_unreadable",
    reason: `issue ${label} could not be read for ${formatDuration(limit)} (timeouts.launch): ${line}; \`loop ctl retry --work-item ${it.id}\` tries again`,
  };
}

/**
 * While the loop is paused by `tracker_down`: whether the tracker answers its probe again (a call
 * that names no issue). A rate limit is remembered like any, and is not an answer yet.
 */
export async function trackerAnswersAgain(ctx: StepContext): Promise<boolean> {
  const link = await forgeLink(ctx);
  if (!link || link.limited()) return false;
  const r = await link.tracker.reachable();
  if (!r.ok && r.kind === "rate_limited") link.failed(r);
  return r.ok;
}

/** The tracker's probe, asked only when the read's failure calls for it (asksReachable); a rate limit on it is remembered like any. */
async function askReachable(link: ForgeLink, read: ForgeFailure): Promise<ForgeFailure | { ok: true } | null> {
  if (!asksReachable(read)) return null;
  const r = await link.tracker.reachable();
  if (!r.ok && r.kind === "rate_limited") link.failed(r);
  return r.ok ? { ok: true } : r;
}

const TRACKER_NAMES: Record<string, string> = { linear: "Linear", jira: "Jira", github: "GitHub", gitlab: "GitLab" };

/** The loop's tracker as a fault names it: its name, its API's host, and where its key comes from (never the key). */
function trackerNamed(ctx: StepContext, link: ForgeLink): { name: string; host: string; key: string } {
  const t = ctx.def.tracker;
  const f = ctx.def.forge!;
  const apiUrl = t ? t.apiUrl : f.apiUrl;
  const host = URL.canParse(apiUrl) ? new URL(apiUrl).host : sanitizeLine(apiUrl, 100);
  const key = t
    ? `the variable ${t.tokenEnv} (tracker.tokenEnv)${t.provider === "jira" ? ", with the account tracker.email names" : ""}`
    : `the variable ${f.tokenEnv} (forge.tokenEnv)`;
  return { name: TRACKER_NAMES[link.trackerName] ?? link.trackerName, host, key };
}
