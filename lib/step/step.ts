// `loop run`: one bounded, crash-safe step. Take the lease, import a changed definition, repair
// materializations, then advance the state machine until it must wait (an agent is working, the
// loop is paused) or has nothing to do. Decisions come from lib/step/decide.ts; this module performs the
// effects in "reserve, act, record" order so a kill at any point is recovered by the next step.
import { accessSync, constants, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { git, GitError } from "./git.ts";
import { BusyError, LeaseLostError, UsageError } from "../shared/errors.ts";
import { readTextOrNull, sliceText, writeFileAtomic } from "../shared/fsutil.ts";
import type { ConsolaInstance } from "consola";
import { type NormDefinition, definitionHash, itemBranch, loadDefinition } from "../definition/loop-json.ts";
import type { EventDraft, StoredEvent } from "../log/events.ts";
import { type COMMIT_LABELS, failpoint } from "../shared/failpoint.ts";

type CommitLabel = (typeof COMMIT_LABELS)[number];
import { buildHandoff } from "./handoff.ts";
import { pidAlive } from "../shared/process.ts";
import { materialize } from "../log/materialize.ts";
import { counts } from "../log/documents.ts";
import { sessionDir, statePaths, worktreeDir } from "../shared/paths.ts";
import { afterFailure, classifySession, failedReason, hasOpenWork, nextWork } from "./decide.ts";
import { isInFlight, type ItemState, type Projection } from "../log/reducer.ts";
import { buildRunnerCommand, conversationIdFromLog } from "../definition/runners.ts";
import { selfArgv } from "./self.ts";
import { adoptable, graceMs, observeSession, readOutputHead, SESSION_FILES, startSession, tmuxSessionName } from "./sessions.ts";
import { type Lease, Store } from "../log/store.ts";
import { projectOf } from "../log/ownership.ts";
import { runVerify } from "./verify.ts";
import { commitLeftovers, commitsAhead, ensureWorktree, landMerge, repoTop, startPointFor } from "./workspace.ts";
import { closeSession } from "./close.ts";

export type RunAction = "launched" | "waiting" | "paused" | "stopped" | "drained" | "idle" | "busy" | "progressed";

export interface Transition {
  seq: number;
  type: string;
  item: string | null;
  summary: string;
}

export interface RunResult {
  schema: "loop/run@1";
  action: RunAction;
  item: string | null;
  reason: string | null;
  transitions: Transition[];
  loop: { name: string | null; state: string; reason: string | null; outcome: string | null; current: string | null };
  /** Environment errors met during the step (the step still recorded what it could). */
  errors: string[];
}

export interface StepOptions {
  root: string;
  stateRoot: string;
  actor: string;
  env: Record<string, string | undefined>;
  log: ConsolaInstance;
  /** Lease lifetime; a step renews it before long waits (verify). */
  leaseMs?: number;
}

const MAX_TRANSITIONS_PER_STEP = 500;

export class BusyLease extends BusyError {
  constructor(readonly holder: Lease) {
    super(`another step holds the lease (pid ${holder.pid} on ${holder.host} since ${holder.started}); try later`);
  }
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
    case "definition_imported":
      return `revision ${pl.revision}: ${pl.items.length} items`;
    default:
      return e.type;
  }
}

class Step {
  readonly transitions: Transition[] = [];
  readonly errors: string[] = [];
  readonly paths: ReturnType<typeof statePaths>;
  private repoCache: string | null = null;
  constructor(
    readonly store: Store,
    readonly def: NormDefinition,
    readonly o: StepOptions,
    readonly lease: Lease,
  ) {
    this.paths = statePaths(o.stateRoot);
  }

  /** The repository's top level, asked of git only when a step needs it (an observing tick does not). */
  get repo(): string {
    return (this.repoCache ??= repoTop(this.o.root));
  }

  get p(): Projection {
    return this.store.projection();
  }

  append(drafts: EventDraft[], label: CommitLabel): Projection {
    const { events, projection } = this.store.append(
      drafts.map((d) => ({ actor: this.o.actor, ...d })) as EventDraft[],
      { label, actor: this.o.actor },
    );
    for (const e of events) {
      this.transitions.push({ seq: e.seq, type: e.type, item: e.item, summary: summarize(e) });
      this.o.log.debug(`seq ${e.seq} ${e.type}${e.item ? ` ${e.item}` : ""}: ${summarize(e)}`);
    }
    return projection;
  }

  /** Materializations follow every commit; a crash before this is repaired by the next step. */
  materialize(): void {
    materialize(this.o.stateRoot, this.p, this.store.db);
  }

  importDefinition(): void {
    const p = this.p;
    const hash = definitionHash(this.def);
    if (p.loop.definitionHash === hash) return;
    const { items, name, ...settings } = this.def;
    this.append(
      [{ type: "definition_imported", payload: { revision: p.loop.revision + 1, hash, name, settings, items } }],
      "import",
    );
  }

  async run(): Promise<{ action: RunAction; item: string | null; reason: string | null }> {
    for (let guard = 0; guard < MAX_TRANSITIONS_PER_STEP; guard++) {
      // Before every transition (and before each effect outside the store, below): a step that
      // outlived its lease stops before acting, not only before recording.
      this.store.assertLease();
      const p = this.p;
      if (await this.sweepClosedSessions(p)) continue;
      if (p.loop.state === "new") {
        this.append([{ type: "loop_started", payload: {} }], "start");
        continue;
      }
      if (p.loop.state === "paused") return { action: "paused", item: p.loop.current, reason: p.loop.reason };
      if (p.loop.state === "stopped") return { action: "stopped", item: p.loop.current, reason: p.loop.reason };
      if (p.loop.current) {
        const r = await this.advance(p.items[p.loop.current]!);
        if (r) return r;
        continue;
      }
      if (p.loop.state === "drained") {
        if (!hasOpenWork(p)) return { action: "drained", item: null, reason: p.loop.outcome };
        this.append([{ type: "loop_reopened", payload: { reason: "new or requeued work items" } }], "reopen");
        continue;
      }
      const next = nextWork(p);
      if (next.kind === "block") {
        this.append(
          next.items.map((b) => ({ type: "item_settled" as const, item: b.id, payload: { attempt: p.items[b.id]!.attempts.length, outcome: "blocked" as const, reason: b.reason } })),
          "block",
        );
        continue;
      }
      if (next.kind === "drain") {
        this.append([{ type: "loop_drained", payload: { outcome: next.outcome, counts: counts(p) } }], "drain");
        return { action: "drained", item: null, reason: next.outcome };
      }
      if (next.kind === "idle") return { action: "idle", item: null, reason: next.reason };
      await this.launch(p.items[next.item]!);
      const after = this.p.items[next.item]!;
      if (after.status === "running") return { action: "launched", item: next.item, reason: null };
    }
    throw new Error(`step made ${MAX_TRANSITIONS_PER_STEP} transitions without settling; refusing to go on`);
  }

  private async closeSession(o: Parameters<typeof closeSession>[0]): ReturnType<typeof closeSession> {
    this.store.assertLease();
    const c = await closeSession(o);
    if (c?.kept) {
      // Someone has to look at it: an error of the step (exit 1), listed in its result.
      this.errors.push(`${c.item}: ${c.kept}`);
      this.o.log.warn(`${c.item}: ${c.kept}`);
    }
    return c;
  }

  /** ensureWorktree found something else where a checkout had to be: it was kept, and someone should look. */
  private warnMovedAside(path: string, branch: string, aside: string): void {
    this.o.log.warn(`what was at ${path} (not a checkout of ${branch}) was moved to ${aside}; look at it, then remove it`);
  }

  /** Settled items whose session was never recorded closed (a kill between settle and close). */
  async sweepClosedSessions(p: Projection): Promise<boolean> {
    let closed = false;
    for (const id of p.order) {
      const it = p.items[id]!;
      if (!it.session || it.session.closed || it.id === p.loop.current) continue;
      if (!isInFlight(it.status)) {
        const remove = it.status === "passed" ? !this.def.keepCheckoutOnClose : false;
        const c = await this.closeSession({ it, repo: this.repo, reason: "closing a session left open", removeCheckout: remove, graceMs: graceMs(this.o.env) });
        if (c) {
          this.append(c.events, "close");
          closed = true;
        }
      }
    }
    return closed;
  }

  /** Move the in-flight item forward; returns a result when the step must stop here. */
  async advance(it: ItemState): Promise<{ action: RunAction; item: string | null; reason: string | null } | null> {
    const attempt = it.attempts[it.attempts.length - 1]!;
    const s = it.session!;
    switch (it.status) {
      case "launching": {
        const found = adoptable(s.sessionDir);
        if (found) {
          // The wrapper was spawned by a step killed before it recorded the start: adopt it.
          this.append([{ type: "session_started", item: it.id, payload: { attempt: attempt.n, pid: found.pid, tmux: found.tmux, conversationId: null, argv: [], log: join(s.sessionDir, SESSION_FILES.output), resumed: false } }], "session_started");
          return null;
        }
        const launched = existsSync(join(s.sessionDir, SESSION_FILES.launch));
        const age = Date.now() - Date.parse(attempt.reservedAt);
        if (launched && age <= it.def.timeouts.launch) return { action: "waiting", item: it.id, reason: "session is starting" };
        const reason = launched
          ? `session did not start within ${Math.round(it.def.timeouts.launch / 1000)}s`
          : "the step that reserved this attempt stopped before launching it; not relaunched";
        // A step killed between reservation and spawn is the loop's failure, not the agent's: not counted.
        this.append([{ type: "launch_failed", item: it.id, payload: { attempt: attempt.n, reason, interrupted: !launched } }], "launch_failed");
        return null;
      }
      case "running": {
        const obs = observeSession(s, attempt, it.def.timeouts, Date.now());
        const v = classifySession(obs);
        if (v.kind === "waiting") return { action: "waiting", item: it.id, reason: v.reason };
        if (v.kind === "needs_input") {
          const c = await this.closeSession({ it, repo: this.repo, reason: "agent asked a question", removeCheckout: false, graceMs: graceMs(this.o.env) });
          const closeEvents = (c?.events ?? []).filter((e) => e.type === "session_closed");
          this.append(
            [
              { type: "needs_input", item: it.id, payload: { attempt: attempt.n, question: v.question } },
              ...closeEvents,
              { type: "loop_paused", payload: { reason: `${it.id} needs input: ${v.question}` } },
            ],
            "needs_input",
          );
          return { action: "paused", item: it.id, reason: `${it.id} needs input: ${v.question}` };
        }
        if (v.kind === "exited") {
          this.append([{ type: "session_ended", item: it.id, payload: { attempt: attempt.n, verdict: "exited", exitCode: v.code, signal: v.signal, reason: v.reason } }], "session_ended");
          return null;
        }
        // lost, never_started, stalled: end whatever is left through the close path.
        const c = await this.closeSession({ it, repo: this.repo, reason: v.reason, removeCheckout: false, graceMs: graceMs(this.o.env), endVerdict: v.kind });
        this.append(c ? c.events : [{ type: "session_ended", item: it.id, payload: { attempt: attempt.n, verdict: v.kind, exitCode: null, signal: null, reason: v.reason } }], "session_ended");
        return null;
      }
      case "needs_input": {
        const undelivered = it.replies.filter((r) => r.delivered === null);
        const reason = undelivered.length ? "reply received" : "resumed without a reply";
        this.append([{ type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason, failed: false, resetBudget: false } }], "requeue");
        return null;
      }
      case "ended":
        return this.afterSession(it);
      default:
        throw new Error(`item ${it.id} is current but ${it.status}`);
    }
  }

  async afterSession(it: ItemState): Promise<null> {
    const attempt = it.attempts[it.attempts.length - 1]!;
    const s = it.session!;
    const end = attempt.end!;
    if (end.verdict === "launch_interrupted") {
      this.append([{ type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason: end.reason, failed: false, resetBudget: false } }], "requeue");
      return null;
    }
    if (end.verdict !== "exited") return this.failAttempt(it, end.reason);
    if (!attempt.verify) {
      const worktree = s.worktree;
      if (!existsSync(worktree)) {
        this.append([{ type: "verify_finished", item: it.id, payload: { attempt: attempt.n, passed: false, exitCode: null, timedOut: false, sha256: null, tail: "", log: null, reason: "worktree is missing" } }], "verify");
        return null;
      }
      // A git failure here (say, an index.lock the agent left behind) fails the attempt with git's
      // reason; thrown, it would stop every later step at the same place.
      const gitFailure = (what: string, err: unknown) => {
        if (!(err instanceof GitError)) throw err;
        const reason = `${what}: ${err.message}`;
        this.append([{ type: "verify_finished", item: it.id, payload: { attempt: attempt.n, passed: false, exitCode: null, timedOut: false, sha256: null, tail: reason, log: null, reason } }], "verify");
        return null;
      };
      try {
        this.store.assertLease();
        commitLeftovers(worktree, `loop: ${it.id} attempt ${attempt.n}: changes the agent left uncommitted`);
      } catch (err) {
        return gitFailure("could not commit the changes the agent left", err);
      }
      failpoint("verify:before");
      const logPath = join(s.sessionDir, SESSION_FILES.verify);
      let payload;
      if (it.def.verify === false) {
        const startHead = readTextOrNull(join(s.sessionDir, "start-head"))?.trim();
        let ahead: number;
        try {
          ahead = commitsAhead(this.repo, startHead || startPointFor(this.repo, this.def.landing, this.def.base, this.def.target), s.branch);
        } catch (err) {
          return gitFailure("could not count the branch's commits", err);
        }
        const ok = end.exitCode === 0 && ahead > 0;
        const reason = end.exitCode !== 0 ? `no verify command; agent exited ${end.exitCode}` : ahead > 0 ? `no verify command; agent exited 0 with ${ahead} commit(s)` : "no verify command; agent exited 0 but left no change";
        writeFileSync(logPath, reason + "\n");
        payload = { attempt: attempt.n, passed: ok, exitCode: end.exitCode, timedOut: false, sha256: null, tail: reason, log: logPath, reason };
      } else {
        this.store.renewLease(this.lease, it.def.timeouts.verify + 10 * 60_000);
        // A verify may run for minutes: bring the files up to date with what this step committed
        // (or `loop status` would report them stale meanwhile), and leave no WAL behind (or every
        // read verb meanwhile would copy the whole database to read it; see Store.checkpoint).
        this.materialize();
        this.store.checkpoint();
        const r = await runVerify(it.def.verify, worktree, logPath, it.def.timeouts.verify, { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(attempt.n), LOOP_WORKDIR: worktree });
        payload = { attempt: attempt.n, passed: r.passed, exitCode: r.exitCode, timedOut: r.timedOut, sha256: r.sha256, tail: r.tail, log: logPath, reason: r.reason };
      }
      failpoint("verify:after_run");
      this.append([{ type: "verify_finished", item: it.id, payload }], "verify");
      return null;
    }
    if (!attempt.verify.passed) return this.failAttempt(it, `verify failed: ${attempt.verify.reason}`);
    if (!it.landing) {
      let landing: { outcome: "none" | "merged" | "conflict" | "failed"; target: string | null; commit: string | null; reason: string };
      if (this.def.landing === "merge") {
        failpoint("landing:before_merge");
        this.store.assertLease();
        const landingDir = join(this.paths.workspaces, "_landing");
        const r = landMerge(this.repo, landingDir, this.def.target, this.def.base, s.branch, `loop: land ${it.id} (attempt ${attempt.n})`, (aside) =>
          this.warnMovedAside(landingDir, this.def.target, aside),
        );
        failpoint("landing:after_merge");
        landing = { ...r, target: this.def.target };
      } else landing = { outcome: "none", target: null, commit: null, reason: `branch ${s.branch} is the deliverable` };
      this.append([{ type: "landing_finished", item: it.id, payload: { attempt: attempt.n, branch: s.branch, ...landing } }], "landing");
      return null;
    }
    const landed = it.landing.outcome === "none" || it.landing.outcome === "merged";
    const c = await this.closeSession({ it, repo: this.repo, reason: landed ? "item passed" : "landing failed", removeCheckout: landed && !this.def.keepCheckoutOnClose, graceMs: graceMs(this.o.env) });
    const settle: EventDraft = landed
      ? { type: "item_settled", item: it.id, payload: { attempt: attempt.n, outcome: "passed", reason: `verify passed (${attempt.verify.reason}); ${it.landing.reason}` } }
      : { type: "item_settled", item: it.id, payload: { attempt: attempt.n, outcome: "failed", reason: it.landing.outcome === "conflict" ? `merge_conflict: ${it.landing.reason}` : `landing_failed: ${it.landing.reason}` } };
    this.append([...(c?.events ?? []), settle], "settle");
    return null;
  }

  async failAttempt(it: ItemState, reason: string): Promise<null> {
    const attempt = it.attempts[it.attempts.length - 1]!;
    const c = await this.closeSession({ it, repo: this.repo, reason, removeCheckout: false, graceMs: graceMs(this.o.env) });
    const decision = afterFailure(it);
    const next: EventDraft =
      decision === "retry"
        ? { type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason, failed: true, resetBudget: false } }
        : { type: "item_settled", item: it.id, payload: { attempt: attempt.n, outcome: "failed", reason: failedReason(it, reason) } };
    this.append([...(c?.events ?? []), next], decision === "retry" ? "requeue" : "settle");
    return null;
  }

  async launch(it: ItemState): Promise<void> {
    const n = it.attempts.length + 1;
    const dir = sessionDir(this.o.stateRoot, it.id, it.epoch, n);
    const worktree = worktreeDir(this.o.stateRoot, it.id);
    const branch = itemBranch(this.def.name, it.id);
    const sessionId = crypto.randomUUID();
    const previous = it.session;
    const reply = it.replies.filter((r) => r.delivered === null).map((r) => r.text).join("\n\n");
    failpoint("launch:before_reserve");
    this.append(
      [
        {
          type: "launch_reserved",
          item: it.id,
          // The reservation key: one launch per item, epoch and attempt, ever.
          id: `launch:${it.id}:e${it.epoch}:a${n}`,
          payload: { attempt: n, key: `launch:${it.id}:e${it.epoch}:a${n}`, runner: it.def.runner, model: it.def.model, branch, worktree, sessionDir: dir, sessionId },
        },
      ],
      "reserve",
    );
    try {
      mkdirSync(dir, { recursive: true });
      const ws = ensureWorktree(this.repo, worktree, branch, startPointFor(this.repo, this.def.landing, this.def.base, this.def.target));
      if (ws.movedAside) this.warnMovedAside(worktree, branch, ws.movedAside);
      failpoint("launch:after_worktree");
      const now = this.p;
      const handoffPath = join(dir, SESSION_FILES.handoff);
      const askFile = join(dir, SESSION_FILES.ask);
      const handoff = buildHandoff({ p: now, item: it.id, attempt: n, branch, askFile });
      writeFileSync(handoffPath, handoff);
      let conversationId = previous?.conversationId ?? null;
      if (!conversationId && previous && previous.log) conversationId = conversationIdFromLog(previous.runner, readOutputHead(previous.sessionDir));
      const resume = reply && conversationId && previous?.runner === it.def.runner ? { conversationId, reply } : undefined;
      const cmd = buildRunnerCommand(
        it.def.runner,
        { item: it.id, attempt: n, prompt: handoff, handoffPath, workdir: worktree, model: it.def.model, sessionId, resume },
        this.def.runners,
        [...selfArgv(), "__demo-agent"],
      );
      const problem = programProblem(cmd.argv[0]!, worktree);
      if (problem) throw new Error(`runner "${it.def.runner}": ${problem}`);
      // verify:false asks for "a change on the branch" made by this attempt, not an earlier one.
      writeFileSync(join(dir, "start-head"), git(worktree, ["rev-parse", "HEAD"]) + "\n");
      const env: Record<string, string> = {
        LOOP_ITEM: it.id,
        LOOP_ATTEMPT: String(n),
        LOOP_HANDOFF: handoffPath,
        LOOP_WORKDIR: worktree,
        LOOP_ASK_FILE: askFile,
        LOOP_SESSION_ID: sessionId,
        LOOP_MODEL: it.def.model ?? "",
        LOOP_FAILPOINT: "",
      };
      this.store.assertLease();
      const started = startSession({ dir, argv: cmd.argv, cwd: worktree, env, tmuxName: this.def.tmux ? tmuxSessionName(this.def.name, it.id, n) : null });
      // Atomic: a step killed mid-write must not leave a half file that adoption then misreads.
      writeFileAtomic(join(dir, "spawned.json"), JSON.stringify({ pid: started.pid, tmux: started.tmux }) + "\n");
      failpoint("launch:after_spawn");
      this.append(
        [{ type: "session_started", item: it.id, payload: { attempt: n, pid: started.pid, tmux: started.tmux, conversationId: cmd.conversationId ?? (resume ? conversationId : null), argv: cmd.argv.map(redactLong), log: join(dir, SESSION_FILES.output), resumed: Boolean(resume && cmd.supportsResume) } }],
        "session_started",
      );
    } catch (err) {
      // A lost lease is not the launch's failure, and the step may not record anything more.
      if (err instanceof LeaseLostError) throw err;
      const reason = (err as Error).message;
      this.errors.push(`${it.id}: ${reason}`);
      this.o.log.error(`${it.id}: launch failed: ${reason}`);
      if (this.p.items[it.id]!.status === "launching") this.append([{ type: "launch_failed", item: it.id, payload: { attempt: n, reason, interrupted: false } }], "launch_failed");
    }
  }
}

/** argv is recorded for people; the prompt itself lives in handoff.md, so long values are cut. */
function redactLong(s: string): string {
  return s.length > 200 ? `${sliceText(s, 0, 120)}… (${s.length} chars)` : s;
}

function insideGitWorkTree(dir: string): boolean {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (existsSync(join(d, ".git"))) return true;
    if (dirname(d) === d) return false;
  }
}

/** Why a runner's program cannot be started, or null. Relative paths are relative to the worktree (the session's cwd). */
function programProblem(program: string, cwd: string): string | null {
  const path = !program.includes("/") ? Bun.which(program) : resolve(cwd, program);
  if (!path || !existsSync(path)) return `program ${JSON.stringify(program)} not found${program.includes("/") ? "" : " on PATH"}`;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return `program ${JSON.stringify(program)} (${path}) is not executable`;
  }
  return null;
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

/** One step. Throws DefinitionError or UsageError (exit 2) before touching anything (preflight), BusyLease when busy. */
export async function runStep(o: StepOptions): Promise<RunResult> {
  const def = preflight(o.root);
  const store = Store.open(o.stateRoot, { create: true, actor: o.actor, project: projectOf(o.root, def.name) });
  try {
    const got = store.acquireLease(o.leaseMs ?? 30 * 60_000, pidAlive);
    if (!got.ok) throw new BusyLease(got.holder);
    failpoint("lease:after_acquire");
    let step: Step;
    let outcome: { action: RunAction; item: string | null; reason: string | null };
    try {
      step = new Step(store, def, o, got.lease);
      step.materialize();
      step.importDefinition();
      outcome = await step.run();
      if (step.transitions.length) step.materialize(); // the first call already repaired the files
    } finally {
      store.releaseLease(got.lease);
    }
    const p = store.projection();
    return {
      schema: "loop/run@1",
      action: outcome.action,
      item: outcome.item,
      reason: outcome.reason,
      transitions: step.transitions,
      loop: { name: p.loop.name, state: p.loop.state, reason: p.loop.reason, outcome: p.loop.outcome, current: p.loop.current },
      errors: step.errors,
    };
  } finally {
    store.close();
  }
}
