// A bug in loop is an internal error (docs/cli/loop-run.md#internal-errors): the step stops there and
// exits 70 with its stack under --verbose, in text and in JSON (cron's format); it is never taken for
// an environment fault and never spends an item's attempt. The bug is injected with
// LOOP_FAILPOINT=<name>=throw (docs/failpoints.md), through the real `loop run`.
import { afterEach, describe, expect, test } from "bun:test";
import { demoDefinition, Project } from "../helpers/project.ts";

const open: Project[] = [];
afterEach(() => {
  for (const p of open.splice(0)) p.dispose();
});

function project(): Project {
  const p = new Project(demoDefinition([{ id: "a", prompt: "write a\n@demo write a.txt a\n@demo commit add a" }]));
  open.push(p);
  return p;
}

/** `loop run` with the bug armed, step after step, until the step that meets it (the steps before are ordinary). */
async function runUntilBug(p: Project, point: string, flags: string[]) {
  for (let i = 0; i < 100; i++) {
    const r = await p.loop(["run", ...flags, "--root", p.root], { LOOP_FAILPOINT: `${point}=throw` });
    if (r.code !== 0) return r;
    await Bun.sleep(100);
  }
  throw new Error(`${point} was never reached`);
}

describe("a bug in loop", () => {
  test("in the verify path, after the verify started (JSON, --verbose): exit 70, internal with its stack; no attempt spent, the next step adopts the verify", async () => {
    const p = project();
    const r = await runUntilBug(p, "verify:after_spawn", ["--json", "--verbose"]);
    expect(r.code).toBe(70);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trim().split("\n");
    const error = JSON.parse(lines.at(-1)!).error;
    expect(error.code).toBe("internal");
    expect(error.message).toBe("failpoint verify:after_spawn: an injected bug");
    expect(error.stack).toContain("lib/step/verify.ts");
    // Not charged to the item: the verify is reserved, not judged.
    expect(p.eventsOf("verify_reserved")).toHaveLength(1);
    expect(p.eventsOf("verify_finished")).toHaveLength(0);
    expect(p.eventsOf("environment_fault")).toHaveLength(0);
    const done = await p.runToDrain();
    expect(done.loop.outcome).toBe("Succeeded");
    const it = p.projection().items.a!;
    expect({ status: it.status, failures: it.failures, attempts: it.attempts.length }).toEqual({ status: "passed", failures: 0, attempts: 1 });
    expect(p.eventsOf("verify_started").map((e) => e.payload.adopted)).toEqual([true]);
    expect(p.eventsOf("verify_finished").map((e) => e.payload.passed)).toEqual([true]);
    await p.finish();
  });

  test("in the launch, after the reservation (text, --verbose): exit 70 with the stack, no environment fault, the loop not paused; the next step gives the attempt back uncounted", async () => {
    const p = project();
    const r = await runUntilBug(p, "launch:after_worktree", ["--text", "--verbose"]);
    expect(r.code).toBe(70);
    expect(r.stderr).toContain("internal error: failpoint launch:after_worktree: an injected bug");
    expect(r.stderr).toMatch(/\n\s+at .*lib\/step\/launch\.ts/);
    expect(p.eventsOf("launch_reserved")).toHaveLength(1);
    expect(p.eventsOf("environment_fault")).toHaveLength(0);
    expect(p.projection().loop.state).toBe("running");
    const done = await p.runToDrain();
    expect(done.loop.outcome).toBe("Succeeded");
    expect(p.eventsOf("launch_failed").map((e) => e.payload.interrupted)).toEqual([true]);
    const it = p.projection().items.a!;
    expect({ status: it.status, failures: it.failures }).toEqual({ status: "passed", failures: 0 });
    await p.finish();
  });

  test("the same bug at every launch: the third interrupted launch in a row pauses the loop (launch_interrupted, the attempt given back) instead of a relaunch every tick; resumed without the bug, the item passes uncounted", async () => {
    const p = project();
    const bug = { LOOP_FAILPOINT: "launch:after_worktree=throw" };
    expect((await runUntilBug(p, "launch:after_worktree", ["--json"])).code).toBe(70);
    for (const attempt of [2, 3]) {
      const r = await p.loop(["run", "--json", "--root", p.root], bug);
      expect(r.code).toBe(70);
      expect(p.projection().items.a!.attempts.length).toBe(attempt);
    }
    const head = p.head();
    const paused = await p.loop(["run", "--json", "--root", p.root], bug);
    expect(paused.code).toBe(1);
    const doc = JSON.parse(paused.stdout);
    expect({ action: doc.action, item: doc.item }).toEqual({ action: "paused", item: "a" });
    expect(doc.loop.reason).toStartWith("environment fault launching a: the last 3 launches of a (attempts 1 to 3) each stopped before the agent started");
    expect(p.eventsOf("environment_fault").map((e) => [e.payload.kind, e.payload.attempt])).toEqual([["launch_interrupted", 3]]);
    // While paused, cron's ticks no longer grow the log (the next one only closes the given-back session's record).
    expect(p.head()).toBeGreaterThan(head);
    expect((await p.loop(["run", "--json", "--root", p.root], bug)).code).toBe(1);
    const still = p.head();
    expect((await p.loop(["run", "--json", "--root", p.root], bug)).code).toBe(1);
    expect(p.head()).toBe(still);
    expect((await p.ctl(["resume"])).code).toBe(0);
    await p.runToDrain();
    const it = p.projection().items.a!;
    expect({ status: it.status, failures: it.failures, attempts: it.attempts.length }).toEqual({ status: "passed", failures: 0, attempts: 4 });
    await p.finish();
  });

  test("without --verbose: the same one line, no stack (JSON and text)", async () => {
    const p = project();
    const json = await runUntilBug(p, "launch:after_worktree", ["--json"]);
    expect(json.code).toBe(70);
    expect(JSON.parse(json.stderr.trim())).toEqual({ error: { code: "internal", message: "failpoint launch:after_worktree: an injected bug" } });
    const text = await p.loop(["run", "--text", "--root", p.root], { LOOP_FAILPOINT: "launch:after_worktree=throw" });
    expect(text.code).toBe(70);
    expect(text.stderr.trim().split("\n")).toHaveLength(1);
    expect(text.stderr).toContain("internal error: failpoint launch:after_worktree: an injected bug");
    await p.runToDrain();
    await p.finish();
  });
});
