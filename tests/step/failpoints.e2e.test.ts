// Crash safety (docs/failpoints.md): for every failpoint in lib/shared/failpoint.ts, a real loop is run with
// LOOP_FAILPOINT=<name> until a loop command dies by SIGKILL at that point (proving the point is
// reachable), then without it until the loop drains; the drained loop must show no second launch of
// any attempt, a gapless and replay-clean log, nothing stuck or left open, repaired
// materializations and no process left behind. A seeded random-kill run checks the same.
// docs/failpoints.md is checked against FAILPOINTS and against the call sites in lib/.
import { worktreesOf } from "../helpers/env.ts";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { COMMIT_LABELS, EFFECT_POINTS, FAILPOINTS } from "../../lib/shared/failpoint.ts";
import { materialize } from "../../lib/log/materialize.ts";
import { Store } from "../../lib/log/store.ts";
import { markedProcesses } from "../../lib/shared/process.ts";
import { runInProcess } from "../helpers/cli.ts";
import {
  checkDrained,
  cleanupDir,
  countingRunner,
  countingVerify,
  type Expected,
  finish,
  git,
  LoopUnderTest,
  makeRepo,
  prng,
  readEvents,
  readLaunches,
  REPO,
  Semaphore,
  shq,
  sleep,
  spawnLoop,
  writeLoopJson,
} from "../helpers/project.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) cleanupDir(d);
});

// Each case starts a few dozen short processes one after another; four at a time keep 2 cores busy (they mostly wait on their agents).
const slots = new Semaphore(4);
const CASE_TIMEOUT = 15 * 60_000; // includes the wait for a slot; every wait inside is bounded on its own

const TIMEOUTS = { launch: "2m", stall: "30m", verify: "2m" };

/** The demo backlog: add-docs, add-license (fails its first attempt), add-changelog (needs add-docs). */
function mainDefinition(l: LoopUnderTest, maxAttempts = 2, timeouts = TIMEOUTS) {
  const verify = (cmd: string) => countingVerify(l.verifyLog, cmd);
  return {
    name: "crash",
    defaults: { runner: "counted", maxAttempts, timeouts, landing: "merge" },
    runners: { counted: countingRunner(l.launchLog) },
    items: [
      {
        id: "add-docs",
        prompt: "Write a README.\n@demo write README.md # tiny\\nA demo project.\n@demo commit docs: add README",
        verify: verify("test -s README.md"),
      },
      {
        id: "add-license",
        // Every attempt after the first passes: a launch interrupted by a kill advances the attempt
        // number without running, so the passing attempt must not be pinned to attempt 2.
        prompt:
          "Add a LICENSE (forgotten on the first attempt).\n@demo attempt 1 write NOTES.md later\n@demo attempt 1 exit 0\n@demo write LICENSE MIT License",
        verify: verify("test -s LICENSE"),
      },
      {
        id: "add-changelog",
        prompt: "Add a CHANGELOG.\n@demo write CHANGELOG.md - added README.md",
        dependsOn: ["add-docs"],
        verify: verify("test -s README.md && test -s CHANGELOG.md"),
      },
    ],
  };
}

type ScenarioName =
  | "main"
  | "ctl-skip"
  | "ctl-stop"
  | "ctl-skip-run-first"
  | "ctl-stop-verify"
  | "ctl-stop-verify-run-first"
  | "ask"
  | "edge"
  | "seeded"
  | "reset"
  | "budget"
  | "drain";

interface Scenario {
  /** What the scenario does, for people reading a failure. */
  what: string;
  run(l: LoopUnderTest, fp: string): Promise<Expected>;
}

async function waitFor(what: string, l: LoopUnderTest, cond: () => boolean, boundMs = 60_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}\n${l.trace()}`);
    await sleep(50);
  }
}

const SCENARIOS: Record<ScenarioName, Scenario> = {
  main: {
    what: "3 demo items, one dependency, one item failing its first attempt, landing merge",
    async run(l) {
      writeLoopJson(l.root, mainDefinition(l));
      await l.untilDrained();
      const landed = git(l.root, "ls-tree", "--name-only", "loop/crash/landed").split("\n");
      for (const f of ["README.md", "LICENSE", "CHANGELOG.md"])
        if (!landed.includes(f)) throw new Error(`${f} did not land: ${landed.join(" ")}\n${l.trace()}`);
      // Each item merged exactly once, even when a step died right after its merge.
      const merges = git(l.root, "log", "--format=%s", "loop/crash/landed")
        .split("\n")
        .filter((m) => m.startsWith("loop: land "));
      const perItem = ["add-docs", "add-license", "add-changelog"].map((id) => merges.filter((m) => m.startsWith(`loop: land ${id} `)).length);
      if (perItem.some((n) => n !== 1)) throw new Error(`merges on the target: ${merges.join(" | ")}\n${l.trace()}`);
      return { outcome: "Succeeded", items: { "add-docs": "passed", "add-license": "passed", "add-changelog": "passed" } };
    },
  },
  "ctl-skip": {
    what: "an agent working; `loop ctl skip --yes` ends it (repeated by the operator after a crash)",
    run: (l) => ctlScenario(l, "skip"),
  },
  "ctl-stop": {
    what: "an agent working; `loop ctl stop --yes` ends it and stops the loop; resume; it passes on attempt 2",
    run: (l) => ctlScenario(l, "stop"),
  },
  "ctl-skip-run-first": {
    what: "`loop ctl skip --yes` dies after ending the session; nobody repeats it and `loop run` goes on: the ended attempt fails, attempt 2 passes",
    run: (l) => ctlScenario(l, "skip", { repeat: false }),
  },
  "ctl-stop-verify": {
    what: "a verify command running; `loop ctl stop --yes` ends it (repeated by the operator after a crash); resume; attempt 2 passes",
    run: (l) => ctlVerifyScenario(l),
  },
  "ctl-stop-verify-run-first": {
    what: "`loop ctl stop --yes` dies after ending a running verify; nobody repeats it and `loop run` goes on: the verify ended by a signal fails the attempt, attempt 2 passes",
    run: (l) => ctlVerifyScenario(l, { repeat: false }),
  },
  ask: {
    what: "the agent asks a question; the loop pauses; reply and resume; attempt 2 gets the reply and passes",
    async run(l) {
      writeLoopJson(l.root, {
        name: "ask",
        defaults: { runner: "counted", timeouts: TIMEOUTS },
        runners: { counted: countingRunner(l.launchLog) },
        items: [
          {
            id: "pick-license",
            prompt: "Add a LICENSE.\n@demo attempt 1 ask Which license should I use?\n@demo attempt 2 write LICENSE MIT License",
            verify: "test -s LICENSE",
          },
          { id: "add-notes", prompt: "Add notes.\n@demo write NOTES.md notes", verify: "test -s NOTES.md" },
        ],
      });
      let replied = false;
      await l.untilDrained({
        onPaused: async (run) => {
          if (replied || run.action !== "paused") throw new Error(`unexpected ${run.action}: ${run.reason}\n${l.trace()}`);
          await l.ctl(["reply", "--work-item", "pick-license", "MIT, please"]);
          await l.ctl(["resume"]);
          replied = true;
        },
      });
      if (!replied) throw new Error(`the loop never paused for the question\n${l.trace()}`);
      const handoff = readFileSync(join(l.stateRoot, "sessions", "pick-license", "2", "handoff.md"), "utf8");
      if (!handoff.includes("MIT, please")) throw new Error(`attempt 2's handoff lacks the reply:\n${handoff}`);
      return { outcome: "Succeeded", items: { "pick-license": "passed", "add-notes": "passed" } };
    },
  },
  edge: {
    what: "a runner not found pauses the loop (environment_fault before any reservation); a relative one fails after its reservation (the attempt given back); each fixed and resumed; notify on each fault and on the drain; an item failing with maxAttempts 1, its dependent blocked, drain Failed; then a new item reopens the loop",
    async run(l) {
      const notifyLog = join(l.dir, "notify.jsonl");
      const ghosts = {
        absent: { command: [join(l.dir, "no-such-agent")] },
        // Relative to the worktree, which the first attempt creates after its reservation.
        relative: { command: ["./no-such-agent"] },
        fixed: countingRunner(l.launchLog),
      };
      let ghost: keyof typeof ghosts = "absent";
      const def = (withNew: boolean) => ({
        name: "edge",
        defaults: { runner: "counted", timeouts: TIMEOUTS },
        runners: { counted: countingRunner(l.launchLog), ghost: ghosts[ghost] },
        notify: { command: ["sh", "-c", `cat >> ${shq(notifyLog)}`] },
        items: [
          { id: "ghost-item", prompt: "Run by a runner fixed on the way.\n@demo write G.md g", runner: "ghost", verify: "test -s G.md" },
          { id: "broken-item", prompt: "Never passes.\n@demo write B.md b", maxAttempts: 1, verify: "false" },
          { id: "after-broken", prompt: "Needs the broken one.\n@demo write A.md a", dependsOn: ["broken-item"], verify: "test -s A.md" },
          ...(withNew ? [{ id: "late-item", prompt: "Added after the drain.\n@demo write LATE.md late", verify: "test -s LATE.md" }] : []),
        ],
      });
      writeLoopJson(l.root, def(false));
      // Each pause is an environment fault: the operator fixes the runner one step further, then resumes.
      const onPaused = async (r: any) => {
        if (!/^environment fault/.test(r.reason ?? "")) throw new Error(`paused for another reason: ${r.reason}\n${l.trace()}`);
        if (ghost === "fixed") throw new Error(`an environment fault after the runner was fixed: ${r.reason}\n${l.trace()}`);
        ghost = ghost === "absent" ? "relative" : "fixed";
        writeLoopJson(l.root, def(false));
        await l.ctl(["resume"]);
      };
      const first = await l.untilDrained({ onPaused });
      if (first.reason !== "Failed") throw new Error(`first drain: ${first.reason}\n${l.trace()}`);
      const ghostItem = l.state().items.find((i: any) => i.id === "ghost-item");
      if (ghostItem.failures !== 0) throw new Error(`the environment faults spent attempts of ghost-item: ${JSON.stringify(ghostItem)}\n${l.trace()}`);
      writeLoopJson(l.root, def(true));
      await l.untilDrained({ onPaused });
      // notify ran (at least once) for every condition it recorded, and each condition is recorded once.
      const keys = readEvents(l.stateRoot)
        .filter((e) => e.type === "notified")
        .map((e) => JSON.parse(e.payload).key as string);
      const sent = existsSync(notifyLog)
        ? readFileSync(notifyLog, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line).key as string)
        : [];
      if (
        new Set(keys).size !== keys.length ||
        keys.some((k) => !sent.includes(k)) ||
        sent.some((k) => !keys.includes(k)) ||
        keys.filter((k) => k.startsWith("environment:")).length < 1
      )
        throw new Error(`notified ${JSON.stringify(keys)}, notify ran for ${JSON.stringify(sent)}\n${l.trace()}`);
      return { outcome: "Failed", items: { "ghost-item": "passed", "broken-item": "failed", "after-broken": "blocked", "late-item": "passed" } };
    },
  },
  reset: {
    what: "an agent working; `loop reset --yes` ends it and erases the item (repeated by the operator after a crash); it passes as attempt 1 of epoch 1",
    run: (l) => resetScenario(l),
  },
  budget: {
    what: "an agent reporting its usage as it works crosses its item's budget mid-session: the item settles budget_exhausted, its dependent is blocked, the other item passes",
    async run(l) {
      writeLoopJson(l.root, {
        name: "budget",
        defaults: { runner: "counted", timeouts: TIMEOUTS },
        runners: { counted: countingRunner(l.launchLog) },
        items: [
          {
            id: "spender",
            prompt: "Spends without end.\n@demo usage 100 10\n@demo sleep 0.5\n@demo usage 5000 500\n@demo sleep 300\n@demo write S.md s",
            verify: "test -s S.md",
            budget: { tokens: 3000 },
          },
          { id: "after-spender", prompt: "Needs the spender.\n@demo write A.md a", dependsOn: ["spender"], verify: "test -s A.md" },
          { id: "other", prompt: "Plain.\n@demo write O.md o", verify: "test -s O.md" },
        ],
      });
      await l.untilDrained();
      const spender = l.state().items.find((i: { id: string }) => i.id === "spender");
      if (spender.code !== "budget_exhausted" || spender.attempts !== 1) throw new Error(`spender: ${JSON.stringify(spender)}\n${l.trace()}`);
      const stops = readEvents(l.stateRoot).filter((e) => e.type === "budget_stopped");
      if (stops.length !== 1) throw new Error(`${stops.length} budget stops\n${l.trace()}`);
      return { outcome: "Failed", items: { spender: "failed", "after-spender": "blocked", other: "passed" } };
    },
  },
  drain: {
    what: "a watcher stopped by SIGTERM while an agent works (maxAttempts 1), everything beside it killed as a pod's end does; the next steps give the attempt back and it passes",
    async run(l) {
      writeLoopJson(l.root, {
        name: "drain",
        defaults: { runner: "counted", timeouts: TIMEOUTS },
        runners: { counted: countingRunner(l.launchLog) },
        items: [
          {
            id: "long",
            prompt: "Works long on attempt 1.\n@demo attempt 1 sleep 300\n@demo write L.md l",
            verify: countingVerify(l.verifyLog, "test -s L.md"),
            maxAttempts: 1,
          },
        ],
      });
      await drainWatcher(l, () => readLaunches(l.launchLog).includes("long 1"));
      await l.untilDrained();
      const item = l.state().items.find((i: { id: string }) => i.id === "long");
      if (item.failures !== 0) throw new Error(`the drained attempt was counted: ${JSON.stringify(item)}\n${l.trace()}`);
      return { outcome: "Succeeded", items: { long: "passed" } };
    },
  },
  seeded: {
    what: "a history from a writer that settled an item without closing its live session; the sweep closes it",
    async run(l, fp) {
      writeLoopJson(l.root, {
        name: "seeded",
        defaults: { runner: "counted", timeouts: TIMEOUTS },
        runners: { counted: countingRunner(l.launchLog) },
        items: [
          { id: "left-open", prompt: "Works for a long time.\n@demo sleep 300\n@demo write S.md s", verify: "test -s S.md" },
          { id: "next-item", prompt: "Plain.\n@demo write N.md n", verify: "test -s N.md" },
        ],
      });
      const r = await l.step(); // unarmed setup
      if (r?.action !== "launched") throw new Error(`setup: ${JSON.stringify(r)}`);
      await waitFor("the agent of left-open to start", l, () => readLaunches(l.launchLog).includes("left-open 1"));
      const store = Store.open(l.stateRoot, { actor: "older-loop" });
      try {
        store.append(
          [
            { type: "control_recorded", item: "left-open", payload: { verb: "skip", text: "seeded" } },
            {
              type: "item_settled",
              item: "left-open",
              payload: { attempt: 1, outcome: "skipped", code: "operator_skipped", reason: "skipped by a writer that did not close the session" },
            },
          ],
          { actor: "older-loop" },
        );
        materialize(l.stateRoot, store);
      } finally {
        store.close();
      }
      l.arm(fp);
      await l.untilDrained();
      const closed = readEvents(l.stateRoot).filter((e) => e.type === "session_closed" && e.item === "left-open");
      if (closed.length !== 1) throw new Error(`left-open closed ${closed.length} times\n${l.trace()}`);
      return { outcome: "Succeeded", items: { "left-open": "skipped", "next-item": "passed" } };
    },
  },
};

/**
 * Given an agent working on attempt 1 (with uncommitted work) and `loop reset --yes` killed at the
 * armed point, when the operator runs the same reset again, then the end state is the one an
 * uninterrupted reset leaves: the agent ended, one work_item_reset that found state, one archive of
 * the branch (never two), nothing of the old epoch on disk; the item then passes as attempt 1 of epoch 1.
 */
async function resetScenario(l: LoopUnderTest): Promise<Expected> {
  const def = (sleepFirst: boolean) => ({
    name: "reset-x",
    defaults: { runner: "counted", timeouts: TIMEOUTS },
    runners: { counted: countingRunner(l.launchLog) },
    items: [
      { id: "busy-item", prompt: `Works on B.md.\n@demo write WIP.md wip${sleepFirst ? "\n@demo sleep 300" : ""}\n@demo write B.md b`, verify: "test -s B.md" },
      { id: "other-item", prompt: "Plain.\n@demo write O.md o", verify: "test -s O.md" },
    ],
  });
  writeLoopJson(l.root, def(true));
  const r = await l.step();
  if (r?.action !== "launched" || r.item !== "busy-item") throw new Error(`expected busy-item launched, got ${JSON.stringify(r)}\n${l.trace()}`);
  await waitFor("the agent of busy-item to start", l, () => readLaunches(l.launchLog).includes("busy-item 1"));
  const wt = join(worktreesOf(l.stateRoot), "busy-item");
  await waitFor("the agent's uncommitted work", l, () => existsSync(join(wt, "WIP.md")));
  const mark = readEvents(l.stateRoot)
    .filter((e) => e.type === "launch_reserved")
    .map((e) => JSON.parse(e.payload).sessionId as string)[0]!;
  const args = ["reset", "--work-item", "busy-item", "--yes", "--json"];
  await l.cmd(args, [0, 1]);
  // The operator saw the command die and runs it again: after a kill past the commit it finds nothing (exit 1).
  const again = await l.cmd(args, [0, 1]);
  if (l.killedBy === null) throw new Error(`the reset was not killed\n${l.trace()}`);
  const resets = readEvents(l.stateRoot)
    .filter((e) => e.type === "work_item_reset")
    .map((e) => JSON.parse(e.payload));
  const found = resets.filter((p) => p.found);
  const problems: string[] = [];
  if (found.length !== 1) problems.push(`${found.length} resets that found state: ${JSON.stringify(resets)}`);
  if (found[0] && (found[0].archivedBranch !== "loop/reset-x/reset/busy-item/e0" || found[0].errors.length !== 0))
    problems.push(`reset: ${JSON.stringify(found[0])}`);
  const archives = git(l.root, "for-each-ref", "--format=%(refname:short)", "refs/heads/loop/reset-x/reset/").split("\n").filter(Boolean);
  if (JSON.stringify(archives) !== JSON.stringify(["loop/reset-x/reset/busy-item/e0"])) problems.push(`archives: ${archives.join(", ")}`);
  if (git(l.root, "show", "loop/reset-x/reset/busy-item/e0:WIP.md") !== "wip") problems.push("the agent's work is not on the archive");
  if (existsSync(wt) || existsSync(join(l.stateRoot, "sessions", "busy-item"))) problems.push("the checkout or the session folder is still there");
  if (markedProcesses([mark]).length) problems.push("a process of the old session is alive");
  const st = l.state();
  const item = st?.items.find((i: { id: string }) => i.id === "busy-item");
  if (item?.epoch !== 1 || item?.attempts !== 0 || item?.status !== "pending") problems.push(`state.json: ${JSON.stringify(item)}`);
  if (again.code === 1 && !(again.json?.items?.[0]?.found === false)) problems.push(`second reset: ${again.stdout}`);
  if (problems.length) throw new Error(`${problems.join("\n")}\n${l.trace()}`);
  writeLoopJson(l.root, def(false));
  await l.untilDrained();
  return { outcome: "Succeeded", items: { "busy-item": "passed", "other-item": "passed" } };
}

async function ctlScenario(l: LoopUnderTest, verb: "skip" | "stop", o: { repeat?: boolean } = {}): Promise<Expected> {
  writeLoopJson(l.root, {
    name: `ctl-${verb}`,
    defaults: { runner: "counted", timeouts: TIMEOUTS },
    runners: { counted: countingRunner(l.launchLog) },
    items: [
      { id: "busy-item", prompt: "Takes long on attempt 1.\n@demo attempt 1 sleep 300\n@demo write B.md b", verify: "test -s B.md" },
      { id: "other-item", prompt: "Plain.\n@demo write O.md o", verify: "test -s O.md" },
    ],
  });
  const r = await l.step();
  if (r?.action !== "launched" || r.item !== "busy-item") throw new Error(`expected busy-item launched, got ${JSON.stringify(r)}\n${l.trace()}`);
  await waitFor("the agent of busy-item to start", l, () => readLaunches(l.launchLog).includes("busy-item 1"));
  const args = verb === "skip" ? ["skip", "--yes", "--work-item", "busy-item"] : ["stop", "--yes"];
  await l.ctl(args);
  if (o.repeat === false) {
    // Nobody repeats the command: the next steps find the ended session and treat it as an attempt.
    await l.untilDrained();
    return { outcome: "Succeeded", items: { "busy-item": "passed", "other-item": "passed" } };
  }
  // The operator saw the command die and runs it again; a recorded one is a no-op the second time.
  await l.ctl(args);
  if (verb === "stop") await l.ctl(["resume"]);
  await l.untilDrained();
  return { outcome: "Succeeded", items: { "busy-item": verb === "skip" ? "skipped" : "passed", "other-item": "passed" } };
}

/** A verify command at work (attempt 1's waits), ended by `loop ctl stop --yes`. */
async function ctlVerifyScenario(l: LoopUnderTest, o: { repeat?: boolean } = {}): Promise<Expected> {
  writeLoopJson(l.root, {
    name: "ctl-verify",
    defaults: { runner: "counted", timeouts: TIMEOUTS },
    runners: { counted: countingRunner(l.launchLog) },
    items: [
      { id: "verifying", prompt: "Plain.\n@demo write V.md v", verify: countingVerify(l.verifyLog, '[ "$LOOP_ATTEMPT" != 1 ] || sleep 300; test -s V.md') },
      { id: "other-item", prompt: "Plain.\n@demo write O.md o", verify: "test -s O.md" },
    ],
  });
  for (let i = 0; i < 100 && !readLaunches(l.verifyLog).includes("verifying 1"); i++) {
    const r = await l.step();
    if (r === null || !["launched", "waiting"].includes(r.action)) throw new Error(`expected verifying at work, got ${JSON.stringify(r)}\n${l.trace()}`);
    await l.waitForSession(500);
  }
  await waitFor("the verify of attempt 1 to run", l, () => readLaunches(l.verifyLog).includes("verifying 1"));
  await l.ctl(["stop", "--yes"]);
  if (o.repeat !== false) {
    // The operator saw the command die and runs it again; a recorded one is a no-op the second time.
    await l.ctl(["stop", "--yes"]);
    await l.ctl(["resume"]);
  }
  await l.untilDrained({
    onPaused: async (run) => {
      if (run.action !== "stopped") throw new Error(`unexpected ${run.action}: ${run.reason}\n${l.trace()}`);
      await l.ctl(["resume"]);
    },
  });
  return { outcome: "Succeeded", items: { verifying: "passed", "other-item": "passed" } };
}

/**
 * A `loop run --watch --forever` (armed like every command) until `ready`, then SIGTERM, as a pod's
 * end begins; it exits 130, or dies at the armed failpoint. Then the rest of the pod's end: every
 * process of the loop's sessions killed at once.
 */
async function drainWatcher(l: LoopUnderTest, ready: () => boolean): Promise<void> {
  const armed = l.armed;
  const proc = spawnLoop(["run", "--watch", "--forever", "--interval", "200ms", "--json", "--root", l.root], {
    env: { ...l.o.env, ...(armed ? { LOOP_FAILPOINT: l.o.failpoint! } : {}) },
  });
  // Read as it runs: a watcher blocked on a full pipe would never step.
  const ended = finish(proc);
  try {
    await waitFor("the watcher's agent at work", l, ready);
  } finally {
    proc.kill("SIGTERM");
  }
  const r = await ended;
  const err = r.stderr;
  l.history.push(`run --watch${armed ? ` [${l.o.failpoint}]` : ""} SIGTERM -> ${r.signal ?? r.code}`);
  if (r.signal === "SIGKILL" && armed && err.includes(`failpoint ${l.o.failpoint}: killing self`))
    l.killedBy = { args: ["run", "--watch"], stderr: err, pid: proc.pid };
  else if (r.code !== 130) throw new Error(`the watcher ended ${r.signal ?? r.code}, not 130:\n${err}\n${l.trace()}`);
  const marks = readEvents(l.stateRoot)
    .filter((e) => e.type === "launch_reserved")
    .map((e) => JSON.parse(e.payload).sessionId as string);
  for (const m of markedProcesses(marks))
    try {
      process.kill(m.pid, "SIGKILL");
    } catch {}
  await waitFor("the pod's processes gone", l, () => markedProcesses(marks).length === 0);
}

const labels = (names: readonly string[]) => names.flatMap((n) => [`${n}:before_commit`, `${n}:after_commit`]);

/** Failpoints only a loop with a forge reaches, proven against the fake GitHub (tests/step/forge/landing.e2e.test.ts). */
const FORGE_FAILPOINTS = [
  "landing:after_push",
  "landing:after_pr",
  "landing:before_merge_call",
  "landing:after_merge_call",
  "forge:before_commit",
  "forge:after_commit",
];
/** The reactions' failpoints, proved by tests/step/forge/reactions.e2e.test.ts (they need a fake forge too). */
const REACTION_FAILPOINTS = ["reaction:after_seen", "reaction:before_commit", "reaction:after_commit"];
/** Moving worktrees an older version left in the state root, proved by tests/step/relocate.e2e.test.ts (it needs that older layout). */
const RELOCATE_FAILPOINTS = ["relocate:after_move", "relocate:before_commit", "relocate:after_commit"];
/** A kill between a checkout's move to the trash and its sweep, proved by tests/step/trash.e2e.test.ts (the next step's sweep). */
const TRASH_FAILPOINTS = ["trash:after_move"];
/** A kill between a spare checkout's folder and its records, proved by tests/step/spare-checkout.e2e.test.ts. */
const SPARE_FAILPOINTS = ["spare:after_move", "spare:after_records"];
/** A kill inside the copy of what setup made (kept for the next items, or copied into one's checkout), proved by tests/step/setup-once.e2e.test.ts. */
const SETUP_FAILPOINTS = ["setup:during_copy"];
/** A kill during the verify on the base, proved by tests/step/base-verify.e2e.test.ts (a loop that runs one). */
const BASE_VERIFY_FAILPOINTS = ["base_verify:after_start", "base_verify:before_commit", "base_verify:after_commit"];

/** Which scenario proves each failpoint: the first loop command that passes the point dies there. */
const CASES: [string, ScenarioName][] = [
  ...EFFECT_POINTS.filter(
    (n) =>
      !FORGE_FAILPOINTS.includes(n) &&
      !REACTION_FAILPOINTS.includes(n) &&
      !RELOCATE_FAILPOINTS.includes(n) &&
      !TRASH_FAILPOINTS.includes(n) &&
      !SETUP_FAILPOINTS.includes(n) &&
      !SPARE_FAILPOINTS.includes(n) &&
      !BASE_VERIFY_FAILPOINTS.includes(n) &&
      !n.startsWith("reset:") &&
      !n.startsWith("budget:") &&
      !n.startsWith("watch:"),
  ).map((n): [string, ScenarioName] => [n, "main"]),
  ...labels([
    "import",
    "start",
    "drain",
    "reserve",
    "session_started",
    "session_ended",
    "requeue",
    "verify_reserve",
    "verify_started",
    "verify",
    "landing",
    "settle",
  ]).map((n): [string, ScenarioName] => [n, "main"]),
  ...[...labels(["ctl"]), "close:before_kill", "close:after_kill", "close:after_worktree"].map((n): [string, ScenarioName] => [n, "ctl-stop-verify"]),
  ...["ctl:before_commit", "close:after_kill"].map((n): [string, ScenarioName] => [n, "ctl-stop-verify-run-first"]),
  ...labels(["ctl"]).map((n): [string, ScenarioName] => [n, "ctl-skip"]),
  ...labels(["ctl"]).map((n): [string, ScenarioName] => [n, "ctl-stop"]),
  ...["close:before_kill", "close:after_kill", "close:after_worktree"].map((n): [string, ScenarioName] => [n, "ctl-skip"]),
  ...["close:before_kill", "close:after_kill", "close:after_worktree"].map((n): [string, ScenarioName] => [n, "ctl-stop"]),
  ...["ctl:before_commit", "close:after_kill", "close:after_worktree"].map((n): [string, ScenarioName] => [n, "ctl-skip-run-first"]),
  ...labels(["needs_input"]).map((n): [string, ScenarioName] => [n, "ask"]),
  ...labels(["launch_failed", "fault", "notify", "block", "reopen"]).map((n): [string, ScenarioName] => [n, "edge"]),
  ...labels(["close"]).map((n): [string, ScenarioName] => [n, "seeded"]),
  ...["reset:after_close", "reset:after_files", "reset:after_branch", ...labels(["reset"])].map((n): [string, ScenarioName] => [n, "reset"]),
  ...["close:before_kill", "close:after_kill", "close:after_worktree"].map((n): [string, ScenarioName] => [n, "reset"]),
  ...["budget:before_close", ...labels(["usage", "budget"]), "close:before_kill", "close:after_kill"].map((n): [string, ScenarioName] => [n, "budget"]),
  ...["watch:after_proof", ...labels(["watch"])].map((n): [string, ScenarioName] => [n, "drain"]),
];

async function runCase(fp: string, scenario: ScenarioName): Promise<void> {
  const { dir, root } = makeRepo("loop-fp-");
  dirs.push(dir);
  const l = new LoopUnderTest(dir, root, { failpoint: scenario === "seeded" ? null : fp, allowStepErrors: scenario === "edge" });
  l.deadline = Date.now() + 240_000;
  const expected = await SCENARIOS[scenario].run(l, fp);
  if (!l.killedBy) throw new Error(`failpoint ${fp} was never reached in scenario ${scenario} (${SCENARIOS[scenario].what})\n${l.trace()}`);
  await checkDrained(l, expected);
  // The killed process held the lease; the next command took it over and said so. (A watcher
  // killed after its proof, before it took the lease to record it, held none.)
  if (fp === "watch:after_proof") return cleanupDir(dir);
  const takeovers = readEvents(l.stateRoot)
    .filter((e) => e.type === "lease_taken_over")
    .map((e) => JSON.parse(e.payload));
  if (!takeovers.some((t) => t.previous.pid === l.killedBy!.pid && t.why === "dead"))
    throw new Error(`no lease_taken_over of the killed pid ${l.killedBy.pid}: ${JSON.stringify(takeovers)}\n${l.trace()}`);
  cleanupDir(dir);
}

describe("failpoints", () => {
  test("every failpoint has a scenario, exactly once per scenario", () => {
    // The forge's failpoints need the fake GitHub: tests/step/forge/landing.e2e.test.ts proves them.
    const forgeTest = readFileSync(join(REPO, "tests", "step", "forge", "landing.e2e.test.ts"), "utf8");
    for (const n of FORGE_FAILPOINTS) expect(forgeTest, n).toContain(`"${n}"`);
    const reactionTest = readFileSync(join(REPO, "tests", "step", "forge", "reactions.e2e.test.ts"), "utf8");
    for (const n of REACTION_FAILPOINTS) expect(reactionTest, n).toContain(`"${n}"`);
    const relocateTest = readFileSync(join(REPO, "tests", "step", "relocate.e2e.test.ts"), "utf8");
    for (const n of RELOCATE_FAILPOINTS) expect(relocateTest, n).toContain(`"${n}"`);
    const trashTest = readFileSync(join(REPO, "tests", "step", "trash.e2e.test.ts"), "utf8");
    for (const n of TRASH_FAILPOINTS) expect(trashTest, n).toContain(`"${n}"`);
    const setupTest = readFileSync(join(REPO, "tests", "step", "setup-once.e2e.test.ts"), "utf8");
    for (const n of SETUP_FAILPOINTS) expect(setupTest, n).toContain(`"${n}"`);
    const spareTest = readFileSync(join(REPO, "tests", "step", "spare-checkout.e2e.test.ts"), "utf8");
    for (const n of SPARE_FAILPOINTS) expect(spareTest, n).toContain(`"${n}"`);
    const baseTest = readFileSync(join(REPO, "tests", "step", "base-verify.e2e.test.ts"), "utf8");
    for (const n of BASE_VERIFY_FAILPOINTS) expect(baseTest, n).toContain(`"${n}"`);
    const covered = new Set([
      ...CASES.map(([n]) => n),
      ...FORGE_FAILPOINTS,
      ...REACTION_FAILPOINTS,
      ...RELOCATE_FAILPOINTS,
      ...TRASH_FAILPOINTS,
      ...SETUP_FAILPOINTS,
      ...SPARE_FAILPOINTS,
      ...BASE_VERIFY_FAILPOINTS,
    ]);
    expect([...covered].sort()).toEqual([...FAILPOINTS].sort());
    const keys = CASES.map(([n, s]) => `${n} ${s}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  test.concurrent.each(CASES)("%s is reachable (%s) and the next steps recover", (fp, scenario) => slots.use(() => runCase(fp, scenario)), CASE_TIMEOUT);

  test.concurrent(
    "random SIGKILLs of `loop run` (seeded) leave a loop that finishes cleanly",
    () =>
      slots.use(async () => {
        const seed = Number(process.env.LOOP_RANDOM_KILL_SEED ?? 20240611);
        const rand = prng(seed);
        const { dir, root } = makeRepo("loop-rk-");
        dirs.push(dir);
        const l = new LoopUnderTest(dir, root, {});
        // A kill before the session spawned is recorded as an interrupted launch and costs nothing,
        // unless a process carrying the attempt's mark is still alive: then it is seen only when the
        // launch deadline passes, and counts. A budget of 100 attempts keeps the expected outcome
        // certain; a short launch timeout bounds the wait for such a spawn.
        writeLoopJson(root, mainDefinition(l, 100, { launch: "15s", stall: "30m", verify: "2m" }));
        // The kills spread over a whole step, its start and its work: the window is what a step that
        // launches takes here and now (on a scratch copy of the loop), so a loaded machine widens it.
        const scratch = makeRepo("loop-rk-window-");
        writeLoopJson(scratch.root, mainDefinition(new LoopUnderTest(scratch.dir, scratch.root, {}), 100, { launch: "15s", stall: "30m", verify: "2m" }));
        const t0 = Date.now();
        const probe = await finish(spawnLoop(["run", "--json", "--root", scratch.root]));
        const window = Date.now() - t0;
        cleanupDir(scratch.dir);
        if (probe.code !== 0 || probe.json?.action !== "launched") throw new Error(`the window's step exited ${probe.code}: ${probe.stderr}`);
        // Kills that cut three launches of one item in a row pause the loop, as a timeout around
        // cron's command would (docs/cli/loop-run.md#internal-errors): the operator resumes it.
        const onPaused = async (run: { action: string; reason: unknown }) => {
          if (run.action !== "paused" || !String(run.reason).includes("each stopped before the agent started"))
            throw new Error(`seed ${seed}: unexpected ${run.action}: ${run.reason}\n${l.trace()}`);
          await l.ctl(["resume"]);
        };
        const kills: string[] = [];
        for (let i = 0; i < 30; i++) {
          const delay = Math.floor(rand() * window);
          const proc = spawnLoop(["run", "--json", "--root", root]);
          await sleep(delay);
          proc.kill("SIGKILL");
          const r = await finish(proc);
          kills.push(`${delay}ms:${r.signal ?? r.code}`);
          l.history.push(`run killed after ${delay}ms (of ${window}) -> ${r.signal ?? r.code}${r.json?.action ? ` ${r.json.action}` : ""}`);
          if (r.signal === null && r.code === 1 && r.json?.action === "paused") await onPaused(r.json);
          else if (r.signal === null && r.code !== 0 && r.code !== 75)
            throw new Error(`seed ${seed}: run exited ${r.code}:\n${r.stderr}\n${r.stdout}\n${l.trace()}`);
        }
        l.history.push(`seed ${seed}`);
        l.deadline = Date.now() + 300_000;
        await l.untilDrained({ onPaused });
        await checkDrained(l, { outcome: "Succeeded", items: { "add-docs": "passed", "add-license": "passed", "add-changelog": "passed" } });
        // The kills must land in the middle of steps, not only before or after one: at least one
        // left something for a later step to take over or repair.
        expect(kills.filter((k) => k.endsWith(":SIGKILL")).length, kills.join(" ")).toBeGreaterThan(0);
        const events = readEvents(l.stateRoot);
        expect(
          events.some((e) => e.type === "lease_taken_over" || (e.type === "launch_failed" && JSON.parse(e.payload).interrupted)),
          l.trace(),
        ).toBe(true);
        cleanupDir(dir);
      }),
    CASE_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------------------------
// The failpoint registry against its documentation. That every call site names a registered
// failpoint, and every append a registered label, the compiler holds (`failpoint(name: Failpoint)`,
// `label?: CommitLabel`); that each of them is reached, the cases above do (one kill at each).

/** Appends that carry no failpoint label, on purpose: the store's own bookkeeping. */
const UNLABELLED_APPENDS = new Set(["store_opened", "store_bound", "lease_taken_over"]);

describe("the failpoint registry", () => {
  test("docs/failpoints.md lists exactly FAILPOINTS, once each", () => {
    const md = readFileSync(join(REPO, "docs", "failpoints.md"), "utf8");
    const listed = md
      .split("\n")
      .filter((l) => /^\s*\|/.test(l))
      .map((l) => l.split("|")[1]!.trim())
      .map((c) => /^`([a-z_]+:[a-z_]+)`$/.exec(c)?.[1])
      .filter((n): n is string => Boolean(n));
    expect(listed.length).toBe(new Set(listed).size);
    expect([...listed].sort()).toEqual([...FAILPOINTS].sort());
    expect(md).toContain("LOOP_FAILPOINT");
  });

  test("registered names are effect points or labels, nothing else", () => {
    expect(FAILPOINTS.length).toBe(EFFECT_POINTS.length + 2 * COMMIT_LABELS.length);
    expect(new Set(FAILPOINTS).size).toBe(FAILPOINTS.length);
  });

  test("over a loop's whole life every append carries a failpoint label, but the store's own bookkeeping", async () => {
    const unlabelled: string[] = [];
    const labels = new Set<string>();
    const original = Store.prototype.append;
    Store.prototype.append = function (this: Store, drafts, opts = {}) {
      if (opts.label) labels.add(opts.label);
      else if (!drafts.every((d) => UNLABELLED_APPENDS.has(d.type))) unlabelled.push(drafts.map((d) => d.type).join(", "));
      return original.call(this, drafts, opts);
    };
    try {
      const { dir, root } = makeRepo("loop-fp-labels-");
      dirs.push(dir);
      writeLoopJson(root, {
        name: "labels",
        defaults: { runner: "demo", timeouts: TIMEOUTS },
        items: [
          { id: "a", prompt: "Plain.\n@demo write A.md a", verify: "test -s A.md" },
          { id: "b", prompt: "Never.\n@demo write B.md b", verify: "false", maxAttempts: 1 },
          { id: "c", prompt: "After b.", dependsOn: ["b"], verify: false },
        ],
      });
      const cli = (args: string[]) => runInProcess([...args, "--json"], { cwd: root });
      for (let i = 0; i < 80; i++) {
        const r = await cli(["run"]);
        if (!r.stdout) throw new Error(`loop run: ${r.code} ${r.stderr}`);
        if (JSON.parse(r.stdout).action === "drained") break;
        await Bun.sleep(100);
      }
      for (const args of [
        ["ctl", "retry", "--work-item", "b"],
        ["ctl", "pause"],
        ["ctl", "resume"],
        ["reset", "--all", "--yes"],
      ])
        await cli(args);
    } finally {
      Store.prototype.append = original;
    }
    expect(unlabelled).toEqual([]);
    expect(labels.size).toBeGreaterThan(8);
  });

  test("the harness itself: a runner line per session start and no failpoint without a kill", async () => {
    // Sanity of the tooling the crash cases rely on: an armed failpoint that a command never
    // passes leaves killedBy unset, which runCase reports as "never reached".
    const { dir, root } = makeRepo("loop-fp-sanity-");
    dirs.push(dir);
    const l = new LoopUnderTest(dir, root, { failpoint: "reopen:before_commit" });
    writeLoopJson(root, {
      name: "sanity",
      defaults: { runner: "counted", timeouts: TIMEOUTS },
      runners: { counted: countingRunner(l.launchLog) },
      items: [{ id: "only", prompt: "Plain.\n@demo write O.md o", verify: "test -s O.md" }],
    });
    await l.untilDrained();
    expect(l.killedBy).toBeNull();
    expect(readLaunches(l.launchLog)).toEqual(["only 1"]);
    expect(existsSync(join(l.stateRoot, "terminal_state.json"))).toBe(true);
    await checkDrained(l, { outcome: "Succeeded", items: { only: "passed" } });
    cleanupDir(dir);
  });
});
