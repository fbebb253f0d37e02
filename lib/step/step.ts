// `loop run`: one bounded, crash-safe step. Take the lease, import a changed definition, repair
// materializations, then advance the state machine until it must wait (an agent is working, the
// loop is paused) or has nothing to do. Decisions come from lib/decisions/; the phases that
// perform the effects (launch, observe, verify, land, settle: one file each, over a StepContext)
// work in "reserve, act, record" order so a kill at any point is recovered by the next step.
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { BusyLease, CHAINED_TAG, EXIT, StoreError, UsageError } from "../shared/errors.ts";

import { definitionHash, importedDefinition } from "../definition/normalize.ts";
import { loadDefinition } from "../definition/loop-json.ts";
import { counts } from "../log/documents.ts";
import { type ItemState, requireItem } from "../log/projection.ts";
import { itemIn } from "../log/item-views.ts";
import { Store } from "../log/store.ts";
import { dbPath, type Lease, refuseLostStore } from "../log/snapshot.ts";
import { withLease } from "../log/writer.ts";
import { projectOf } from "../log/ownership.ts";
import {
  append,
  createStepContext,
  itemNow,
  loopView,
  materialize,
  projection,
  recordTransition,
  repoOf,
  type StepContext,
  type StepOptions,
  type StepOutcome,
  type Transition,
} from "./context.ts";
import {
  type DefinitionSource,
  type ParsedDefinition,
  parseDefinitionSource,
  type StepDefinition,
  readDefinitionSource,
  rememberDefinition,
  resolveDefinition,
} from "./definition.ts";
import { afterSession } from "../decisions/attempt.ts";
import { landingRoute } from "../decisions/landing.ts";
import { type Attention, attentionOf } from "../decisions/attention.ts";
import { hasOpenWork, nextWork } from "../decisions/next-work.ts";
import { reviewOnImport } from "../decisions/widening.ts";
import { definitionOfLog, type LoopReview, reviewOf } from "../decisions/review.ts";
import { definitionWarnings } from "./machine-probe.ts";
import { notifyPhase, stepAttentionInput } from "./notify.ts";
import type { NotifyReport } from "./notify-channels.ts";
import { selfArgv } from "../supervisor/self.ts";
import { launchAttempt, pauseForFault } from "./launch.ts";
import { checkBase } from "./base-verify.ts";
import { relocateWorktrees } from "./relocate.ts";
import { worktreesRoot } from "../shared/paths.ts";
import { sweepTrash, trashOf } from "../shared/trash.ts";
import { dropSpare } from "../writer/spare-checkout.ts";
import { listBranches, repoTop } from "../repo/workspace.ts";
import { observeLaunching, observeRunning } from "./observe.ts";
import { verifyAttempt } from "./verify.ts";
import { landAttempt } from "./land.ts";
import { failAttempt, requeueUncounted, settleAttempt, sweepClosedSessions } from "./settle.ts";
import { type DiskSpace, diskSpace, ensureReserve, LOW_SPACE_BYTES, releaseReserve } from "../shared/disk.ts";
import { materializeIfRoom, pauseForDiskFull } from "./disk-full.ts";
import { diskFullMet, unrecorded } from "../writer/disk-fault.ts";
import { recordStopProof } from "./drain.ts";
import { beforeLaunch } from "../decisions/budget.ts";
import { stopForBudget } from "./spend.ts";
import { hideDefinitionSecrets } from "./own-environment.ts";

export interface RunResult extends StepOutcome {
  schema: "loop/run@1";
  transitions: Transition[];
  loop: { name: string | null; state: string; reason: string | null; outcome: string | null; current: string | null };
  /** What needs a person after the step (lib/decisions/attention.ts attention): non-empty means exit 1. */
  attention: { kind: Attention["kind"]; item: string | null; reason: string }[];
  /**
   * Whether `attention` differs from what needed a person when the step began (a condition new, or
   * gone): false for a tick that found the loop as the previous one left it. `--quiet` prints nothing
   * for such a tick (docs/cli/loop-run.md#flags).
   */
  attentionChanged: boolean;
  /** While the loop waits for review (control.review), the review (lib/decisions/review.ts): what `loop ctl start` starts. Absent otherwise. */
  review?: LoopReview;
  /** Environment errors met during the step (the step still recorded what it could). */
  errors: string[];
  /** What may need fixing but stopped nothing (checks made when loop.json was imported). */
  warnings: string[];
  /** The notify commands this step ran (loop.json `notify`). */
  notifications: NotifyReport[];
}

const MAX_TRANSITIONS_PER_STEP = 500;

/**
 * Record a definition that differs from the one the log holds, and note the bytes it was read from
 * (lib/step/definition.ts) so the next step need not parse them again. `parsed` is null when this
 * step already knew the file: then there is nothing to import.
 */
function importDefinition(ctx: StepContext, parsed: ParsedDefinition | null): void {
  if (!parsed) return;
  const { loop } = loopView(ctx);
  if (loop.definitionHash !== definitionHash(parsed.def)) {
    const imported = importedDefinition(parsed.def, loop.revision + 1);
    // control.review (docs/loop-json.md#control): the definition as it was, to tell what the change widens.
    const prev = loop.settings ? definitionOfLog(projection(ctx)) : null;
    // In the import's own transaction: a crash between the two would forget to ask.
    const reasons = reviewOnImport({ prev, next: imported, review: loop.review });
    // What it asks for is the step's result (action `review`, attention, the review on stderr), not a warning.
    append(
      ctx,
      [
        { type: "definition_imported", payload: imported },
        ...(reasons ? [{ type: "review_required" as const, payload: { revision: imported.revision, reasons } }] : []),
      ],
      "import",
    );
    // A loop paused by an environment fault keeps the fault's own "To fix" words; a new loop.json may
    // be that fix, which only a person can tell: say so, and how to go on.
    if (loop.state === "paused" && loop.cause?.kind === "fault") {
      const w = `loop.json changed (revision ${loop.revision + 1}) since the loop was paused by an environment fault (${loop.cause.fault}); if the change fixes it, run \`loop ctl resume\``;
      ctx.warnings.push(w);
      ctx.options.log.warn(w);
    }
    // What can be checked now is said now, not when an item's turn comes (warnings: this step's
    // PATH may not be the one cron gives the next).
    for (const w of definitionWarnings({ def: parsed.def, repo: repoOf(ctx), env: ctx.options.env, demoArgv: [...selfArgv(), "__demo-agent"] })) {
      ctx.warnings.push(w);
      ctx.options.log.warn(w);
    }
  }
  rememberDefinition(ctx.store, parsed);
}

/** Advance the loop, one transition at a time, until it must stop: an agent at work, paused, stopped, drained, idle. */
async function advanceLoop(ctx: StepContext): Promise<StepOutcome> {
  // Worktrees a loop made before they left the repository's tree move first (docs/state.md#where-worktrees-live).
  relocateWorktrees(ctx);
  for (let guard = 0; guard < MAX_TRANSITIONS_PER_STEP; guard++) {
    // Before every transition (and before each effect outside the store, in the phases): a step
    // that outlived its lease stops before acting, not only before recording.
    ctx.store.assertLease();
    if (await sweepClosedSessions(ctx)) continue;
    // Read afresh every turn: `loop ctl` may have recorded something since. While an item is in
    // flight the step reads the loop and that item only, whatever the size of the backlog.
    const { loop } = loopView(ctx);
    // A loop waiting for its first review stays new: `loop ctl start` starts it (docs/cli/loop-ctl.md#review-and-start).
    if (loop.state === "new" && !loop.review?.waiting) {
      append(ctx, [{ type: "loop_started", payload: {} }], "start");
      continue;
    }
    if (loop.state === "paused") {
      // Paused because the tracker did not answer, and it answers again: the loop goes on by itself,
      // as a person would resume it (docs/trackers.md#a-tracker-that-is-down). Any other pause waits for one.
      if (loop.fault?.kind === "tracker_down" && (await trackerHealed(ctx))) {
        append(ctx, [{ type: "loop_resumed", payload: {} }], "forge");
        continue;
      }
      return { action: "paused", item: loop.current, reason: loop.reason };
    }
    if (loop.state === "stopped") return { action: "stopped", item: loop.current, reason: loop.reason };
    if (loop.current) {
      const r = await advanceItem(ctx, itemNow(ctx, loop.current));
      if (r) return r;
      continue;
    }
    // Nothing in flight: a loop.json deferred while an attempt ran is imported now, before anything launches.
    if (ctx.deferred) {
      ctx.def = ctx.deferred.parsed.def;
      const parsed = ctx.deferred.parsed;
      ctx.deferred = null;
      importDefinition(ctx, parsed);
      continue;
    }
    // Nothing in flight and a review asked for: nothing launches until a person starts the loop.
    if (loop.review?.waiting)
      return {
        action: "review",
        item: null,
        reason: `waits for review (${loop.review.waiting.reasons.map((r) => r.code).join(", ")}): \`loop ctl start\` shows it and starts the loop`,
      };
    // Nothing in flight: what comes next is decided over every item.
    const p = projection(ctx);
    if (p.loop.state === "drained") {
      if (!hasOpenWork(p)) {
        dropSpare(ctx.options.stateRoot, ctx.worktrees);
        return { action: "drained", item: null, reason: p.loop.outcome };
      }
      append(ctx, [{ type: "loop_reopened", payload: { reason: "new or requeued work items" } }], "reopen");
      continue;
    }
    const next = nextWork(p);
    if (next.kind === "block") {
      append(
        ctx,
        next.items.map((b) => ({
          type: "item_settled" as const,
          item: b.id,
          payload: { attempt: requireItem(p, b.id).attempts.length, outcome: "blocked" as const, reason: b.reason, code: b.code },
        })),
        "block",
      );
      continue;
    }
    if (next.kind === "drain") {
      append(ctx, [{ type: "loop_drained", payload: { outcome: next.outcome, counts: counts(p) } }], "drain");
      // Nothing left to launch: the spare checkout goes to the trash, not held for an item that may never come.
      dropSpare(ctx.options.stateRoot, ctx.worktrees);
      return { action: "drained", item: null, reason: next.outcome };
    }
    if (next.kind === "idle") return { action: "idle", item: null, reason: next.reason };
    // The default verify on the base, once per verify and setup: failing, the loop waits for a person, nothing spent.
    const base = await checkBase(ctx, requireItem(p, next.item));
    if (base) return base;
    // Budgets before every launch (docs/spend.md): an item whose own is spent settles failed, and the
    // loop pauses when its own (or what is left of it) cannot cover the attempt.
    const overBudget = beforeLaunch({ item: requireItem(p, next.item), usage: p.loop.usage, budget: ctx.def.budget, now: Date.now() });
    if (overBudget) {
      const r = await stopForBudget(ctx, requireItem(p, next.item), overBudget);
      if (r) return r;
      continue;
    }
    let forgeContext: string | null = null;
    if (ctx.def.forge) {
      // Only a loop with a forge loads its modules (docs/forge.md).
      const { prepareForgeLaunch } = await import("./forge/issue-context.ts");
      const f = await prepareForgeLaunch(ctx, requireItem(p, next.item));
      if (f.kind === "wait") return { action: "waiting", item: null, reason: f.reason };
      // The tracker down, or refusing loop's key: the machine's fault, before anything is reserved.
      if (f.kind === "fault") return pauseForFault(ctx, requireItem(p, next.item), f.fault, null);
      if (f.kind === "skip" || f.kind === "block") {
        const outcome = f.kind === "skip" ? ("skipped" as const) : ("blocked" as const);
        append(
          ctx,
          [{ type: "item_settled", item: next.item, payload: { attempt: requireItem(p, next.item).attempts.length, outcome, reason: f.reason, code: f.code } }],
          "forge",
        );
        continue;
      }
      forgeContext = f.context;
    }
    return launchAttempt(ctx, requireItem(projection(ctx), next.item), { forgeContext });
  }
  throw new Error(`step made ${MAX_TRANSITIONS_PER_STEP} transitions without settling; refusing to go on`);
}

/** Move the in-flight item one phase forward; returns an outcome when the step must stop here. */
async function advanceItem(ctx: StepContext, it: ItemState): Promise<StepOutcome | null> {
  switch (it.status) {
    case "launching":
      return observeLaunching(ctx, itemIn(it, "launching"));
    case "running":
      return observeRunning(ctx, itemIn(it, "running"));
    case "needs_input": {
      const undelivered = it.replies.filter((r) => r.delivered === null);
      requeueUncounted(ctx, it, undelivered.length ? "reply received" : "resumed without a reply");
      return null;
    }
    case "ended": {
      const ended = itemIn(it, "ended");
      const next = afterSession(ended);
      switch (next.kind) {
        case "requeue":
          requeueUncounted(ctx, it, next.reason, { drained: next.drained });
          return null;
        case "fail":
          await failAttempt(ctx, it, next);
          return null;
        case "verify":
          // Null once the verify's verdict is recorded; an outcome while it runs (the step stops here).
          return verifyAttempt(ctx, ended);
        case "land":
          if (landingRoute({ forge: !!ctx.def.forge, landing: ctx.def.landing, forgeLandingStarted: !!it.forge?.landing }) === "forge") {
            const { landThroughForge } = await import("./forge/land.ts");
            return landThroughForge(ctx, ended);
          }
          landAttempt(ctx, ended);
          return null;
        default:
          await settleAttempt(ctx, ended, { landed: next.landed });
          return null;
      }
    }
    default:
      throw new Error(`item ${it.id} is current but ${it.status}`);
  }
}

function insideGitWorkTree(dir: string): boolean {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (existsSync(join(d, ".git"))) return true;
    if (dirname(d) === d) return false;
  }
}

/**
 * What must hold before a step touches anything: a valid loop.json in a git work tree. A step (or a
 * watcher) must not create a state root, a lease or run.pid where it cannot work. Throws
 * DefinitionError or UsageError (exit 2).
 */
export function preflight(root: string): ReturnType<typeof loadDefinition> {
  const def = loadDefinition(root);
  // It looks for .git on disk: asking git costs an observing tick a process spawn.
  if (!insideGitWorkTree(root)) throw new UsageError(`${root} is not a git repository (nor inside one); nothing was done`);
  return def;
}

/**
 * The step's store and definition. loop.json is validated before anything is created; once a store
 * exists, only a loop.json other than the one a step last read in full is parsed (and one that is
 * invalid refused before anything is written).
 */
/**
 * The attempt in flight (launched, running, or ended and not yet verified), if any. One whose verify
 * has its verdict (a passed one waiting on its landing) is not: the operator's edit of landing or
 * its deadline then applies (docs/forge.md), and nothing of the agent's runs any more.
 */
function attemptInFlight(store: Store): { item: string; attempt: number } | null {
  for (const it of Object.values(store.projection().items)) {
    if (it.status !== "launching" && it.status !== "running" && it.status !== "ended") continue;
    if (it.status === "ended" && it.attempts.at(-1)?.verify) continue;
    return { item: it.id, attempt: it.attempts.length };
  }
  return null;
}

/**
 * The store and the definition the step runs under. The definition's own forge token's and secrets'
 * names are taken out of what loop's git and tmux inherit as soon as it is read, before loop's first
 * git call (a first step looks for the loop's branches), and a change deferred still has its names hidden.
 */
function openStep(
  options: StepOptions,
  src: DefinitionSource,
): { store: Store; def: StepDefinition; parsed: ParsedDefinition | null; deferred?: StepContext["deferred"] } {
  // lstat: a (dangling) link in its place is a store that is there, as Store.open sees it.
  if (!lstatSync(dbPath(options.stateRoot), { throwIfNoEntry: false })) {
    const parsed = parseDefinitionSource(src);
    hideDefinitionSecrets(parsed.def);
    // A state root that holds a loop's files is refused for what it is first (move it away, not archive branches).
    refuseLostStore(options.stateRoot);
    refuseLostLoop(options, parsed.def.name, new Set(parsed.def.items.map((it) => it.id)));
    const store = Store.open(options.stateRoot, { create: true, actor: options.actor, project: projectOf(options.root, parsed.def.name) });
    return { store, def: parsed.def, parsed };
  }
  const store = Store.open(options.stateRoot, { create: true, actor: options.actor });
  try {
    const { def, parsed, logged } = resolveDefinition(src, store);
    hideDefinitionSecrets(def);
    if (parsed) hideDefinitionSecrets(parsed.def);
    store.actFor(projectOf(options.root, def.name));
    // An attempt is verified under the definition recorded at its launch (docs/threat-model.md#without-the-sandbox):
    // a loop.json changed while one runs is imported once its verify has a verdict, and said until then.
    const running = parsed && logged ? attemptInFlight(store) : null;
    if (running) return { store, def: logged!, parsed: null, deferred: { parsed: parsed!, item: running.item, attempt: running.attempt } };
    return { store, def, parsed };
  } catch (err) {
    store.close();
    throw err;
  }
}

/**
 * No store, and no state root a loop ran in (lib/log/snapshot.ts refuseLostStore, called first, looks at that):
 * a loop whose whole state root was deleted still has its item branches and checkouts. A new store
 * beside them would relaunch what had passed, with budgets from zero: refused (store_missing,
 * docs/state.md#a-lost-store).
 */
function refuseLostLoop(options: StepOptions, name: string, items: ReadonlySet<string>): void {
  const repo = repoTopOrNull(options.root);
  const branches = repo ? listBranches(repo, [`loop/${name}/item/`]) : new Map<string, string>();
  const worktrees = worktreesRoot(options.stateRoot, options.env);
  // Checkouts of this loop's items only: $LOOP_WORKTREES may be shared.
  const checkouts = existsSync(worktrees) ? readdirSync(worktrees).filter((f) => items.has(f)) : [];
  if (!branches.size && !checkouts.length) return;
  const found = [
    ...(branches.size ? [`${branches.size} item branch${branches.size === 1 ? "" : "es"} (loop/${name}/item/…)`] : []),
    ...(checkouts.length ? [`${checkouts.length} checkout${checkouts.length === 1 ? "" : "s"} in ${worktrees}`] : []),
  ];
  throw new StoreError(
    "store_missing",
    `${dbPath(options.stateRoot)} is missing, but the loop "${name}" has run here: ${found.join(" and ")}. A new store would run passed items again and forget what was spent. Restore the state root (loop.db) from a backup (docs/state.md#backing-up), or, to start this loop afresh, archive its branches and remove its checkouts first (docs/state.md#a-lost-store)`,
  );
}

function repoTopOrNull(root: string): string | null {
  try {
    return repoTop(root);
  } catch {
    return null;
  }
}

/**
 * One step. Throws DefinitionError or UsageError (exit 2) before touching anything, BusyLease when
 * busy, and an io_error that says the disk is full when a full disk left it unable to record even
 * that (lib/shared/disk.ts).
 */
export async function runStep(options: StepOptions): Promise<RunResult> {
  // loop.json is hashed here and read whole only when its bytes are new (openStep).
  const src = readDefinitionSource(options.root);
  // It looks for .git on disk: asking git costs an observing tick a process spawn.
  if (!insideGitWorkTree(options.root)) throw new UsageError(`${options.root} is not a git repository (nor inside one); nothing was done`);
  // A full disk is looked for before the store is opened (SQLite may not even make its -shm file
  // then): the reserve is given back, so that the fault can be recorded.
  const space = diskSpace(options.stateRoot);
  const full = space !== null && space.free < LOW_SPACE_BYTES ? space : null;
  if (full) releaseReserve(options.stateRoot);
  let r: RunResult;
  try {
    r = await stepWith(options, src, full);
    if (!full) ensureReserve(options.stateRoot, space);
  } catch (err) {
    throw unrecorded(err, options.stateRoot) ?? err;
  }
  sweepAfterStep(options, r);
  return r;
}

async function trackerHealed(ctx: StepContext): Promise<boolean> {
  const { trackerAnswersAgain } = await import("./forge/issue-context.ts");
  if (!(await trackerAnswersAgain(ctx))) return false;
  ctx.options.log.info("the tracker answers again: the loop, paused because it did not (tracker_down), resumes");
  return true;
}

/** A step's share of deleting what waits in the trash (lib/shared/trash.ts): bounded, so no step waits on a large folder. */
const SWEEP_MS = 1_000;
const SWEEP_ENTRIES = 50_000;

/**
 * Once the lease is given back (the next step need not wait for it): delete a bounded piece of what
 * earlier steps moved to the trash, finishing whatever a killed one left. A failure is a warning of
 * the step: what is left stays for the next sweep.
 */
function sweepAfterStep(options: StepOptions, r: RunResult): void {
  const trash = trashOf(worktreesRoot(options.stateRoot, options.env));
  try {
    const swept = sweepTrash(trash, { deadline: performance.now() + SWEEP_MS, budget: SWEEP_ENTRIES });
    if (swept.deleted)
      options.log.debug(`deleted ${swept.deleted} files and folders of finished checkouts (${trash})${swept.done ? "" : "; the rest waits for the next step"}`);
  } catch (err) {
    const w = `could not delete what waits in ${trash}: ${(err as Error).message}; the next step tries again`;
    r.warnings.push(w);
    options.log.warn(w);
  }
}

async function stepWith(options: StepOptions, src: DefinitionSource, full: DiskSpace | null): Promise<RunResult> {
  const { store, def, parsed, deferred } = openStep(options, src);
  try {
    const terms = {
      actor: options.actor,
      ttlMs: options.leaseMs ?? 30 * 60_000,
      busy: (holder: Lease) => new BusyLease(holder),
      ...(options.chained ? { tag: CHAINED_TAG } : {}),
    };
    const { ctx, outcome, notifications, before } = await withLease(store, terms, async (writer) => {
      const ctx = createStepContext({ writer, def, options, deferred: deferred ?? null });
      // What needed a person when the step began: what the previous step left.
      const before = attentionKeys(ctx);
      if (writer.takeover) {
        // Someone's step died holding the lease (or outlived it): say so, as one of this step's transitions.
        const { previous, why } = writer.takeover.payload;
        recordTransition(ctx, writer.takeover);
        options.log.warn(`took over the step lease of pid ${previous.pid} on ${previous.host} (${why === "dead" ? "its process is gone" : "it expired"})`);
      }
      try {
        const r = await tick(ctx, parsed, full);
        return { ctx, before, ...r };
      } finally {
        if (def.forge) (await import("./forge/link.ts")).saveForgeLink(ctx);
      }
    });
    const input = stepAttentionInput(ctx);
    const { loop } = loopView(ctx);
    const fault = loop.cause?.kind === "fault" ? loop.cause.item : null;
    const after = attentionOf(input);
    return {
      schema: "loop/run@1",
      action: outcome.action,
      // Every tick of one pause names the same item: the one in flight, else the one the fault was met launching.
      item: outcome.item ?? (outcome.action === "paused" ? fault : null),
      reason: outcome.reason,
      transitions: ctx.transitions,
      loop: { name: loop.name, state: loop.state, reason: loop.reason, outcome: loop.outcome, current: loop.current },
      attention: after.map(({ kind, item, reason }) => ({ kind, item, reason })),
      attentionChanged: after.map((a) => a.key).join("\n") !== before,
      errors: ctx.errors,
      warnings: ctx.warnings,
      notifications,
      ...(loop.review?.waiting ? { review: reviewOf(projection(ctx)) } : {}),
    };
  } finally {
    store.close();
  }
}

/** Under the lease: repair the files, import the definition, read the forge's comments, advance the loop, notify. */
async function tick(
  ctx: StepContext,
  parsed: ParsedDefinition | null,
  full: DiskSpace | null,
): Promise<{ outcome: StepOutcome; notifications: NotifyReport[] }> {
  const { options } = ctx;
  let outcome: StepOutcome;
  let notifications: NotifyReport[] = [];
  try {
    if (full) outcome = pauseForDiskFull(ctx, { path: options.stateRoot, mount: full.mount, free: full.free });
    else {
      materialize(ctx);
      // A watcher that died before it recorded its stop left the proof: recorded before any session is judged.
      for (const e of recordStopProof(ctx.writer, options.stateRoot)) recordTransition(ctx, e);
      importDefinition(ctx, parsed);
      if (ctx.deferred) {
        const w = `loop.json changed while ${ctx.deferred.item}'s attempt ${ctx.deferred.attempt} runs: that attempt is verified under the definition it was launched with, and the change is imported once it has ended`;
        ctx.warnings.push(w);
        options.log.warn(w);
      }
      if (ctx.def.forge) {
        const { pollComments } = await import("./forge/comments.ts");
        await pollComments(ctx);
      }
      // A Linear or Jira tracker's moves and outcome comments (docs/trackers.md#states): before the
      // loop advances (a state it does not have pauses it first), and after (what this step launched or landed).
      const tracker = ctx.def.forge && ctx.def.tracker ? (await import("./forge/tracker.ts")).trackerPhase : null;
      await tracker?.(ctx);
      outcome = await advanceLoop(ctx);
      await tracker?.(ctx);
      // tracker.query (docs/trackers.md#live-query): the filter's new issues appended to loop.json,
      // imported by the next step; after the loop advanced, so a new loop has started and the query runs.
      if (ctx.def.forge && ctx.def.tracker?.query) await (await import("./forge/tracker-query.ts")).trackerQuery(ctx);
    }
    notifications = await notifyPhase(ctx);
    if (ctx.writer.stale) materialize(ctx); // the first call already repaired the files
  } catch (err) {
    // The disk filled up during the step: the reserve goes back to it, and pays for the fault.
    const disk = diskFullMet(err, options.stateRoot);
    if (!disk) throw err;
    releaseReserve(options.stateRoot);
    outcome = pauseForDiskFull(ctx, disk);
    notifications = [...notifications, ...(await notifyPhase(ctx))];
    materializeIfRoom(ctx);
  }
  return { outcome, notifications };
}

/** The conditions that need a person, as one comparable string of their keys. */
function attentionKeys(ctx: StepContext): string {
  return attentionOf(stepAttentionInput(ctx))
    .map((a) => a.key)
    .join("\n");
}

/**
 * Whether `loop run --quiet` prints a step's result: only a step that exits non-zero, and of those
 * not one that found exactly the conditions the previous step left and met no error (the notify
 * hook already told about them; the exit code still says 1).
 */
export function quietPrints(r: Pick<RunResult, "errors" | "attention" | "attentionChanged">): boolean {
  return stepExitCode(r) !== EXIT.ok && (r.errors.length > 0 || r.attentionChanged);
}

/**
 * A step's exit code (docs/cli/loop-run.md#exit-codes): 1 when it met environment errors (it still
 * recorded what it could) or the loop needs a person (paused on a question or by an environment
 * fault, a landing failed, drained Failed), else 0. Warnings and failed notifications alone do not count.
 */
export function stepExitCode(r: Pick<RunResult, "errors" | "attention">): number {
  return r.errors.length || r.attention.length ? EXIT.problem : EXIT.ok;
}
