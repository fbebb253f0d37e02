// Verify as an observed process (docs/cli/loop-run.md): through the real entry (`bun cmd/loop.ts`),
// a verify command runs detached like an agent session. A step never waits on it (it returns
// `waiting` and holds no lease meanwhile, so `loop ctl` works), a killed step neither leaves it
// unobserved nor starts a second one, and stop/skip/cancel end it through the close path. Every
// verify here appends "<attempt> <pid>" to aux/verify-runs when it starts: the count of lines is
// the number of verify commands that ever ran. No assertion measures time.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { statusReport } from "../../lib/reports/status.ts";
import { withReadSnapshot } from "../../lib/log/snapshot.ts";
import { demoDefinition, pollUntil, type Project, scenario, sleep } from "../helpers/project.ts";

const T = 120_000;

/**
 * One item, "slow": the demo agent writes x.txt; its verify records that it ran, then waits until
 * the test creates aux/go (attempt 1 only, unless `every`), then passes when x.txt is there.
 */
function gated(p: Project, o: { every?: boolean; timeout?: string } = {}) {
  const gate = `while [ ! -e ${join(p.aux, "go")} ]; do sleep 0.05; done`;
  const verify = `echo "$LOOP_ATTEMPT $$" >> ${join(p.aux, "verify-runs")}; ${o.every ? gate : `[ "$LOOP_ATTEMPT" != 1 ] || { ${gate}; }`}; test -s x.txt`;
  return demoDefinition([{ id: "slow", prompt: "x\n@demo write x.txt x", verify }], {
    defaults: { timeouts: { launch: "2m", stall: "10m", verify: o.timeout ?? "2m" } },
  });
}

const verifyRuns = (p: Project) => (existsSync(join(p.aux, "verify-runs")) ? readFileSync(join(p.aux, "verify-runs"), "utf8").split("\n").filter(Boolean) : []);

/** Launch "slow", wait for its agent to exit, and take the step that starts its verify. */
async function startVerify(p: Project) {
  expect((await p.run()).action).toBe("launched");
  await pollUntil(() => existsSync(join(p.sessionDir("slow", 1), "exit.json")), "agent exited");
  const r = await p.run();
  expect(r.action).toBe("waiting");
  // The session's final usage (the demo agent reports it, docs/spend.md) comes with its end.
  expect(r.transitions.map((t) => t.type)).toEqual(["usage_recorded", "session_ended", "verify_reserved", "verify_started"]);
  await pollUntil(() => verifyRuns(p).length === 1, "verify running");
  return r;
}

function leaseRow(p: Project): unknown {
  return withReadSnapshot(p.stateRoot, ({ db }) => db.query("SELECT owner FROM lease").get());
}

/** The recorded verify group of attempt `n` of "slow". */
function verifyGroup(p: Project, n = 1): number {
  const e = p.eventsOf("verify_started", "slow").find((x) => x.payload.attempt === n);
  expect(e).toBeDefined();
  return e!.payload.pgid as number;
}

describe("verify is an observed process", () => {
  test.concurrent(
    "a slow verify: `loop run` returns `waiting` at once and holds no lease; `loop ctl pause` works meanwhile (exit 0); the verdict is recorded once",
    () =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          const r = await startVerify(p);
          expect(r.reason).toMatch(/^verify running \(deadline \d{4}-\d\d-\d\dT/);
          expect(r.transitions.find((t) => t.type === "verify_started")!.summary).toMatch(/^attempt 1 verify started pid \d+, deadline /);
          // The step is over: no lease, no WAL (a read verb reads the store in place), status healthy.
          expect(leaseRow(p)).toBeNull();
          expect(!existsSync(join(p.stateRoot, "loop.db-wal")) || statSync(join(p.stateRoot, "loop.db-wal")).size === 0).toBe(true);
          expect(withReadSnapshot(p.stateRoot, (s) => s.copied)).toBe(false);
          expect(statusReport(p.stateRoot).healthy).toBe(true);
          expect(p.projection().items.slow!.reason).toMatch(/^verify running \(deadline /);
          // An observing step: still running, nothing recorded, how long and until when.
          const again = await p.run();
          expect(again).toMatchObject({ action: "waiting", item: "slow", transitions: [] });
          expect(again.reason).toMatch(/^verify running for \d+s \(deadline .*, in \d+s\)$/);
          expect(p.alive(verifyGroup(p))).toBe(true);
          // `loop ctl` is not refused while the verify runs.
          const paused = await p.ctl(["pause"]);
          expect(paused.code).toBe(0);
          expect((await p.run()).action).toBe("paused");
          expect(p.alive(verifyGroup(p))).toBe(true); // pausing spends nothing more, and ends nothing
          expect((await p.ctl(["resume"])).code).toBe(0);
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(p.projection().items.slow!.status).toBe("passed");
          expect(verifyRuns(p)).toHaveLength(1);
          expect(p.eventsOf("verify_finished", "slow").map((e) => [e.payload.passed, e.payload.reason])).toEqual([[true, "exit 0"]]);
          expect(p.alive(verifyGroup(p))).toBe(false);
        },
      ),
    T,
  );

  test.concurrent(
    "a step SIGKILLed while the verify runs leaves it running and recorded; the next step observes that same verify, never a second one",
    () =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          await startVerify(p);
          const group = verifyGroup(p);
          const step = p.spawn(["run", "--json", "--root", p.root]);
          await sleep(50);
          step.kill("SIGKILL");
          await step.exited;
          expect(p.alive(group)).toBe(true);
          const r = await p.run();
          expect(r).toMatchObject({ action: "waiting", item: "slow" });
          expect(r.reason).toMatch(/^verify running for /);
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(verifyRuns(p)).toHaveLength(1);
          expect(p.eventsOf("verify_reserved", "slow")).toHaveLength(1);
          expect(p.eventsOf("verify_started", "slow")).toHaveLength(1);
          expect(p.projection().items.slow!.status).toBe("passed");
        },
      ),
    T,
  );

  // A step killed at each point of the verify's start and observation: the next step adopts the
  // spawned wrapper or starts the reserved verify (nothing was spawned for it), or records what it
  // observed; the marker shows exactly one verify command ran.
  test.concurrent.each([
    ["verify:after_reserve", false],
    ["verify:after_spawn", true],
    ["verify_started:before_commit", true],
    ["verify_started:after_commit", false],
    ["verify:before_record", false],
  ] as const)(
    "a step killed at %s: one verify ran, its start recorded once (adopted: %p), its verdict once",
    (fp, adopted) =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          await pollUntil(() => existsSync(join(p.sessionDir("slow", 1), "exit.json")), "agent exited");
          if (fp === "verify:before_record") {
            await p.run();
            writeFileSync(join(p.aux, "go"), "");
            await pollUntil(() => existsSync(join(p.sessionDir("slow", 1), "verify-exit.json")), "verify exited");
          }
          const killed = await p.loop(["run", "--json", "--root", p.root], { LOOP_FAILPOINT: fp });
          expect(killed.code).toBe(137);
          expect(killed.stderr).toContain(`failpoint ${fp}: killing self`);
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(verifyRuns(p)).toHaveLength(1);
          expect(p.eventsOf("verify_reserved", "slow")).toHaveLength(1);
          expect(p.eventsOf("verify_started", "slow").map((e) => e.payload.adopted)).toEqual([adopted]);
          expect(p.eventsOf("verify_finished", "slow").map((e) => e.payload.passed)).toEqual([true]);
          expect(p.projection().items.slow!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    "a step killed after writing the verify's launch record, before its spawn: nothing carries the mark, so the next step starts it at once (never `verify is starting` until the launch timeout)",
    () =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          await pollUntil(() => existsSync(join(p.sessionDir("slow", 1), "exit.json")), "agent exited");
          const killed = await p.loop(["run", "--json", "--root", p.root], { LOOP_FAILPOINT: "verify:after_reserve" });
          expect(killed.code).toBe(137);
          // What the killed step would have left had it died a moment later: the launch record, no wrapper.
          writeFileSync(
            join(p.sessionDir("slow", 1), "verify-launch.json"),
            JSON.stringify({ argv: ["sh", "-c", "true"], cwd: p.root, env: {}, tee: false }) + "\n",
          );
          const next = await p.run();
          expect(next.transitions.map((t) => t.type)).toEqual(["lease_taken_over", "verify_started"]);
          expect(next.reason).not.toBe("verify is starting");
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(verifyRuns(p)).toHaveLength(1);
          expect(p.eventsOf("verify_started", "slow").map((e) => e.payload.adopted)).toEqual([false]);
          expect(p.eventsOf("verify_finished", "slow").map((e) => e.payload.passed)).toEqual([true]);
        },
      ),
    T,
  );

  test.concurrent.each([
    ["stop", ["stop", "--yes"], "pending"],
    ["skip", ["skip", "--yes", "--work-item", "slow"], "skipped"],
    ["cancel", ["cancel", "--yes", "--work-item", "slow"], "cancelled"],
  ] as const)(
    "`loop ctl %s` during verify ends the verify's whole process group through the close path",
    (verb, args, status) =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          await startVerify(p);
          const group = verifyGroup(p);
          const shell = Number(verifyRuns(p)[0]!.split(" ")[1]);
          expect(p.alive(group)).toBe(true);
          const r = await p.ctl([...args]);
          expect(r.code).toBe(0);
          const doc = JSON.parse(r.stdout);
          expect(doc.closed).toEqual([expect.objectContaining({ item: "slow", attempt: 1, verify: expect.stringMatching(/^(terminated|killed)$/) })]);
          expect(p.alive(group)).toBe(false);
          expect(existsSync(`/proc/${shell}`) && !readFileSync(`/proc/${shell}/stat`, "utf8").includes(") Z ")).toBe(false);
          const it = p.projection().items.slow!;
          expect(it.status).toBe(status);
          expect(it.session!.closed).not.toBeNull();
          expect(it.attempts[0]!.verify).toBeNull(); // ended, not judged: nothing fed into a later handoff
          if (verb === "stop") {
            // The attempt is not counted; after resume, attempt 2 runs its own (single) verify and passes.
            expect(it.failures).toBe(0);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            expect(p.projection().items.slow!.status).toBe("passed");
            expect(verifyRuns(p).map((l) => l.split(" ")[0])).toEqual(["1", "2"]);
          } else {
            if (verb === "cancel") expect((await p.ctl(["resume"])).code).toBe(0); // cancel paused the loop
            await p.runToDrain();
            expect(verifyRuns(p)).toHaveLength(1);
          }
        },
      ),
    T,
  );

  test.concurrent(
    "a verify whose process vanished without an exit status fails the attempt (it is not run again)",
    () =>
      scenario(
        (p) => gated(p),
        {},
        async (p) => {
          await startVerify(p);
          const group = verifyGroup(p);
          process.kill(-group, "SIGKILL");
          await pollUntil(() => !p.alive(group), "verify group gone");
          await p.runToDrain();
          const vf = p.eventsOf("verify_finished", "slow").map((e) => e.payload);
          expect(vf[0]).toMatchObject({ attempt: 1, passed: false, timedOut: false, exitCode: null, reason: "verify process vanished without an exit status" });
          // Attempt 2 got its own verify, which passed (the gate is for attempt 1 only).
          expect(vf.map((v) => v.passed)).toEqual([false, true]);
          expect(verifyRuns(p).map((l) => l.split(" ")[0])).toEqual(["1", "2"]);
        },
      ),
    T,
  );
});
