// The launch phase: reserve the next attempt of an item (launch_reserved, whose key admits one
// launch per item, epoch and attempt, ever), then act: its worktree, its handoff, the runner's
// command, the detached session; then record session_started. A step killed anywhere in between
// leaves a reservation the next step resolves (lib/step/observe.ts observeLaunching): it adopts a
// spawned session, never launches the attempt a second time.
import { accessSync, constants, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { itemBranch } from "../definition/loop-json.ts";
import { buildRunnerCommand, conversationIdFromLog } from "../definition/runners.ts";
import type { ItemState, Projection, SessionRecord } from "../log/reducer.ts";
import { LeaseLostError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { sliceText, writeFileAtomic } from "../shared/fsutil.ts";
import { sessionDir, worktreeDir } from "../shared/paths.ts";
import { append, projection, repoOf, type StepContext, type StepOutcome, warnMovedAside } from "./context.ts";
import { git, gitTry } from "./git.ts";
import { buildHandoff } from "./handoff.ts";
import { selfArgv } from "./self.ts";
import { readOutputHead, SESSION_FILES, startSession, tmuxSessionName } from "./sessions.ts";
import { ensureWorktree, startPointFor } from "./workspace.ts";

/** Where and as what the next attempt of an item runs; fixed before the reservation records it. */
interface AttemptPlan {
  n: number;
  key: string;
  dir: string;
  worktree: string;
  branch: string;
  sessionId: string;
  /** The item's previous session, whose conversation a reply resumes. */
  previous: SessionRecord | null;
  /** Replies not delivered yet, joined. */
  reply: string;
  /** The forge issue's context for the handoff (lib/step/forge-launch.ts), or null. */
  forgeContext?: string | null;
}

/**
 * Launch the next attempt of `it`. "launched" once its session is recorded started; null when the
 * launch failed (recorded as launch_failed and listed in the step's errors), for the step to go on.
 * A lost lease is thrown: the step may not record anything more.
 */
export function launchAttempt(ctx: StepContext, it: ItemState, o: { forgeContext?: string | null } = {}): StepOutcome | null {
  const plan = { ...planAttempt(ctx, it), forgeContext: o.forgeContext ?? null };
  failpoint("launch:before_reserve");
  const reserved = append(
    ctx,
    [
      {
        type: "launch_reserved",
        item: it.id,
        id: plan.key,
        payload: { attempt: plan.n, key: plan.key, runner: it.def.runner, model: it.def.model, branch: plan.branch, worktree: plan.worktree, sessionDir: plan.dir, sessionId: plan.sessionId },
      },
    ],
    "reserve",
  );
  let after: Projection;
  try {
    after = startAttempt(ctx, it, plan, reserved);
  } catch (err) {
    if (err instanceof LeaseLostError) throw err;
    const reason = (err as Error).message;
    ctx.errors.push(`${it.id}: ${reason}`);
    ctx.options.log.error(`${it.id}: launch failed: ${reason}`);
    after = projection(ctx);
    if (after.items[it.id]!.status === "launching")
      after = append(ctx, [{ type: "launch_failed", item: it.id, payload: { attempt: plan.n, reason, interrupted: false } }], "launch_failed");
  }
  return after.items[it.id]!.status === "running" ? { action: "launched", item: it.id, reason: null } : null;
}

function planAttempt(ctx: StepContext, it: ItemState): AttemptPlan {
  const n = it.attempts.length + 1;
  return {
    n,
    // The reservation key: one launch per item, epoch and attempt, ever.
    key: `launch:${it.id}:e${it.epoch}:a${n}`,
    dir: sessionDir(ctx.options.stateRoot, it.id, it.epoch, n),
    worktree: worktreeDir(ctx.options.stateRoot, it.id),
    branch: itemBranch(ctx.def.name, it.id),
    sessionId: crypto.randomUUID(),
    previous: it.session,
    reply: it.replies.filter((r) => r.delivered === null).map((r) => r.text).join("\n\n"),
  };
}

/** Everything after the reservation; returns the projection with session_started recorded. Throws when the launch fails. */
function startAttempt(ctx: StepContext, it: ItemState, plan: AttemptPlan, reserved: Projection): Projection {
  const { n, dir, worktree, branch, sessionId, previous, reply } = plan;
  const repo = repoOf(ctx);
  mkdirSync(dir, { recursive: true });
  // With a forge, items branch from the freshly fetched <remote>/<base>: it holds every merged PR.
  const startPoint = ctx.def.forge ? forgeStartPoint(ctx, repo) : startPointFor({ repo, landing: ctx.def.landing, base: ctx.def.base, target: ctx.def.target });
  const ws = ensureWorktree({ repo, path: worktree, branch, startPoint });
  if (ws.movedAside) warnMovedAside(ctx, { path: worktree, branch, aside: ws.movedAside });
  failpoint("launch:after_worktree");
  const handoffPath = join(dir, SESSION_FILES.handoff);
  const askFile = join(dir, SESSION_FILES.ask);
  const handoff = buildHandoff({ p: reserved, item: it.id, attempt: n, branch, askFile, forgeContext: plan.forgeContext });
  writeFileSync(handoffPath, handoff);
  let conversationId = previous?.conversationId ?? null;
  if (!conversationId && previous && previous.log) conversationId = conversationIdFromLog(previous.runner, readOutputHead(previous.sessionDir));
  const resume = reply && conversationId && previous?.runner === it.def.runner ? { conversationId, reply } : undefined;
  const cmd = buildRunnerCommand(
    it.def.runner,
    { item: it.id, attempt: n, prompt: handoff, handoffPath, workdir: worktree, model: it.def.model, sessionId, resume },
    ctx.def.runners,
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
    // Comments from the issue thread for a running agent (docs/runners.md); the file may not exist yet.
    ...(ctx.def.forge ? { LOOP_INBOX_FILE: join(dir, SESSION_FILES.inbox) } : {}),
  };
  ctx.store.assertLease();
  const started = startSession({ dir, argv: cmd.argv, cwd: worktree, env, tmuxName: ctx.def.tmux ? tmuxSessionName(ctx.def.name, it.id, n) : null });
  // Atomic: a step killed mid-write must not leave a half file that adoption then misreads.
  writeFileAtomic(join(dir, "spawned.json"), JSON.stringify({ pid: started.pid, tmux: started.tmux }) + "\n");
  failpoint("launch:after_spawn");
  return append(
    ctx,
    [
      {
        type: "session_started",
        item: it.id,
        payload: { attempt: n, pid: started.pid, tmux: started.tmux, conversationId: cmd.conversationId ?? (resume ? conversationId : null), argv: cmd.argv.map(redactLong), log: join(dir, SESSION_FILES.output), resumed: Boolean(resume && cmd.supportsResume) },
      },
    ],
    "session_started",
  );
}

/** `<remote>/<base>` fetched now; the local base when the fetch fails (said, not fatal: the remote may be down). */
function forgeStartPoint(ctx: StepContext, repo: string): string {
  const { remote } = ctx.def.forge!;
  const ref = `refs/remotes/${remote}/${ctx.def.base}`;
  const r = gitTry(repo, ["fetch", "--quiet", remote, `refs/heads/${ctx.def.base}:${ref}`]);
  if (r.code === 0) return ref;
  ctx.options.log.warn(`forge: could not fetch ${remote}/${ctx.def.base} (${r.stderr.trim()}); branching from the local ${ctx.def.base}`);
  return ctx.def.base;
}

/** argv is recorded for people; the prompt itself lives in handoff.md, so long values are cut. */
function redactLong(s: string): string {
  return s.length > 200 ? `${sliceText(s, 0, 120)}… (${s.length} chars)` : s;
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
