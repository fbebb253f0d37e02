// The verify phase: an attempt whose agent exited is judged, and verify_finished records the
// verdict. Whatever the agent left uncommitted is committed on its branch first, so the verify
// sees (and landing merges) exactly what the branch holds.
//
// The item's verify command is a detached process observed like the agent's session, never waited
// on: it is reserved (verify_reserved, under the key verify:<item>:e<epoch>:a<n>, so one attempt
// has one verify, ever), started through the session wrapper (lib/supervisor/verify-command.ts) and
// recorded (verify_started, with its deadline); the step then stops, `waiting`. Later steps observe
// it: ended → verify_finished; past its deadline → ended through the close path and recorded timed
// out; gone without an exit status → failed. Without a command (`verify: false`) nothing runs: the
// verdict is "the agent exited 0 and this attempt committed something", decided inline. Before either,
// the gates (lib/decisions/verify-gates.ts decides their order; this gathers their facts) may refuse
// the attempt. Every verdict is a code with its facts; its sentences are rendered from them
// (lib/decisions/verify-verdict.ts verifyReason).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireAttempt, type VerifyRun } from "../log/projection.ts";
import { type EndedItem, endedAttempt, isStarted, itemIn, type SessionItem, type StartedVerify, verifyingAttempt } from "../log/item-views.ts";
import { GitError, StartError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { markCarried } from "../shared/process.ts";
import { readJsonOrNull, readRegularFile, readTextOrNull } from "../shared/fsutil.ts";
import { capped } from "../forge/untrusted.ts";
import { GIT_EXEC_FILE, gitExecReport, gitExecSnapshot } from "../repo/git-exec.ts";
import { tamperedObjects } from "../repo/object-store.ts";
import { endSessionProcesses, endVerifyRun } from "../supervisor/end.ts";
import { append, closeInStep, itemNow, ownedRefChanges, projection, repoOf, type StepContext, type StepOutcome } from "./context.ts";
import { requeueUncounted } from "./settle.ts";
import { describeRefChange } from "../repo/owned-refs.ts";
import { classifyVerify, classifyVerifyStart, verdictPasses, verifyExitVerdict, type VerifyVerdict } from "../decisions/verify-verdict.ts";
import { type AirlockFact, type AttemptChanges, type GateFact, type GateFacts, verifyGate } from "../decisions/verify-gates.ts";
import { graceMs, sessionMark } from "../supervisor/sessions.ts";
import { SESSION_FILES, VERIFY_FILES } from "../supervisor/session-wrapper.ts";
import {
  endVerify,
  judgeExitProof,
  readVerifyExit,
  startVerify,
  verifyAlive,
  verifyLogSummary,
  verifySpawnEvidence,
  type VerifyProcess,
} from "../supervisor/verify-command.ts";
import type { SessionMechanism } from "../supervisor/scope.ts";
import { commitsAhead, startPointFor } from "../repo/workspace.ts";
import { protectedEntries, protectedPathVerdict } from "./protect.ts";
import { describeRefused, MAX_OBJECT_BYTES } from "../repo/object-import.ts";
import { airlock, type AirlockResult, checkoutProducts, describeFound, productStampsOf } from "../writer/airlock.ts";
import { changedProducts } from "../repo/products.ts";
import { checkoutForVerify, objectProofs, VERIFY_GIT } from "./checkout.ts";
import { checkoutPlace, writeEnvironmentReport } from "./checkout-place.ts";
import { checkoutAtPlace, SandboxRefusedError, sandboxRequest, sessionPath } from "../writer/sandbox-request.ts";
import { drainedReason, faultReason, sandboxFault, systemError } from "../decisions/faults.ts";
import { probeSandbox, type SandboxProbe, type SandboxRequest } from "../supervisor/sandbox.ts";
import type { GatewayRequest } from "../supervisor/gateway-files.ts";
import { selfFiles } from "../supervisor/self.ts";
import { gitTry, revParse } from "../repo/git.ts";
import { differingFiles } from "../repo/tree-sync.ts";
import { verifyRule } from "../definition/child-environment.ts";
import { chainOption } from "./chain.ts";
import { readWrapperTimes } from "../supervisor/wrapper-times.ts";
import { guardsOf } from "../definition/normalized.ts";
import { pauseSetupMissing, setupMissingOf } from "./setup-missing.ts";
import { judged, notRun, record, refuse, verdictPayload, type VerifyPayload } from "./verify-record.ts";

/**
 * Verify the current attempt of `it` (its session ended with an exit): start its verify command,
 * or observe the one already reserved. Returns `waiting` while the command runs; null once the
 * step may go on (verify_finished recorded, or a start recorded that the next turn observes).
 */
export async function verifyAttempt(ctx: StepContext, it: EndedItem): Promise<StepOutcome | null> {
  const attempt = endedAttempt(it);
  const run = attempt.verifyRun;
  if (run) return isStarted(run) ? observeVerify(ctx, it, run) : resumeReserved(ctx, it, run);
  // The seal runs in the agent's sandbox (lib/writer/airlock.ts), so the sandbox must be usable before
  // the gates, as before the reservation: if not, the loop pauses and the attempt waits untouched.
  const unusable = sandboxPaused(ctx, it);
  if (unusable) return unusable;
  const logPath = join(it.session.sessionDir, SESSION_FILES.verify);
  // The gates before the verify, in the order lib/decisions/verify-gates.ts gives: each fact is
  // gathered when it asks for it, and what it decides is recorded.
  const facts: GateFacts = {};
  const products = checkoutProducts(ctx.options.stateRoot, it.id) ?? [];
  const options = {
    command: it.def.verify !== false,
    exitCode: attempt.end.exitCode,
    noProgressGuard: guardsOf(ctx.def).noProgress,
    products,
  };
  let head: string;
  for (;;) {
    const d = verifyGate(facts, options);
    if (d.kind === "gather") {
      await gather(ctx, it, facts, d.fact);
      continue;
    }
    if (d.kind === "refuse") return refuse(ctx, it, d.verdict, logPath);
    if (d.kind === "judged") return judged(ctx, it, d, logPath);
    head = d.head;
    break;
  }
  failpoint("verify:before");
  // The sandbox the verify runs in must be usable before it is reserved: if not, the loop pauses.
  const box = verifySandbox(ctx, it);
  if ("paused" in box) return box.paused;
  if ("refused" in box) return record(ctx, it, notRun(attempt.n, box.refused));
  const key = `verify:${it.id}:e${it.epoch}:a${attempt.n}`;
  append(
    ctx,
    [
      {
        type: "verify_reserved",
        item: it.id,
        id: key,
        payload: { attempt: attempt.n, key, command: it.def.verify as string, log: logPath, timeoutMs: it.def.timeouts.verify, head },
      },
    ],
    "verify_reserve",
  );
  failpoint("verify:after_reserve");
  const now = itemIn(itemNow(ctx, it.id), "ended");
  return spawnReserved(ctx, now, verifyingAttempt(now).verifyRun);
}

/**
 * Gather one fact the gates asked for (the effects of the verify phase). A git failure (say, a
 * repository git cannot read) is a fact: the gate fails the attempt with git's reason; thrown, it
 * would stop every later step at the same place. Anything else is thrown.
 */
async function gather(ctx: StepContext, it: EndedItem, facts: GateFacts, fact: GateFact): Promise<void> {
  const attempt = requireAttempt(it);
  const s = it.session;
  const repo = repoOf(ctx);
  const orGitFailed = <T>(f: () => T): T | { gitFailed: string } => {
    try {
      return f();
    } catch (err) {
      if (!(err instanceof GitError)) throw err;
      return { gitFailed: err.message };
    }
  };
  switch (fact) {
    case "worktree": {
      const at = checkoutAtPlace(s.worktree);
      facts.worktree =
        at === null ? "present" : at === "missing" ? "missing" : { replaced: `${s.worktree} is not the checkout loop made (${at}); nothing of it was sealed` };
      return;
    }
    case "store": {
      // The session is over before anything is judged: whatever the agent left running (a child that
      // would commit, or stop the verify, while it runs) is ended first, group, scope and mark.
      ctx.store.assertLease();
      const ended = await endSessionProcesses(it, graceMs(ctx.options.env));
      if (ended.swept.length) ctx.options.log.info(`${it.id}: ended ${ended.swept.length} process(es) the agent left running before its verify`);
      reportGitExec(ctx, it);
      // In the sandbox the store is read-only to the agent: what it made comes in through the airlock alone.
      facts.store = it.def.sandbox ? [] : orGitFailed(() => tamperedObjects({ repo, since: Date.parse(attempt.reservedAt), proofs: objectProofs(ctx) }));
      return;
    }
    case "airlock": {
      ctx.store.assertLease();
      const startHead = readTextOrNull(join(s.sessionDir, "start-head"), { noLinks: true, maxBytes: 256 })?.trim() ?? "";
      const r = await orGitFailedAsync(() =>
        airlock({
          repo,
          stateRoot: ctx.options.stateRoot,
          env: ctx.options.env,
          item: it.id,
          runner: it.def.runner,
          worktree: s.worktree,
          sessionDir: s.sessionDir,
          branch: s.branch,
          expected: startHead,
          sandboxed: Boolean(it.def.sandbox),
          attempt: attempt.n,
          mark: sessionMark(s),
          message: `loop: ${it.id} attempt ${attempt.n}: changes the agent left uncommitted`,
        }),
      );
      facts.airlock = "gitFailed" in r ? r : airlockFact(r, { branch: s.branch, startHead });
      return;
    }
    case "protectedPaths":
      facts.protectedPaths = orGitFailed(() => protectedPathVerdict(ctx, it));
      return;
    case "changes":
      // What the branch adds since loop made it (not only this attempt: what an earlier, failed one
      // committed lands too), else since the attempt's start in an older log.
      facts.changes = orGitFailed(() => attemptChanges(repo, { from: attempt.start ?? startHeadOf(it), to: (facts.airlock as { head: string }).head }));
      return;
    case "products": {
      // In the sandbox what setup made is read-only to the agent; without it, compared with what setup left.
      const stamps = it.def.sandbox ? null : productStampsOf(ctx.options.stateRoot, it.id);
      facts.products = stamps ? changedProducts(s.worktree, checkoutProducts(ctx.options.stateRoot, it.id) ?? [], stamps) : [];
      return;
    }
    case "ownedRefs":
      facts.ownedRefs = orGitFailed(() => ownedRefChanges(ctx, projection(ctx)).map(describeRefChange));
      return;
    case "gaveUp":
      facts.gaveUp = gaveUpReason(ctx, it);
      return;
    case "commits":
      failpoint("verify:before");
      facts.commits = orGitFailed(() => commitsOfAttempt(ctx, it));
      return;
  }
}

/** How much of a give-up reason is kept (characters, after cleaning): recorded in the log and the verify log. */
const GAVE_UP_CAP = 4000;

/**
 * What the agent wrote in $LOOP_GIVE_UP_FILE, cleaned of hidden characters and capped, or null: it
 * did not give up. Read as the ask file is (docs/runners.md#the-ask-file-protocol): only the file
 * the agent wrote itself, never through a link, a FIFO or another user's file, which is said and
 * counts as no giving up.
 */
function gaveUpReason(ctx: StepContext, it: SessionItem): string | null {
  const path = join(it.session.sessionDir, SESSION_FILES.giveUp);
  const read = readRegularFile(path, { maxBytes: 64 * 1024, truncate: true, noLinks: true });
  if (read.kind === "error") {
    const line = `${it.id}: attempt ${requireAttempt(it).n}: its give-up file ${path} was not read: ${read.message}`;
    ctx.warnings.push(line);
    ctx.options.log.warn(line);
    return null;
  }
  if (read.kind !== "ok") return null;
  const text = capped(read.bytes.toString("utf8"), GAVE_UP_CAP).trim();
  return text === "" ? null : text;
}

async function orGitFailedAsync<T>(f: () => Promise<T>): Promise<T | { gitFailed: string }> {
  try {
    return await f();
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    return { gitFailed: err.message };
  }
}

/** The airlock's result as the gate's fact: the head, or the verdict that refuses it. */
function airlockFact(r: AirlockResult, o: { branch: string; startHead: string }): AirlockFact {
  switch (r.kind) {
    case "ok":
      return { head: r.head, startHead: o.startHead };
    case "seal_failed":
      return { code: "seal_failed", reason: r.reason, timedOut: r.timedOut };
    case "objects_refused":
      return { code: "objects_refused", named: describeRefused(r.refused) };
    case "object_too_large":
      return { code: "object_too_large", named: describeRefused(r.refused), max: MAX_OBJECT_BYTES };
    case "head_invalid":
      return { code: "head_invalid", reason: r.reason };
    case "branch_moved":
      return {
        code: "owned_ref_changed",
        changes: [`the item branch ${o.branch} was moved while the attempt ran (it is ${describeFound(r.found)}; loop left it at ${r.expected.slice(0, 12)})`],
      };
  }
}

/** The head the attempt started from (its start-head, written at its launch), else the branch's head. */
function startHeadOf(it: SessionItem): string {
  return readTextOrNull(join(it.session.sessionDir, "start-head"), { noLinks: true, maxBytes: 256 })?.trim() || it.session.branch;
}

/** What the attempt adds from `from` to `to`: its paths, and the bytes of the blobs it adds (object reads only). */
function attemptChanges(repo: string, o: { from: string; to: string }): AttemptChanges {
  const args = ["diff-tree", "-r", "--no-renames", "-z", "--raw", o.from, o.to, "--"];
  const r = gitTry(repo, args);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  const fields = r.stdout.split("\0");
  const paths: string[] = [];
  const blobs: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const meta = fields[i]!.split(" ");
    const [newMode, newId, status] = [meta[1], meta[3], meta[4]];
    if (status === "D") continue;
    paths.push(fields[i + 1]!);
    if (newMode !== "160000" && newId && !/^0+$/.test(newId)) blobs.push(newId);
  }
  let bytes = 0;
  if (blobs.length) {
    const sizes = gitTry(repo, ["cat-file", "--batch-check=%(objectsize)"], {}, blobs.join("\n") + "\n");
    if (sizes.code !== 0) throw new GitError(["cat-file", "--batch-check"], sizes.code, sizes.stderr);
    for (const line of sizes.stdout.split("\n")) if (/^\d+$/.test(line)) bytes += Number(line);
  }
  return { paths, bytes };
}

/** A hook or executable git config the session planted is said (a warning of the step): loop never runs it, the operator's git would. */
function reportGitExec(ctx: StepContext, it: SessionItem): void {
  const attempt = requireAttempt(it);
  if (!attempt.gitExec) return;
  const said = gitExecReport({
    recorded: attempt.gitExec,
    baseline: readJsonOrNull(join(it.session.sessionDir, GIT_EXEC_FILE)),
    now: gitExecSnapshot(repoOf(ctx)),
  });
  if (!said) return;
  const line = `${it.id}: attempt ${attempt.n}: ${said}`;
  ctx.warnings.push(line);
  ctx.options.log.warn(line);
}

/** Start the reserved verify (the first and only start of this reservation) and record it. */
function spawnReserved(ctx: StepContext, it: EndedItem, run: VerifyRun): StepOutcome | null {
  const attempt = requireAttempt(it);
  const s = it.session;
  ctx.store.assertLease();
  // The checkout made to hold exactly the commit it verifies (and what setup made), with a
  // read-only git folder of its own: nothing the agent left there but what the commit holds.
  const products = checkoutProducts(ctx.options.stateRoot, it.id) ?? [];
  // A reservation from before its head was recorded verifies the branch as it is.
  const head = run.head ?? revParse(repoOf(ctx), `refs/heads/${s.branch}`) ?? s.branch;
  let guarded: ReturnType<typeof protectedEntries>;
  try {
    checkoutForVerify(ctx, it, { worktree: s.worktree, dir: s.sessionDir, branch: s.branch, head, products });
    guarded = protectedEntries(ctx, head);
  } catch (err) {
    if (!(err instanceof StartError) && !(err instanceof GitError) && systemError(err) === null) throw err;
    return record(
      ctx,
      it,
      notRun(attempt.n, { code: "could_not_run", error: `the checkout could not be made the verified commit's: ${(err as Error).message}` }),
    );
  }
  const box = verifySandbox(ctx, it, { readOnly: [...products, ...guarded.mounts].map((p) => join(s.worktree, p)) });
  if ("paused" in box) return box.paused;
  if ("refused" in box) return record(ctx, it, notRun(attempt.n, box.refused));
  // Its checkout's own environment on top (docs/runners.md#the-items-own-environment), said in the session folder for `loop logs --verify`.
  const envRule = { ...verifyRule(ctx.def, { behindGateway: it.def.network !== undefined }), place: checkoutPlace(ctx, s.worktree) };
  try {
    writeEnvironmentReport(s.sessionDir, envRule);
  } catch (err) {
    // Only what `loop logs --verify` shows: the verify runs without it.
    ctx.options.log.warn(`${it.id}: the report of the verify's environment was not written: ${(err as Error).message}`);
  }
  let started: ReturnType<typeof startVerify>;
  try {
    started = startVerify({
      dir: s.sessionDir,
      command: run.command,
      cwd: s.worktree,
      env: { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(attempt.n), LOOP_WORKDIR: s.worktree },
      mark: sessionMark(s),
      // Never loop's secrets; under the "clean" policy only what is declared (docs/runners.md#the-environment).
      envRule,
      ...chainOption(ctx, s.sessionDir, it),
      // A scope of its own, as its session has: under a oneshot step's unit it would die with the step.
      scope: { loopName: ctx.def.name, item: it.id, epoch: it.epoch, attempt: attempt.n, stateRoot: ctx.options.stateRoot },
      ...(box.request ? { sandbox: box.request } : {}),
      ...(box.gateway ? { gateway: box.gateway } : {}),
    });
    failpoint("verify:after_spawn");
  } catch (err) {
    // Its wrapper never started: the gateway's socket folder would outlive it.
    if (box.gateway?.socketDir) rmSync(box.gateway.socketDir, { recursive: true, force: true });
    // Loop's own wrapper could not be started (a StartError, or a system call refused): an error of
    // the environment, and the attempt's verify. Anything else is a bug in loop and is thrown on: it
    // spends no attempt (the next step adopts what was spawned, or starts it under this reservation).
    if (!(err instanceof StartError) && systemError(err) === null) throw err;
    const verdict = notRun(attempt.n, { code: "could_not_run", error: (err as Error).message });
    ctx.errors.push(`${it.id}: verify ${verdict.reason}`);
    ctx.options.log.error(`${it.id}: verify ${verdict.reason}`);
    return record(ctx, it, verdict);
  }
  return recordStarted(ctx, it, run, started, false, started.mechanism);
}

function recordStarted(
  ctx: StepContext,
  it: EndedItem,
  run: VerifyRun,
  p: VerifyProcess,
  adopted: boolean,
  mechanism: SessionMechanism | null = null,
): StepOutcome {
  // The proof's hashes; an adopted wrapper's come from its folder (the spawning step was killed before recording them).
  const proof = p.proof ? { mechanism, proof: p.proof } : mechanism ? { mechanism } : {};
  const attempt = requireAttempt(it);
  // Counted from the reservation, which comes right before the spawn: an adopted verify has been
  // running since then, not since the step that found it. One this step started under an older
  // reservation (its reserving step was stopped before the spawn) has run only from now.
  const from = adopted ? Date.parse(run.reservedAt) : Math.max(Date.parse(run.reservedAt), Date.now());
  const deadline = new Date(from + run.timeoutMs).toISOString();
  append(
    ctx,
    [
      {
        type: "verify_started",
        item: it.id,
        payload: { attempt: attempt.n, pid: p.pid, pgid: p.pid, startTime: p.startTime, log: run.log, deadline, adopted, ...proof },
      },
    ],
    "verify_started",
  );
  return { action: "waiting", item: it.id, reason: `verify running (deadline ${deadline})` };
}

/**
 * The sandbox an item's verify runs in (its agent's: docs/runners.md#the-sandbox), probed now. One
 * that is asked for and unusable is an environment fault: the loop pauses, and the attempt waits
 * untouched for `loop ctl resume`.
 */
function verifySandbox(
  ctx: StepContext,
  it: EndedItem,
  o: { readOnly?: string[] } = {},
): { request: SandboxRequest | null; gateway?: GatewayRequest } | { paused: StepOutcome } | { refused: VerifyVerdict } {
  if (!it.def.sandbox) return { request: null };
  const s = it.session;
  const probe = probeSandbox(sessionPath(ctx.options.env));
  if (!probe.ok) return { paused: pauseForSandbox(ctx, it, probe) };
  try {
    const allow = it.def.verifyNetwork;
    const listed = Array.isArray(allow);
    // A list's proxy is reached through `loop __bridge` inside: the loop binary is bound in for it.
    const base = sandboxRequest({
      bwrap: probe.bwrap,
      repo: repoOf(ctx),
      worktree: s.worktree,
      stateRoot: ctx.options.stateRoot,
      runner: it.def.runner,
      writable: [],
      ...(listed ? { programs: selfFiles() } : {}),
      env: ctx.options.env,
    });
    // Its own git folder, read-only; what setup made and the protected paths read-only too; no config home of the agent's.
    const request: SandboxRequest = { ...base, homes: [], gitDir: { path: join(s.sessionDir, VERIFY_GIT), writable: false }, readOnly: o.readOnly ?? [] };
    // verifyNetwork "none" (the default in the sandbox, docs/loop-json.md#network): no network at all.
    if (it.def.verifyNetwork === "none") return { request: { ...request, noNetwork: true } };
    if (!listed) return { request };
    // A list: the network unshared, its hosts reached through a proxy-only gateway (lib/supervisor/session-gateway.ts).
    const gateway: GatewayRequest = {
      standIn: `loop-verify-${crypto.randomUUID().replaceAll("-", "")}`,
      allow,
      proxyOnly: true,
      socketDir: mkdtempSync(join(tmpdir(), "lg-")),
    };
    return { request, gateway };
  } catch (err) {
    // The checkout is not the one loop made: no verify runs over it.
    if (err instanceof SandboxRefusedError) return { refused: { code: "worktree_replaced", at: "sandbox", message: err.message } };
    throw err;
  }
}

/** The item's sandbox, probed now: null when it has none or it is usable; else the loop paused (sandbox_unavailable). */
function sandboxPaused(ctx: StepContext, it: EndedItem): StepOutcome | null {
  if (!it.def.sandbox) return null;
  const probe = probeSandbox(sessionPath(ctx.options.env));
  return probe.ok ? null : pauseForSandbox(ctx, it, probe);
}

/** The environment fault of a sandbox that cannot be made: recorded for the attempt, which waits as it is; the loop paused. */
function pauseForSandbox(ctx: StepContext, it: EndedItem, probe: Extract<SandboxProbe, { ok: false }>): StepOutcome {
  const attempt = requireAttempt(it);
  const f = sandboxFault(probe)!;
  const reason = faultReason(f, it.id, "verifying");
  ctx.errors.push(reason);
  ctx.options.log.error(reason);
  const p = append(ctx, [{ type: "environment_fault", item: it.id, payload: { kind: f.kind, attempt: attempt.n, reason: f.message, fix: f.fix } }], "fault");
  return { action: "paused", item: it.id, reason: p.loop.reason };
}

/** A reserved verify whose start is not recorded: adopt its wrapper, start it (nothing was spawned), wait, or fail it. */
function resumeReserved(ctx: StepContext, it: EndedItem, run: VerifyRun): StepOutcome | null {
  const attempt = requireAttempt(it);
  const ev = verifySpawnEvidence(it.session.sessionDir);
  // /proc is scanned only when the launch record has no wrapper on record (a step stopped mid-start).
  const marked = ev.launched && !ev.found ? markCarried([sessionMark(it.session)]) : true;
  const v = classifyVerifyStart({ ...ev, marked, reservedAt: Date.parse(run.reservedAt), now: Date.now(), launchTimeout: it.def.timeouts.launch });
  switch (v.kind) {
    case "adopt":
      return recordStarted(ctx, it, run, { pid: v.pid, startTime: v.startTime, proof: ev.found?.proof ?? null }, true);
    case "spawn":
      return spawnReserved(ctx, it, run);
    case "waiting":
      return { action: "waiting", item: it.id, reason: v.reason };
    case "never_started":
      return record(ctx, it, notRun(attempt.n, { code: "never_started", why: v.reason }));
  }
}

/** A started verify: still running (the step stops here), ended, past its deadline, or gone. */
async function observeVerify(ctx: StepContext, it: EndedItem, run: StartedVerify): Promise<StepOutcome | null> {
  const attempt = requireAttempt(it);
  const dir = it.session.sessionDir;
  const proc: VerifyProcess = { pid: run.pid, startTime: run.startTime };
  const first = readVerifyExit(dir);
  const alive = first === null && verifyAlive(proc);
  // Re-read the exit status after seeing the group gone: it may have been written in between.
  const exit = first ?? (alive ? null : readVerifyExit(dir));
  const v = classifyVerify({ exit, alive, startedAt: Date.parse(run.reservedAt), deadline: Date.parse(run.deadline), now: Date.now() });
  if (v.kind === "waiting") return { action: "waiting", item: it.id, reason: v.reason };
  let payload: VerifyPayload;
  if (v.kind === "timed_out") {
    ctx.store.assertLease();
    await endVerifyRun(it, graceMs(ctx.options.env));
    payload = verdictPayload(attempt.n, { code: "timed_out", timeoutMs: run.timeoutMs }, { ...verifyLogSummary(run.log, null), timedOut: true, log: run.log });
  } else if (v.kind === "lost") {
    // The wrapper vanished without an exit status; whatever it started may still sit in its scope.
    await endVerify({ proc, dir, graceMs: 0 });
    // After the watcher named it when it was stopped: it died with the watcher's machine. The attempt
    // is given back (its work is on its branch) and runs again, its verify with it.
    const drained = drainedReason({ stop: attempt.drain, what: "verify", vanished: v.reason });
    if (drained) {
      const c = await closeInStep(ctx, { it, reason: drained, removeCheckout: false });
      requeueUncounted(ctx, it, drained, { drained: true, before: c?.events ?? [] });
      return null;
    }
    payload = verdictPayload(attempt.n, { code: "lost", why: v.reason }, { ...verifyLogSummary(run.log, null), timedOut: false, log: run.log });
  } else if (exit && judgeExitProof(exit, run.proof) === "forged") {
    // An exit status its wrapper did not write (no secret, or the wrong one): never a pass.
    await endVerify({ proc, dir, graceMs: 0 });
    payload = verdictPayload(
      attempt.n,
      { code: "verify_result_forged", file: VERIFY_FILES.exit, pid: run.pid },
      { ...verifyLogSummary(run.log, null), timedOut: false, log: run.log },
    );
  } else {
    // The shell is gone, but something it started may linger in its group: end it too.
    await endVerify({ proc, dir, graceMs: 0 });
    // The command's own start and end, as its wrapper saw them (the timeline draws those).
    const times = readWrapperTimes(dir, "verify", { from: Date.parse(run.reservedAt), to: Date.now() });
    const verdict = verifyExitVerdict(v);
    // A command the project's setup would have installed, not found, with no setup: the environment's fault, not the item's.
    const missing = verdict.code === "exit_nonzero" ? setupMissingOf(ctx, it, { exitCode: v.code, log: run.log, startHead: startHeadOf(it) }) : null;
    if (missing) {
      const code = { code: "setup_missing" as const, exitCode: v.code, command: missing.command, line: missing.line };
      return pauseSetupMissing(
        ctx,
        it,
        verdictPayload(attempt.n, code, { ...verifyLogSummary(run.log, v.code), timedOut: false, log: run.log, times }),
        missing,
      );
    }
    // A pass holds only if what it ran left the protected files and the item branch as they were.
    const after = verdictPasses(verdict) ? afterVerify(ctx, it, run) : null;
    payload = verdictPayload(attempt.n, after ?? verdict, { ...verifyLogSummary(run.log, v.code), timedOut: false, log: run.log, times });
  }
  failpoint("verify:before_record");
  return record(ctx, it, payload);
}

/**
 * What a verify that passed must have left as it was (docs/threat-model.md#the-airlock): every
 * protected file its commit's bytes, and the item branch at the verified head. In the sandbox both
 * are read-only to it; without, this is how a verify that rewrote them (a `pretest` script, a
 * `git update-ref`) is caught. Null when both hold.
 */
function afterVerify(ctx: StepContext, it: SessionItem, run: VerifyRun): VerifyVerdict | null {
  const s = it.session;
  if (!run.head) return null; // a verify from before its head was recorded
  const now = revParse(repoOf(ctx), `refs/heads/${s.branch}`);
  if (now !== run.head) return { code: "branch_moved_by_verify", branch: s.branch, head: run.head, now };
  let changed: string[];
  try {
    changed = differingFiles(s.worktree, protectedEntries(ctx, run.head).files);
  } catch (err) {
    if (!(err instanceof GitError) && !(err instanceof StartError)) throw err;
    return { code: "git_failed", check: "protected_paths", message: err.message };
  }
  return changed.length ? { code: "protected_changed_by_verify", paths: changed } : null;
}

/** Commits this attempt made on the item branch: counted from the head it started at (start-head). */
function commitsOfAttempt(ctx: StepContext, it: SessionItem): number {
  const s = it.session;
  const repo = repoOf(ctx);
  const startHead = readTextOrNull(join(s.sessionDir, "start-head"), { noLinks: true })?.trim();
  const base = startHead || startPointFor({ repo, landing: ctx.def.landing, base: ctx.def.base, target: ctx.def.target });
  return commitsAhead({ repo, base, branch: s.branch });
}
