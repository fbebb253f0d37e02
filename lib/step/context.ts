// What the phases of one step share (lib/step/{launch,observe,verify,land,settle}.ts): the store
// under this step's lease, the definition, the options, and what the step has recorded so far.
// Every phase records through `append` here, so each commit carries its failpoint label and shows
// up in the step's result.
import type { ConsolaInstance } from "consola";
import type { NormDefinition } from "../definition/loop-json.ts";
import type { EventDraft, StoredEvent } from "../log/events.ts";
import { materialize as writeMaterializations } from "../log/materialize.ts";
import type { Projection } from "../log/reducer.ts";
import { eventItem, type Lease, type Store } from "../log/store.ts";
import type { COMMIT_LABELS } from "../shared/failpoint.ts";
import { type StatePaths, statePaths } from "../shared/paths.ts";
import { closeSession, type CloseReport } from "./close.ts";
import { graceMs } from "../supervisor/sessions.ts";
import { repoTop } from "./workspace.ts";
import { lastLanded, ownedRefs, type RefChange, readRefs, refChanges } from "./owned-refs.ts";

export type CommitLabel = (typeof COMMIT_LABELS)[number];

export type RunAction = "launched" | "waiting" | "paused" | "stopped" | "drained" | "idle" | "busy" | "progressed";

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

/**
 * What a control verb does, decided from the projection (lib/control/ctl.ts planCtl, passed in by
 * cmd/loop-run.ts: the step sits below control). Forge comments use it so `/loop retry` records
 * exactly what `loop ctl retry` would.
 */
export type ControlPlanner = (
  p: Projection,
  verb: "start" | "pause" | "resume" | "stop" | "skip" | "retry" | "reply",
  items: string[],
  o: { text?: string | null; reason?: string | null; actor: string; keepCheckout: boolean },
) => { item: string | null; effect: string; noop: boolean; close: { removeCheckout: boolean } | null; events: EventDraft[] }[];

export interface StepOptions {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  log: ConsolaInstance;
  /** Lease lifetime (30 minutes by default): a step never waits on an agent or a verify command, so it is never renewed. */
  leaseMs?: number;
  /** For control keywords in forge comments; without it such comments are refused. */
  planControl?: ControlPlanner;
}

export interface StepContext {
  readonly store: Store;
  readonly def: NormDefinition;
  readonly options: StepOptions;
  /** This step's lease: every effect outside the store asserts it first. */
  readonly lease: Lease;
  readonly paths: StatePaths;
  /** What this step recorded, in order. */
  readonly transitions: Transition[];
  /** Environment errors met during the step (the step still recorded what it could). */
  readonly errors: string[];
  /** What the step noticed that may need fixing but stopped nothing (a definition import's checks). */
  readonly warnings: string[];
  /** The repository's top level once asked for (see repoOf). */
  repoTop: string | null;
}

export function createStepContext(o: { store: Store; def: NormDefinition; options: StepOptions; lease: Lease }): StepContext {
  return { ...o, paths: statePaths(o.options.stateRoot), transitions: [], errors: [], warnings: [], repoTop: null };
}

/** The repository's top level, asked of git only when a phase needs it (an observing tick does not). */
export function repoOf(ctx: StepContext): string {
  return (ctx.repoTop ??= repoTop(ctx.options.root));
}

/**
 * The projection as the store has it now. It costs one query (another writer, `loop ctl`, may have
 * committed since); a phase that has just appended uses the projection `append` returned instead.
 */
export function projection(ctx: StepContext): Projection {
  return ctx.store.projection();
}

/** The item the environment fault pausing the loop is about (its event names it), or null. */
export function faultItem(ctx: StepContext, p: Projection): string | null {
  return p.loop.fault ? eventItem(ctx.store.db, p.loop.fault.seq) : null;
}

/** Record `drafts` in one commit labelled `label` (its failpoints), and list them in the step's transitions. */
export function append(ctx: StepContext, drafts: EventDraft[], label: CommitLabel): Projection {
  const { actor } = ctx.options;
  const { events, projection } = ctx.store.append(drafts.map((d) => ({ actor, ...d })) as EventDraft[], { label, actor });
  for (const e of events) recordTransition(ctx, e);
  return projection;
}

/** List an event the step recorded (appended here, or by the store itself, as a lease takeover) in its transitions. */
export function recordTransition(ctx: StepContext, e: StoredEvent): void {
  const summary = summarize(e);
  ctx.transitions.push({ seq: e.seq, type: e.type, item: e.item, summary });
  ctx.options.log.debug(`seq ${e.seq} ${e.type}${e.item ? ` ${e.item}` : ""}: ${summary}`);
}

/** Materializations follow every commit; a crash before this is repaired by the next step. */
export function materialize(ctx: StepContext): void {
  writeMaterializations(ctx.options.stateRoot, projection(ctx), ctx.store.db);
}

/** The close path from inside a step: under the lease, and a checkout it had to keep is the step's error. */
export async function closeInStep(ctx: StepContext, o: Omit<Parameters<typeof closeSession>[0], "repo" | "graceMs">): Promise<CloseReport | null> {
  ctx.store.assertLease();
  const c = await closeSession({ ...o, repo: repoOf(ctx), graceMs: graceMs(ctx.options.env) });
  if (c?.kept) {
    // Someone has to look at it: an error of the step (exit 1), listed in its result.
    ctx.errors.push(`${c.item}: ${c.kept}`);
    ctx.options.log.error(`${c.item}: ${c.kept}`);
  }
  return c;
}

/**
 * The refs loop owns (lib/step/owned-refs.ts) that are not where it left them: every item branch
 * whose session is closed, and with local landing "merge" the target. One git call.
 */
export function ownedRefChanges(ctx: StepContext, p: Projection): RefChange[] {
  const landed = ctx.def.landing === "merge" && !ctx.def.forge ? lastLanded(ctx.store.db, ctx.def.target) : null;
  const owned = ownedRefs({ items: p.order.map((id) => p.items[id]!), landed });
  if (owned.length === 0) return [];
  return refChanges(owned, readRefs(repoOf(ctx), owned.map((r) => r.ref)));
}

/** ensureWorktree found something else where a checkout had to be: it was kept, and someone should look. */
export function warnMovedAside(ctx: StepContext, o: { path: string; branch: string; aside: string }): void {
  ctx.options.log.warn(`what was at ${o.path} (not a checkout of ${o.branch}) was moved to ${o.aside}; look at it, then remove it`);
}

function summarize(e: StoredEvent): string {
  const pl = e.payload;
  switch (e.type) {
    case "launch_reserved":
      return `attempt ${pl.attempt} reserved (${pl.runner})`;
    case "session_started":
      return `attempt ${pl.attempt} started${pl.tmux ? ` in tmux ${pl.tmux}` : ` pid ${pl.pid}`}`;
    case "session_ended":
      return `attempt ${pl.attempt} ${pl.verdict}: ${pl.reason}`;
    case "verify_reserved":
      return `attempt ${pl.attempt} verify reserved`;
    case "verify_started":
      return `attempt ${pl.attempt} verify ${pl.adopted ? "adopted" : "started"} pid ${pl.pid}, deadline ${pl.deadline}`;
    case "verify_finished":
      return `verify ${pl.passed ? "passed" : "failed"} (${pl.reason})`;
    case "item_settled":
      return `${pl.outcome}: ${pl.reason}`;
    case "item_requeued":
      return `requeued: ${pl.reason}`;
    case "loop_drained":
      return `drained: ${pl.outcome}`;
    case "loop_paused":
    case "loop_stopped":
      return pl.reason;
    case "needs_input":
      return `question: ${pl.question}`;
    case "landing_finished":
      return `landing ${pl.outcome}: ${pl.reason}`;
    case "launch_failed":
      return `launch failed: ${pl.reason}`;
    case "environment_fault":
      // Its reason is the loop's (the pause), in the same result: not repeated here.
      return `environment fault (${pl.kind})${pl.attempt ? `, attempt ${pl.attempt} given back` : ""}: the loop paused`;
    case "notified":
      return `notify (${pl.kind}) ${pl.ok ? "ran" : `failed: ${pl.reason}`}`;
    case "lease_taken_over":
      return `took over the lease of pid ${pl.previous.pid} on ${pl.previous.host} (${pl.why === "dead" ? "its process is gone" : `expired at ${pl.previous.expires}`})`;
    case "definition_imported":
      return `revision ${pl.revision}: ${pl.items.length} items`;
    default:
      return e.type;
  }
}
