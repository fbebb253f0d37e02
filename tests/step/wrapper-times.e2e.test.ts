// The phases' own times (docs/events.md#session_ended): the wrappers write when their process
// started and ended, the step that sees the end records them, and the timeline and `loop status`
// read those instead of the ticks' times. Real `loop run` steps with a pause between them, as cron's.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, pollUntil, scenario, sleep } from "../helpers/project.ts";
import { foldEvents, phasesOf } from "../../lib/reports/history.ts";

const T = 120_000;

describe("the wrappers' times", () => {
  test.concurrent(
    "session_ended and verify_finished carry the agent's and the verify's own start and end, before the step that saw them; status's endedAt and the timeline use them",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "@demo write a.txt a", verify: "test -s a.txt" }]), {}, async (p) => {
        await p.run();
        await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "exit.json")), "the agent ended");
        await sleep(300); // the tick comes later than the exit, as cron's would
        await p.run();
        await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "verify-exit.json")), "the verify ended");
        await sleep(300);
        await p.runToDrain();
        const ended = p.eventsOf("session_ended", "a")[0]!;
        const times = ended.payload.times!;
        expect(times.started).not.toBeNull();
        expect(times.ended).not.toBeNull();
        expect(Date.parse(times.started!)).toBeLessThanOrEqual(Date.parse(times.ended!));
        expect(Date.parse(times.ended!)).toBeLessThan(Date.parse(ended.ts));
        const verified = p.eventsOf("verify_finished", "a")[0]!;
        const vt = verified.payload.times!;
        expect(Date.parse(vt.ended!)).toBeLessThan(Date.parse(verified.ts));
        expect(Date.parse(vt.started!)).toBeGreaterThanOrEqual(Date.parse(p.eventsOf("verify_reserved", "a")[0]!.ts));
        // The projection's session end is the agent's own.
        const st = JSON.parse((await p.loop(["status", "--json"])).stdout).items[0];
        expect(st.session.endedAt).toBe(times.ended);
        // The timeline: the agent until its own end, then the wait for the step, the airlock (seal,
        // import, proofs: docs/cli/loop-serve.md) until the verify is reserved; the verify likewise.
        const h = foldEvents(p.events().map((e) => ({ ...e, payload: e.payload })) as never);
        const kinds = phasesOf(h.items.get("a")!.attempts[0]!).map((x) => x.kind);
        expect(kinds.slice(0, 6)).toEqual(["launching", "agent", "step", "airlock", "verify", "step"]);
        // Then the landing and the close (the worktree's removal), each as long as it took.
        expect(kinds.slice(6).every((k) => k === "landing" || k === "closing")).toBe(true);
        const agent = phasesOf(h.items.get("a")!.attempts[0]!).find((x) => x.kind === "agent")!;
        expect(agent.to).toBe(Date.parse(times.ended!));
      }),
    T,
  );
});
