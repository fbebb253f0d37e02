// Reactions (docs/forge.md#reactions): what loop does about what happened on the pull request it
// waits to merge. Pure: the landing phase (lib/step/forge/react.ts) reads the forge and git, this
// decides which signals are new, whether they are reworked or block the landing, and writes the
// digest the rework is told: specific (the failed checks' names, conclusions, output and
// annotations; the reviewers' words with file and line; the conflicting paths), fenced as untrusted
// text (lib/forge/untrusted.ts) and bounded piece by piece and as a whole.
import type { ReactionDecision, ReactionSignal } from "../log/vocabulary.ts";
import type { CheckFailure, ForgeCheck, ReviewFeedback } from "./provider.ts";
import { capped, fenced, sanitizeLine } from "./untrusted.ts";
import { fence } from "../shared/untrusted-text.ts";

/** loop.json's `reactions`, normalized (lib/definition/normalized.ts): one decision per signal. */
export type Reactions = Record<ReactionSignal, ReactionDecision>;

/** One thing seen on the pull request, keyed so that it never triggers twice. */
export interface Signal {
  kind: ReactionSignal;
  key: string;
  summary: string;
}

/** What the landing saw on this turn, from the forge and git. */
interface Seen {
  /** The sha loop pushed for the attempt: every signal is about it. */
  head: string;
  /** The checks on `head` that failed. */
  failing: readonly ForgeCheck[];
  /** The forge says the PR no longer merges into its base. */
  conflict: boolean;
  /** Review feedback from authorized reviewers only (the caller checked, fail closed). */
  reviews: readonly ReviewFeedback[];
}

/**
 * The signals not reacted to yet: failed checks and a conflict are keyed by the head they were seen
 * on (a rework pushes another head), review feedback by its id (a review is reacted to once, whatever
 * head follows). `reacted`: every key an earlier reaction of the item recorded.
 */
export function newSignals(s: Seen, reacted: ReadonlySet<string>): Signal[] {
  const out: Signal[] = [];
  const short = sanitizeLine(s.head, 40).slice(0, 12);
  if (s.failing.length)
    out.push({ kind: "checksFailed", key: `checksFailed:${s.head}`, summary: `checks not green on ${short}: ${s.failing.map((c) => c.detail).join("; ")}` });
  if (s.conflict) out.push({ kind: "conflict", key: `conflict:${s.head}`, summary: `the pull request no longer merges into its base (at ${short})` });
  for (const r of s.reviews) {
    const who = sanitizeLine(r.login, 60);
    const where = r.path ? ` on ${sanitizeLine(r.path, 200)}${r.line !== null ? `:${r.line}` : ""}` : "";
    out.push({ kind: "changesRequested", key: r.id, summary: r.kind === "changes_requested" ? `${who} requested changes` : `${who} commented${where}` });
  }
  return out.filter((x) => !reacted.has(x.key));
}

/**
 * What to do about new signals: `block` when loop.json says so for any of them (a person asked to
 * be the one to act), or when the item has no attempt left (`attemptsLeft`: lib/decisions/attempt.ts afterFailure,
 * where budgets will count too); else `retry`, a rework.
 */
export function decideReaction(signals: readonly Signal[], reactions: Reactions, attemptsLeft: boolean): { decision: ReactionDecision; why: string } {
  const blocking = [...new Set(signals.filter((x) => reactions[x.kind] === "block").map((x) => x.kind))];
  if (blocking.length) return { decision: "block", why: `reactions.${blocking.join(", reactions.")} is "block"` };
  if (!attemptsLeft) return { decision: "block", why: "no attempt is left" };
  return { decision: "retry", why: "a new attempt reworks it" };
}

/** The bounds of a digest (characters unless said): every piece is cut on its own, and the whole once more. */
export const FEEDBACK_BOUNDS = {
  /** Failed checks described, at most. */
  checks: 10,
  title: 300,
  summary: 2_000,
  /** Annotations per check, at most, and each one's message. */
  annotations: 20,
  annotation: 400,
  /** Bytes of a log's end asked of the forge (GitLab job traces; GitHub's output text). */
  logBytes: 3_000,
  /** Review comments, at most, and each one's body. */
  reviews: 20,
  review: 2_000,
  /** Conflicting paths named, at most. */
  paths: 50,
  /** The whole digest. */
  total: 24_000,
} as const;

interface FeedbackInput {
  /** How people name the PR ("pull request #12", "merge request !3"), and its URL. */
  label: string;
  url: string;
  head: string;
  base: string;
  /** The ref the rework can merge the base from (`origin/main`, fetched at its launch). */
  baseRef: string;
  signals: readonly Signal[];
  /** Each failed check with what the forge says about it (null: it could not be read, said). */
  checks: readonly { check: ForgeCheck; failures: readonly CheckFailure[] | null; unread?: string }[];
  reviews: readonly ReviewFeedback[];
  /** The paths git found conflicting between the head and the base (null: not known, said). */
  conflictPaths: readonly string[] | null;
}

/**
 * The digest a rework is told (markdown; every piece of forge text fenced, labelled as untrusted,
 * sanitized and capped). Built once, when the reaction is recorded, and carried by the log: the
 * handoff and `loop logs --feedback` show exactly what was recorded.
 */
export function reactionFeedback(o: FeedbackInput): string {
  const B = FEEDBACK_BOUNDS;
  const kinds = new Set(o.signals.map((x) => x.kind));
  const short = sanitizeLine(o.head, 40).slice(0, 12);
  const parts: string[] = [];
  parts.push(
    `Your previous attempt passed its verify and loop pushed it (${short}) to ${sanitizeLine(o.label, 80)} (${sanitizeLine(o.url, 300)}). On the forge, then:`,
  );
  parts.push("", ...o.signals.map((x) => `- ${sanitizeLine(x.summary, 300)}`));
  if (kinds.has("checksFailed")) {
    parts.push("", "### Failed checks", "", "Fix what made these checks fail; your verify command alone may not run them.");
    for (const [i, c] of o.checks.slice(0, B.checks).entries()) {
      // A check's name is whoever configured the CI's text: fenced like the rest, never a heading of loop's.
      parts.push(
        "",
        `#### Failed check ${i + 1}`,
        "",
        fenced(
          "Its name and conclusion",
          `${sanitizeLine(c.check.name, 100)}: ${sanitizeLine(c.check.conclusion, 40)} (${sanitizeLine(c.check.source, 40)})`,
          300,
        ),
      );
      if (c.failures === null) {
        parts.push("", `(what it says could not be read: ${sanitizeLine(c.unread ?? "no answer", 200)})`);
        continue;
      }
      if (c.failures.length === 0) parts.push("", "(the forge gives no more about it)");
      for (const f of c.failures) {
        const head = [
          f.name !== c.check.name ? `job ${sanitizeLine(f.name, 100)}` : "",
          f.reason ? `reason ${sanitizeLine(f.reason, 60)}` : "",
          f.url ? sanitizeLine(f.url, 300) : "",
        ]
          .filter(Boolean)
          .join(", ");
        if (head) parts.push("", head);
        if (f.title) parts.push("", fenced("Its title", f.title, B.title));
        if (f.summary) parts.push("", fenced("Its summary", f.summary, B.summary));
        const notes = f.annotations.slice(0, B.annotations);
        if (notes.length) {
          const text = notes
            .map((a) => `${a.path}${a.line !== null ? `:${a.line}` : ""} [${a.level}] ${capped(a.message, B.annotation).replace(/\n/g, " ")}`)
            .join("\n");
          parts.push(
            "",
            fenced(
              `Its annotations${f.annotations.length > notes.length ? ` (the first ${notes.length} of ${f.annotations.length})` : ""}`,
              text,
              B.annotations * (B.annotation + 300),
            ),
          );
        }
        if (f.logTail) parts.push("", fenced(`The end of its log (at most ${B.logBytes} bytes)`, f.logTail, B.logBytes));
      }
    }
    if (o.checks.length > B.checks) parts.push("", `(${o.checks.length - B.checks} more failed checks not described)`);
  }
  if (kinds.has("changesRequested")) {
    parts.push("", "### Review feedback", "", "From reviewers loop trusts (the forge's allow-list). Address each point, then commit.");
    const shown = o.reviews.slice(0, B.reviews);
    for (const r of shown) {
      const where = r.path ? ` on ${sanitizeLine(r.path, 200)}${r.line !== null ? ` line ${r.line}` : ""}` : "";
      const what = r.kind === "changes_requested" ? "requested changes" : "commented";
      parts.push("", fenced(`${r.login} ${what}${where} (${r.createdAt})`, r.body || "(no text)", B.review));
    }
    if (o.reviews.length > shown.length) parts.push("", `(${o.reviews.length - shown.length} more review comments not shown)`);
  }
  if (kinds.has("conflict")) {
    parts.push("", "### Conflict with the base", "");
    parts.push(
      `The pull request no longer merges into ${sanitizeLine(o.base, 200)}: it moved on. Merge \`${sanitizeLine(o.baseRef, 200)}\` (fetched for you) into your branch, resolve the conflicts, make the verify pass again, and commit the merge. Do not rebase: loop pushes only on top of what it pushed before.`,
    );
    if (o.conflictPaths === null) parts.push("", "(the conflicting paths could not be computed)");
    else if (o.conflictPaths.length) {
      const named = o.conflictPaths.slice(0, B.paths);
      parts.push(
        "",
        "Conflicting paths:",
        "",
        fence(
          named.map((x) => sanitizeLine(x, 300)).join("\n") +
            (o.conflictPaths.length > named.length ? `\n… ${o.conflictPaths.length - named.length} more` : ""),
        ),
      );
    }
  }
  const end = "Loop pushes your commits to the same pull request when your verify passes, and waits for its checks again.";
  // Whole pieces only: a fenced block is one piece, so the cut never leaves a fence open.
  let text = "";
  let left = 0;
  for (const [i, piece] of parts.entries()) {
    if (text.length + piece.length + 1 > B.total - end.length - 100) {
      left = parts.slice(i).filter((x) => x !== "").length;
      break;
    }
    text += (i ? "\n" : "") + piece;
  }
  if (left) text += `\n\n[… ${left} more pieces of feedback cut by loop: the digest is at most ${B.total} characters]`;
  return `${text}\n\n${end}`;
}
