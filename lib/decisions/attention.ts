// When the loop needs a person (docs/cli/loop-run.md#exit-codes): `loop run` exits 1 while any of
// these holds, `notify` is run once for each (lib/step/notify.ts), and `loop status` and the page
// show them with the commands that put each right. Computed once, here, from what both the step's
// projection and the status document hold (AttentionInput); decided by the loop's typed cause and
// the items' records, never by a reason's words. Pure.
import { itemOf, type ItemState, type LoopCause, type LoopState, type Projection } from "../log/projection.ts";
import {
  type DrainOutcome,
  drainsAs,
  ITEM_STATUSES,
  type ItemStatus,
  LANDING_OUTCOMES,
  type LandingOutcome,
  landed,
  type SettleCode,
} from "../log/vocabulary.ts";
import { activeItems } from "./next-work.ts";

/** `definition` is `loop status`'s alone: a loop.json every step refuses, which the log cannot show (lib/reports/definition-on-disk.ts). */
export type AttentionKind = "review" | "question" | "environment" | "failed" | "landing" | "budget" | "gave_up" | "definition";

export interface Attention {
  kind: AttentionKind;
  item: string | null;
  /** What is wrong, for people, in the log's words. */
  reason: string;
  /** The commands that put it right, in order (placeholders in angle brackets). */
  fix: string[];
  /** What one notification is for: a new condition in the same slot replaces the last one. */
  slot: string;
  /** This condition, exactly: notify runs once per key. */
  key: string;
}

/** The loop as attention reads it. */
interface AttentionLoop {
  state: LoopState;
  reason: string | null;
  cause: LoopCause | null;
  outcome: DrainOutcome | null;
  /** The seq of loop_drained while drained (the key of a Failed drain). */
  drainedSeq: number | null;
  current: string | null;
  /** control.review: why the loop waits for a person's review, and the seq of its review_required (absent: none ever asked). */
  review?: { waiting: { reasons: readonly { code: string; detail: string }[]; seq: number } | null };
}

/** An item as attention reads it: from the projection (attentionItem) or from state.json's item. */
interface AttentionItem {
  id: string;
  status: ItemStatus;
  reason: string | null;
  /** Why it settled (item_settled's code), or null while it is not settled. */
  code: SettleCode | null;
  epoch: number;
  /** How many attempts the item has (its current one's number). */
  attempts: number;
  question: string | null;
  /** Its budget stop, and the attempt it stopped. */
  budgetStop: { attempt: number; reason: string } | null;
  landing: { outcome: LandingOutcome; reason: string } | null;
  /** Its open pull request, as the forge names it ("#12", GitLab's "!12"). */
  pr: { label: string; url: string } | null;
}

export interface AttentionInput {
  loop: AttentionLoop;
  /**
   * The item in flight and, in the loop's order, the items that may need a person: every item whose
   * landing record has an outcome in UNLANDED_OUTCOMES, every item a budget stopped, and once the
   * loop drained Failed every item whose status is in ATTENTION_STATUSES (more items change nothing).
   */
  items: readonly AttentionItem[];
}

/** The statuses a drain counts as Failed: once the loop drained Failed, attention names their items. */
export const ATTENTION_STATUSES: readonly ItemStatus[] = ITEM_STATUSES.filter((s) => drainsAs(s) === "Failed");
/** The statuses an item settles with when its landing did not land (lib/step/settle.ts). */
const LANDING_ATTENTION_STATUSES: readonly ItemStatus[] = ["failed", "landing_blocked"];
/** The landing outcomes that did not land. */
export const UNLANDED_OUTCOMES: readonly LandingOutcome[] = LANDING_OUTCOMES.filter((o) => !landed(o));

/** An item of the projection as attention reads it; `pullSign` is how the loop's forge writes a PR's number ("#", GitLab's "!"). */
export function attentionItem(it: ItemState, pullSign = "#"): AttentionItem {
  const pr = it.forge?.pr ?? null;
  return {
    id: it.id,
    status: it.status,
    reason: it.reason,
    code: it.settleCode,
    epoch: it.epoch,
    attempts: it.attempts.length,
    question: it.question,
    budgetStop: it.budgetStop ? { attempt: it.budgetStop.attempt, reason: it.budgetStop.reason } : null,
    landing: it.landing ? { outcome: it.landing.outcome, reason: it.landing.reason } : null,
    pr: pr ? { label: `${pullSign}${pr.number}`, url: pr.url } : null,
  };
}

/** What attention reads of a whole projection. */
export function attentionInput(p: Projection, pullSign = "#"): AttentionInput {
  const cur = p.loop.current ? itemOf(p, p.loop.current) : undefined;
  const items = activeItems(p);
  return { loop: p.loop, items: [...(cur && !items.includes(cur) ? [cur] : []), ...items].map((it) => attentionItem(it, pullSign)) };
}

/** The conditions that need a person in a whole projection (attentionOf). */
export function attention(p: Projection, pullSign = "#"): Attention[] {
  return attentionOf(attentionInput(p, pullSign));
}

/** Whether the loop is paused by the question of item `id` (which still waits for its answer). */
export function pausedByQuestionOf(p: Pick<Projection, "loop" | "items">, id: string): boolean {
  return p.loop.state === "paused" && p.loop.cause?.kind === "question" && p.loop.cause.item === id && itemOf(p, id)?.status === "needs_input";
}

/** Quote for a POSIX shell when needed: an item id is pasted into a command line. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9._/:@#+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The conditions that need a person, in this order: the loop waiting for a review before it launches
 * anything (control.review: never started, or its definition widened), the loop paused on an agent's question or by an
 * environment fault, a budget reached (the loop paused by its own, items settled failed by theirs),
 * items whose landing failed (a merge conflict, a target checked out elsewhere) or was blocked on the
 * forge (`landing_blocked`: a refusal, red checks past the deadline, auto-merge not allowed; its PR
 * is left open for a person), items whose agent gave up, the loop drained `Failed`. An operator's own pause or stop needs
 * nobody else.
 */
export function attentionOf({ loop, items }: AttentionInput): Attention[] {
  const out: Attention[] = [];
  const byId = new Map(items.map((it) => [it.id, it]));
  const cause = loop.state === "paused" ? loop.cause : null;
  const review = loop.review?.waiting;
  if (review)
    out.push({
      kind: "review",
      item: null,
      reason: `the loop waits for review before it launches anything: ${review.reasons.map((r) => `${r.code} (${r.detail})`).join("; ")}`,
      fix: ["loop ctl start (shows the review and starts the loop)"],
      slot: "review",
      key: `review:${review.seq}`,
    });
  if (cause?.kind === "question") {
    const it = byId.get(cause.item);
    const n = it ? `e${it.epoch}:a${it.attempts}` : `s${cause.seq}`;
    out.push({
      kind: "question",
      item: cause.item,
      reason: loop.reason ?? `${cause.item} needs input${it?.question ? `: ${it.question}` : ""}`,
      fix: [`loop ctl reply --work-item ${shellWord(cause.item)} "<answer>"`, "loop ctl resume"],
      slot: "question",
      key: `question:${cause.item}:${n}`,
    });
  }
  if (cause?.kind === "fault")
    out.push({
      kind: "environment",
      item: cause.item,
      reason: loop.reason ?? cause.fault,
      fix: [cause.fix],
      slot: "environment",
      key: `environment:${cause.seq}`,
    });
  // Budgets (docs/spend.md#at-a-limit): the loop paused by its own, items settled failed by theirs.
  if (cause?.kind === "budget")
    out.push({
      kind: "budget",
      item: null,
      reason: loop.reason ?? "the loop's budget is reached",
      fix: ['raise "budget" in loop.json', "loop ctl resume"],
      slot: "budget",
      key: `budget:${cause.seq}`,
    });
  for (const it of items)
    if (it.status === "failed" && it.budgetStop && it.budgetStop.attempt === it.attempts)
      out.push({
        kind: "budget",
        item: it.id,
        reason: `${it.id}: ${it.reason ?? it.budgetStop.reason}`,
        fix: [`raise the budget of ${it.id} (items[].budget or defaults.budget) in loop.json`, `loop ctl retry --work-item ${shellWord(it.id)}`],
        slot: `budget:${it.id}`,
        key: `budget:${it.id}:e${it.epoch}:a${it.attempts}`,
      });
  // An agent that gave up (docs/runners.md#giving-up): never retried blindly, a person decides.
  for (const it of items)
    if (it.status === "failed" && it.code === "gave_up")
      out.push({
        kind: "gave_up",
        item: it.id,
        reason: `${it.id}: ${it.reason ?? "the agent gave up"}`,
        fix: [
          `read its reason and its branch (loop logs --verify ${shellWord(it.id)}), edit its prompt in loop.json if need be, then loop ctl retry --work-item ${shellWord(it.id)}`,
          `or loop ctl skip --work-item ${shellWord(it.id)}`,
          `or loop reset --work-item ${shellWord(it.id)} to start it over`,
        ],
        slot: `gave_up:${it.id}`,
        key: `gave_up:${it.id}:e${it.epoch}:a${it.attempts}`,
      });
  // Settled failed or landing_blocked because of its landing (a merge that conflicted or failed, a
  // pull request blocked): settle.ts settles a landing that did not land as exactly these.
  const troubled = items.filter((it) => ATTENTION_STATUSES.includes(it.status));
  for (const it of troubled)
    if (LANDING_ATTENTION_STATUSES.includes(it.status) && it.landing && !landed(it.landing.outcome))
      out.push({
        kind: "landing",
        item: it.id,
        reason: `${it.id}: ${it.reason ?? it.landing.reason}`,
        fix: [
          it.status === "landing_blocked" && it.pr
            ? `resolve or merge ${it.pr.label} (${it.pr.url})`
            : "resolve the landing (a conflict, the target checked out elsewhere)",
          `loop ctl retry --work-item ${shellWord(it.id)}`,
        ],
        slot: `landing:${it.id}`,
        key: `landing:${it.id}:e${it.epoch}:a${it.attempts}`,
      });
  if (loop.state === "drained" && loop.outcome === "Failed") {
    const names =
      troubled
        .slice(0, 5)
        .map((it) => `${it.id} ${it.status}`)
        .join(", ") + (troubled.length > 5 ? `, … ${troubled.length} items` : "");
    out.push({
      kind: "failed",
      item: null,
      // `fix` is steps in order, each a command: the other way out is said in the reason, not as a step.
      reason: `the loop drained Failed: ${names} (to start one item over instead: loop reset --work-item <id>)`,
      fix: ["loop ctl retry --all-failed"],
      slot: "failed",
      key: `failed:${loop.drainedSeq}`,
    });
  }
  return out;
}
