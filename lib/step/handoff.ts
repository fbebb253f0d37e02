// handoff.md: everything an agent gets for one attempt, built from the projection alone.
import type { Projection } from "../log/reducer.ts";
import { attemptsRan } from "./decide.ts";

export interface HandoffInput {
  p: Projection;
  item: string;
  attempt: number;
  branch: string;
  askFile: string;
  /** The forge issue's title, body and thread, already fenced as untrusted text (lib/step/forge/issue-context.ts). */
  forgeContext?: string | null;
}

export function buildHandoff({ p, item, attempt, branch, askFile, forgeContext = null }: HandoffInput): string {
  const it = p.items[item]!;
  const ids = p.order.filter((id) => p.items[id]!.status !== "withdrawn");
  const pos = ids.indexOf(item) + 1;
  const lines: string[] = [];
  // Attempts are counted as the agent ran them (loop status's ATTEMPTS): a launch cut short before
  // its session started keeps its number in loop's records, but the agent never saw it.
  const earlier = it.attempts.filter((a) => a.n < attempt && a.startedAt !== null);
  lines.push(`# ${item}: attempt ${attemptsRan(earlier) + 1}${it.def.maxAttempts > 1 ? ` (up to ${it.def.maxAttempts} failed attempts)` : ""}`);
  if (it.def.ref) lines.push("", `Work item: ${it.def.ref}`);
  lines.push("", "## Task", "", it.def.prompt.trim());
  if (forgeContext) lines.push("", "## The issue (from the forge)", "", forgeContext);
  const messages = it.forge?.messages ?? [];
  if (messages.length) {
    lines.push("", "## Comments for you from the issue thread", "");
    for (const m of messages) lines.push(`- From ${m.login} (${m.at}), untrusted text: ${JSON.stringify(m.text)}`);
  }
  lines.push("", "## Loop context", "");
  lines.push(`Loop "${p.loop.name}", item ${pos} of ${ids.length}. Items run one at a time, each on its own branch.`);
  lines.push("");
  for (const id of ids) {
    const s = p.items[id]!;
    const mark = id === item ? " (this item)" : "";
    lines.push(`- ${id}${mark}: ${id === item ? "in progress" : s.status}${s.def.dependsOn.length ? ` (depends on ${s.def.dependsOn.join(", ")})` : ""}`);
  }
  if (earlier.length) {
    lines.push("", "## Earlier attempts", "");
    for (const [i, a] of earlier.entries()) {
      const why = a.verify ? `verify ${a.verify.passed ? "passed" : "failed"}: ${a.verify.reason}` : a.end ? a.end.reason : "no result";
      lines.push(`### Attempt ${i + 1}: ${a.outcome ?? "ended"}, ${why}`);
      if (a.question) lines.push("", `You asked: ${a.question}`);
      if (a.verify && !a.verify.passed && a.verify.tail) lines.push("", "Last lines of the verify output:", "", "```", a.verify.tail.trimEnd(), "```");
      lines.push("");
    }
  }
  if (it.replies.length) {
    lines.push("", "## Questions and replies", "");
    for (const r of it.replies) lines.push(`- Reply from ${r.actor} (${r.ts}): ${r.text}`);
  }
  lines.push("", "## How this work is checked", "");
  lines.push(`- You are in a git worktree on branch \`${branch}\`. Commit your work there; anything left uncommitted is committed for you when you exit.`);
  if (it.def.verify === false) lines.push("- There is no verify command: the item passes if you exit 0 and the branch has a change.");
  else lines.push(`- The item passes only if this command exits 0 in the worktree: \`${it.def.verify}\``);
  lines.push(`- If you need a decision from a person, write the question to the file named by $LOOP_ASK_FILE (${askFile}) and exit.`);
  return lines.join("\n") + "\n";
}
