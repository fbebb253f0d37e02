// A node drain, as a pod's end is (docs/cli/loop-run.md#stopping-a-watcher): `loop run --watch` is
// sent SIGTERM while an agent works, exits, and everything that ran beside it is killed at once
// (a pod's processes die with its PID 1). The next watcher must relaunch the item without spending
// an attempt (maxAttempts 1: a counted loss would fail it), and status must say what happened.
// Also: the same with the session's verify, and with the watcher killed before it could record
// its stop (the proof it left is recorded by the next step).
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { markedProcesses } from "../../lib/shared/process.ts";
import { demoDefinition, pollUntil, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;

/** The pod's end: every process of the attempt's session (its mark), SIGKILLed at once, and gone. */
async function killWhatRanBeside(p: Project): Promise<void> {
  const marks = p.eventsOf("launch_reserved").map((e) => e.payload.sessionId);
  for (const m of markedProcesses(marks)) {
    try {
      process.kill(m.pid, "SIGKILL");
    } catch {}
  }
  await pollUntil(() => markedProcesses(marks).length === 0, "every process of the session gone");
}

/** Start a watcher, wait for `ready`, send it SIGTERM; it exits 130. */
async function stopWatcherWhen(p: Project, ready: () => boolean, what: string, env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const w = p.spawn(["run", "--watch", "--forever", "--interval", "200ms", "--json", "--root", p.root], env);
  const stderr = new Response(w.stderr).text();
  void new Response(w.stdout).text();
  await pollUntil(ready, what);
  w.kill("SIGTERM");
  return { code: await w.exited, stderr: await stderr };
}

async function statusItem(p: Project, id: string) {
  const r = await p.loop(["status", "--json", "--root", p.root]);
  return JSON.parse(r.stdout).items.find((i: { id: string }) => i.id === id);
}

describe("a node drain costs no attempt", () => {
  test.concurrent(
    "SIGTERM to the watcher while the agent works, the session killed with it: the next watcher relaunches uncounted, status names the drain",
    () =>
      scenario(
        demoDefinition([
          { id: "long", prompt: "Works long on attempt 1.\n@demo attempt 1 sleep 300\n@demo write L.md l", verify: "test -s L.md", maxAttempts: 1 },
        ]),
        {},
        async (p) => {
          const started = () => existsSync(join(p.sessionDir("long", 1), "started.json")) && p.eventsOf("session_started").length === 1;
          const stopped = await stopWatcherWhen(p, started, "the agent of attempt 1 at work");
          expect(stopped.code).toBe(130);
          // The stop is on record, naming the attempt whose session ran; the proof is gone.
          const stops = p.eventsOf("watcher_stopped", "long");
          expect(stops.map((e) => ({ attempt: e.payload.attempt, signal: e.payload.signal, running: e.payload.running }))).toEqual([
            { attempt: 1, signal: "SIGTERM", running: "session" },
          ]);
          expect(existsSync(join(p.stateRoot, "watcher-stop.json"))).toBe(false);
          await killWhatRanBeside(p);
          // The next pod's watcher: until the loop drains.
          const next = await p.loop(["run", "--watch", "--interval", "200ms", "--json", "--root", p.root]);
          expect({ code: next.code, err: next.code === 0 ? "" : next.stderr }).toEqual({ code: 0, err: "" });
          const ended = p.eventsOf("session_ended", "long").map((e) => ({ attempt: e.payload.attempt, verdict: e.payload.verdict }));
          expect(ended).toEqual([
            { attempt: 1, verdict: "drained" },
            { attempt: 2, verdict: "exited" },
          ]);
          expect(p.eventsOf("session_ended", "long")[0]!.payload.reason).toMatch(
            /^drained: session process vanished without an exit status, after the watcher .* was stopped by SIGTERM at /,
          );
          const item = await statusItem(p, "long");
          expect({ status: item.status, attempts: item.attempts, ran: item.ran, failures: item.failures }).toEqual({
            status: "passed",
            attempts: 2,
            ran: 2,
            failures: 0,
          });
          expect(item.drained).toEqual([{ attempt: 1, signal: "SIGTERM", signalledAt: stops[0]!.payload.signalledAt, running: "session" }]);
          const text = await p.loop(["status", "--text", "--root", p.root]);
          expect(text.stdout).toContain("attempt 1 died with the watcher (SIGTERM");
          await p.finish();
        },
      ),
    T,
  );

  test.concurrent(
    "the same while the attempt's verify runs: the verify dies with the pod, the attempt is given back and runs again",
    () =>
      scenario(
        (p) =>
          demoDefinition([
            {
              id: "checked",
              prompt: "Plain.\n@demo write C.md c",
              verify: `[ "$LOOP_ATTEMPT" != 1 ] || { touch ${join(p.aux, "verifying")}; sleep 300; }; test -s C.md`,
              maxAttempts: 1,
            },
          ]),
        {},
        async (p) => {
          const stopped = await stopWatcherWhen(
            p,
            () => existsSync(join(p.aux, "verifying")) && p.eventsOf("verify_started").length === 1,
            "attempt 1's verify at work",
          );
          expect(stopped.code).toBe(130);
          expect(p.eventsOf("watcher_stopped", "checked").map((e) => e.payload.running)).toEqual(["verify"]);
          await killWhatRanBeside(p);
          const next = await p.loop(["run", "--watch", "--interval", "200ms", "--json", "--root", p.root]);
          expect({ code: next.code, err: next.code === 0 ? "" : next.stderr }).toEqual({ code: 0, err: "" });
          // No verdict for attempt 1's verify: it died with the watcher, and the attempt was given back.
          expect(p.eventsOf("verify_finished", "checked").map((e) => [e.payload.attempt, e.payload.passed])).toEqual([[2, true]]);
          const requeued = p.eventsOf("item_requeued", "checked")[0]!.payload;
          expect({ failed: requeued.failed, drained: requeued.drained }).toEqual({ failed: false, drained: true });
          expect(requeued.reason).toStartWith("drained: verify process vanished without an exit status");
          const item = await statusItem(p, "checked");
          expect({
            status: item.status,
            failures: item.failures,
            drained: item.drained.map((d: { attempt: number; running: string }) => [d.attempt, d.running]),
          }).toEqual({ status: "passed", failures: 0, drained: [[1, "verify"]] });
          await p.finish();
        },
      ),
    T,
  );

  test.concurrent(
    "a watcher killed before it recorded its stop (the grace period ran out): the next step records it from the proof, and the attempt is still not counted",
    () =>
      scenario(
        demoDefinition([
          { id: "long", prompt: "Works long on attempt 1.\n@demo attempt 1 sleep 300\n@demo write L.md l", verify: "test -s L.md", maxAttempts: 1 },
        ]),
        {},
        async (p) => {
          const started = () => existsSync(join(p.sessionDir("long", 1), "started.json")) && p.eventsOf("session_started").length === 1;
          // LOOP_FAILPOINT reaches the watcher only: agents never get it.
          const stopped = await stopWatcherWhen(p, started, "the agent at work", { LOOP_FAILPOINT: "watch:after_proof" });
          expect(stopped.stderr).toContain("failpoint watch:after_proof");
          expect(p.eventsOf("watcher_stopped")).toEqual([]);
          expect(existsSync(join(p.stateRoot, "watcher-stop.json"))).toBe(true);
          await killWhatRanBeside(p);
          const r = await p.run();
          // The stop recorded first, then the session judged by it.
          const types = r.transitions.map((t) => t.type).filter((t) => t === "watcher_stopped" || t === "session_ended");
          expect(types).toEqual(["watcher_stopped", "session_ended"]);
          expect(r.transitions.find((t) => t.type === "session_ended")!.summary).toContain("drained");
          expect(existsSync(join(p.stateRoot, "watcher-stop.json"))).toBe(false);
          await p.runToDrain();
          const item = await statusItem(p, "long");
          expect({ status: item.status, failures: item.failures, drained: item.drained.length }).toEqual({ status: "passed", failures: 0, drained: 1 });
          await p.finish();
        },
      ),
    T,
  );

  test.concurrent(
    "a session that outlives the watcher's stop (a systemd scope) is judged as any other: it exits, is verified and counts",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "gated", prompt: "x", runner: "gate", verify: "test -s G.md", maxAttempts: 1 }], {
            runners: { gate: { command: ["sh", "-c", `while [ ! -e ${join(p.aux, "go")} ]; do sleep 0.05; done; echo g > G.md`] } },
          }),
        {},
        async (p) => {
          const started = () => existsSync(join(p.sessionDir("gated", 1), "started.json")) && p.eventsOf("session_started").length === 1;
          expect((await stopWatcherWhen(p, started, "the agent at work")).code).toBe(130);
          expect(p.eventsOf("watcher_stopped")).toHaveLength(1);
          await Bun.write(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(p.eventsOf("session_ended", "gated").map((e) => e.payload.verdict)).toEqual(["exited"]);
          expect((await statusItem(p, "gated")).drained).toEqual([]);
          await p.finish();
        },
      ),
    T,
  );
});
