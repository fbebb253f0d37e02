#!/usr/bin/env bun
// bench/tick.ts: the cost of `loop run` ticks themselves, on the compiled binary.
//   - launch tick: a step that reserves, creates the worktree and branch, writes the handoff and
//     starts the session detached, then exits (the agent itself runs on and is not timed);
//   - agent started: from that step's start until the wrapper has started the agent (started.json):
//     the wrapper's own start, and its gateway's (every command runner has one), included;
//   - observing tick: a step that finds the agent still working and only observes it;
//   - verify start tick: a step that finds the agent exited, records it, commits its leftovers and
//     starts the verify command detached (reserve, spawn, record), then exits;
//   - verify observing tick: a step that finds the verify command still running.
// Each launch is timed on its own freshly prepared repository (preparation not timed); observing
// ticks are timed repeatedly on the same running session or verify. Prints a markdown table.
// `--objects N`: the repository holds one pack of about N objects (a quarter of them files of the
// checkout, each changed three times since: a real project's size), made once and copied per run.
// `--sandbox`: every item runs in the sandbox ("sandbox": "bwrap").
//   bun bench/tick.ts [--runs N] [--bin dist/loop] [--objects 20000] [--sandbox]
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { spawnSync } from "node:child_process";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { runs: { type: "string" }, bin: { type: "string" }, objects: { type: "string" }, sandbox: { type: "boolean" } },
  strict: true,
});
const OBJECTS = Number(values.objects ?? 0);
const RUNS = Number(values.runs ?? 9);
const BIN = resolve(values.bin ?? join(import.meta.dir, "..", "dist", "loop"));
// Each tick is timed alone: no wrapper may run the next step itself (docs/cli/loop-run.md#chained-steps).
process.env.LOOP_CHAIN = "off";

function sh(cwd: string, ...cmd: string[]) {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** A repository whose one pack holds about `objects` objects (made once, in the temporary folder, out of the tree tsc and the tests read): files in 100 folders, each written four times. */
function template(objects: number): string {
  const dir = join(tmpdir(), `loop-bench-tick-repo-${objects}`);
  if (existsSync(join(dir, ".git", "loop-template-done"))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  sh(dir, "git", "init", "-q", "-b", "main");
  const files = Math.max(1, Math.floor(objects / 4));
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < files; i++) {
      const sub = join(dir, "src", `m${i % 100}`);
      if (round === 0 && i < 100) mkdirSync(sub, { recursive: true });
      writeFileSync(join(sub, `f${i}.ts`), `// file ${i}, round ${round}\nexport const v${i} = ${round};\n${"x".repeat(120)}\n`);
    }
    sh(dir, "git", "add", "-A");
    sh(dir, "git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-q", "-m", `round ${round}`);
  }
  sh(dir, "git", "repack", "-adq");
  writeFileSync(join(dir, ".git", "loop-template-done"), "");
  return dir;
}

/** `verifying`: the agent exits at once (leaving one file) and the verify command runs for an hour. */
function prepare(o: { verifying?: boolean } = {}): string {
  const root = mkdtempSync(join(tmpdir(), "loop-tick-"));
  if (OBJECTS > 0) {
    rmSync(root, { recursive: true, force: true });
    sh(tmpdir(), "cp", "-a", template(OBJECTS), root);
  } else sh(root, "git", "init", "-q", "-b", "main");
  sh(root, "git", "config", "user.email", "bench@loop.invalid");
  sh(root, "git", "config", "user.name", "bench");
  writeFileSync(join(root, "README"), "bench\n");
  const def = {
    name: "tick",
    defaults: o.verifying
      ? { runner: "quick", verify: "sleep 3600", timeouts: { launch: "5m", stall: "60m", verify: "2h" }, ...(values.sandbox ? { sandbox: "bwrap" } : {}) }
      : { runner: "sleeper", verify: "true", timeouts: { launch: "5m", stall: "60m", verify: "1m" }, ...(values.sandbox ? { sandbox: "bwrap" } : {}) },
    runners: { sleeper: { command: ["sleep", "3600"] }, quick: { command: ["sh", "-c", "echo x > leftover.txt"] } },
    items: Array.from({ length: 20 }, (_, i) => ({ id: `item-${i}`, prompt: `item ${i}` })),
  };
  writeFileSync(join(root, "loop.json"), JSON.stringify(def, null, 2));
  sh(root, "git", "add", "-A");
  sh(root, "git", "commit", "-q", "-m", "init");
  // The first step creates the store and imports the definition; the timed launch is the next one.
  const first = spawnSync(BIN, ["run", "--json"], { cwd: root, encoding: "utf8" });
  if (first.status !== 0) throw new Error(first.stderr);
  sh(root, BIN, "ctl", "stop", "--yes", "--json");
  sh(root, BIN, "ctl", "start", "--json");
  return root;
}

function timed(root: string, expect: string): number {
  const t = performance.now();
  const r = spawnSync(BIN, ["run", "--json"], { cwd: root, encoding: "utf8" });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`loop run exited ${r.status}: ${r.stderr}`);
  const action = JSON.parse(r.stdout).action;
  if (action !== expect) throw new Error(`expected action ${expect}, got ${action}`);
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The session folder of item-0's latest attempt: prepare's first step launched attempt 1, which its
 * `ctl stop` ended (before its agent started, when the wrapper is slow to start), so the timed one is 2.
 */
function latestSession(root: string): string {
  const dir = join(root, ".loop", "sessions", "item-0");
  const attempts = existsSync(dir)
    ? readdirSync(dir)
        .filter((a) => /^\d+$/.test(a))
        .map(Number)
    : [];
  return join(dir, String(Math.max(0, ...attempts)));
}

/** Wait (untimed) until the agent of the launched item has exited. */
function agentExited(root: string): void {
  for (let i = 0; i < 400; i++) {
    if (existsSync(join(latestSession(root), "exit.json"))) return;
    Bun.sleepSync(25);
  }
  throw new Error("the agent never exited");
}

/** From `t0` until the wrapper of the launched item has started its agent (polled every millisecond). */
function agentStarted(root: string, t0: number): number {
  for (let i = 0; i < 20_000; i++) {
    if (existsSync(join(latestSession(root), "started.json"))) return performance.now() - t0;
    Bun.sleepSync(1);
  }
  throw new Error("the agent never started");
}

const launches: number[] = [];
const starts: number[] = [];
const observes: number[] = [];
const verifyStarts: number[] = [];
const verifyObserves: number[] = [];
for (let i = 0; i < RUNS; i++) {
  for (const verifying of [false, true]) {
    const root = prepare({ verifying });
    try {
      if (!verifying) {
        const t0 = performance.now();
        launches.push(timed(root, "launched"));
        starts.push(agentStarted(root, t0));
        for (let j = 0; j < 3; j++) observes.push(timed(root, "waiting"));
        continue;
      }
      timed(root, "launched");
      agentExited(root);
      verifyStarts.push(timed(root, "waiting"));
      for (let j = 0; j < 3; j++) verifyObserves.push(timed(root, "waiting"));
    } finally {
      spawnSync(BIN, ["ctl", "stop", "--yes", "--json"], { cwd: root, env: { ...process.env, LOOP_KILL_GRACE_MS: "200" } });
      rmSync(root, { recursive: true, force: true });
    }
  }
}

const fmt = (n: number) => n.toFixed(1);
process.stdout.write(
  [
    `| tick (compiled ${BIN}) | median ms | min | max | runs | target |`,
    "|---|---:|---:|---:|---:|---|",
    `| launch (reserve, worktree, handoff, detached start) | ${fmt(median(launches))} | ${fmt(Math.min(...launches))} | ${fmt(Math.max(...launches))} | ${launches.length} | ≤ 250 ms |`,
    `| agent started (the launch tick, then the wrapper and its gateway start the agent) | ${fmt(median(starts))} | ${fmt(Math.min(...starts))} | ${fmt(Math.max(...starts))} | ${starts.length} | |`,
    `| observing (agent still working) | ${fmt(median(observes))} | ${fmt(Math.min(...observes))} | ${fmt(Math.max(...observes))} | ${observes.length} | ≤ 50 ms |`,
    `| verify start (agent exited: record, commit leftovers, reserve, detached start) | ${fmt(median(verifyStarts))} | ${fmt(Math.min(...verifyStarts))} | ${fmt(Math.max(...verifyStarts))} | ${verifyStarts.length} | ≤ 250 ms |`,
    `| observing (verify still running) | ${fmt(median(verifyObserves))} | ${fmt(Math.min(...verifyObserves))} | ${fmt(Math.max(...verifyObserves))} | ${verifyObserves.length} | ≤ 50 ms |`,
  ].join("\n") + "\n",
);
