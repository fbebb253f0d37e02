// The phases of a step (lib/step/{launch,observe,verify,land,settle}.ts) called in-process against a
// real temp Store under a real lease and a real git repository, without `loop run`: each phase
// records its event and leaves the item where the next phase (lib/decisions/attempt.ts afterSession) picks it up.
// Agents are shell commands run by the real session wrapper; where no agent is the point, the test
// records the session itself and leaves in the worktree what an agent would have left.
import { TEST_DEFAULTS } from "../helpers/env.ts";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NO_PROGRESS } from "../../lib/decisions/guards.ts";
import { createConsola } from "consola/core";
import { importedDefinition } from "../../lib/definition/normalize.ts";
import { itemBranch } from "../../lib/definition/branches.ts";
import { loadDefinition } from "../../lib/definition/loop-json.ts";
import type { ItemState } from "../../lib/log/projection.ts";
import { itemIn } from "../../lib/log/item-views.ts";
import { Store } from "../../lib/log/store.ts";
import { acquireWriter } from "../../lib/log/writer.ts";
import { LeaseLostError } from "../../lib/shared/errors.ts";
import { sessionDir, worktreeDir } from "../../lib/shared/paths.ts";
import { append, createStepContext, projection, type StepContext } from "../../lib/step/context.ts";
import { afterSession } from "../../lib/decisions/attempt.ts";
import { landAttempt } from "../../lib/step/land.ts";
import { launchAttempt } from "../../lib/step/launch.ts";
import { observeRunning } from "../../lib/step/observe.ts";
import { startSession } from "../../lib/supervisor/sessions.ts";
import { SESSION_FILES } from "../../lib/supervisor/session-wrapper.ts";
import { SESSION_MARK_VAR } from "../../lib/shared/process.ts";
import { failAttempt, settleAttempt } from "../../lib/step/settle.ts";
import { verifyAttempt } from "../../lib/step/verify.ts";
import { ensureBranch } from "../../lib/repo/workspace.ts";
import { syncTree } from "../../lib/repo/tree-sync.ts";
import { makeAttemptGitDir } from "../../lib/repo/attempt-git.ts";
import { cleanupDir, git, makeRepo, writeLoopJson } from "../helpers/project.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) cleanupDir(d);
});
const stores: Store[] = [];
afterAll(() => {
  for (const s of stores.splice(0)) s.close();
});

interface Harness {
  ctx: StepContext;
  root: string;
  stateRoot: string;
  warnings: string[];
  item(): ItemState;
  /** Item a's events, in order. */
  events(): { type: string; payload: Record<string, any> }[];
}

/** A git repository with a one-item loop.json, its store started under a lease, and a step context over them. */
function harness(item: Record<string, unknown>, settings: Record<string, unknown> = {}): Harness {
  const { dir, root } = makeRepo("loop-phases-");
  dirs.push(dir);
  writeLoopJson(root, {
    name: "ph",
    defaults: { runner: "agent", maxAttempts: 2, timeouts: { launch: "2m", stall: "10m", verify: "2m" }, landing: "none" },
    runners: { agent: { command: ["sh", "-c", "echo hi > out.txt"] } },
    ...settings,
    items: [{ id: "a", prompt: "write out.txt", verify: "true", ...item }],
  });
  const def = loadDefinition(root);
  const stateRoot = join(dir, "state");
  const store = Store.open(stateRoot, { create: true, actor: "tester" });
  stores.push(store);
  const writer = acquireWriter(store, { actor: "tester", ttlMs: 10 * 60_000, busy: () => new Error("no lease") });
  const warnings: string[] = [];
  const log = createConsola({ level: 3, reporters: [{ log: (o) => warnings.push(o.args.join(" ")) }] });
  const ctx = createStepContext({
    writer,
    def,
    options: { root, stateRoot, actor: "tester", env: { LOOP_KILL_GRACE_MS: "2000", XDG_STATE_HOME: TEST_DEFAULTS.XDG_STATE_HOME! }, log },
  });
  append(ctx, [{ type: "definition_imported", payload: importedDefinition(def, 1) }], "import");
  append(ctx, [{ type: "loop_started", payload: {} }], "start");
  return {
    ctx,
    root,
    stateRoot,
    warnings,
    item: () => projection(ctx).items.a!,
    events: () =>
      (store.db.query("SELECT type, payload FROM events WHERE item = 'a' ORDER BY seq").all() as { type: string; payload: string }[]).map((r) => ({
        type: r.type,
        payload: JSON.parse(r.payload),
      })),
  };
}

/**
 * Attempt 1 of "a" recorded as reserved, started and exited with `exitCode`, without an agent: its
 * worktree is a real checkout of the item branch, holding `leave` uncommitted and `commit` committed.
 */
function exitedAttempt(h: Harness, o: { exitCode?: number; leave?: Record<string, string>; commit?: Record<string, string> } = {}): void {
  const { ctx } = h;
  const dir = sessionDir(h.stateRoot, "a", 0, 1);
  const worktree = worktreeDir(h.ctx.worktrees, "a");
  const branch = itemBranch(ctx.def.name, "a");
  const key = "launch:a:e0:a1";
  append(
    ctx,
    [
      {
        type: "launch_reserved",
        item: "a",
        id: key,
        payload: { attempt: 1, key, runner: "agent", model: null, branch, worktree, sessionDir: dir, sessionId: "s1" },
      },
    ],
    "reserve",
  );
  mkdirSync(dir, { recursive: true });
  // The checkout as the launch makes it (lib/step/checkout.ts): written from the branch's blobs, its own git folder.
  const made = ensureBranch({ repo: h.root, branch, startPoint: "main", aside: "loop/ph/aside/a" });
  mkdirSync(worktree, { recursive: true });
  syncTree({ repo: h.root, dir: worktree, commit: made.head, keep: [], stampsFile: join(h.stateRoot, "trees", "a.json"), untracked: "remove" });
  makeAttemptGitDir({ repo: h.root, gitDir: join(dir, "git"), worktree, branch, head: made.head, refs: {}, excludes: [] });
  writeFileSync(join(dir, "start-head"), made.head + "\n");
  for (const [f, text] of Object.entries(o.commit ?? {})) {
    writeFileSync(join(worktree, f), text);
    git(worktree, "add", f);
    git(worktree, "commit", "-q", "-m", `agent: ${f}`);
  }
  for (const [f, text] of Object.entries(o.leave ?? {})) writeFileSync(join(worktree, f), text);
  const exitCode = o.exitCode ?? 0;
  append(
    ctx,
    [
      {
        type: "session_started",
        item: "a",
        payload: { attempt: 1, pid: null, tmux: null, conversationId: null, argv: ["agent"], log: join(dir, SESSION_FILES.output), resumed: false },
      },
    ],
    "session_started",
  );
  append(
    ctx,
    [{ type: "session_ended", item: "a", payload: { attempt: 1, verdict: "exited", exitCode, signal: null, reason: `agent exited with code ${exitCode}` } }],
    "session_ended",
  );
}

const lastOf = (h: Harness, type: string) =>
  h
    .events()
    .filter((e) => e.type === type)
    .at(-1)?.payload;

/** The verify phase until verify_finished is recorded: it starts the command, then observes it (bounded polls). */
async function verifyToEnd(h: Harness): Promise<void> {
  for (let i = 0; i < 800; i++) {
    const r = await verifyAttempt(h.ctx, itemIn(h.item(), "ended"));
    if (h.item().attempts.at(-1)!.verify) return;
    if (r !== null) await Bun.sleep(25);
  }
  throw new Error(`verify_finished never recorded: ${JSON.stringify(h.events().map((e) => e.type))}`);
}

describe("the verify phase", () => {
  test("a verify that passes on what the agent left uncommitted: committed first, verify_finished passed, next comes landing", async () => {
    const h = harness({ verify: "test -s out.txt" });
    exitedAttempt(h, { leave: { "out.txt": "hi\n" } });
    expect(afterSession(h.item())).toEqual({ kind: "verify" });
    // The command is started detached and recorded; the phase never waits on it.
    const first = await verifyAttempt(h.ctx, itemIn(h.item(), "ended"));
    expect(first).toMatchObject({ action: "waiting", item: "a", reason: expect.stringMatching(/^verify running \(deadline /) });
    expect(
      h
        .events()
        .map((e) => e.type)
        .slice(-2),
    ).toEqual(["verify_reserved", "verify_started"]);
    const dir = sessionDir(h.stateRoot, "a", 0, 1);
    expect(lastOf(h, "verify_reserved")).toMatchObject({
      attempt: 1,
      key: "verify:a:e0:a1",
      command: "test -s out.txt",
      log: join(dir, "verify.log"),
      timeoutMs: 120_000,
    });
    const spawned = JSON.parse(readFileSync(join(dir, "verify-spawned.json"), "utf8"));
    expect(lastOf(h, "verify_started")).toMatchObject({ attempt: 1, pid: spawned.pid, pgid: spawned.pid, adopted: false });
    expect(afterSession(h.item())).toEqual({ kind: "verify" });
    await verifyToEnd(h);
    expect(lastOf(h, "verify_finished")).toMatchObject({ attempt: 1, passed: true, exitCode: 0, timedOut: false, reason: "exit 0" });
    expect(h.item().reason).toBe("verify passed (exit 0)");
    expect(afterSession(h.item())).toEqual({ kind: "land" });
    // The leftover is a commit on the item branch, made by loop.
    expect(git(h.root, "log", "-1", "--format=%s", itemBranch("ph", "a"))).toBe("loop: a attempt 1: changes the agent left uncommitted");
    expect(h.ctx.transitions.at(-1)).toMatchObject({ type: "verify_finished", item: "a", summary: "verify passed (exit 0)" });
  });

  test("a verify that fails: verify_finished failed with the command's output, and the attempt fails into a retry", async () => {
    const h = harness({ verify: "echo 'out.txt is missing'; test -s out.txt" });
    exitedAttempt(h);
    await verifyToEnd(h);
    const v = lastOf(h, "verify_finished")!;
    // The agent changed nothing: the no-progress guard names it (docs/spend.md#guards).
    expect(v).toMatchObject({
      passed: false,
      exitCode: 1,
      code: "exit_nonzero",
      noProgress: true,
      reason: `${NO_PROGRESS}; exit 1`,
      tail: expect.stringContaining("out.txt is missing"),
    });
    expect(readFileSync(v.log, "utf8")).toContain("out.txt is missing");
    const next = afterSession(h.item());
    expect(next).toEqual({ kind: "fail", reason: `verify failed: ${NO_PROGRESS}; exit 1`, code: "verify_failed" });
    await failAttempt(h.ctx, h.item(), next as Extract<typeof next, { kind: "fail" }>);
    expect(lastOf(h, "item_requeued")).toMatchObject({ attempt: 1, failed: true, reason: `verify failed: ${NO_PROGRESS}; exit 1` });
    expect(h.item().status).toBe("pending");
  });

  test("verify: false judges the agent's exit and this attempt's commits", async () => {
    const none = harness({ verify: false });
    exitedAttempt(none);
    await verifyAttempt(none.ctx, itemIn(none.item(), "ended"));
    expect(lastOf(none, "verify_finished")).toMatchObject({
      passed: false,
      code: "no_command_no_change",
      noProgress: true,
      reason: `${NO_PROGRESS}; no verify command; agent exited 0 but left no change`,
    });
    const some = harness({ verify: false });
    exitedAttempt(some, { commit: { "out.txt": "hi\n" } });
    await verifyAttempt(some.ctx, itemIn(some.item(), "ended"));
    expect(lastOf(some, "verify_finished")).toMatchObject({
      passed: true,
      code: "no_command_passed",
      noProgress: false,
      reason: "no verify command; agent exited 0 with 1 commit(s)",
    });
    // A commit and a failing exit: the exit decides.
    const badExit = harness({ verify: false });
    exitedAttempt(badExit, { exitCode: 4, commit: { "out.txt": "hi\n" } });
    await verifyAttempt(badExit.ctx, itemIn(badExit.item(), "ended"));
    expect(lastOf(badExit, "verify_finished")).toMatchObject({ passed: false, code: "no_command_agent_failed", reason: "no verify command; agent exited 4" });
    // Judged inline: no verify command is reserved or started.
    for (const h of [none, some, badExit]) {
      expect(h.events().filter((e) => e.type === "verify_reserved" || e.type === "verify_started")).toEqual([]);
      expect(existsSync(join(sessionDir(h.stateRoot, "a", 0, 1), "verify-launch.json"))).toBe(false);
    }
  });

  test("a worktree that is gone, or whose leftovers cannot be committed on the agent's side, fails the verify with the reason; nothing is thrown", async () => {
    const gone = harness({ verify: "true" });
    exitedAttempt(gone);
    rmSync(worktreeDir(gone.ctx.worktrees, "a"), { recursive: true, force: true });
    await verifyAttempt(gone.ctx, itemIn(gone.item(), "ended"));
    expect(lastOf(gone, "verify_finished")).toMatchObject({ passed: false, log: null, code: "worktree_missing", reason: "worktree is missing" });
    // A stale lock in the agent's own git folder is the seal's to clear: the work is committed.
    const locked = harness({ verify: "test -s out.txt" });
    exitedAttempt(locked, { leave: { "out.txt": "hi\n" } });
    writeFileSync(join(sessionDir(locked.stateRoot, "a", 0, 1), "git", "index.lock"), "");
    await verifyToEnd(locked);
    expect(lastOf(locked, "verify_finished")).toMatchObject({ passed: true, code: "passed" });
    // A git folder the agent broke: the seal fails, seal_failed with git's words for people.
    const broken = harness({ verify: "true" });
    exitedAttempt(broken, { leave: { "out.txt": "hi\n" } });
    writeFileSync(join(sessionDir(broken.stateRoot, "a", 0, 1), "git", "HEAD"), "garbage\n");
    await verifyAttempt(broken.ctx, itemIn(broken.item(), "ended"));
    expect(lastOf(broken, "verify_finished")).toMatchObject({
      passed: false,
      code: "seal_failed",
      reason: expect.stringContaining("seal_failed: committing what the agent left failed on its side: "),
    });
  });
});

describe("a reserved verify whose start was not recorded (the reserving step was killed)", () => {
  const reserve = (h: Harness, ts?: string) => {
    const dir = sessionDir(h.stateRoot, "a", 0, 1);
    const key = "verify:a:e0:a1";
    append(
      h.ctx,
      [
        {
          type: "verify_reserved",
          item: "a",
          id: key,
          ...(ts ? { ts } : {}),
          payload: { attempt: 1, key, command: "true", log: join(dir, "verify.log"), timeoutMs: 120_000 },
        },
      ],
      "verify_reserve",
    );
    return dir;
  };

  test("a wrapper spawned before verify-spawned.json was written is adopted from verify-started.json, by pid and start time", async () => {
    const h = harness({ verify: "true" });
    exitedAttempt(h);
    const dir = reserve(h);
    // The spawn the killed step made, without the file it would have written next.
    const { pid } = startSession({ dir, argv: ["sh", "-c", "true"], cwd: worktreeDir(h.ctx.worktrees, "a"), env: {}, tmuxName: null, kind: "verify" });
    for (let i = 0; i < 2400 && !existsSync(join(dir, "verify-exit.json")); i++) await Bun.sleep(25);
    const started = JSON.parse(readFileSync(join(dir, "verify-started.json"), "utf8"));
    expect(started).toMatchObject({ wrapperPid: pid, wrapperStart: expect.any(String) });
    expect(await verifyAttempt(h.ctx, itemIn(h.item(), "ended"))).toMatchObject({ action: "waiting" });
    expect(lastOf(h, "verify_started")).toMatchObject({ pid, pgid: pid, startTime: started.wrapperStart, adopted: true });
    await verifyToEnd(h);
    expect(lastOf(h, "verify_finished")).toMatchObject({ passed: true, reason: "exit 0" });
  });

  test("a launch record without a wrapper, a live process carrying the attempt's mark: waiting until the launch timeout, then the verify fails as never started", async () => {
    const h = harness({ verify: "true" });
    exitedAttempt(h);
    const dir = reserve(h);
    writeFileSync(join(dir, "verify-launch.json"), "{}\n");
    const old = harness({ verify: "true" });
    exitedAttempt(old);
    const oldDir = reserve(old, new Date(Date.now() - 3 * 60_000).toISOString());
    writeFileSync(join(oldDir, "verify-launch.json"), "{}\n");
    // What the killed step spawned, alive and marked, but with nothing on record yet.
    const marks = [h.item().session!.sessionId, old.item().session!.sessionId];
    const alive = marks.map((mark) =>
      Bun.spawn(["sh", "-c", "echo ready; exec sleep 600"], { env: { ...process.env, [SESSION_MARK_VAR]: mark }, stdout: "pipe" }),
    );
    try {
      await Promise.all(alive.map((p) => p.stdout.getReader().read()));
      expect(await verifyAttempt(h.ctx, itemIn(h.item(), "ended"))).toEqual({ action: "waiting", item: "a", reason: "verify is starting" });
      expect(await verifyAttempt(old.ctx, itemIn(old.item(), "ended"))).toBeNull();
      expect(lastOf(old, "verify_finished")).toMatchObject({ passed: false, exitCode: null, log: null, reason: "verify did not start within 120s" });
      expect(old.events().filter((e) => e.type === "verify_started")).toEqual([]);
    } finally {
      for (const p of alive) p.kill("SIGKILL");
    }
  });

  test("a launch record without a wrapper and nothing alive with the attempt's mark: the step was stopped before its spawn; the verify is started at once, however old", async () => {
    const h = harness({ verify: "true" });
    exitedAttempt(h);
    const dir = reserve(h, new Date(Date.now() - 3 * 60_000).toISOString());
    writeFileSync(join(dir, "verify-launch.json"), "{}\n");
    expect(await verifyAttempt(h.ctx, itemIn(h.item(), "ended"))).toMatchObject({ action: "waiting", reason: expect.stringContaining("verify running") });
    // Its deadline counts from this start, not from the reservation three minutes ago.
    const started = lastOf(h, "verify_started");
    expect(started).toMatchObject({ adopted: false });
    expect(Date.parse(started!.deadline as string)).toBeGreaterThan(Date.now() + 60_000);
    await verifyToEnd(h);
    expect(lastOf(h, "verify_finished")).toMatchObject({ passed: true, reason: "exit 0" });
  });
});

describe("the land and settle phases", () => {
  test("landing merge: the branch is merged into the target in the loop's landing worktree, then the item settles passed", async () => {
    const h = harness({ verify: "true" }, { defaults: { runner: "agent", landing: "merge" } });
    exitedAttempt(h, { commit: { "out.txt": "hi\n" } });
    await verifyToEnd(h);
    landAttempt(h.ctx, itemIn(h.item(), "ended"));
    const target = h.ctx.def.target;
    expect(lastOf(h, "landing_finished")).toMatchObject({ outcome: "merged", target, branch: itemBranch("ph", "a"), commit: git(h.root, "rev-parse", target) });
    expect(git(h.root, "log", "-1", "--format=%s", target)).toBe("loop: land a (attempt 1)");
    expect(git(h.root, "show", `${target}:out.txt`)).toBe("hi");
    // The operator's checkout is untouched.
    expect(git(h.root, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
    expect(existsSync(join(h.root, "out.txt"))).toBe(false);
    const next = afterSession(h.item());
    expect(next).toEqual({ kind: "settle", landed: true });
    await settleAttempt(h.ctx, itemIn(h.item(), "ended"), { landed: true });
    expect(lastOf(h, "item_settled")).toMatchObject({ outcome: "passed", reason: "verify passed (exit 0); merged" });
    expect(lastOf(h, "session_closed")).toMatchObject({ worktreeRemoved: true });
    expect(existsSync(worktreeDir(h.ctx.worktrees, "a"))).toBe(false);
  });

  test("a merge conflict on the target: landing_finished conflict, the item settles failed, the checkout is kept", async () => {
    const h = harness({ verify: "true" }, { defaults: { runner: "agent", landing: "merge" } });
    const target = h.ctx.def.target;
    git(h.root, "branch", target, "main");
    const other = join(h.stateRoot, "..", "other");
    git(h.root, "worktree", "add", "-q", other, target);
    writeFileSync(join(other, "out.txt"), "theirs\n");
    git(other, "add", "out.txt");
    git(other, "commit", "-q", "-m", "theirs");
    git(h.root, "worktree", "remove", other);
    exitedAttempt(h, { commit: { "out.txt": "ours\n" } });
    // The item branch started from main (the test made it so), not from the target: they conflict.
    await verifyToEnd(h);
    landAttempt(h.ctx, itemIn(h.item(), "ended"));
    expect(lastOf(h, "landing_finished")).toMatchObject({ outcome: "conflict", code: "conflict", reason: "merge conflict in out.txt", commit: null });
    expect(git(h.root, "log", "-1", "--format=%s", target)).toBe("theirs");
    expect(afterSession(h.item())).toEqual({ kind: "settle", landed: false });
    await settleAttempt(h.ctx, itemIn(h.item(), "ended"), { landed: false });
    expect(lastOf(h, "item_settled")).toMatchObject({ outcome: "failed", code: "merge_conflict", reason: "merge_conflict: merge conflict in out.txt" });
    expect(existsSync(worktreeDir(h.ctx.worktrees, "a"))).toBe(true);
  });

  test("landing none: the branch is the deliverable", async () => {
    const h = harness({ verify: "true" });
    exitedAttempt(h, { commit: { "out.txt": "hi\n" } });
    await verifyToEnd(h);
    landAttempt(h.ctx, itemIn(h.item(), "ended"));
    expect(lastOf(h, "landing_finished")).toMatchObject({ outcome: "none", target: null, reason: `branch ${itemBranch("ph", "a")} is the deliverable` });
  });
});

describe("the launch and observe phases", () => {
  test("launch reserves, then starts the session; the observe phase sees it exit; verify, land and settle follow", async () => {
    const h = harness({ verify: "test -s out.txt" });
    const outcome = await launchAttempt(h.ctx, h.item());
    expect(outcome).toEqual({ action: "launched", item: "a", reason: null });
    expect(h.events().map((e) => e.type)).toEqual(["launch_reserved", "workspace_prepared", "session_started"]);
    const dir = sessionDir(h.stateRoot, "a", 0, 1);
    expect(lastOf(h, "launch_reserved")).toMatchObject({ attempt: 1, key: "launch:a:e0:a1", sessionDir: dir, branch: itemBranch("ph", "a") });
    const spawned = JSON.parse(readFileSync(join(dir, "spawned.json"), "utf8"));
    expect(lastOf(h, "session_started")).toMatchObject({ attempt: 1, pid: spawned.pid, tmux: null });
    // The agent runs detached; the observe phase reports it at work until it has exited.
    for (let i = 0; i < 2400 && !existsSync(join(dir, SESSION_FILES.exit)); i++) await Bun.sleep(25);
    expect(await observeRunning(h.ctx, itemIn(h.item(), "running"))).toBeNull();
    expect(lastOf(h, "session_ended")).toMatchObject({ verdict: "exited", exitCode: 0 });
    await verifyToEnd(h);
    landAttempt(h.ctx, itemIn(h.item(), "ended"));
    await settleAttempt(h.ctx, itemIn(h.item(), "ended"), { landed: true });
    expect(h.item().status).toBe("passed");
    expect(h.ctx.errors).toEqual([]);
  });

  test("a runner that cannot start after its reservation: the attempt is given back (environment_fault), the loop paused with the reason, not listed again in the step's errors", async () => {
    // Relative to the worktree: checkable only once the reservation made the worktree.
    const h = harness({}, { runners: { agent: { command: ["./no-such-agent"] } } });
    const out = await launchAttempt(h.ctx, h.item());
    expect(out.action).toBe("paused");
    expect(h.events().map((e) => e.type)).toEqual(["launch_reserved", "workspace_prepared", "environment_fault"]);
    expect(lastOf(h, "environment_fault")).toMatchObject({
      kind: "program_not_found",
      attempt: 1,
      reason: expect.stringContaining('program "./no-such-agent" not found'),
    });
    expect(out.reason).toContain('environment fault launching a: could not launch: runner "agent": program "./no-such-agent" not found');
    expect(h.ctx.errors).toEqual([]);
    const it = h.item();
    expect({ status: it.status, failures: it.failures }).toEqual({ status: "pending", failures: 0 });
    expect(projection(h.ctx).loop.state).toBe("paused");
    // Nothing was spawned for the reservation.
    expect(existsSync(join(sessionDir(h.stateRoot, "a", 0, 1), "spawned.json"))).toBe(false);
  });

  test("a runner whose program is not on PATH: paused before anything is reserved", async () => {
    const h = harness({}, { runners: { agent: { command: ["loop-test-no-such-agent"] } } });
    expect((await launchAttempt(h.ctx, h.item())).action).toBe("paused");
    expect(h.events().map((e) => e.type)).toEqual(["environment_fault"]);
    expect(lastOf(h, "environment_fault")).toMatchObject({ kind: "program_not_found", attempt: null });
    expect(existsSync(sessionDir(h.stateRoot, "a", 0, 1))).toBe(false);
  });

  test("a step whose lease was taken over launches nothing: no reservation, no session folder, the error thrown", async () => {
    const h = harness({});
    const other = Store.open(h.stateRoot, { actor: "other" });
    stores.push(other);
    expect(other.acquireLease(60_000, () => false).ok).toBe(true); // the holder looks dead to it
    await expect(launchAttempt(h.ctx, h.item())).rejects.toThrow(LeaseLostError);
    expect(h.events().map((e) => e.type)).toEqual([]);
    expect(existsSync(sessionDir(h.stateRoot, "a", 0, 1))).toBe(false);
  });
});
