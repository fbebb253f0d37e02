// What `loop status` and the page call an item (docs/cli/loop-status.md#text): an attempt whose
// verify runs reads `verifying`, not `ended`; a closed session shows no pid. Real `loop run` steps,
// a verify that waits for the test's go.
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, pollUntil, scenario } from "../helpers/project.ts";
import { statusReport } from "../../lib/reports/status.ts";
import { itemMain, loopMain } from "../../lib/serve/page.ts";
import { emptyHistory } from "../../lib/reports/history.ts";

const T = 120_000;

describe("status wording", () => {
  test.concurrent(
    "an item whose verify runs shows `verifying` in the text status and on the page (status stays `ended` in JSON, phase `verifying`); once passed, its SESSION cell has no pid",
    () =>
      scenario(
        (p) => demoDefinition([{ id: "a", prompt: "@demo write a.txt a", verify: `while [ ! -e ${join(p.aux, "go")} ]; do sleep 0.05; done` }]),
        {},
        async (p) => {
          await p.run();
          await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "exit.json")), "the agent ended");
          const r = await p.run();
          expect(r.reason).toStartWith("verify running");
          const json = JSON.parse((await p.loop(["status", "--json"])).stdout);
          expect(json.items[0]).toMatchObject({ status: "ended", phase: "verifying" });
          const text = (await p.loop(["status", "--text"])).stdout;
          expect(text).toMatch(/^a +verifying +1 /m);
          expect(text).not.toMatch(/^a +ended /m);
          expect(text).toContain("in flight: a (verifying, attempt 1");
          // The page draws the same word (its class stays the status's).
          const s = statusReport(p.stateRoot);
          expect(loopMain("t", s, emptyHistory(), Date.now()).text).toContain('<span class="st st-ended">verifying</span>');
          expect(itemMain({ loop: "t", item: s.items[0]!, history: null, files: new Map() }).text).toContain('<span class="st st-ended">verifying</span>');
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          const done = (await p.loop(["status", "--text"])).stdout;
          expect(done).toMatch(/^a +passed +1 +0 \(gives up at 2\) +.+ tok \S+ +demo +loop\/t\/item\/a /m);
          expect(done).not.toMatch(/^a .*pid \d+/m);
          expect(JSON.parse((await p.loop(["status", "--json"])).stdout).items[0].phase).toBeNull();
        },
      ),
    T,
  );
});
