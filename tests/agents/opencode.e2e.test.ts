// The real opencode (1.18.33) as loop's `opencode` preset, through `loop run`, against the fake
// Anthropic Messages API on 127.0.0.1 (tests/helpers/fake-anthropic.ts) that is loop's
// ANTHROPIC_BASE_URL, on a fresh $HOME: its config (providers at the session's gateway, every
// permission allowed) is in OPENCODE_CONFIG_CONTENT and its folders in the session's own config home.
// The gateway holds loop's ANTHROPIC_API_KEY (the agent has a stand-in) and meters every answer: an
// item passes with the tokens the fake served, its title request included. A reply goes to a fresh
// session, in its handoff (the preset does not resume). Skipped, said once, without the CLI
// (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type AnthropicTurn, type AnthropicUsage, type FakeAnthropic, say, startFakeAnthropic } from "../helpers/fake-anthropic.ts";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;
const LOOPS_KEY = "sk-ant-loops-own-key";
const MODEL = "anthropic/claude-sonnet-4-5";

/** opencode's bash tool running one command. */
function bash(command: string): AnthropicTurn {
  return { tool: { name: "bash", input: { command, description: "run a command" } } };
}

/** As loop counts Anthropic's usage: input apart from the cache's reads and writes. */
function tokensOf(u: AnthropicUsage) {
  return { input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_input_tokens, cacheWrite: u.cache_creation_input_tokens };
}

function agentEnv(p: Project, fake: FakeAnthropic): Record<string, string> {
  const home = join(p.aux, "home");
  mkdirSync(home, { recursive: true });
  return { PATH: `${agentPath(p.aux, "opencode", "opencode")}:${process.env.PATH}`, HOME: home, ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: LOOPS_KEY };
}

const bin = agentBin("opencode");

describe.skipIf(bin === null)("opencode as loop's preset", () => {
  test(
    "an item passes on a fresh $HOME: its bash call writes the file its verify checks; the fake sees loop's key, never the stand-in; the tokens are what it served, the title request included",
    async () => {
      const fake = await startFakeAnthropic((t) => (t.step === 0 ? bash("printf 'hello\\n' > DONE.md") : say("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], { defaults: { runner: "opencode", model: MODEL } }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const posts = fake.requests.filter((r) => r.method === "POST");
            // Its two turns, and at least one side request (the title) that offers no tools.
            expect(posts.filter((r) => r.agent).length).toBe(2);
            expect(posts.some((r) => !r.agent)).toBe(true);
            expect(new Set(posts.map((r) => r.headers["x-api-key"]))).toEqual(new Set([LOOPS_KEY]));
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: tokensOf(fake.served.total) });
            const launch = JSON.parse(readFileSync(join(p.sessionDir("a", 1), "launch.json"), "utf8")) as { argv: string[] };
            expect(launch.argv.slice(0, 8)).toEqual(["opencode", "run", "--format", "json", "--pure", "--model", MODEL, "--"]);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "ask → loop ctl reply: not resumed, a fresh session whose handoff carries the question and the reply reaches the model",
    async () => {
      const fake = await startFakeAnthropic((t) => {
        if (t.userText.includes("blue, please")) return t.step === 0 ? bash("echo blue > COLOUR.md") : say("Done.");
        return t.step === 0 ? bash(`printf 'Which colour?\\n' > "$LOOP_ASK_FILE"`) : say("Asked.");
      });
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Pick a colour.", verify: "test -s COLOUR.md" }], { defaults: { runner: "opencode", model: MODEL } }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runUntil((r) => r.attention.some((a) => a.kind === "question"), { what: "the question" });
            const first = fake.requests.length;
            expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(it.attempts).toHaveLength(2);
            const argv = (JSON.parse(readFileSync(join(p.sessionDir("a", 2), "launch.json"), "utf8")) as { argv: string[] }).argv;
            expect(argv.includes("--session") || argv.includes("--continue")).toBe(false);
            const handoff = p.handoff("a", 2);
            expect(handoff).toContain("Which colour?");
            expect(handoff).toContain("blue, please");
            const second = fake.requests.slice(first).filter((r) => r.agent);
            expect(second.length).toBeGreaterThan(0);
            expect(JSON.stringify(second[0]!.body)).toContain("blue, please");
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
