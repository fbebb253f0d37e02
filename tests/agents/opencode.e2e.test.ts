// The real opencode (1.18.33) as loop's `opencode` preset, through `loop run`, against the fake
// Anthropic Messages API on 127.0.0.1 (tests/helpers/fake-anthropic.ts) that is loop's
// ANTHROPIC_BASE_URL, on a fresh $HOME: its config (providers at the session's gateway, every
// permission allowed) is in OPENCODE_CONFIG_CONTENT and its folders in the session's own config home.
// The gateway holds loop's ANTHROPIC_API_KEY (the agent has a stand-in) and meters every answer: an
// item passes with the tokens the fake served, its title request included. A reply resumes the same
// conversation (`--session <id>`, its database kept with the session); an agent that gives up ends
// `gave_up`, and a token budget stops it at the gateway. Skipped, said once, without the CLI
// (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
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
            // No prices: the dollars are opencode's own, its steps' `cost` summed (the gateway's tokens stay the figure).
            const output = readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8");
            const costs = [...output.matchAll(/"type":"step-finish".*?"cost":([0-9.e-]+)/g)].map((m) => Math.round(Number(m[1]) * 1e6));
            expect(costs.length).toBe(2);
            expect(it.attempts[0]!.usage).toMatchObject({ usdFrom: "agent", microUsd: costs[0]! + costs[1]! });
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

  test.skipIf(!Bun.which("bwrap"))(
    "in the sandbox with no network, on a fresh $HOME: its folders are the session's own, it reaches its model through the bridge and no other host but npm's registry (refused: it works without), and the item passes with the tokens the fake served",
    async () => {
      const fake = await startFakeAnthropic((t) => (t.step === 0 ? bash("printf 'hello\\n' > DONE.md") : say("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "opencode", model: MODEL, sandbox: "bwrap", network: "none" },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: tokensOf(fake.served.total) });
            // Nothing else it tried to reach but npm's registry (docs/runners.md#opencode), refused, and it works
            // without: no models.dev fetch, no share, no update check.
            const refusedFile = join(p.sessionDir("a", 1), "gateway-refused.jsonl");
            const refused = existsSync(refusedFile) ? readFileSync(refusedFile, "utf8").trim().split("\n") : [];
            expect(new Set(refused.map((l) => `${JSON.parse(l).host}:${JSON.parse(l).port}`))).toEqual(new Set(["registry.npmjs.org:443"]));
            // Its folders were the session's config home, not the fresh $HOME (read-only in the sandbox).
            expect(existsSync(join(p.aux, "home", ".local", "share", "opencode"))).toBe(false);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "ask → loop ctl reply → resume: `--session` with the id its events announced, its database put back; the reply reaches the model in the same conversation, and the resumed attempt records only its own requests",
    async () => {
      // By what the conversation holds, not its step: the resumed request carries the first process's turns.
      const fake = await startFakeAnthropic((t) => {
        const replyFile = /Read the file (\S+): it holds/.exec(t.lastUser)?.[1];
        if (replyFile) return bash(`grep -q 'blue, please' '${replyFile}' && echo blue > COLOUR.md`);
        if (t.step === 0) return bash(`printf 'Which colour?\\n' > "$LOOP_ASK_FILE"`);
        return say(t.userText.includes("reply.md") ? "Done." : "Asked.");
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
            const servedBefore = tokensOf(fake.served.total);
            expect(p.projection().items.a!.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: servedBefore });
            expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(it.attempts).toHaveLength(2);
            const sessionOf = (n: number) => /"sessionID":"(ses_[A-Za-z0-9]+)"/.exec(readFileSync(join(p.sessionDir("a", n), "output.log"), "utf8"))?.[1];
            const id = sessionOf(1)!;
            expect(id).toMatch(/^ses_/);
            const argv = (JSON.parse(readFileSync(join(p.sessionDir("a", 2), "launch.json"), "utf8")) as { argv: string[] }).argv;
            expect(argv.slice(0, 10)).toEqual(["opencode", "run", "--format", "json", "--pure", "--model", MODEL, "--session", id, "--"]);
            expect(argv.join(" ")).not.toContain("blue, please");
            // The same conversation: its events carry the same id, and every request of the resumed process carries the first one's turns.
            expect(sessionOf(2)).toBe(id);
            const second = fake.requests.slice(first).filter((r) => r.agent);
            expect(second.length).toBeGreaterThan(0);
            for (const r of second) expect(JSON.stringify(r.body)).toContain("LOOP_ASK_FILE");
            expect(it.attempts[1]!.usage).toMatchObject({ source: "gateway" });
            const total = tokensOf(fake.served.total);
            const own = it.attempts[1]!.usage!.tokens!;
            expect({
              input: own.input + servedBefore.input,
              output: own.output + servedBefore.output,
              cacheRead: own.cacheRead + servedBefore.cacheRead,
              cacheWrite: own.cacheWrite + servedBefore.cacheWrite,
            }).toEqual(total);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "an agent that gives up: its reason recorded, no verify, nothing landed, not retried",
    async () => {
      const fake = await startFakeAnthropic((t) =>
        t.step === 0 ? bash(`printf 'The spec and the test disagree.\\n' > "$LOOP_GIVE_UP_FILE"`) : say("I gave up."),
      );
      try {
        await scenario(
          (p) =>
            demoDefinition([{ id: "a", prompt: "Make the test pass.", verify: `touch ${join(p.aux, "verified")}`, maxAttempts: 3 }], {
              defaults: { runner: "opencode", model: MODEL },
            }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runToDrain({ codes: [0, 1] });
            const it = p.projection().items.a!;
            expect(it).toMatchObject({ status: "failed", settleCode: "gave_up" });
            expect(it.attempts).toHaveLength(1);
            expect(it.attempts[0]!.verify!.reason).toBe("gave_up: the agent gave up: The spec and the test disagree.");
            expect(existsSync(join(p.aux, "verified"))).toBe(false);
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: tokensOf(fake.served.total) });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "a token budget stops an endless session at the gateway: the request after the one that reached it is refused, the item settles budget_exhausted, the figure the fake's to the token",
    async () => {
      const LIMIT = 60_000;
      const fake = await startFakeAnthropic((t) => bash(`echo tick ${t.step}`));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { tokens: LIMIT }, maxAttempts: 1 }], {
            defaults: { runner: "opencode", model: MODEL },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runUntil((_r, q) => q.projection().items.a!.status === "failed", { what: "the item failed", maxPolls: 400, codes: [0, 1] });
            const it = p.projection().items.a!;
            expect(it.settleCode).toBe("budget_exhausted");
            const recorded = it.attempts[0]!.usage!.tokens!;
            expect(recorded).toEqual(tokensOf(fake.served.total));
            const sum = (t: typeof recorded) => t.input + t.output + t.cacheRead + t.cacheWrite;
            // Within one model request of the limit: the last agent turn served crossed it, and nothing after it was.
            const last = fake.turns.at(-1)!.usage;
            expect(sum(recorded)).toBeGreaterThanOrEqual(LIMIT);
            expect(sum(recorded) - sum(tokensOf(last))).toBeLessThan(LIMIT);
            expect(fake.turns.length).toBeGreaterThan(2);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
