// The real pi (@mariozechner/pi-coding-agent 0.73.1) as loop's agent, through `loop run`, as the
// command runner docs/runners.md gives for it ("pi and Qwen Code as command runners"), read from the
// doc itself so the two cannot drift apart, against the fake Anthropic Messages API on 127.0.0.1
// (tests/helpers/fake-anthropic.ts) that is loop's ANTHROPIC_BASE_URL. pi does not honour
// ANTHROPIC_BASE_URL: the recipe writes a models.json pointing its Anthropic provider at the session's
// gateway, which holds loop's key (pi has the stand-in) and meters every answer: an item passes with
// the tokens the fake served. Skipped, said once, without the CLI (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type AnthropicTurn, type AnthropicUsage, say, startFakeAnthropic } from "../helpers/fake-anthropic.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";
import { agentBin, agentPath, runnersDocJson } from "./agents.ts";

const SLOW = 240_000;
const LOOPS_KEY = "sk-ant-loops-own-key";
const MODEL = "claude-sonnet-4-5";

/** The runner docs/runners.md gives for pi, as written there. */
function piRunner(): { command: string[] } {
  const block = runnersDocJson("pi and Qwen Code as command runners").find((b) => (b as { runners?: { pi?: unknown } }).runners?.pi) as
    | { runners: { pi: { command: string[] } } }
    | undefined;
  if (!block) throw new Error('docs/runners.md gives no `runners.pi` under "pi and Qwen Code as command runners"');
  return block.runners.pi;
}

/** pi's bash tool running one command. */
function bash(command: string): AnthropicTurn {
  return { tool: { name: "bash", input: { command } } };
}

/** As loop counts Anthropic's usage: input apart from the cache's reads and writes. */
function tokensOf(u: AnthropicUsage) {
  return { input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_input_tokens, cacheWrite: u.cache_creation_input_tokens };
}

const bin = agentBin("pi");

describe.skipIf(bin === null)("pi as loop's agent (the command runner docs/runners.md gives)", () => {
  test(
    "an item passes: its bash call writes the file its verify checks; its requests reach the fake through the gateway with loop's key; the tokens are what the fake served",
    async () => {
      const runner = piRunner();
      const fake = await startFakeAnthropic((t) => (t.step === 0 ? bash("printf 'hello\\n' > DONE.md") : say("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "pi", model: MODEL },
            runners: { pi: runner },
          }),
          {},
          async (p) => {
            const home = join(p.aux, "home");
            mkdirSync(home, { recursive: true });
            Object.assign(p.env, {
              PATH: `${agentPath(p.aux, "pi", "pi")}:${process.env.PATH}`,
              HOME: home,
              ANTHROPIC_BASE_URL: fake.url,
              ANTHROPIC_API_KEY: LOOPS_KEY,
            });
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const session = p.sessionDir("a", 1);
            // The doc's command, its placeholders filled: the model after `anthropic/`, the handoff as pi's prompt.
            const launch = JSON.parse(readFileSync(join(session, "launch.json"), "utf8")) as { argv: string[] };
            const handoff = readFileSync(join(session, "handoff.md"), "utf8");
            expect(launch.argv).toEqual(runner.command.map((a) => (a === "{model}" ? MODEL : a === "{prompt}" ? handoff : a)));
            // Its models.json, beside the handoff, names the session's gateway, not the fake.
            const models = JSON.parse(readFileSync(join(session, "pi-agent", "models.json"), "utf8")) as { providers: { anthropic: { baseUrl: string } } };
            expect(models.providers.anthropic.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/anthropic$/);
            expect(models.providers.anthropic.baseUrl).not.toContain(`:${fake.port}/`);
            // Its two turns, on the item's model, each sent loop's key by the gateway.
            const posts = fake.requests.filter((r) => r.method === "POST");
            expect(fake.turns.map((t) => [t.step, t.model, t.tool])).toEqual([
              [0, MODEL, "bash"],
              [1, MODEL, null],
            ]);
            expect(new Set(posts.map((r) => r.headers["x-api-key"]))).toEqual(new Set([LOOPS_KEY]));
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: tokensOf(fake.served.total) });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
