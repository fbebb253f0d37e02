// The real Claude Code CLI behind its session's gateway (docs/threat-model.md#the-gateway), through
// `loop run`, against the fake Anthropic API on 127.0.0.1 (tests/helpers/fake-anthropic.ts): with a
// `network` setting the CLI is given the gateway's URL and a stand-in key, the fake is sent loop's
// key, and the usage loop records is what the fake served, to the token. Skipped, said once,
// without the CLIs (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { bash, claudeEnv, say, startFakeAnthropic, steps } from "../helpers/fake-anthropic.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;

describe.skipIf(agentBin("claude") === null)("claude behind its gateway", () => {
  test(
    "an item passes with network none: the fake sees loop's key, never the stand-in; the recorded tokens are what it served, side requests included",
    async () => {
      const fake = await startFakeAnthropic(steps(bash("printf 'hello\\n' > DONE.md"), say("Done.")));
      try {
        await scenario(demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], { defaults: { runner: "claude", model: "claude-sonnet-4-5", network: "none" } }), {}, async (p) => {
          const home = join(p.aux, "home");
          mkdirSync(home, { recursive: true });
          Object.assign(p.env, { PATH: `${agentPath(p.aux, "claude", "claude")}:${process.env.PATH}`, HOME: home, IS_SANDBOX: "1", ...claudeEnv(fake), ANTHROPIC_API_KEY: "sk-ant-loops-own-key" });
          await p.runToDrain();
          const it = p.projection().items.a!;
          expect(it.status).toBe("passed");
          const keys = new Set(fake.requests.filter((r) => r.method === "POST").map((r) => r.headers["x-api-key"]));
          expect([...keys]).toEqual(["sk-ant-loops-own-key"]);
          // Every answer the fake gave (the agent's turns and the CLI's side requests) went through the gateway: the same figure, to the token.
          const t = fake.served.total;
          expect(it.attempts[0]!.usage!.tokens).toEqual({ input: t.input_tokens, output: t.output_tokens, cacheRead: t.cache_read_input_tokens, cacheWrite: t.cache_creation_input_tokens });
        });
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
