// handoff.md: everything an agent gets for one attempt, built from the projection alone. Text loop
// did not write itself (a reply, the agent's own earlier question, a verify log's tail) is fenced as
// one code block, so none of its lines can read as a section of the file (lib/forge/untrusted.ts:
// small and dependency-free, so every loop loads it, forge or not).
import { type ItemState, type Projection, requireItem } from "../log/projection.ts";
import { fenced, sanitizeLine } from "../forge/untrusted.ts";
import { fence } from "../shared/untrusted-text.ts";
import { attemptsRan } from "../decisions/attempt.ts";

/** The file a resumed conversation is pointed at for its reply (in the attempt's session folder): forge text never goes in argv. */
export const REPLY_FILE = "reply.md";

type Reply = ItemState["replies"][number];

/** One reply, fenced: a forge reply is labelled as untrusted forge text; an operator's (loop ctl reply) as theirs. */
function replyBlock(r: Reply): string {
  if (r.actor.startsWith("github:")) return fenced(`Reply from ${r.actor.slice("github:".length)} on the issue (${r.ts})`, r.text);
  return `Reply from ${sanitizeLine(r.actor, 200)} (${r.ts}), through loop ctl reply:\n\n${fence(r.text)}`;
}

interface HandoffInput {
  p: Projection;
  item: string;
  attempt: number;
  branch: string;
  askFile: string;
  /** Where the agent writes why it gives up ($LOOP_GIVE_UP_FILE, docs/runners.md#giving-up). */
  giveUpFile: string;
  /** The forge issue's title, body and thread, already fenced as untrusted text (lib/step/forge/issue-context.ts). */
  forgeContext?: string | null;
}

export function buildHandoff({ p, item, attempt, branch, askFile, giveUpFile, forgeContext = null }: HandoffInput): string {
  const it = requireItem(p, item);
  const ids = p.order.filter((id) => requireItem(p, id).status !== "withdrawn");
  const pos = ids.indexOf(item) + 1;
  const lines: string[] = [];
  // Attempts are counted as the agent ran them (loop status's ATTEMPTS): a launch cut short before
  // its session started keeps its number in loop's records, but the agent never saw it.
  const earlier = it.attempts.filter((a) => a.n < attempt && a.startedAt !== null);
  lines.push(`# ${item}: attempt ${attemptsRan(earlier) + 1}${it.def.maxAttempts > 1 ? ` (up to ${it.def.maxAttempts} failed attempts)` : ""}`);
  if (it.def.ref) lines.push("", `Work item: ${it.def.ref}`);
  lines.push("", "## Task", "", it.def.prompt.trim());
  if (forgeContext) lines.push("", "## The issue (from the forge)", "", forgeContext);
  const rework = reworkOf(it, attempt);
  if (rework) lines.push("", "## Rework: what happened on your pull request", "", rework);
  const messages = it.forge?.messages ?? [];
  if (messages.length) {
    lines.push("", "## Comments for you from the issue thread", "");
    for (const m of messages) lines.push(`- From ${m.login} (${m.at}), untrusted text: ${JSON.stringify(m.text)}`);
  }
  lines.push("", "## Loop context", "");
  lines.push(`Loop "${p.loop.name}", item ${pos} of ${ids.length}. Items run one at a time, each on its own branch.`);
  lines.push("");
  for (const id of ids) {
    const s = requireItem(p, id);
    const mark = id === item ? " (this item)" : "";
    lines.push(`- ${id}${mark}: ${id === item ? "in progress" : s.status}${s.def.dependsOn.length ? ` (depends on ${s.def.dependsOn.join(", ")})` : ""}`);
  }
  if (earlier.length) {
    lines.push("", "## Earlier attempts", "");
    for (const [i, a] of earlier.entries()) {
      const verdict = a.verify ? `verify ${a.verify.passed ? "passed" : "failed"}: ${a.verify.reason}` : a.end ? a.end.reason : "no result";
      const why = a.reaction ? `${verdict}; then on the forge: ${a.reaction.reason}` : verdict;
      lines.push(`### Attempt ${i + 1}: ${a.outcome ?? "ended"}, ${why}`);
      if (a.question) lines.push("", "You asked:", "", fence(a.question));
      if (a.verify && !a.verify.passed && a.verify.tail) lines.push("", "Last lines of the verify output:", "", fence(a.verify.tail.trimEnd()));
      lines.push("");
    }
  }
  if (it.replies.length) {
    lines.push("", "## Questions and replies", "");
    for (const r of it.replies) lines.push(replyBlock(r), "");
    lines.pop();
  }
  lines.push("", "## How this work is checked", "");
  lines.push(`- You are in a git worktree on branch \`${branch}\`. Commit your work there; anything left uncommitted is committed for you when you exit.`);
  if (it.def.verify === false) lines.push("- There is no verify command: the item passes if you exit 0 and the branch has a change.");
  else lines.push(`- The item passes only if this command exits 0 in the worktree: \`${it.def.verify}\``);
  lines.push(`- If you need a decision from a person, write the question to the file named by $LOOP_ASK_FILE (${askFile}) and exit.`);
  lines.push(
    `- If you cannot do this task honestly (the task and its tests disagree, something it needs is missing, the task is wrong), giving up is an acceptable outcome: write your reason to the file named by $LOOP_GIVE_UP_FILE (${giveUpFile}) and exit. ` +
      "Your commits stay on the branch for a person to read, and a person decides what happens next. " +
      "Editing or weakening the tests, special-casing the inputs they check, or claiming success without doing the work is not acceptable.",
  );
  return lines.join("\n") + "\n";
}

/**
 * The feedback a rework is given (docs/forge.md#what-the-rework-is-told): the digest recorded with
 * the reaction to the attempt before it, the last one the agent ran (a launch cut short in between
 * changes nothing). Already fenced and bounded when it was recorded; null when this is no rework.
 */
export function reworkOf(it: ItemState, attempt: number): string | null {
  for (let i = it.attempts.length - 1; i >= 0; i--) {
    const a = it.attempts[i]!;
    if (a.n >= attempt || a.startedAt === null) continue;
    return a.reaction?.decision === "retry" ? a.reaction.feedback : null;
  }
  return null;
}

/**
 * reply.md: what a resumed conversation is told (the runner's argv only points at this file). The
 * replies delivered to this attempt (at its reservation), fenced as in the handoff, and where the whole handoff is.
 */
export function buildReplyMessage({ p, item, attempt, handoffPath }: { p: Projection; item: string; attempt: number; handoffPath: string }): string {
  const it = requireItem(p, item);
  const lines = ["# A reply to your question", ""];
  const asked = [...it.attempts].reverse().find((a) => a.question)?.question;
  if (asked) lines.push("You asked:", "", fence(asked), "");
  for (const r of it.replies.filter((x) => x.delivered === attempt)) lines.push(replyBlock(r), "");
  lines.push(`Go on with your task in the light of it. The whole handoff, with every reply so far, is ${handoffPath}.`);
  return lines.join("\n") + "\n";
}
