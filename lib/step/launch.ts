// The launch phase: check the machine first (an environment fault pauses the loop and spends
// nothing: lib/decisions/faults.ts), reserve the next attempt of an item (launch_reserved, whose key
// admits one launch per item, epoch and attempt, ever), then act: its worktree, its handoff, the runner's
// command, the detached session; then record session_started. A step killed anywhere in between
// leaves a reservation the next step resolves (lib/step/observe.ts observeLaunching): it adopts a
// spawned session, never launches the attempt a second time.
import { lstatSync, mkdirSync, mkdtempSync, realpathSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { itemBranch } from "../definition/branches.ts";
import { buildRunnerCommand, provenConversation } from "../definition/runners.ts";
import { agentRule, gatewayUpstream } from "../definition/child-environment.ts";
import { itemEnvironment } from "../definition/item-environment.ts";
import type { ItemState, Projection, SessionRecord } from "../log/projection.ts";
import { FaultError, GitError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { sliceText, writeFileAtomic } from "../shared/fsutil.ts";
import { sessionDir, worktreeDir } from "../shared/paths.ts";
import { checkoutPlace } from "./checkout-place.ts";
import { append, loopView, ownedRefChanges, projection, repoOf, type StepContext, type StepOutcome, warnMovedAside } from "./context.ts";
import { describeRefChange, restoreCommand } from "../repo/owned-refs.ts";
import { ensureAgentExcludes, probeLaunchFault, programFiles, resolveProgram } from "./machine-probe.ts";
import { sandboxRequest, sessionPath } from "../writer/sandbox-request.ts";
import { probeSandbox } from "../supervisor/sandbox.ts";
import { conversationSaved } from "../supervisor/saved-conversation.ts";
import { prepareConfigHome } from "../supervisor/config-home.ts";
import { type EnvironmentFault, launchErrorFault, ownedRefFault, programFault, type ProgramFact } from "../decisions/faults.ts";
import { branchExists, revParse, symbolicBranchTarget } from "../repo/git.ts";
import { buildHandoff, buildReplyMessage, REPLY_FILE } from "./handoff.ts";
import { selfArgv, selfFiles } from "../supervisor/self.ts";
import { chainOption } from "./chain.ts";
import { readOutputHead, sessionMark, startSession, tmuxSessionName } from "../supervisor/sessions.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { ensureBranch, isAncestor, moveBranchAside, restartBranch } from "../repo/workspace.ts";
import { attemptGitDir, objectProofs, prepareCheckout } from "./checkout.ts";
import { recordObjectStore } from "../repo/object-store.ts";
import { asideBranchName, branchAtLaunch } from "../decisions/branch.ts";
import { localStartPoint, stackedStartPoint } from "./workspace-prep.ts";
import { forgeFetch } from "./forge/remote.ts";
import { GIT_EXEC_FILE, gitExecSnapshot } from "../repo/git-exec.ts";
import { remainingMicroUsd, remainingTokens } from "../decisions/budget.ts";
import { modelRoute, sessionAllowList } from "../definition/network.ts";

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
  /** Whether replies wait to be delivered (they are written to the handoff, and to reply.md on a resume). */
  reply: boolean;
  /** The forge issue's context for the handoff (lib/step/forge/issue-context.ts), or null. */
  forgeContext?: string | null;
  /** The bwrap program when the item runs in the sandbox (found by the launch probe), else null. */
  bwrap?: string | null;
  /** The repository's hooks and executable git config before the launch (lib/repo/git-exec.ts). */
  gitExec?: string[];
}

/**
 * Launch the next attempt of `it`. "launched" once its session is recorded started. An environment
 * fault (lib/decisions/faults.ts) found before the reservation, or met after it, pauses the loop
 * (environment_fault, the attempt given back) and returns "paused"; it is listed in the step's
 * errors. A lost lease is thrown: the step may not record anything more.
 */
export async function launchAttempt(ctx: StepContext, it: ItemState, o: { forgeContext?: string | null } = {}): Promise<StepOutcome> {
  // The sandbox is probed before anything is reserved: asked for and unusable is the machine's fault.
  const box = it.def.sandbox ? probeSandbox(sessionPath(ctx.options.env)) : null;
  const plan = { ...planAttempt(ctx, it), forgeContext: o.forgeContext ?? null, bwrap: box?.ok ? box.bwrap : null };
  const fault = probeLaunchFault({
    runner: it.def.runner,
    tmux: ctx.def.tmux,
    model: it.def.model,
    verify: it.def.verify,
    repo: repoOf(ctx),
    worktree: plan.worktree,
    branch: plan.branch,
    startPoint: ctx.def.forge ? forgeProbeStartPoint(ctx, repoOf(ctx)) : localStartPoint(ctx, repoOf(ctx), it),
    handoffPath: join(plan.dir, SESSION_FILES.handoff),
    runners: ctx.def.runners,
    demoArgv: demoArgv(),
    env: ctx.options.env,
    sandbox: box,
    stateRoot: ctx.options.stateRoot,
    worktrees: ctx.worktrees,
  });
  if (fault) return pauseForFault(ctx, it, fault, null);
  // Refs loop owns that moved since it left them: someone must look before anything builds on them.
  let refFault: EnvironmentFault | null;
  try {
    const moved = ownedRefChanges(ctx, projection(ctx));
    refFault = ownedRefFault({
      changes: moved.map(describeRefChange),
      restore: moved.map(restoreCommand),
      items: moved.flatMap((c) => (c.item ? [c.item] : [])),
    });
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    refFault = {
      kind: "git_failed",
      message: err.message,
      fix: "look at the repository (git for-each-ref refs/heads/), fix what git reports, then `loop ctl resume`",
    };
  }
  if (refFault) return pauseForFault(ctx, it, refFault, null);
  // What git would run by itself before the agent runs: compared before its verify (lib/repo/git-exec.ts).
  const gitExec = gitExecSnapshot(repoOf(ctx));
  failpoint("launch:before_reserve");
  append(
    ctx,
    [
      {
        type: "launch_reserved",
        item: it.id,
        id: plan.key,
        payload: {
          attempt: plan.n,
          key: plan.key,
          runner: it.def.runner,
          model: it.def.model,
          branch: plan.branch,
          worktree: plan.worktree,
          sessionDir: plan.dir,
          sessionId: plan.sessionId,
          gitExec: gitExec.digest,
        },
      },
    ],
    "reserve",
  );
  try {
    await startAttempt(ctx, it, { ...plan, gitExec: gitExec.entries }, projection(ctx));
  } catch (err) {
    // The machine's fault, judged by the error's type; anything else (a lost lease, the store's
    // refusal, a bug in loop) is thrown on: the next step finds this launch interrupted and gives
    // the attempt back uncounted (observe.ts observeLaunching).
    const fault = launchErrorFault(err);
    if (!fault) throw err;
    return pauseForFault(ctx, it, fault, plan.n);
  }
  return { action: "launched", item: it.id, reason: null };
}

/**
 * An environment fault: the loop pauses with a reason that names it and how to fix it; a reserved
 * attempt is given back uncounted (one commit). The items wait, their attempts unspent.
 */
export function pauseForFault(ctx: StepContext, it: ItemState, fault: EnvironmentFault, attempt: number | null): StepOutcome {
  // Said once: it is the step's result (the pause's reason, and `attention`), not an error met besides.
  const payload = { kind: fault.kind, attempt, reason: fault.message, fix: fault.fix };
  const drafts = [{ type: "environment_fault" as const, item: it.id, payload }];
  // Before the reservation nothing was taken; after it, the attempt is given back in this commit.
  append(ctx, drafts, attempt === null ? "fault" : "launch_failed");
  return { action: "paused", item: it.id, reason: loopView(ctx).loop.reason };
}

/** What the agent's command needs visible in the sandbox: its program, and loop itself for the demo agent. */
function sandboxPrograms(runner: string, program: ProgramFact): string[] {
  return [...(program.state === "found" ? programFiles(program.path) : []), ...(runner === "demo" ? selfFiles() : [])];
}

function demoArgv(): string[] {
  return [...selfArgv(), "__demo-agent"];
}

function planAttempt(ctx: StepContext, it: ItemState): AttemptPlan {
  const n = it.attempts.length + 1;
  return {
    n,
    // The reservation key: one launch per item, epoch and attempt, ever.
    key: `launch:${it.id}:e${it.epoch}:a${n}`,
    dir: sessionDir(ctx.options.stateRoot, it.id, it.epoch, n),
    worktree: worktreeDir(ctx.worktrees, it.id),
    branch: itemBranch(ctx.def.name, it.id),
    sessionId: crypto.randomUUID(),
    previous: it.session,
    reply: it.replies.some((r) => r.delivered === null),
  };
}

/** Everything after the reservation, up to session_started recorded. Throws when the launch fails. */
async function startAttempt(ctx: StepContext, it: ItemState, plan: AttemptPlan, reserved: Projection): Promise<void> {
  const { n, dir, worktree, branch, sessionId, previous, reply } = plan;
  const repo = repoOf(ctx);
  try {
    ensureAgentExcludes({ repo, stateRoot: ctx.options.stateRoot });
  } catch (err) {
    // Only a convenience: the attempt runs, and the agents' files may show up as its changes.
    ctx.options.log.warn(`could not write the repository's info/exclude: ${(err as Error).message}`);
  }
  const aside = freshSessionDir(ctx.options.stateRoot, dir);
  if (aside) ctx.options.log.warn(`what was at ${dir} before attempt ${n} was launched was moved to ${aside}; look at it, then remove it`);
  if (plan.gitExec) writeFileAtomic(join(dir, GIT_EXEC_FILE), JSON.stringify(plan.gitExec) + "\n");
  // With a forge, items branch from the freshly fetched <remote>/<base>: it holds every merged PR.
  const startPoint = ctx.def.forge ? forgeStartPoint(ctx, repo, it) : localStartPoint(ctx, repo, it);
  const onBranch = branchForAttempt(ctx, it, { repo, branch, worktree, startPoint, attempt: n });
  const made = ensureBranch({
    repo,
    branch,
    startPoint: onBranch?.start ?? startPoint,
    aside: asideBranchName(ctx.def.name, it.id, it.epoch, n, (name) => branchExists(repo, name)),
  });
  if (made.movedBelow.length)
    ctx.options.log.warn(
      `refs below ${branch} (${made.movedBelow.join(", ")}: no session of ${it.id} made them) were moved under loop/${ctx.def.name}/aside/, never built on`,
    );
  const startCommit = onBranch?.start ?? made.head;
  // The checkout holds the branch's head, written by loop from its blobs; setup ran in it once, on
  // the start point's files (docs/threat-model.md#the-airlock). The agent gets a git folder of its own.
  const request = plan.bwrap
    ? () =>
        sandboxRequest({
          bwrap: plan.bwrap!,
          repo,
          worktree,
          stateRoot: ctx.options.stateRoot,
          runner: it.def.runner,
          writable: [],
          programs: [],
          env: ctx.options.env,
        })
    : null;
  const prepared = await prepareCheckout(ctx, it, { repo, worktree, branch, dir, attempt: n, startCommit, head: made.head, sandbox: request });
  if (prepared.movedAside) warnMovedAside(ctx, { path: worktree, branch, aside: prepared.movedAside });
  if (prepared.setupChanged.length)
    ctx.options.log.warn(
      `${it.id}: workspace.setup changed tracked files (${prepared.setupChanged.slice(0, 5).join(", ")}${prepared.setupChanged.length > 5 ? ", …" : ""}): they were written back from the commit`,
    );
  failpoint("launch:after_worktree");
  const builtOn = made.created ? { ref: startPoint, commit: made.head } : null;
  if (builtOn || prepared.setup) append(ctx, [{ type: "workspace_prepared", item: it.id, payload: { attempt: n, builtOn, setup: prepared.setup } }], "reserve");
  const gitDir = attemptGitDir(ctx, { repo, worktree, dir, branch, head: made.head, refs: shownRefs(ctx, repo), products: prepared.products });
  // Without the sandbox the agent can write the object store: what it holds now is the baseline its verify proves against.
  if (!it.def.sandbox)
    for (const odd of recordObjectStore({ repo, proofs: objectProofs(ctx) }))
      ctx.options.log.warn(`${it.id}: the repository's object store before the attempt: ${odd}`);
  const handoffPath = join(dir, SESSION_FILES.handoff);
  const askFile = join(dir, SESSION_FILES.ask);
  const giveUpFile = join(dir, SESSION_FILES.giveUp);
  const handoff = buildHandoff({ p: reserved, item: it.id, attempt: n, branch, askFile, giveUpFile, forgeContext: plan.forgeContext });
  writeFileAtomic(handoffPath, handoff);
  // A reply resumes the previous conversation only where it is proven to exist; else it goes in
  // this attempt's handoff (which lists every reply) to a fresh session.
  const conversationId =
    reply && previous?.log && previous.runner === it.def.runner
      ? provenConversation(previous.runner, {
          recorded: previous.conversationId,
          logHead: readOutputHead(previous.sessionDir),
          // Not empty: under the sandbox loop creates the file before aider runs, so there it always exists.
          historyExists: previous.runner === "aider" && previous.conversationId !== null && nonEmptyFile(previous.conversationId),
          saved: (id) => conversationSaved(previous.runner, previous.sessionDir, id),
        })
      : null;
  let resume: { conversationId: string; replyFile: string } | undefined;
  if (reply && conversationId) {
    // The reply travels as a file, fenced like the handoff: never on the command line.
    const replyFile = join(dir, REPLY_FILE);
    writeFileAtomic(replyFile, buildReplyMessage({ p: reserved, item: it.id, attempt: n, handoffPath }));
    resume = { conversationId, replyFile };
  }
  // A CLI with a spend cap of its own gets what is left of the budgets as a second line of defence.
  const cap = remainingMicroUsd({ item: it, usage: reserved.loop.usage, budget: ctx.def.budget, now: Date.now() });
  // Through the session's gateway whenever the runner can reach a model API (docs/threat-model.md#the-gateway).
  const route = modelRoute({ runner: it.def.runner, network: it.def.network, env: ctx.options.env });
  const cmd = buildRunnerCommand(
    it.def.runner,
    {
      item: it.id,
      attempt: n,
      prompt: handoff,
      handoffPath,
      workdir: worktree,
      model: it.def.model,
      sessionId,
      resume,
      ...(cap !== null ? { maxBudgetUsd: cap / 1e6 } : {}),
      ...(route.gateway ? { gateway: true } : {}),
    },
    ctx.def.runners,
    demoArgv(),
  );
  const program = resolveProgram(cmd.argv[0]!, { PATH: sessionPath(ctx.options.env), cwd: worktree });
  if (program.state === "missing" || program.state === "not_executable")
    throw new FaultError(programFault({ runner: it.def.runner, program: cmd.argv[0]!, fact: program }));
  // The agent's environment leaves the operator's active venv off PATH (an agent CLI may be installed
  // there): a program found only on what was taken off is named by its path.
  const place = checkoutPlace(ctx, worktree);
  if (program.state === "found" && !cmd.argv[0]!.includes("/")) {
    const own = itemEnvironment({ ...ctx.options.env, PATH: sessionPath(ctx.options.env) } as Record<string, string>, place).env.PATH ?? "";
    if (Bun.which(cmd.argv[0]!, { PATH: own }) !== program.path) cmd.argv[0] = program.path;
  }
  // verify:false asks for "a change on the branch" made by this attempt, not an earlier one.
  writeFileAtomic(join(dir, "start-head"), made.head + "\n");
  // Where a runner reports its usage (docs/runners.md#reporting-usage): created empty, the agent's to write.
  const usageFile = join(dir, SESSION_FILES.usage);
  writeFileAtomic(usageFile, "", { sync: false });
  // A preset CLI's config home of the session's own: the operator's credentials, a resumed conversation, nothing else.
  const home = prepareConfigHome({ runner: it.def.runner, dir, env: ctx.options.env, resumeFrom: resume ? previous!.sessionDir : null });
  const env: Record<string, string> = {
    ...home?.env,
    LOOP_USAGE_FILE: usageFile,
    LOOP_ITEM: it.id,
    LOOP_ATTEMPT: String(n),
    LOOP_HANDOFF: handoffPath,
    LOOP_WORKDIR: worktree,
    LOOP_ASK_FILE: askFile,
    LOOP_GIVE_UP_FILE: giveUpFile,
    LOOP_SESSION_ID: sessionId,
    LOOP_MODEL: it.def.model ?? "",
    // Comments from the issue thread for a running agent (docs/runners.md); the file may not exist yet.
    ...(ctx.def.forge ? { LOOP_INBOX_FILE: join(dir, SESSION_FILES.inbox) } : {}),
  };
  // Behind its gateway (docs/threat-model.md#the-gateway): the model APIs metered and capped there,
  // loop's key swapped in for a stand-in, other hosts on the list (or, open, the agent's own).
  const tokensLeft = remainingTokens({ item: it, usage: reserved.loop.usage, budget: ctx.def.budget, now: Date.now() });
  // In the sandbox, with a `network` setting, the network is unshared and the gateway reached through
  // sockets in a short private folder of its own (a socket's path is limited to 108 bytes; the state root is hidden there).
  const gateway = route.gateway
    ? {
        standIn: `loop-stand-in-${crypto.randomUUID().replaceAll("-", "")}`,
        allow: sessionAllowList(it.def.network, it.def.runner) ?? null,
        ...(tokensLeft !== null ? { maxTokens: tokensLeft } : {}),
        ...(cap !== null ? { maxMicroUsd: cap } : {}),
        ...(ctx.def.prices ? { prices: ctx.def.prices } : {}),
        ...(plan.bwrap && route.unshare ? { socketDir: mkdtempSync(join(tmpdir(), "lg-")) } : {}),
      }
    : undefined;
  ctx.store.assertLease();
  const started = startSession({
    dir,
    argv: cmd.argv,
    cwd: worktree,
    env,
    tmuxName: ctx.def.tmux ? tmuxSessionName(ctx.def.name, it.id, n, it.epoch) : null,
    mark: sessionMark({ sessionId }),
    // Never loop's secrets; under the "clean" policy only what is declared (docs/runners.md#the-environment).
    // Its checkout's own environment on top (docs/runners.md#the-items-own-environment).
    envRule: { ...agentRule(ctx.def, it.def.runner), place },
    ...chainOption(ctx, dir, it),
    ...(gateway ? { gateway, upstream: gatewayUpstream(ctx.options.env) } : {}),
    scope: { role: "session", loopName: ctx.def.name, item: it.id, epoch: it.epoch, attempt: n, stateRoot: ctx.options.stateRoot },
    ...(plan.bwrap
      ? {
          sandbox: {
            ...request!(),
            gitDir: { path: gitDir, writable: true },
            readOnly: prepared.products.map((p) => join(worktree, p)),
            writable: [askFile, giveUpFile, usageFile, ...(cmd.writes ?? [])],
            programs: [...sandboxPrograms(it.def.runner, program), ...(gateway ? selfFiles() : [])],
            ...(home ? { configHome: { dir: home.home, readOnly: home.readOnly } } : {}),
          },
        }
      : {}),
  });
  // Atomic: a step killed mid-write must not leave a half file that adoption then misreads.
  writeFileAtomic(join(dir, "spawned.json"), JSON.stringify({ pid: started.pid, tmux: started.tmux }) + "\n");
  failpoint("launch:after_spawn");
  append(
    ctx,
    [
      {
        type: "session_started",
        item: it.id,
        payload: {
          attempt: n,
          pid: started.pid,
          tmux: started.tmux,
          conversationId: cmd.conversationId ?? (resume ? conversationId : null),
          argv: cmd.argv.map(redactLong),
          log: join(dir, SESSION_FILES.output),
          resumed: Boolean(resume && cmd.supportsResume),
          ...(started.mechanism
            ? { mechanism: started.mechanism, ...(onBranch ? { start: onBranch.start, branchAside: onBranch.aside, base: onBranch.base } : {}) }
            : {}),
        },
      },
    ],
    "session_started",
  );
}

/**
 * The item's branch before its worktree is made (lib/decisions/branch.ts): a branch no session of
 * this epoch worked on is moved aside, named in a warning and in session_started. Returns the
 * commit the attempt's branch must contain, or null when there is nothing to decide here (the start
 * point does not resolve, or the branch is a symbolic ref: ensureWorktree refuses both, named).
 */
function branchForAttempt(
  ctx: StepContext,
  it: ItemState,
  o: { repo: string; branch: string; worktree: string; startPoint: string; attempt: number },
): { start: string; aside: { branch: string; commit: string } | null; base: string } | null {
  const startCommit = revParse(o.repo, `${o.startPoint}^{commit}`);
  if (startCommit === null || symbolicBranchTarget(o.repo, o.branch) !== null) return null;
  const inherited = [...it.attempts].reverse().find((a) => a.start !== undefined && a.startedAt !== null)?.start ?? null;
  const branchHead = branchExists(o.repo, o.branch) ? revParse(o.repo, `refs/heads/${o.branch}`) : null;
  const headInStart = inherited === null && branchHead !== null && branchHead !== startCommit && isAncestor(o.repo, branchHead, startCommit);
  const plan = branchAtLaunch({ inherited, startCommit, branchHead, headInStart });
  if (plan.kind === "restart") restartBranch({ repo: o.repo, branch: o.branch, from: plan.found, to: plan.start });
  if (plan.kind !== "move_aside") return { start: plan.start, aside: null, base: startCommit };
  const aside = asideBranchName(ctx.def.name, it.id, it.epoch, o.attempt, (name) => branchExists(o.repo, name));
  moveBranchAside({ repo: o.repo, branch: o.branch, aside, head: plan.found, worktree: o.worktree });
  ctx.options.log.warn(
    `${o.branch} was at ${plan.found.slice(0, 12)}, a commit no session of ${it.id} made (another agent's, or left from anything): moved to ${aside}, never built on; the attempt starts from ${o.startPoint}. Look at it, then delete it (git branch -D ${aside})`,
  );
  return { start: plan.start, aside: { branch: aside, commit: plan.found }, base: startCommit };
}

/**
 * What the launch probe checks before the reservation in a loop with a forge: the remote base as
 * last fetched, else the local base (what forgeStartPoint falls back to). No fetch here: the network
 * is not asked before anything is reserved, and a fetch failure is never an environment fault.
 */
function forgeProbeStartPoint(ctx: StepContext, repo: string): string {
  const ref = `refs/remotes/${ctx.def.forge!.remote}/${ctx.def.base}`;
  return revParse(repo, ref) !== null ? ref : ctx.def.base;
}

/** The branches the agent's git folder shows as they are now: the base, and the landing target when it exists. */
/** The refs an attempt's git folder shows as they are now: the base and the target, and with a forge its fetched base (a rework is told to merge `<remote>/<base>`). */
function shownRefs(ctx: StepContext, repo: string): Record<string, string> {
  const names = [`refs/heads/${ctx.def.base}`, `refs/heads/${ctx.def.target}`];
  if (ctx.def.forge) names.push(`refs/remotes/${ctx.def.forge.remote}/${ctx.def.base}`);
  const out: Record<string, string> = {};
  for (const name of names) {
    const at = revParse(repo, name);
    if (at) out[name] = at;
  }
  return out;
}

/** `<remote>/<base>` fetched now; the local base when the fetch fails (said, not fatal: the remote may be down). */
function forgeStartPoint(ctx: StepContext, repo: string, it: ItemState): string {
  const stacked = stackedStartPoint(ctx, repo, it);
  if (stacked) return stacked;
  const { remote } = ctx.def.forge!;
  const ref = `refs/remotes/${remote}/${ctx.def.base}`;
  const r = forgeFetch({ repo, forge: ctx.def.forge!, env: ctx.options.env, branch: ctx.def.base, dest: ref });
  if (r.code === 0) return ref;
  ctx.options.log.warn(`forge: could not fetch ${remote}/${ctx.def.base} (${r.stderr.trim()}); branching from the local ${ctx.def.base}`);
  return ctx.def.base;
}

function nonEmptyFile(path: string): boolean {
  try {
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

/**
 * Make the attempt's session folder afresh: loop writes its files there and reads what it finds
 * (the exit status, the ask file), so nothing may be there before (an earlier attempt's agent can
 * write the state root: a planted ask.txt would be this attempt's question). Whatever is found is
 * moved aside, never deleted; returns where. A folder that is not under the state root once links
 * are resolved (a link in its path) is refused: the launch fails, nothing is written through it.
 */
function freshSessionDir(stateRoot: string, dir: string): string | null {
  mkdirSync(dirname(dir), { recursive: true });
  const root = realpathSync(stateRoot);
  const within = (path: string) => {
    const real = realpathSync(path);
    if (real !== join(root, relative(stateRoot, path)))
      throw new FaultError({
        kind: "launch_failed",
        message: `the session folder ${dir} is not a folder of the state root (${path} resolves to ${real}: a link in its path); nothing was written through it`,
        fix: "remove the link (an agent without the sandbox can plant one), then `loop ctl resume`",
      });
  };
  within(dirname(dir));
  let aside: string | null = null;
  try {
    lstatSync(dir);
    aside = `${dir}.aside-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    renameSync(dir, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  mkdirSync(dir);
  within(dir);
  return aside;
}

/** argv is recorded for people; the prompt itself lives in handoff.md, so long values are cut. */
function redactLong(s: string): string {
  return s.length > 200 ? `${sliceText(s, 0, 120)}… (${s.length} chars)` : s;
}
