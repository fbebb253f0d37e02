// `loop ctl`: operator commands. planCtl decides, from the projection alone, what each verb does
// to each chosen item (pure, tested with plain data); applyCtl carries it out under the lease:
// sessions are ended through the one close path, and every event is appended in one transaction.
import { existsSync, realpathSync } from "node:fs";
import type { EventDraft } from "../log/events.ts";
import type { ItemStatus, Projection } from "../log/reducer.ts";
import { isInFlight, isSettled, itemOf } from "../log/reducer.ts";
import { blockedBecauseOf, blockingDependency, gateItem } from "../step/decide.ts";
import { closeSession, type CloseReport } from "../step/close.ts";
import { graceMs } from "../supervisor/sessions.ts";
import { pidAlive } from "../shared/process.ts";
import { dbPath, readProjection, Store, StoreError, withReadSnapshot } from "../log/store.ts";
import { repoTop } from "../step/workspace.ts";
import { materialize } from "../log/materialize.ts";
import type { StoredEvent } from "../log/events.ts";
import { BusyError, DefinitionError, RefusedError, UsageError } from "../shared/errors.ts";
import { assertOwnership, noWorkYet, projectOf } from "../log/ownership.ts";
import { loadDefinition } from "../definition/loop-json.ts";

import type { CtlVerb } from "../log/vocabulary.ts";
export { CTL_VERBS, type CtlVerb } from "../log/vocabulary.ts";
export const DESTRUCTIVE_VERBS: readonly CtlVerb[] = ["stop", "skip", "cancel"];
/** Verbs that act on the loop when no --work-item is given. */
export const LOOP_VERBS: readonly CtlVerb[] = ["start", "pause", "resume", "stop"];
/** Verbs that need --work-item. */
export const ITEM_VERBS: readonly CtlVerb[] = ["skip", "retry", "cancel", "reply"];

export interface PlannedAction {
  /** Item id, or null for the loop itself. */
  item: string | null;
  /** What will happen, for people and for --dry-run. */
  effect: string;
  noop: boolean;
  /** End this item's live session first (close path). */
  close: { removeCheckout: boolean } | null;
  /** Events to append after the close (the close path's own events come first). */
  events: EventDraft[];
}

export function planCtl(p: Projection, verb: CtlVerb, items: string[], o: { text?: string | null; reason?: string | null; actor: string; keepCheckout: boolean }): PlannedAction[] {
  const out: PlannedAction[] = [];
  const loopAction = (effect: string, events: EventDraft[], noop = false): PlannedAction => ({ item: null, effect, noop, close: null, events });
  const control = (id: string, text: string | null = null): EventDraft => ({ type: "control_recorded", item: id, payload: { verb: verb as never, text } });
  const closeFor = (id: string) => {
    const it = p.items[id]!;
    return it.session && !it.session.closed && isInFlight(it.status) ? { removeCheckout: !o.keepCheckout } : null;
  };

  if (items.length === 0) {
    const st = p.loop.state;
    switch (verb) {
      case "start":
        if (st === "new") return [loopAction("start the loop", [{ type: "loop_started", payload: {} }])];
        if (st === "paused" || st === "stopped") return [loopAction(`resume the ${st} loop`, [{ type: "loop_resumed", payload: {} }])];
        return [loopAction(`the loop is already ${st}`, [], true)];
      case "resume":
        if (st === "paused" || st === "stopped") return [loopAction(`resume the ${st} loop`, [{ type: "loop_resumed", payload: {} }])];
        return [loopAction(`the loop is ${st}, not paused or stopped`, [], true)];
      case "pause":
        if (st === "paused") return [loopAction("the loop is already paused", [], true)];
        return [loopAction("pause the loop", [{ type: "loop_paused", payload: { reason: o.reason ?? `paused by ${o.actor}` } }])];
      case "stop": {
        if (st === "stopped") return [loopAction("the loop is already stopped", [], true)];
        const cur = p.loop.current;
        if (cur) {
          const it = p.items[cur]!;
          out.push({
            item: cur,
            effect: `end the session of ${cur} (attempt ${it.attempts.length}); the item stays pending`,
            noop: false,
            close: closeFor(cur),
            events: [{ type: "item_requeued", item: cur, payload: { attempt: it.attempts.length, reason: `stopped by ${o.actor}`, failed: false, resetBudget: false } }],
          });
        }
        out.push(loopAction("stop the loop", [{ type: "loop_stopped", payload: { reason: o.reason ?? `stopped by ${o.actor}` } }]));
        return out;
      }
      default:
        // A usage error (exit 2), like the same mistake caught by the command line (docs/cli/loop-ctl.md).
        throw new UsageError(`loop ctl ${verb} needs --work-item`);
    }
  }

  /** Items this plan requeues (retry), and the retried item each is requeued with. */
  const requeued = new Map<string, string>();
  for (const id of items) {
    const it = p.items[id]!;
    const n = it.attempts.length;
    const settled = isSettled(it.status);
    const flying = isInFlight(it.status);
    switch (verb) {
      case "start":
        out.push({ item: id, effect: it.held ? `release ${id} (held by stop) and allow it to start` : `allow ${id} to start`, noop: false, close: null, events: [control(id)] });
        break;
      case "stop":
        if (settled || it.status === "withdrawn") {
          out.push({ item: id, effect: `${id} is ${it.status}; nothing to stop`, noop: true, close: null, events: [] });
          break;
        }
        out.push({
          item: id,
          effect: flying ? `end the session of ${id} and hold it (start or retry releases it)` : `hold ${id} (start or retry releases it)`,
          noop: false,
          close: closeFor(id),
          events: [
            control(id, o.reason ?? null),
            ...(flying ? [{ type: "item_requeued" as const, item: id, payload: { attempt: n, reason: `stopped by ${o.actor}`, failed: false, resetBudget: false } }] : []),
          ],
        });
        break;
      case "skip":
      case "cancel": {
        if (settled || it.status === "withdrawn") {
          out.push({ item: id, effect: `${id} is ${it.status}; nothing to ${verb}`, noop: true, close: null, events: [] });
          break;
        }
        const outcome = verb === "skip" ? "skipped" : "cancelled";
        out.push({
          item: id,
          effect: `${flying ? `end the session of ${id} and settle it` : `settle ${id}`} ${outcome}`,
          noop: false,
          close: closeFor(id),
          events: [control(id, o.reason ?? null), { type: "item_settled", item: id, payload: { attempt: n, outcome, reason: `${outcome} by ${o.actor}${o.reason ? `: ${o.reason}` : ""}` } }],
        });
        break;
      }
      case "retry": {
        if (it.status === "passed") throw new RefusedError(`${id} passed; retry is for items that failed, were blocked, skipped or cancelled`);
        if (flying) {
          out.push({ item: id, effect: `${id} is in flight; nothing to retry`, noop: true, close: null, events: [] });
          break;
        }
        // Already requeued by this plan, as a dependent of an item retried before it (--all-failed
        // --all-blocked, or both named): requeuing it twice would be an illegal event.
        if (requeued.has(id)) {
          out.push({ item: id, effect: `${id} is requeued with ${requeued.get(id)}`, noop: true, close: null, events: [] });
          continue;
        }
        // A pending item that nothing holds is already going to run: nothing to release or requeue.
        if (!settled && !it.held) {
          out.push({ item: id, effect: `${id} is ${it.status} and not held; nothing to retry`, noop: true, close: null, events: [] });
          break;
        }
        const events: EventDraft[] = [control(id)];
        if (settled) events.push({ type: "item_requeued", item: id, payload: { attempt: n, reason: `retry by ${o.actor}`, failed: false, resetBudget: true } });
        if (settled) requeued.set(id, id);
        for (const dep of settled ? blockedBecauseOf(p, id).filter((d) => !requeued.has(d)) : []) {
          events.push({ type: "item_requeued", item: dep, payload: { attempt: p.items[dep]!.attempts.length, reason: `retry of ${id} by ${o.actor}`, failed: false, resetBudget: false } });
          requeued.set(dep, id);
        }
        out.push({ item: id, effect: settled ? `requeue ${id} with a fresh attempt budget${events.length > 2 ? ` and unblock ${events.slice(2).map((e) => e.item).join(", ")}` : ""}` : `release ${id}`, noop: false, close: null, events });
        break;
      }
      case "reply": {
        if (settled || it.status === "withdrawn") throw new RefusedError(`${id} is ${it.status}; a reply can no longer reach it`);
        out.push({ item: id, effect: `record a reply for ${id}${it.status === "needs_input" ? " (it asked a question; `loop ctl resume` continues)" : " (delivered with its next attempt)"}`, noop: false, close: null, events: [control(id, o.text ?? null), { type: "reply_recorded", item: id, payload: { text: o.text ?? "" } }] });
        break;
      }
      case "pause":
      case "resume":
        throw new UsageError(`loop ctl ${verb} acts on the whole loop; drop --work-item`);
    }
  }
  if (verb === "retry") warnBlockedAgain(p, out, requeued);
  // An item that asked a question paused the loop; once it is skipped or stopped the question is moot.
  const askedBy = (id: string) => p.loop.state === "paused" && p.items[id]!.status === "needs_input" && p.loop.reason?.startsWith(`${id} needs input:`);
  if ((verb === "skip" || verb === "stop") && items.some(askedBy))
    out.push(loopAction(`resume the loop (it was paused by the question of ${items.filter(askedBy).join(", ")})`, [{ type: "loop_resumed", payload: {} }]));
  if (verb === "cancel" && out.some((a) => !a.noop) && p.loop.state === "running")
    out.push(loopAction("pause the loop (cancel means stop spending)", [{ type: "loop_paused", payload: { reason: `cancelled ${items.join(", ")} by ${o.actor}` } }]));
  return out;
}

/**
 * A retried item whose dependency stays failed (not retried by this plan) is blocked again by the
 * next step, by nextWork's own rule: say so in its effect, naming the dependency to retry.
 */
function warnBlockedAgain(p: Projection, actions: PlannedAction[], requeued: Map<string, string>): void {
  const find = (id: string) => {
    const it = itemOf(p, id);
    if (!it) return undefined;
    return requeued.has(id) ? { ...gateItem(it), status: "pending" as const } : gateItem(it);
  };
  for (const a of actions) {
    if (a.noop || a.item === null || !requeued.has(a.item)) continue;
    const b = blockingDependency(find(a.item)!, find);
    if (b) a.effect += `; but ${b.reason}, so the next step blocks it again${b.status !== null && isSettled(b.status) ? ` (retry ${b.dependency} too)` : ""}`;
  }
}

/** The items with one of these statuses, in presentation order: what `retry --all-failed` / `--all-blocked` select. */
export function itemsWithStatus(p: Projection, statuses: readonly ItemStatus[]): string[] {
  return p.order.filter((id) => statuses.includes(p.items[id]!.status));
}

/** `loop ctl retry --all-failed` / `--all-blocked`: retry every such item; none is a no-op (exit 0). */
export function planRetryAll(p: Projection, statuses: readonly ItemStatus[], o: { actor: string; keepCheckout: boolean }): PlannedAction[] {
  const ids = itemsWithStatus(p, statuses);
  if (ids.length === 0) return [{ item: null, effect: `no ${statuses.join(" or ")} items; nothing to retry`, noop: true, close: null, events: [] }];
  return planCtl(p, "retry", ids, o);
}

export interface CtlResult {
  schema: "loop/ctl@1";
  verb: CtlVerb;
  dryRun: boolean;
  actions: { item: string | null; effect: string; noop: boolean }[];
  closed: Omit<CloseReport, "events">[];
  transitions: { seq: number; type: string; item: string | null }[];
}

/** Carry out a plan under the lease. */
export async function applyCtl(o: {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  plan: (p: Projection) => PlannedAction[];
  confirm: (actions: PlannedAction[]) => Promise<void>;
  verb: CtlVerb;
  dryRun: boolean;
}): Promise<CtlResult> {
  // Plan first from a read-only snapshot, so that a dry run, a refusal or a usage error (an unknown
  // item) changes nothing under the state root, not even -wal/-shm files; the store is opened for
  // writing only to carry the plan out. A store of another project is refused before any plan.
  const project = projectOf(o.root, definitionName(o.root));
  const p0 = readOnlyProjection(o.stateRoot);
  if (p0) assertOwnership(p0.loop.owner, project, o.stateRoot, { renameFree: noWorkYet(p0) });
  let store: Store | null = p0 ? null : Store.open(o.stateRoot, { actor: o.actor, project });
  try {
    const actions = o.plan(p0 ?? store!.projection());
    const summary = actions.map((a) => ({ item: a.item, effect: a.effect, noop: a.noop }));
    const result: CtlResult = { schema: "loop/ctl@1", verb: o.verb, dryRun: o.dryRun, actions: summary, closed: [], transitions: [] };
    if (o.dryRun || actions.every((a) => a.noop)) return result;
    await o.confirm(actions.filter((a) => !a.noop));
    store ??= Store.open(o.stateRoot, { actor: o.actor, project });
    const lease = store.acquireLease(10 * 60_000, pidAlive);
    if (!lease.ok) throw new BusyError(`a \`loop run\` step holds the lease (pid ${lease.holder.pid} on ${lease.holder.host}); nothing was done, try again`);
    try {
      // Re-plan under the lease: the state may have moved since the prompt.
      const p = store.projection();
      const final = o.plan(p);
      const repo = final.some((a) => a.close) ? repoTop(o.root) : "";
      const events: EventDraft[] = [];
      for (const a of final) {
        if (a.noop) continue;
        if (a.close) {
          const c = await closeSession({ it: p.items[a.item!]!, repo, reason: `${o.verb} by ${o.actor}`, removeCheckout: a.close.removeCheckout, graceMs: graceMs(o.env) });
          if (c) {
            const { events: ce, ...rest } = c;
            result.closed.push(rest);
            events.push(...ce);
          }
        }
        events.push(...a.events);
      }
      const { events: appended } = store.append(events.map((e) => ({ actor: o.actor, ...e })) as EventDraft[], { actor: o.actor, label: "ctl" });
      result.transitions = appended.map((e: StoredEvent) => ({ seq: e.seq, type: e.type, item: e.item }));
      result.actions = final.map((a) => ({ item: a.item, effect: a.effect, noop: a.noop }));
      materialize(o.stateRoot, store);
    } finally {
      store.releaseLease(lease.lease);
    }
    return result;
  } finally {
    store?.close();
  }
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

/**
 * The projection read without writing anything, or null when only the store itself can give it: a
 * -wal present (a step running, or one killed: the store reads it in place, where a snapshot
 * would copy the whole database) or a store of an older schema (which the store upgrades).
 */
function readOnlyProjection(stateRoot: string): Projection | null {
  const db = dbPath(stateRoot);
  if (existsSync(db) && existsSync(`${realpathSync(db)}-wal`)) return null; // beside the real file
  try {
    return withReadSnapshot(stateRoot, ({ db }) => readProjection(db));
  } catch (err) {
    if (err instanceof StoreError && err.code === "outdated_store") return null;
    throw err;
  }
}
