// The bounded output log through the real entry points (lib/supervisor/output-log.ts): an agent
// that prints without end, detached and in tmux, keeps the head and the tail within the cap; a cap
// that is no size is an environment fault. The log's own rules: output-log.test.ts.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MIN_OUTPUT_CAP, outputLayout, parseMarker } from "../../lib/supervisor/output-log.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";

// Through the real entry points: `loop run` launches an agent that prints far more than a small cap.
describe("an agent that prints without end, through loop run", () => {
  const HAVE_TMUX = Bun.spawnSync(["tmux", "-V"]).exitCode === 0;
  const TIMEOUT = 120_000; // a bound for real processes on 2 cores, not an expectation
  const COUNT = 400_000;
  // `seq` prints 2.7 MB, about 40 times the cap; then a last line the tail must keep.
  const flood = { command: ["sh", "-c", `seq 1 ${COUNT}; echo THE-END`] };
  const total = Bun.spawnSync(["sh", "-c", `seq 1 ${COUNT} | wc -c`])
    .stdout.toString()
    .trim();

  async function floods(tmux: boolean) {
    const sock = `loop-cap-${process.pid}-${tmux ? "t" : "p"}`;
    try {
      await scenario(
        demoDefinition([{ id: "loud", prompt: "print", runner: "flood" }], { runners: { flood }, ...(tmux ? { sessions: { tmux: true } } : {}) }),
        { env: { LOOP_OUTPUT_CAP: "64K", ...(tmux ? { LOOP_TMUX_SOCKET: sock } : {}) } },
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.loud!.status).toBe("passed");
          const path = join(p.sessionDir("loud", 1), "output.log");
          const file = readFileSync(path);
          expect(file.length).toBeLessThanOrEqual(MIN_OUTPUT_CAP);
          const { head } = outputLayout(MIN_OUTPUT_CAP);
          expect(file.subarray(0, 12).toString()).toBe("1\n2\n3\n4\n5\n6\n");
          const marker = parseMarker(file.subarray(head));
          expect(marker).not.toBeNull();
          expect(file.toString().endsWith(`\n${COUNT - 1}\n${COUNT}\nTHE-END\n`)).toBe(true);
          // Every byte accounted for: head + dropped + kept is what the agent printed.
          expect(head + marker!.dropped + (file.length - head - marker!.length)).toBe(Number(total) + "THE-END\n".length);
          expect(readdirSync(p.sessionDir("loud", 1)).filter((f) => f.includes(".tmp-"))).toEqual([]);
        },
      );
    } finally {
      if (tmux) Bun.spawnSync(["tmux", "-L", sock, "kill-server"]);
    }
  }

  test("detached: output.log keeps the head and the tail within the cap, and the item passes", () => floods(false), TIMEOUT);
  test.skipIf(!HAVE_TMUX)("in tmux (teed to the pane): the same", () => floods(true), TIMEOUT);

  test(
    "an invalid LOOP_OUTPUT_CAP is refused at launch with a message naming it",
    async () => {
      await scenario(demoDefinition([{ id: "a", prompt: "p" }]), { env: { LOOP_OUTPUT_CAP: "lots" } }, async (p) => {
        const r = await p.run([0, 1]);
        expect(r.exitCode).toBe(1);
        expect(JSON.stringify(r)).toContain('LOOP_OUTPUT_CAP=\\"lots\\" is not a size');
        expect(existsSync(join(p.sessionDir("a", 1), "started.json"))).toBe(false);
        // An environment fault: no attempt spent, the loop paused. Fixed and resumed, the loop goes on.
        expect(r.loop.state).toBe("paused");
        await p.loop(["ctl", "resume", "--json", "--root", p.root]);
        p.env.LOOP_OUTPUT_CAP = "1M";
        await p.runToDrain();
      });
    },
    TIMEOUT,
  );
});
