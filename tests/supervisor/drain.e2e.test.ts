// The session wrapper keeps the agent's whole output, even when the machine gives it no CPU for a
// while around the agent's exit (lib/supervisor/session-wrapper.ts).
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, pollUntil, scenario, sleep } from "../helpers/project.ts";

const T = 120_000;

describe("the output's tail", () => {
  test.concurrent(
    "a wrapper stopped while the agent prints its last lines and exits still writes them to output.log once it runs again",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "a", prompt: "x", runner: "last", verify: "true" }], {
            runners: {
              last: {
                command: [
                  "sh",
                  "-c",
                  `echo first; while [ ! -e ${join(p.aux, "go")} ]; do sleep 0.05; done; i=0; while [ $i -lt 200 ]; do echo "tail line $i"; i=$((i+1)); done; echo THE-END`,
                ],
              },
            },
          }),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          const dir = p.sessionDir("a", 1);
          await pollUntil(() => existsSync(join(dir, "started.json")) && readFileSync(join(dir, "output.log"), "utf8").includes("first"), "the agent printed");
          const wrapper = JSON.parse(readFileSync(join(dir, "started.json"), "utf8")).wrapperPid as number;
          process.kill(wrapper, "SIGSTOP");
          try {
            writeFileSync(join(p.aux, "go"), "");
            // Starved for longer than the wrapper drains the output after the agent's exit.
            await sleep(3000);
          } finally {
            process.kill(wrapper, "SIGCONT");
          }
          await pollUntil(() => existsSync(join(dir, "exit.json")), "the wrapper wrote exit.json");
          expect(readFileSync(join(dir, "output.log"), "utf8")).toContain("THE-END");
          await p.runToDrain();
        },
      ),
    T,
  );
});
