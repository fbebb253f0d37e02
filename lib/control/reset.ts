// `loop reset`, the effects: gather what exists for each chosen item (read-only), let planReset
// (lib/control/reset-plan.ts) decide, then, under the step lease, carry it out in this order: end
// live sessions through the close path, retire checkouts and delete session folders, archive item
// branches (renamed, never deleted), and append one work_item_reset per item with the close path's
// events, in one transaction. Each step is idempotent, so a reset killed anywhere and run again
// converges to where an uninterrupted one ends (tests/step/failpoints.e2e.test.ts, scenario "reset").
import { existsSync, readdirSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { basename, join } from "node:path";
import type { EventDraft } from "../log/events.ts";
import { currentAttemptOf, type ItemState, type Projection, requireItem } from "../log/projection.ts";
import { verifyAlive } from "../supervisor/verify-command.ts";
import type { Lease } from "../log/snapshot.ts";
import { runWriter, type Writer } from "../log/writer.ts";
import { closeSession, retireCheckout } from "../writer/close.ts";
import { unrecorded } from "../writer/disk-fault.ts";
import { endVerifyRun } from "../supervisor/end.ts";
import { projectOf } from "../log/ownership.ts";
import { definitionName } from "./ctl.ts";
import { graceMs, sessionMark } from "../supervisor/sessions.ts";
import { archiveBranches, checkoutBranch, listBranches } from "../repo/workspace.ts";
import { forgetCheckout } from "../writer/airlock.ts";
import { forgetKept } from "../step/kept-products.ts";
import { dropSpare } from "../writer/spare-checkout.ts";
import { systemError } from "../decisions/faults.ts";
import { makeAttemptGitDir } from "../repo/attempt-git.ts";
import { checkoutDiffers } from "../step/checkout.ts";
import { gitTry } from "../repo/git.ts";
import { readRunPid, watcherAlive } from "../writer/run-pid.ts";
import { sessionAlive } from "../supervisor/liveness.ts";
import { failpoint } from "../shared/failpoint.ts";
import { endMarked, markedProcesses, pidAlive } from "../shared/process.ts";
import { tmux, tmuxHasSession } from "../supervisor/tmux.ts";
import { statePaths, worktreesRoot } from "../shared/paths.ts";
import { BusyError, GitError } from "../shared/errors.ts";
import {
  archivePrefix,
  branchOf,
  type CheckoutOutcome,
  checkoutPath,
  type ItemFacts,
  type ItemPlan,
  type LoopFacts,
  type Piece,
  planReset,
  type ResetPlan,
} from "./reset-plan.ts";

/** One item of the report (docs/cli/loop-reset.md). Keys are the JSON document's. */
interface ResetItemReport {
  item: string;
  ref: string | null;
  found: boolean;
  removed: Piece[];
  was_live: boolean;
  archived_branch: string | null;
  checkout: { outcome: CheckoutOutcome; path: string | null; why: string | null };
  aside: string[];
  errors: { piece: Piece; message: string }[];
  /** What was done (or, with --dry-run, would be), in plain words. */
  effects: string[];
  /** What stays where it is: what the item landed on its target (docs/cli/loop-reset.md#never-removed). */
  stays: string[];
}

export interface ResetReport {
  schema: "loop/reset@1";
  dry_run: boolean;
  /** No error: every piece found was removed (a checkout kept by keepCheckoutOnClose is not an error). */
  ok: boolean;
  warnings: string[];
  items: ResetItemReport[];
  /** The events appended: {seq, type, item}. */
  transitions: { seq: number; type: string; item: string | null }[];
}

/** 0 when something was reset (or would be) without an error; 1 when nothing was found, or anything failed. */
export function resetExitCode(r: ResetReport): 0 | 1 {
  return r.ok && r.items.some((i) => i.found) ? 0 : 1;
}

interface ResetOptions {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  /** The chosen items from a projection (throws a usage error for a bad selector); `all` for --all. */
  select: (p: Projection) => { ids: string[]; all: boolean };
  dryRun: boolean;
  /** Ask before a real reset that would remove something (false with --yes: the plan is then made once, under the lease). */
  ask: boolean;
  confirm: (plan: ResetPlan) => Promise<void>;
  /** Warnings are said as soon as they are known (stderr), and are in the report too. */
  warn?: (message: string) => void;
}

export async function runReset(o: ResetOptions): Promise<ResetReport> {
  // The plan for a dry run or a prompt is made from a read-only snapshot, so a dry run, a declined
  // prompt or a usage error leaves the state root as it was (as `loop ctl` does); with --yes the
  // plan is made once, under the lease. A store of another project is refused before any plan.
  // A warning the prompt already showed is not said again when the plan is remade under the lease.
  const said = new Set<string>();
  // A full disk is said as such (the step's words), never as SQLite's I/O error.
  const diskFull = (err: unknown) => {
    throw unrecorded(err, o.stateRoot, { who: "`loop reset` could record nothing", then: "then run it again" }) ?? err;
  };
  return runWriter<ResetReport>({
    stateRoot: o.stateRoot,
    actor: o.actor,
    project: projectOf(o.root, definitionName(o.root)),
    ttlMs: 10 * 60_000,
    busy: (h) => new BusyError(`a \`loop run\` step holds the lease (pid ${h.pid} on ${h.host}); nothing was reset, try again`),
    before: async ({ p, lease }) => {
      const sel = o.select(p);
      if (!o.dryRun && !o.ask) return null;
      // Worded as what would happen: nothing has, yet.
      const plan = makePlan(o, p, sel, loopFacts(o.stateRoot, lease), true);
      if (o.dryRun) {
        plan.warnings.forEach((w) => o.warn?.(w));
        return plannedReport(plan);
      }
      if (plan.items.some((i) => i.found)) {
        await o.confirm(plan);
        // Remembered as the run itself words them ("is being" where the prompt said "would be").
        for (const w of makePlan(o, p, sel, loopFacts(o.stateRoot, null), false).warnings) said.add(w);
      }
      return null;
    },
    under: async (w) => {
      // Planned again under the lease: the state may have moved since the prompt.
      const p = w.store.projection();
      const plan = makePlan(o, p, o.select(p), loopFacts(o.stateRoot, null), false);
      plan.warnings.filter((w) => !said.has(w)).forEach((warning) => o.warn?.(warning));
      return carryOut(o, w, p, plan);
    },
  }).catch(diskFull);
}

function makePlan(o: ResetOptions, p: Projection, sel: { ids: string[]; all: boolean }, loop: LoopFacts, dryRun: boolean): ResetPlan {
  const repo = repoOf(o.root);
  return planReset({
    p,
    ids: sel.ids,
    all: sel.all,
    facts: gatherFacts({ p, ids: sel.ids, stateRoot: o.stateRoot, repo, worktrees: worktreesRoot(o.stateRoot, o.env) }),
    loop,
    dryRun,
  });
}

function repoOf(root: string): string | null {
  const r = gitTry(root, ["rev-parse", "--show-toplevel"]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** The report of a dry run: what a real run would do. */
function plannedReport(plan: ResetPlan): ResetReport {
  return {
    schema: "loop/reset@1",
    dry_run: true,
    ok: true,
    warnings: plan.warnings,
    items: plan.items.map((x) => ({
      item: x.item,
      ref: x.ref,
      found: x.found,
      removed: x.pieces.filter((piece) => piece !== "workspace" || x.checkout.action !== "keep"),
      was_live: x.wasLive,
      archived_branch: x.branch?.to ?? null,
      checkout: { outcome: x.checkout.outcome, path: x.checkout.path, why: x.checkout.why },
      aside: x.aside,
      errors: [],
      effects: x.effects,
      stays: x.stays,
    })),
    transitions: [],
  };
}

async function carryOut(o: ResetOptions, w: Writer, p: Projection, plan: ResetPlan): Promise<ResetReport> {
  const { store } = w;
  const repo = repoOf(o.root);
  const grace = graceMs(o.env);
  const reason = `reset by ${o.actor}`;
  const acting = plan.items.filter((x) => x.found);
  const errors = new Map<string, { piece: Piece; message: string }[]>(plan.items.map((x) => [x.item, []]));
  const fail = (x: ItemPlan, piece: Piece, err: unknown) => errors.get(x.item)!.push({ piece, message: err instanceof Error ? err.message : String(err) });
  /** Items left alone after their session could not be ended: nothing of them is removed. */
  const aborted = new Set<string>();
  const closeEvents = new Map<string, EventDraft[]>();

  // 1. Sessions: one not recorded closed through the close path (its events are recorded); what is
  // left of closed ones (a tmux session, a process carrying the mark) is ended too, all marks in
  // one sweep of /proc (a per-item sweep reads every process's environment once per item).
  const leftovers: ItemPlan[] = [];
  for (const x of acting) {
    const it = requireItem(p, x.item);
    const s = it.session;
    if (!s || !x.sweep) continue;
    store.assertLease();
    try {
      if (x.closeSession) {
        // Its final figure priced as a step prices it (the imported definition's prices).
        const c = await closeSession({
          it,
          repo: repo ?? o.root,
          stateRoot: o.stateRoot,
          env: o.env,
          reason,
          removeCheckout: false,
          graceMs: grace,
          prices: p.loop.settings?.prices,
        });
        closeEvents.set(x.item, c?.events ?? []);
        if (sessionAlive(s, o.env)) {
          aborted.add(x.item);
          fail(
            x,
            "session",
            `its agent could not be ended (still running: pid ${s.pid ?? "-"}${s.tmux ? `, tmux ${s.tmux}` : ""}); nothing of ${x.item} was removed`,
          );
        }
      } else {
        if (s.tmux && tmuxHasSession(s.tmux, o.env)) tmux(["kill-session", "-t", `=${s.tmux}`], o.env);
        // A verify runs detached, with no lease held: one may outlive its session's close (or have
        // started before verify processes carried the mark), so its recorded group is ended too.
        await endVerifyRun(it, grace);
        leftovers.push(x);
      }
    } catch (err) {
      aborted.add(x.item);
      fail(x, "session", err);
    }
  }
  const marked = acting.flatMap((x) => {
    const s = x.sweep ? p.items[x.item]?.session : null;
    return s ? [{ x, mark: sessionMark(s) }] : [];
  });
  const markOf = new Map(marked.map((m) => [m.mark, m.x]));
  if (markOf.size) {
    store.assertLease();
    if (leftovers.length)
      await endMarked(
        marked.filter((m) => leftovers.includes(m.x)).map((m) => m.mark),
        grace,
      );
    for (const m of markedProcesses(markOf.keys())) {
      const x = markOf.get(m.mark)!;
      if (aborted.has(x.item)) continue;
      aborted.add(x.item);
      fail(x, "session", `a process of its session could not be ended (pid ${m.pid}); nothing of ${x.item} was removed`);
    }
  }
  failpoint("reset:after_close");

  // 2. Files: the checkout (committed first, kept when that fails) and the session folder.
  const checkout = new Map<string, ResetItemReport["checkout"]>();
  const sessionDirGone = new Set<string>();
  for (const x of acting) {
    const c = { outcome: x.checkout.outcome, path: x.checkout.path, why: x.checkout.why };
    checkout.set(x.item, c);
    if (aborted.has(x.item)) {
      if (x.checkout.action !== "none") Object.assign(c, { outcome: "kept", why: "the session could not be ended" });
      continue;
    }
    store.assertLease();
    if (x.checkout.action === "remove") {
      try {
        if (repo === null) throw new Error(`${o.root} is not in a git repository: the checkout cannot be removed through git`);
        const branch = requireItem(p, x.item).workspace?.branch ?? requireItem(p, x.item).session?.branch ?? "";
        const r = await retireCheckout({
          repo,
          stateRoot: o.stateRoot,
          env: o.env,
          it: requireItem(p, x.item),
          worktree: x.checkout.path!,
          branch,
          message: `loop: ${x.item}: changes left in the checkout when it was ${reason}`,
        });
        if (r.kept) {
          Object.assign(c, { outcome: "kept", why: r.kept });
          fail(x, "workspace", r.kept);
        } else if (!r.removed) {
          Object.assign(c, { outcome: "kept", why: "still there after git worktree remove" });
          fail(x, "workspace", `${x.checkout.path} is still there after \`git worktree remove\``);
        }
      } catch (err) {
        Object.assign(c, { outcome: "kept", why: (err as Error).message });
        fail(x, "workspace", err);
      }
    }
    // What its setup made, kept for the next items (lib/step/kept-products.ts), goes with it: moved to
    // the trash; so does its checkout when it was kept as the spare (lib/writer/spare-checkout.ts).
    try {
      forgetKept(o.stateRoot, worktreesRoot(o.stateRoot, o.env), x.item);
      dropSpare(o.stateRoot, worktreesRoot(o.stateRoot, o.env), x.item);
    } catch (err) {
      fail(x, "workspace", err);
    }
    if (x.deleteSessionDir) {
      const dir = join(statePaths(o.stateRoot).sessions, x.item);
      try {
        rmSync(dir, { recursive: true, force: true });
        if (existsSync(dir)) throw new Error(`${dir} is still there`);
        sessionDirGone.add(x.item);
      } catch (err) {
        fail(x, "session", err);
      }
    }
  }
  failpoint("reset:after_files");

  // 3. Branches: renamed to their archive names, in one ref transaction.
  const renames = acting
    .filter((x) => !aborted.has(x.item) && x.branch?.kind === "rename")
    .map((x) => {
      const b = x.branch as Extract<ItemPlan["branch"], { kind: "rename" }>;
      const wt = checkout.get(x.item)!.path;
      // A checkout kept on the branch moves along with it (git branch -m), never left on a ghost.
      return { item: x, from: b.from, to: b.to, head: b.head, checkedOut: wt !== null && existsSync(wt) && checkoutBranch(wt) === b.from };
    });
  let renameFailed = new Map<string, string>();
  if (renames.length && repo === null) renameFailed = new Map(renames.map((r) => [r.from, "not in a git repository"]));
  else if (renames.length) {
    // Read again: committing what a checkout held moved its branch on since the plan.
    const heads = listBranches(
      repo!,
      renames.map((r) => r.from),
    );
    for (const r of renames) r.head = heads.get(r.from) ?? r.head;
    renameFailed = archiveBranches(repo!, renames);
  }
  for (const r of renames) if (renameFailed.has(r.from)) fail(r.item, "branch", renameFailed.get(r.from));
  // A checkout kept for a person is no item's any more: it gets a git folder of its own, at the
  // archive its branch went to (its changes show against it), and loop forgets it (the item's next
  // launch moves it aside, never overwrites it).
  for (const x of acting) {
    const c = checkout.get(x.item);
    if (aborted.has(x.item) || x.checkout.action !== "keep" || !c?.path || !existsSync(c.path)) continue;
    forgetCheckout(o.stateRoot, x.item);
    const r = renames.find((y) => y.item === x && !renameFailed.has(y.from));
    if (r && repo)
      try {
        makeAttemptGitDir({ repo, gitDir: join(c.path, ".git"), worktree: c.path, branch: r.to, head: r.head, refs: {}, excludes: [] });
      } catch (err) {
        if (!(err instanceof GitError) && systemError(err) === null) throw err;
        fail(x, "workspace", `the kept checkout ${c.path} got no git folder of its own: ${(err as Error).message}`);
      }
  }
  failpoint("reset:after_branch");

  // 4. The events: per item, the close path's, then its work_item_reset (an audit record when
  // nothing was found or removed), in one transaction.
  const reports: ResetItemReport[] = [];
  const events: EventDraft[] = [];
  for (const x of plan.items) {
    const errs = errors.get(x.item)!;
    const failedPieces = new Set(errs.map((e) => e.piece));
    const c = checkout.get(x.item) ?? { outcome: x.checkout.outcome, path: x.checkout.path, why: x.checkout.why };
    const archived = x.branch && !failedPieces.has("branch") ? x.branch.to : null;
    const removed = aborted.has(x.item)
      ? []
      : x.pieces.filter((piece) => {
          if (piece === "session") return !x.deleteSessionDir || sessionDirGone.has(x.item);
          if (piece === "workspace") return c.outcome !== "kept";
          if (piece === "branch") return archived !== null;
          return true;
        });
    events.push(...(closeEvents.get(x.item) ?? []));
    events.push({
      type: "work_item_reset",
      item: x.item,
      payload: { pieces: removed, found: x.found, wasLive: x.wasLive, archivedBranch: archived, checkout: c, aside: x.aside, errors: errs },
    });
    if (x.resumeLoop && removed.length > 0) events.push({ type: "loop_resumed", payload: {} });
    reports.push({
      item: x.item,
      ref: x.ref,
      found: x.found,
      removed,
      was_live: x.wasLive,
      archived_branch: archived,
      checkout: c,
      aside: x.aside,
      errors: errs,
      effects: x.effects,
      stays: x.stays,
    });
  }
  let transitions: ResetReport["transitions"] = [];
  if (events.length) transitions = w.append(events, "reset").map((e) => ({ seq: e.seq, type: e.type, item: e.item }));
  return { schema: "loop/reset@1", dry_run: false, ok: reports.every((r) => r.errors.length === 0), warnings: plan.warnings, items: reports, transitions };
}

// ---------------------------------------------------------------------------------------------
// Facts: what exists outside the log, read without changing anything.

function gatherFacts(o: { p: Projection; ids: string[]; stateRoot: string; repo: string | null; worktrees: string }): Record<string, ItemFacts> {
  const { p } = o;
  const paths = statePaths(o.stateRoot);
  const name = p.loop.name ?? "";
  // Moved aside where the worktrees are, and where they were before they left the state root.
  const asides: string[] = [];
  for (const dir of [o.worktrees, paths.workspaces]) {
    try {
      asides.push(
        ...readdirSync(dir)
          .filter((n) => n.includes(".aside-"))
          .map((n) => join(dir, n)),
      );
    } catch {
      // no worktrees there
    }
  }
  // Every branch of interest in one git process: the loop's item branches and archives, and any
  // branch an item recorded under an earlier loop name.
  let branches = new Map<string, string>();
  if (o.repo !== null && name !== "") {
    const patterns = new Set([`loop/${name}/item/`, `loop/${name}/reset/`]);
    for (const id of o.ids) {
      const b = requireItem(p, id).workspace?.branch;
      if (b && !b.startsWith(`loop/${name}/item/`)) patterns.add(b);
    }
    branches = listBranches(o.repo, [...patterns]);
  }
  const archivesOf = new Map<string, string[]>();
  const resetPrefix = `loop/${name}/reset/`;
  for (const b of branches.keys()) {
    if (!b.startsWith(resetPrefix)) continue;
    const item = b.slice(resetPrefix.length, b.indexOf("/", resetPrefix.length));
    archivesOf.set(item, [...(archivesOf.get(item) ?? []), b]);
  }
  const marks = o.ids
    .map((id) => requireItem(p, id).session)
    .filter((s) => s !== null)
    .map((s) => sessionMark(s!));
  const marked = new Map<string, number>();
  for (const m of markedProcesses(marks)) marked.set(m.mark, (marked.get(m.mark) ?? 0) + 1);

  const out: Record<string, ItemFacts> = {};
  for (const id of o.ids) {
    const it = requireItem(p, id);
    const s = it.session;
    const path = checkoutPath(o.worktrees, it);
    const exists = existsSync(path);
    const onItemBranch = exists && checkoutBranch(path) === branchOf(p, it);
    const prefix = archivePrefix(name, id, it.epoch);
    const suffix = (b: string) => (b === prefix ? 1 : Number(b.slice(prefix.length + 1)));
    out[id] = {
      sessionDir: existsSync(join(paths.sessions, id)),
      worktree: {
        path,
        exists,
        onItemBranch,
        dirty:
          onItemBranch && branches.get(branchOf(p, it))
            ? checkoutDiffers({ repo: o.repo!, stateRoot: o.stateRoot, item: id, worktree: path, head: branches.get(branchOf(p, it))! })
            : null,
      },
      aside: asides.filter((a) => basename(a).startsWith(`${id}.aside-`)),
      branchHead: branches.get(branchOf(p, it)) ?? null,
      archives: (archivesOf.get(id) ?? []).filter((b) => b === prefix || /^-\d+$/.test(b.slice(prefix.length))).sort((a, b) => suffix(a) - suffix(b)),
      // Only a session not recorded closed is worth a process probe; leftovers of closed ones carry the mark.
      groupAlive: s !== null && s.closed === null ? sessionAlive(s) : false,
      marked: s ? (marked.get(sessionMark(s)) ?? 0) : 0,
      verifyAlive: runningVerify(it),
    };
  }
  return out;
}

function loopFacts(stateRoot: string, lease: Lease | null): LoopFacts {
  const w = readRunPid(statePaths(stateRoot).runPid);
  const holder =
    lease && Date.parse(lease.expires) > Date.now() && (lease.host !== hostname() || pidAlive(lease.pid)) ? { pid: lease.pid, host: lease.host } : null;
  return { watcher: w && watcherAlive(w) ? { pid: w.pid } : null, leaseHolder: holder };
}

/** The current attempt's verify command has a recorded process group that is still alive. */
function runningVerify(it: ItemState): boolean {
  const run = currentAttemptOf(it)?.verifyRun;
  return run?.pid != null ? verifyAlive({ pid: run.pid, startTime: run.startTime }) : false;
}
