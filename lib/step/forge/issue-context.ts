// Before an item with a forge issue is launched (docs/forge.md#items-from-issues): read the issue
// and its comments. A closed issue is not launched (the item settles skipped, saying so); an open
// one gives the handoff its title, body and thread as fenced, untrusted text. The first sight of
// the thread baselines it: the comments already there are context, never new deliveries.
import { parseRef } from "../../definition/refs.ts";
import { fenced, sanitizeLine } from "../../forge/untrusted.ts";
import type { ItemState } from "../../log/reducer.ts";
import { append, type StepContext } from "../context.ts";
import { forgeLink } from "./link.ts";
import { isLoopsOwn } from "../../forge/comments.ts";

export type ForgeLaunch = { kind: "launch"; context: string | null } | { kind: "skip"; reason: string } | { kind: "wait"; reason: string };

/** Comments of a thread shown in a handoff at most (the newest), and the characters of each. */
const THREAD_COMMENTS = 20;
const COMMENT_CAP = 4_000;

/** The issue number an item's ref names, or null (no ref; definition checks keep refs to the forge's repository). */
export function issueOf(it: ItemState): number | null {
  return it.def.ref ? parseRef(it.def.ref).number : null;
}

export async function prepareForgeLaunch(ctx: StepContext, it: ItemState): Promise<ForgeLaunch> {
  const number = issueOf(it);
  const link = await forgeLink(ctx);
  if (!link || number === null) return { kind: "launch", context: null };
  const limited = link.limited();
  if (limited) return { kind: "wait", reason: `${it.id}: ${limited}` };
  const issue = await link.provider.getIssue(number);
  if (!issue.ok) return { kind: "wait", reason: `${it.id}: could not read issue #${number}: ${link.failed(issue)}` };
  if (issue.value.state === "closed") return { kind: "skip", reason: `issue #${number} is closed (${issue.value.url})` };
  const comments = await link.provider.listIssueComments(number);
  if (!comments.ok) return { kind: "wait", reason: `${it.id}: could not read the comments of #${number}: ${link.failed(comments)}` };
  if (it.forge?.highWater == null) {
    const highWater = Math.max(0, ...comments.value.map((c) => c.id));
    append(ctx, [{ type: "forge_thread_baselined", item: it.id, payload: { issue: number, highWater, comments: comments.value.length } }], "forge");
  }
  // Only authorized users' comments reach an agent (fail closed); loop's own are dropped first.
  const thread = [];
  for (const c of comments.value) if (!isLoopsOwn(c.body) && (await link.authorized(c.login))) thread.push(c);
  const shown = thread.slice(-THREAD_COMMENTS);
  const parts = [
    `Issue #${number}: ${sanitizeLine(issue.value.title, 200)} (${issue.value.url})`,
    "",
    fenced(`The issue's body`, issue.value.body || "(empty)"),
  ];
  const left = comments.value.length - thread.length;
  if (left) parts.push("", `(${left} comments by users who are not authorized, or by loop itself, are left out)`);
  if (thread.length > shown.length) parts.push("", `(${thread.length - shown.length} earlier comments not shown)`);
  for (const c of shown) parts.push("", fenced(`Comment ${c.id} by ${c.login} (${c.createdAt})`, c.body, COMMENT_CAP));
  return { kind: "launch", context: parts.join("\n") };
}
