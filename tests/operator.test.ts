// Bugs found by trying loop as a new operator would (one test per bug; each fails until fixed).
import { expect, test } from "bun:test";
import { demoDefinition, scenario, sleep } from "./helpers/project.ts";

test("usage_recorded: an observing tick records nothing when the running figure did not change (docs/events.md#usage_recorded)", async () => {
  const def = demoDefinition([{ id: "slow", prompt: "Slow\n@demo usage 100 10\n@demo sleep 4\n@demo write a.txt a\n@demo commit a" }]);
  await scenario(def, {}, async (p) => {
    await p.run(); // launches
    // Ticks while the agent sleeps: its usage file stays the same.
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      await p.run();
    }
    const running = p.eventsOf("usage_recorded", "slow").filter((e) => !e.payload.final);
    const distinct = new Set(running.map((e) => JSON.stringify(e.payload)));
    // "recorded by an observing tick only when it changed": one event per distinct figure.
    expect(running.length).toBe(distinct.size);
    await p.runToDrain();
  });
}, 60_000);
