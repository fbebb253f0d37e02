// The `--watch` policy (lib/step/watch.ts) in-process: the step is a script of results and errors,
// the wait between turns is a clock the test keeps, a signal is an AbortSignal (or an emitted
// process signal). The root is a real git repository with a valid loop.json, run.pid a real file.
// The same watcher as a real process: tests/step/step.e2e.test.ts (l) and (x), tests/cmd/cli.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BusyError, DefinitionError, UsageError } from "../../lib/shared/errors.ts";
import { readRunPid } from "../../lib/writer/run-pid.ts";
import { readStopProof } from "../../lib/step/drain.ts";
import type { RunResult } from "../../lib/step/step.ts";
import type { RunAction } from "../../lib/step/context.ts";
import { watchSteps, type WatchOptions } from "../../lib/step/watch.ts";
import { TempDirs } from "../helpers/fs.ts";
import { demoDefinition } from "../helpers/project.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

/** A git work tree holding a valid loop.json (what preflight asks for), and a state root beside it. */
function project(opts: { git?: boolean } = {}): { root: string; stateRoot: string; pidFile: string } {
  const dir = temp.make("loop-watch-");
  const root = join(dir, "repo");
  mkdirSync(root);
  if (opts.git !== false) mkdirSync(join(root, ".git")); // preflight looks for .git on disk, nothing more
  writeFileSync(join(root, "loop.json"), JSON.stringify(demoDefinition([{ id: "a", prompt: "x" }])));
  const stateRoot = join(dir, "state");
  return { root, stateRoot, pidFile: join(stateRoot, "run.pid") };
}

function result(action: RunAction, errors: string[] = [], attention: RunResult["attention"] = []): RunResult {
  return {
    schema: "loop/run@1",
    action,
    item: null,
    reason: null,
    transitions: [],
    loop: { name: "t", state: "running", reason: null, outcome: null, current: null },
    attention,
    attentionChanged: attention.length > 0,
    errors,
    warnings: [],
    notifications: [],
  };
}

const definitionError = () => new DefinitionError([{ path: "", message: "not valid JSON: half-written" }], "loop.json");

type Turn = RunAction | Error | ((call: number) => RunResult | Error);

/**
 * Watch with a scripted step: each turn returns a result (an action) or throws (an error); one more
 * turn than scripted is a test failure. The clock records each wait and returns at once.
 */
async function watch(p: { root: string; stateRoot: string }, turns: Turn[], over: Partial<WatchOptions> = {}) {
  const results: RunAction[] = [];
  const warnings: string[] = [];
  const waits: number[] = [];
  const runPids: (number | null)[] = [];
  let calls = 0;
  const code = await watchSteps({
    root: p.root,
    stateRoot: p.stateRoot,
    intervalMs: 250,
    signals: [],
    log: { warn: (m) => warnings.push(m) },
    onResult: (r) => results.push(r.action),
    sleep: async (ms) => {
      waits.push(ms);
    },
    step: async () => {
      runPids.push(readRunPid(join(p.stateRoot, "run.pid"))?.pid ?? null);
      const turn = turns[calls++];
      if (turn === undefined) throw new Error(`step called ${calls} times; the script has ${turns.length}`);
      const r = typeof turn === "function" ? turn(calls) : turn;
      if (r instanceof Error) throw r;
      return typeof r === "string" ? result(r) : r;
    },
    ...over,
  });
  return { code, results, warnings, waits, calls, runPids };
}

describe("watchSteps", () => {
  test("steps until the loop drains, waiting the interval between turns; run.pid names the watcher meanwhile, and is removed", async () => {
    const p = project();
    const w = await watch(p, ["launched", "waiting", "waiting", "drained"]);
    expect(w.code).toBe(0);
    expect(w.results).toEqual(["launched", "waiting", "waiting", "drained"]);
    expect(w.waits).toEqual([250, 250, 250]);
    expect(w.runPids).toEqual([process.pid, process.pid, process.pid, process.pid]);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  for (const action of ["paused", "stopped"] as const)
    test(`stops when the loop is ${action}, unless forever`, async () => {
      expect((await watch(project(), ["launched", action])).results).toEqual(["launched", action]);
      const ac = new AbortController();
      const w = await watch(project(), ["launched", action, action, () => (ac.abort(), result("waiting"))], { forever: true, signal: ac.signal });
      expect(w.calls).toBe(4);
      expect(w.code).toBe(130);
    });

  test("the exit code is the last turn's: a step with environment errors is 1, a later clean one 0", async () => {
    const p = project();
    const withErrors = (action: RunAction) => () => result(action, ["a: launch failed: program not found"]);
    expect((await watch(p, [withErrors("waiting"), "drained"])).code).toBe(0);
    expect((await watch(p, ["waiting", withErrors("drained")])).code).toBe(1);
  });

  test("a watch that stops where the loop needs a person exits 1 (paused by a fault, drained Failed); an operator's pause 0", async () => {
    const p = project();
    const fault = () => result("paused", [], [{ kind: "environment", item: null, reason: "environment fault: …" }]);
    const failed = () => result("drained", [], [{ kind: "failed", item: null, reason: "the loop drained Failed: a failed" }]);
    expect((await watch(p, ["launched", fault])).code).toBe(1);
    expect((await watch(p, ["waiting", failed])).code).toBe(1);
    expect((await watch(p, ["waiting", "paused"])).code).toBe(0);
  });

  test("a busy turn (lease held, or lost) is a warning, and the next turn tries again", async () => {
    const p = project();
    const w = await watch(p, [new BusyError("another step holds the lease (pid 1)"), "waiting", new BusyError("lease lost"), "drained"]);
    expect(w.code).toBe(0);
    expect(w.warnings).toEqual(["another step holds the lease (pid 1)", "lease lost"]);
    expect(w.results).toEqual(["waiting", "drained"]);
    expect(w.waits).toHaveLength(3);
  });

  test("a loop.json invalid after start-up is a warning naming the problem and the retry, and the next turn goes on", async () => {
    const p = project();
    const w = await watch(p, ["waiting", definitionError(), definitionError(), "drained"], { intervalMs: 90_000 });
    expect(w.code).toBe(0);
    expect(w.results).toEqual(["waiting", "drained"]);
    expect(w.warnings).toEqual(Array(2).fill("loop.json: not valid JSON: half-written\n(the watcher tries again in 90s)"));
  });

  test("a problem line is escaped: a path in loop.json cannot forge a line of the warning", async () => {
    const p = project();
    const forged = new DefinitionError([{ path: "items[0].id", message: 'bad id "x\nloop: all good"' }], "loop.json");
    const w = await watch(p, [forged, "drained"]);
    expect(w.warnings).toHaveLength(1);
    expect(w.warnings[0]!.split("\n")).toHaveLength(2);
  });

  test("a signal during a busy or invalid turn: 130", async () => {
    for (const err of [new BusyError("busy"), definitionError()]) {
      const ac = new AbortController();
      const w = await watch(project(), ["waiting", () => (ac.abort(), err)], { signal: ac.signal });
      expect(w.code).toBe(130);
    }
  });

  test("a root that is gone stops the watch with the step's error; run.pid is released", async () => {
    const p = project();
    const err = definitionError();
    const watching = watch(p, ["waiting", () => (rmSync(p.root, { recursive: true, force: true }), err)]);
    await expect(watching).rejects.toBe(err);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  test("any other error of a step ends the watch with it; run.pid is released", async () => {
    const p = project();
    const boom = new Error("the database is corrupt");
    const watching = watch(p, ["waiting", boom]);
    await expect(watching).rejects.toBe(boom);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  test("a signal during a step: that step finishes, then the watch stops with 130 (no further wait)", async () => {
    const ac = new AbortController();
    const p = project();
    const w = await watch(p, ["launched", () => (ac.abort(), result("waiting"))], { signal: ac.signal });
    expect(w.code).toBe(130);
    expect(w.results).toEqual(["launched", "waiting"]);
    expect(w.waits).toHaveLength(1);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  test("a signal during the wait ends the wait at once (an hour's interval is not sat out): 130", async () => {
    const ac = new AbortController();
    const p = project();
    // The real wait: were it not woken, this test would run into its time limit.
    const code = await watchSteps({
      root: p.root,
      stateRoot: p.stateRoot,
      intervalMs: 3_600_000,
      signals: [],
      signal: ac.signal,
      log: { warn: () => {} },
      onResult: () => setTimeout(() => ac.abort(), 10),
      step: async () => result("waiting"),
    });
    expect(code).toBe(130);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  test("SIGTERM and SIGINT stop it (130) and its handlers are removed afterwards", async () => {
    for (const sig of ["SIGTERM", "SIGINT"] as const) {
      const before = process.listenerCount(sig);
      let during = 0;
      const p = project();
      const w = await watch(p, ["launched", () => ((during = process.listenerCount(sig)), process.emit(sig, sig), result("waiting"))], { signals: undefined });
      expect(during).toBe(before + 1);
      expect(w.code).toBe(130);
      expect(process.listenerCount(sig)).toBe(before);
    }
  });

  test("a stop leaves its proof the moment it comes, before the step at hand ends; with no store to record it in, the proof is removed", async () => {
    const p = project();
    let proof: unknown = null;
    const w = await watch(p, ["launched", () => (process.emit("SIGTERM", "SIGTERM"), (proof = readStopProof(p.stateRoot)), result("waiting"))], {
      signals: ["SIGTERM"],
    });
    expect(w.code).toBe(130);
    expect(proof).toEqual({ pid: process.pid, started: expect.any(String), signal: "SIGTERM", at: expect.any(String) });
    // Nothing was ever launched here (the step is a script): no store, nothing ran beside the watcher.
    expect(existsSync(join(p.stateRoot, "watcher-stop.json"))).toBe(false);
  });

  test("an already aborted signal: no step, 130, nothing left behind", async () => {
    const ac = new AbortController();
    ac.abort();
    const p = project();
    const w = await watch(p, [], { signal: ac.signal });
    expect(w.code).toBe(130);
    expect(w.calls).toBe(0);
    expect(existsSync(p.pidFile)).toBe(false);
  });

  test("another live watcher holds run.pid: BusyError before any step, its file left alone", async () => {
    const p = project();
    mkdirSync(p.stateRoot, { recursive: true });
    const other = Bun.spawn(["sleep", "600"]);
    try {
      writeFileSync(p.pidFile, `${other.pid}\n`);
      const watching = watch(p, []);
      await expect(watching).rejects.toBeInstanceOf(BusyError);
      expect(readRunPid(p.pidFile)?.pid).toBe(other.pid);
    } finally {
      other.kill();
    }
  });

  test("a root that cannot step (not a git work tree, or loop.json invalid) fails before anything is created", async () => {
    const notGit = project({ git: false });
    const a = watch(notGit, []);
    await expect(a).rejects.toBeInstanceOf(UsageError);
    expect(existsSync(notGit.stateRoot)).toBe(false);
    const invalid = project();
    writeFileSync(join(invalid.root, "loop.json"), "{ half-written");
    const b = watch(invalid, []);
    await expect(b).rejects.toBeInstanceOf(DefinitionError);
    expect(existsSync(invalid.stateRoot)).toBe(false);
  });
});
