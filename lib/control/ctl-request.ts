// One `loop ctl` request, from whichever side asks: the command line (cmd/loop-ctl.ts) and the page's
// actions (lib/serve/actions.ts) both call runCtl, so a verb has one set of rules: the same checks and
// their words, the same plan (lib/decisions/ctl-plan.ts), the same confirmation, events and errors.
// Only how a person confirms differs: a terminal prompt (or --yes), or the word typed on the page.
import { applyCtl, type CtlResult, DESTRUCTIVE_VERBS, ITEM_VERBS } from "./ctl.ts";
import { CTL_VERBS, type CtlVerb } from "../log/vocabulary.ts";
import { planCtl, planRetryAll, type PlannedAction } from "../decisions/ctl-plan.ts";
import { resolveSelectors } from "../definition/selectors.ts";
import { confirmOrRefuse, wordToType } from "./confirm.ts";
import { reviewLines } from "../decisions/review.ts";
import { DeclinedError, UsageError } from "../shared/errors.ts";

export interface CtlRequest {
  verb: string;
  /** The items, by id or forge ref (`--work-item`, the page's `item`). */
  items: string[];
  /** reply's answer. */
  text?: string;
  reason?: string;
  /** retry --all-failed / --all-blocked. */
  bulk?: ("failed" | "blocked")[];
  dryRun?: boolean;
  /** `resume --yes` of a loop paused by a failed verify on the base: accept that failure. */
  accept?: boolean;
}

/**
 * How the person confirms what cannot be undone (docs/cli/loop-ctl.md#confirmation): at a terminal
 * (`--yes`, or the prompt), or by the word a page or script sends (`confirm`: the item's id, or the
 * loop's name), checked here with the word the terminal would have asked for.
 */
type Confirmation = { kind: "terminal"; yes: boolean; stdinIsTTY: boolean } | { kind: "typed"; word: string | null };

/** The checks a request passes before anything is read: bad input changes nothing (exit 2). */
export function checkCtlRequest(r: CtlRequest): CtlVerb {
  const verb = r.verb as CtlVerb;
  const bulk = r.bulk ?? [];
  if (!CTL_VERBS.includes(verb)) throw new UsageError(`unknown verb "${r.verb}" (verbs: ${CTL_VERBS.join(", ")})`);
  if (verb === "reply" && !r.text?.trim()) throw new UsageError('reply needs the answer text: loop ctl reply --work-item X "answer"');
  if (verb !== "reply" && r.text !== undefined) throw new UsageError(`unexpected argument "${r.text}"`);
  if (bulk.length && verb !== "retry") throw new UsageError(`--all-failed and --all-blocked go with retry, not ${verb}`);
  if (bulk.length && r.items.length) throw new UsageError("--all-failed and --all-blocked choose the items themselves; drop --work-item");
  if (ITEM_VERBS.includes(verb) && r.items.length === 0 && !bulk.length)
    throw new UsageError(`loop ctl ${verb} needs --work-item${verb === "retry" ? " (or --all-failed, --all-blocked)" : ""}`);
  return verb;
}

/** Carry out a request on the loop at `root`: checked, planned, confirmed, planned again under the lease, recorded as `actor`. */
export async function runCtl(o: {
  root: string;
  stateRoot: string;
  env: Record<string, string | undefined>;
  actor: string;
  request: CtlRequest;
  confirmation: Confirmation;
}): Promise<CtlResult> {
  const r = o.request;
  const verb = checkCtlRequest(r);
  const bulk = r.bulk ?? [];
  const c = o.confirmation;
  if (c.kind === "terminal" && c.yes && r.dryRun) throw new UsageError("--yes and --dry-run exclude each other");
  return applyCtl({
    root: o.root,
    stateRoot: o.stateRoot,
    actor: o.actor,
    env: o.env,
    verb,
    dryRun: r.dryRun ?? false,
    plan: (p) => {
      const keep = p.loop.settings?.keepCheckoutOnClose ?? false;
      // Chosen from the projection each time the plan is made: again under the lease.
      if (bulk.length) return planRetryAll(p, bulk, { actor: o.actor, keepCheckout: keep });
      const ids = resolveSelectors(p, r.items);
      return planCtl(p, verb, ids, { text: r.text ?? null, reason: r.reason ?? null, actor: o.actor, keepCheckout: keep, accept: r.accept ?? false });
    },
    confirm: async (actions, loopName, review) => {
      // control.review: the start of a loop waiting for review shows the review and asks (docs/cli/loop-ctl.md#review-and-start).
      if (review) {
        // On the page the review is shown beside its Start button: pressing it is the answer.
        if (c.kind === "typed") return;
        await confirmOrRefuse({
          yes: c.yes,
          stdinIsTTY: c.stdinIsTTY,
          what: [...reviewLines(review), ...actions.map((a) => a.effect)],
          command: "loop ctl start",
          why: "starts paid agent sessions",
        });
        return;
      }
      if (!DESTRUCTIVE_VERBS.includes(verb)) return;
      // It ends paid sessions: the operator types the item's id (the loop's name for the loop or several), not just "y".
      const typeToConfirm = wordFor(actions, loopName);
      if (c.kind === "typed") return confirmTyped(c.word, typeToConfirm, verb, actions);
      await confirmOrRefuse({ yes: c.yes, stdinIsTTY: c.stdinIsTTY, what: actions.map((a) => a.effect), command: `loop ctl ${verb}`, typeToConfirm });
    },
  });
}

function wordFor(actions: PlannedAction[], loopName: string): { word: string; what: string } {
  const items = actions.map((a) => a.item);
  return items.includes(null) ? { word: loopName, what: "the loop's name" } : wordToType(items as string[], loopName);
}

/** The word sent with the request (the page's `confirm`): none says what it must be; another is declined. Nothing is changed either way. */
function confirmTyped(word: string | null, want: { word: string; what: string }, verb: CtlVerb, actions: PlannedAction[]): void {
  const what = actions.map((a) => a.effect).join("; ");
  if (word === null || word === "")
    throw new UsageError(`${verb} cannot be undone (${what}): confirm with ${want.what}, ${JSON.stringify(want.word)}. Nothing was changed.`);
  if (word.trim() !== want.word)
    throw new DeclinedError(`declined: ${JSON.stringify(word)} is not ${want.what} (${JSON.stringify(want.word)}); nothing was changed`);
}
