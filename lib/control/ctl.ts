// `loop ctl`: operator commands. planCtl (lib/decisions/ctl-plan.ts) decides, from the projection alone,
// what each verb does to each chosen item; applyCtl carries it out through the one writer path
// (lib/log/writer.ts): planned from a read-only snapshot, confirmed, planned again under the lease;
// sessions are ended through the one close path, and every event is appended in one transaction.
import type { EventDraft } from "../log/events.ts";
import { type Projection, requireItem } from "../log/projection.ts";
import { closeSession, type CloseReport } from "../writer/close.ts";
import { unrecorded } from "../writer/disk-fault.ts";
import type { PlannedAction } from "../decisions/ctl-plan.ts";
import { graceMs } from "../supervisor/sessions.ts";
import { repoTop } from "../repo/workspace.ts";
import { runWriter } from "../log/writer.ts";
import { BusyError, DefinitionError } from "../shared/errors.ts";
import { projectOf } from "../log/ownership.ts";
import { loadDefinition } from "../definition/loop-json.ts";
import type { CtlVerb } from "../log/vocabulary.ts";
import { type LoopReview, reviewOf } from "../decisions/review.ts";

export const DESTRUCTIVE_VERBS: readonly CtlVerb[] = ["stop", "skip", "cancel"];
/** Verbs that need --work-item. */
export const ITEM_VERBS: readonly CtlVerb[] = ["skip", "retry", "cancel", "reply"];

export interface CtlResult {
  schema: "loop/ctl@1";
  verb: CtlVerb;
  dryRun: boolean;
  actions: { item: string | null; effect: string; noop: boolean }[];
  closed: Omit<CloseReport, "events">[];
  transitions: { seq: number; type: string; item: string | null }[];
  /** `loop ctl start` of a loop waiting for review (control.review): the review it starts (lib/decisions/review.ts). */
  review?: LoopReview;
}

/** The review a plan acts on: the loop's, when the plan records a person's start after it. */
function reviewedBy(p: Projection, actions: readonly PlannedAction[]): LoopReview | null {
  return actions.some((a) => !a.noop && a.events.some((e) => e.type === "loop_reviewed")) ? reviewOf(p) : null;
}

/** Carry out a plan: planned from a read-only snapshot, confirmed, planned again and carried out under the lease. */
export async function applyCtl(o: {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  plan: (p: Projection) => PlannedAction[];
  /** `loopName`: what the operator types to confirm acting on the loop itself (lib/control/confirm.ts). */
  confirm: (actions: PlannedAction[], loopName: string, review: LoopReview | null) => Promise<void>;
  verb: CtlVerb;
  dryRun: boolean;
}): Promise<CtlResult> {
  const summary = (actions: PlannedAction[]) => actions.map((a) => ({ item: a.item, effect: a.effect, noop: a.noop }));
  const result = (actions: PlannedAction[], p: Projection): CtlResult => {
    const review = reviewedBy(p, actions);
    return { schema: "loop/ctl@1", verb: o.verb, dryRun: o.dryRun, actions: summary(actions), closed: [], transitions: [], ...(review ? { review } : {}) };
  };
  // A full disk is said as such (the step's words), never as SQLite's I/O error.
  const diskFull = (err: unknown) => {
    throw unrecorded(err, o.stateRoot, { who: `\`loop ctl ${o.verb}\` could record nothing`, then: "then run it again" }) ?? err;
  };
  return runWriter<CtlResult>({
    stateRoot: o.stateRoot,
    actor: o.actor,
    project: projectOf(o.root, definitionName(o.root)),
    ttlMs: 10 * 60_000,
    busy: (h) => new BusyError(`a \`loop run\` step holds the lease (pid ${h.pid} on ${h.host}); nothing was done, try again`),
    before: async ({ p }) => {
      const actions = o.plan(p);
      if (o.dryRun || actions.every((a) => a.noop)) return result(actions, p);
      await o.confirm(
        actions.filter((a) => !a.noop),
        p.loop.name ?? definitionName(o.root) ?? "",
        reviewedBy(p, actions),
      );
      return null;
    },
    under: async (w) => {
      // The state may have moved since the prompt.
      const p = w.store.projection();
      const final = o.plan(p);
      const r = result(final, p);
      const repo = final.some((a) => a.close) ? repoTop(o.root) : "";
      const events: EventDraft[] = [];
      for (const a of final) {
        if (a.noop) continue;
        if (a.close) {
          // Priced as a step prices it: with the imported definition's prices (docs/spend.md).
          const prices = p.loop.settings?.prices;
          const c = await closeSession({
            it: requireItem(p, a.item!),
            repo,
            stateRoot: o.stateRoot,
            env: o.env,
            reason: `${o.verb} by ${o.actor}`,
            removeCheckout: a.close.removeCheckout,
            graceMs: graceMs(o.env),
            prices,
          });
          if (c) {
            const { events: ce, ...rest } = c;
            r.closed.push(rest);
            events.push(...ce);
          }
        }
        events.push(...a.events);
      }
      r.transitions = w.append(events, "ctl").map((e) => ({ seq: e.seq, type: e.type, item: e.item }));
      return r;
    },
  }).catch(diskFull);
}

/**
 * The loop's name as loop.json in the project root gives it, or null when it cannot be read: ctl
 * must work while loop.json is being edited (a pause, a stop), and then compares the repository
 * and the loop's folder only.
 */
export function definitionName(root: string): string | null {
  try {
    return loadDefinition(root).name;
  } catch (err) {
    if (err instanceof DefinitionError) return null;
    throw err;
  }
}
