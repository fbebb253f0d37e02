// What the phases of one step share (lib/step/{launch,observe,verify,land,settle}.ts): the store
// under this step's lease, the definition, the options, and what the step has recorded so far.
// Every phase records through `append` here, so each commit carries its failpoint label and shows
// up in the step's result.
import type { ConsolaInstance } from "consola";
import type { ParsedDefinition, StepDefinition } from "./definition.ts";
import type { EventDraft, StoredEvent } from "../log/events.ts";
import { type ItemState, type Projection, requireItem } from "../log/projection.ts";
import type { Store } from "../log/store.ts";
import type { Lease } from "../log/snapshot.ts";
import type { Writer } from "../log/writer.ts";
import type { CommitLabel } from "../shared/failpoint.ts";
import { type StatePaths, statePaths, worktreesRoot } from "../shared/paths.ts";
import { closeSession, type CloseReport } from "../writer/close.ts";
import { graceMs } from "../supervisor/sessions.ts";
import { repoTop } from "../repo/workspace.ts";
import { lastLanded, ownedRefs, type RefChange, readRefs, refChanges } from "../repo/owned-refs.ts";
import { amount } from "../decisions/budget.ts";

export type RunAction = "launched" | "waiting" | "review" | "paused" | "stopped" | "drained" | "idle" | "busy" | "progressed";

/** Where a step stopped, and why: the head of its result. */
export interface StepOutcome {
  action: RunAction;
  item: string | null;
  reason: string | null;
}

/** One event the step recorded, as its result lists it. */
export interface Transition {
  seq: number;
  type: string;
  item: string | null;
  summary: string;
}

export interface StepOptions {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  log: ConsolaInstance;
  /** Lease lifetime (30 minutes by default): a step never waits on an agent or a verify command, so it is never renewed. */
  leaseMs?: number;
  /** This step is a chained one (docs/cli/loop-run.md#chained-steps): its lease says so, for a busy answer. */
  chained?: boolean;
  /**
   * `loop add`'s append to loop.json (lib/planner/append.ts: validated, atomic, refused whole), handed
   * in by cmd/loop-run.ts (the planner sits above the step): how the live tracker query writes
   * (docs/trackers.md#live-query). Absent: no query is made.
   */
  appendItems?: (items: { ref: string; prompt: string; from: string }[]) => Promise<{ id: string; ref: string | null }[]>;
}

export interface StepContext {
  /** This step's hold on the store (lib/log/writer.ts): its lease, its appends, its files. */
  readonly writer: Writer;
  readonly store: Store;
  /**
   * The definition in force (its items are the projection's: an item's `def`). Changed only once in
   * a step: a loop.json deferred while an attempt ran is imported when nothing is in flight (step.ts).
   */
  def: StepDefinition;
  /** A changed loop.json this step did not import yet: an attempt launched under the logged one was in flight. */
  deferred: { parsed: ParsedDefinition; item: string; attempt: number } | null;
  readonly options: StepOptions;
  /** This step's lease: every effect outside the store asserts it first. */
  readonly lease: Lease;
  readonly paths: StatePaths;
  /** The folder of this loop's worktrees and landing checkout (lib/shared/paths.ts worktreesRoot). */
  readonly worktrees: string;
  /** What this step recorded, in order. */
  readonly transitions: Transition[];
  /** Environment errors met during the step (the step still recorded what it could). */
  readonly errors: string[];
  /** What the step noticed that may need fixing but stopped nothing (a definition import's checks). */
  readonly warnings: string[];
  /** The repository's top level once asked for (see repoOf). */
  repoTop: string | null;
}

export function createStepContext(o: { writer: Writer; def: StepDefinition; options: StepOptions; deferred?: StepContext["deferred"] }): StepContext {
  return {
    deferred: null,
    ...o,
    store: o.writer.store,
    lease: o.writer.lease,
    paths: statePaths(o.options.stateRoot),
    worktrees: worktreesRoot(o.options.stateRoot, o.options.env),
    transitions: [],
    errors: [],
    warnings: [],
    repoTop: null,
  };
}

/** The repository's top level, asked of git only when a phase needs it (an observing tick does not). */
export function repoOf(ctx: StepContext): string {
  return (ctx.repoTop ??= repoTop(ctx.options.root));
}

/**
 * The whole projection as the store has it now: every item, read once (a query tells whether
 * another writer, `loop ctl`, committed since) and kept current by this step's appends. For the
 * decisions over every item; looking at the loop or one item costs less (loopView, itemNow).
 */
export function projection(ctx: StepContext): Projection {
  return ctx.store.projection();
}

/** The loop record and the item order as the store has them now, without reading any item. */
export function loopView(ctx: StepContext): Pick<Projection, "seq" | "hash" | "loop" | "order"> {
  return ctx.store.loopView();
}

/** One item as the store has it now. */
export function itemNow(ctx: StepContext, id: string): ItemState {
  const it = ctx.store.item(id);
  if (!it) throw new Error(`internal: the projection has no item "${id}"`);
  return it;
}

/**
 * Record `drafts` in one commit labelled `label` (its failpoints), and list them in the step's
 * transitions. Returns the loop as it is after them (an item: itemNow; every item: projection).
 */
export function append(ctx: StepContext, drafts: EventDraft[], label: CommitLabel): Pick<Projection, "seq" | "hash" | "loop" | "order"> {
  for (const e of ctx.writer.append(drafts, label)) recordTransition(ctx, e);
  return loopView(ctx);
}

/** List an event the step recorded (appended here, or by the store itself, as a lease takeover) in its transitions. */
export function recordTransition(ctx: StepContext, e: StoredEvent): void {
  const summary = summarize(e);
  ctx.transitions.push({ seq: e.seq, type: e.type, item: e.item, summary });
  ctx.options.log.debug(`seq ${e.seq} ${e.type}${e.item ? ` ${e.item}` : ""}: ${summary}`);
}

/** Materializations follow every commit; a crash before this is repaired by the next step. */
export function materialize(ctx: StepContext): void {
  ctx.writer.materialize();
}

/** The close path from inside a step: under the lease, and a checkout it had to keep is the step's error. */
export async function closeInStep(
  ctx: StepContext,
  o: Omit<Parameters<typeof closeSession>[0], "repo" | "stateRoot" | "env" | "graceMs" | "prices">,
): Promise<CloseReport | null> {
  ctx.store.assertLease();
  const c = await closeSession({
    ...o,
    repo: repoOf(ctx),
    stateRoot: ctx.options.stateRoot,
    env: ctx.options.env,
    graceMs: graceMs(ctx.options.env),
    prices: ctx.def.prices,
  });
  if (c?.kept) {
    // Someone has to look at it: an error of the step (exit 1), listed in its result.
    ctx.errors.push(`${c.item}: ${c.kept}`);
    ctx.options.log.error(`${c.item}: ${c.kept}`);
  }
  return c;
}

/**
 * The refs loop owns (lib/repo/owned-refs.ts) that are not where it left them: every item branch
 * whose session is closed, and with local landing "merge" the target. One git call.
 */
export function ownedRefChanges(ctx: StepContext, p: Projection): RefChange[] {
  const landed = ctx.def.landing === "merge" && !ctx.def.forge ? lastLanded(ctx.store.db, ctx.def.target) : null;
  const owned = ownedRefs({ items: p.order.map((id) => requireItem(p, id)), landed });
  if (owned.length === 0) return [];
  return refChanges(
    owned,
    readRefs(
      repoOf(ctx),
      owned.map((r) => r.ref),
    ),
  );
}

/** ensureWorktree found something else where a checkout had to be: it was kept, and someone should look. */
export function warnMovedAside(ctx: StepContext, o: { path: string; branch: string; aside: string }): void {
  ctx.options.log.warn(`what was at ${o.path} (not a checkout of ${o.branch}) was moved to ${o.aside}; look at it, then remove it`);
}

function summarize(e: StoredEvent): string {
  switch (e.type) {
    case "launch_reserved":
      return `attempt ${e.payload.attempt} reserved (${e.payload.runner})`;
    case "session_started":
      return `attempt ${e.payload.attempt} started${e.payload.tmux ? ` in tmux ${e.payload.tmux}` : ` pid ${e.payload.pid}`}`;
    case "session_ended":
      return `attempt ${e.payload.attempt} ${e.payload.verdict}: ${e.payload.reason}`;
    case "verify_reserved":
      return `attempt ${e.payload.attempt} verify reserved`;
    case "verify_started":
      return `attempt ${e.payload.attempt} verify ${e.payload.adopted ? "adopted" : "started"} pid ${e.payload.pid}, deadline ${e.payload.deadline}`;
    case "verify_finished":
      return `verify ${e.payload.passed ? "passed" : "failed"} (${e.payload.reason})`;
    case "item_settled":
      return `${e.payload.outcome}: ${e.payload.reason}`;
    case "item_requeued":
      return `requeued: ${e.payload.reason}`;
    case "loop_drained":
      return `drained: ${e.payload.outcome}`;
    case "loop_paused":
    case "loop_stopped":
      return e.payload.reason;
    case "needs_input":
      return `question: ${e.payload.question}`;
    case "landing_finished":
      return `landing ${e.payload.outcome}: ${e.payload.reason}`;
    case "launch_failed":
      return `launch failed: ${e.payload.reason}`;
    case "environment_fault":
      // Its reason is the loop's (the pause), in the same result: not repeated here.
      return `environment fault (${e.payload.kind})${e.payload.attempt ? `, attempt ${e.payload.attempt} given back` : ""}: the loop paused`;
    case "watcher_stopped":
      return `the watcher (pid ${e.payload.pid}) was stopped by ${e.payload.signal} while attempt ${e.payload.attempt}'s ${e.payload.running} ran`;
    case "notified":
      return `notify (${e.payload.kind}) ${e.payload.ok ? "ran" : `failed: ${e.payload.reason}`}`;
    case "usage_recorded": {
      const t = e.payload.tokens;
      const tokens = t ? `${(t.input + t.output + t.cacheRead + t.cacheWrite).toLocaleString("en-US")} tokens` : "tokens unknown";
      const usd = e.payload.microUsd === null ? "" : `, ${amount("usd", e.payload.microUsd)}`;
      return `attempt ${e.payload.attempt} ${e.payload.final ? "used" : "has used"} ${tokens}${usd}`;
    }
    case "budget_stopped":
      return `budget reached (${e.payload.scope}): ${e.payload.reason}`;
    case "lease_taken_over": {
      const { previous, why } = e.payload;
      return `took over the lease of pid ${previous.pid} on ${previous.host} (${why === "dead" ? "its process is gone" : `expired at ${previous.expires}`})`;
    }
    case "definition_imported":
      return `revision ${e.payload.revision}: ${e.payload.items.length} items`;
    case "review_required":
      return `waits for review: ${e.payload.reasons.map((r) => r.code).join(", ")}`;
    default:
      return e.type;
  }
}
