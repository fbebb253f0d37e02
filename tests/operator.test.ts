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

test("a declined or interrupted confirmation names the tool once: `loop ctl: …`, not `loop ctl: loop ctl skip: …` (docs/cli/README.md#errors)", async () => {
  const { LOOP } = await import("./helpers/cli.ts");
  const { testEnv } = await import("./helpers/env.ts");
  await scenario(demoDefinition([{ id: "alpha", prompt: "Alpha\n@demo write a.txt a" }]), {}, async (p) => {
    await p.run(); // creates the store, launches alpha
    for (const keys of ["n\r", "\x03"]) {
      let text = "";
      const dec = new TextDecoder();
      const proc = Bun.spawn([process.execPath, LOOP, "ctl", "skip", "--work-item", "alpha"], {
        cwd: p.root,
        env: testEnv({ TERM: "xterm-256color", NO_COLOR: "1" }),
        terminal: { cols: 200, rows: 50, data: (_t, d) => void (text += dec.decode(d, { stream: true })) },
      });
      for (let i = 0; i < 400 && !text.includes("Go ahead?"); i++) await Bun.sleep(25);
      proc.terminal!.write(keys);
      await proc.exited;
      proc.terminal?.close();
      const line = text.split(/\r?\n/).find((l) => /declined|interrupted/.test(l));
      expect(line).toStartWith("loop ctl: ");
      expect(line).not.toContain("loop ctl: loop ctl");
    }
    await p.runToDrain();
  });
}, 60_000);
