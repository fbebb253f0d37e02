// The real Claude Code and Codex CLIs behind their session's gateway (docs/threat-model.md#the-gateway),
// through `loop run`, against the fake model APIs on 127.0.0.1 (tests/helpers/fake-anthropic.ts,
// fake-openai.ts): with a `network` setting the CLI is given the gateway's URL (codex: a model
// provider of loop's on its command line) and a stand-in key, the fake is sent loop's key, the usage
// loop records is what the fake served, to the token, and a budget is enforced at the source, inside
// one endless turn. Skipped, said once, without the CLIs (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { bash, claudeEnv, endless, say, startFakeAnthropic, steps } from "../helpers/fake-anthropic.ts";
import { codexEndless, codexHome, codexSteps, type FakeOpenAI, reply, shell, startFakeOpenAI } from "../helpers/fake-openai.ts";
import { demoDefinition, pollUntil, type Project, scenario } from "../helpers/project.ts";
import { GATEWAY_FILES } from "../../lib/supervisor/gateway-files.ts";
import { PRESET_TRIES } from "../../lib/definition/network.ts";
import { DEFAULT_MAX_OUTPUT } from "../../lib/gateway/endpoints.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;
/** The model the fake's tool calls fit (codex offers another shell tool to other models); given in loop.json, as an operator would: the operator's config.toml is not read. */
const CODEX_MODEL = "gpt-5.1-codex";

describe.skipIf(agentBin("claude") === null)("claude behind its gateway", () => {
  test(
    "an item passes with network none: the fake sees loop's key, never the stand-in; the recorded tokens are what it served, side requests included",
    async () => {
      const fake = await startFakeAnthropic(steps(bash("printf 'hello\\n' > DONE.md"), say("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "claude", model: "claude-sonnet-4-5", network: "none" },
          }),
          {},
          async (p) => {
            const home = join(p.aux, "home");
            mkdirSync(home, { recursive: true });
            Object.assign(p.env, {
              PATH: `${agentPath(p.aux, "claude", "claude")}:${process.env.PATH}`,
              HOME: home,
              IS_SANDBOX: "1",
              ...claudeEnv(fake),
              ANTHROPIC_API_KEY: "sk-ant-loops-own-key",
            });
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const keys = new Set(fake.requests.filter((r) => r.method === "POST").map((r) => r.headers["x-api-key"]));
            expect([...keys]).toEqual(["sk-ant-loops-own-key"]);
            // Every answer the fake gave (the agent's turns and the CLI's side requests) went through the gateway: the same figure, to the token.
            const t = fake.served.total;
            expect(it.attempts[0]!.usage!.tokens).toEqual({
              input: t.input_tokens,
              output: t.output_tokens,
              cacheRead: t.cache_read_input_tokens,
              cacheWrite: t.cache_creation_input_tokens,
            });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});

describe.skipIf(agentBin("claude") === null)("claude behind its gateway: stopped mid-message", () => {
  test(
    "a session ended while a message streams (loop ctl stop), its text said but not its usage: the cut message is charged its input and all of claude's max_tokens, never less than the fake served",
    async () => {
      const fake = await startFakeAnthropic((t) =>
        t.step < 3
          ? bash(`echo step ${t.step}`, { output_tokens: 828 })
          : { text: "The whole of the last answer.", hangBeforeDelta: true, usage: { output_tokens: 4_000 } },
      );
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Work.", verify: "false" }], { defaults: { runner: "claude", model: "claude-sonnet-4-5", network: "none" } }),
          {},
          async (p) => {
            const home = join(p.aux, "home");
            mkdirSync(home, { recursive: true });
            Object.assign(p.env, {
              PATH: `${agentPath(p.aux, "claude", "claude")}:${process.env.PATH}`,
              HOME: home,
              IS_SANDBOX: "1",
              ...claudeEnv(fake),
              ANTHROPIC_API_KEY: "sk-ant-loops-own-key",
            });
            expect((await p.run()).action).toBe("launched");
            await pollUntil(() => fake.turns.length === 4, "the fourth message hangs");
            expect((await p.ctl(["stop", "--work-item", "a", "--yes"])).code).toBe(0);
            await p.run([0, 1]);
            const calls = readFileSync(join(p.sessionDir("a", 1), GATEWAY_FILES.usage), "utf8")
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l));
            // The cut message is on record as such: its input and cache as message_start said, its output what claude allowed it.
            const cut = calls.filter((c) => !c.complete);
            expect(cut).toHaveLength(1);
            const maxTokens = fake.requests.filter((r) => r.method === "POST").at(-1)!.body!.max_tokens as number;
            expect(cut[0]).toMatchObject({ basis: "worst_case", cutOff: true, usage: { output: maxTokens } });
            const t = fake.served.total;
            const recorded = p.projection().items.a!.attempts[0]!.usage!;
            expect(recorded.source).toBe("gateway");
            const last = fake.turns.at(-1)!.usage;
            expect(recorded.tokens).toEqual({
              input: t.input_tokens,
              output: t.output_tokens - last.output_tokens + maxTokens,
              cacheRead: t.cache_read_input_tokens,
              cacheWrite: t.cache_creation_input_tokens,
            });
            expect(recorded.tokens!.output).toBeGreaterThanOrEqual(t.output_tokens);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});

describe.skipIf(agentBin("claude") === null)("claude behind its gateway: a dollar budget at the source", () => {
  test(
    "an endless session with a dollar budget: each call priced by the model its answer named, the request after the one that reached the budget refused, budget_exhausted",
    async () => {
      const LIMIT = 0.5;
      const fake = await startFakeAnthropic(endless(2_000));
      try {
        const prices = { "claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } };
        await scenario(
          demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { usd: LIMIT } }], {
            defaults: { runner: "claude", model: "claude-sonnet-4-5", network: "none", maxAttempts: 1 },
            prices,
          }),
          {},
          async (p) => {
            const home = join(p.aux, "home");
            mkdirSync(home, { recursive: true });
            // Its side requests on the same model, so every answer has a price.
            Object.assign(p.env, {
              PATH: `${agentPath(p.aux, "claude", "claude")}:${process.env.PATH}`,
              HOME: home,
              IS_SANDBOX: "1",
              ...claudeEnv(fake),
              ANTHROPIC_API_KEY: "sk-ant-loops-own-key",
              ANTHROPIC_SMALL_FAST_MODEL: "claude-sonnet-4-5",
              ANTHROPIC_DEFAULT_HAIKU_MODEL: "claude-sonnet-4-5",
            });
            expect((await p.run()).action).toBe("launched");
            await p.runUntil((_r, q) => q.projection().items.a!.status === "failed", { what: "the item failed", maxPolls: 400 });
            const it = p.projection().items.a!;
            expect(it.settleCode).toBe("budget_exhausted");
            const calls = readFileSync(join(p.sessionDir("a", 1), GATEWAY_FILES.usage), "utf8")
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l));
            expect(new Set(calls.map((c) => c.model))).toEqual(new Set(["claude-sonnet-4-5"]));
            const spent = calls.reduce((n, c) => n + c.microUsd, 0);
            const recorded = it.attempts[0]!.usage!;
            expect({ microUsd: recorded.microUsd, usdFrom: recorded.usdFrom }).toEqual({ microUsd: spent, usdFrom: "prices" });
            // Within one model request of the budget: the last answer crossed it, and nothing was served after it.
            expect(spent).toBeGreaterThanOrEqual(LIMIT * 1e6);
            expect(spent - calls.at(-1).microUsd).toBeLessThan(LIMIT * 1e6);
            expect(fake.requests.filter((r) => r.method === "POST").length).toBe(calls.length);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});

/** As loop counts a Responses usage: cached input apart from the rest; reasoning is part of the output. */
function asLoopCounts(u: { input_tokens: number; cached_tokens: number; output_tokens: number }) {
  return { input: u.input_tokens - u.cached_tokens, output: u.output_tokens, cacheRead: u.cached_tokens, cacheWrite: 0 };
}
const sumOf = (t: { input: number; output: number; cacheRead: number; cacheWrite: number }) => t.input + t.output + t.cacheRead + t.cacheWrite;

/**
 * Codex with a CODEX_HOME whose own provider points at the fake directly (what an operator's config
 * may say), and loop's environment naming the fake as its OpenAI upstream with loop's own key: behind
 * the gateway codex must go through loop's provider, never its own.
 */
function codexBehindGateway(p: Project, fake: FakeOpenAI): void {
  const home = join(p.aux, "home");
  mkdirSync(home, { recursive: true });
  Object.assign(p.env, {
    PATH: `${agentPath(p.aux, "codex", "codex")}:${process.env.PATH}`,
    HOME: home,
    ...codexHome(fake, join(home, ".codex")),
    OPENAI_BASE_URL: `${fake.url}/v1`,
    OPENAI_API_KEY: "sk-loops-own-openai-key",
  });
}

describe.skipIf(agentBin("codex") === null)("codex behind its gateway", () => {
  test(
    "an item passes with network none: codex goes through loop's provider, the fake sees loop's key only, and the recorded tokens are what it served",
    async () => {
      const fake = await startFakeOpenAI(codexSteps(shell("printf 'hello\\n' > DONE.md"), reply("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "codex", model: CODEX_MODEL, network: "none" },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            codexBehindGateway(p, fake);
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const auth = new Set(fake.requests.filter((r) => r.method === "POST").map((r) => r.headers.authorization));
            expect([...auth]).toEqual(["Bearer sk-loops-own-openai-key"]);
            expect(fake.served.responses).toBe(2);
            expect(it.attempts[0]!.usage!.tokens).toEqual(asLoopCounts(fake.served.total));
            // The argv recorded says where the URL goes, never the port.
            const started = p.events().find((e) => e.type === "session_started")!;
            expect((started.payload as { argv: string[] }).argv.join(" ")).toContain('model_provider="loop_gateway"');
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "a session ended while a response streams (loop ctl stop), before response.completed: the cut response is charged its worst case (codex names no max_output_tokens), never less than the fake served",
    async () => {
      const fake = await startFakeOpenAI((t) =>
        t.step < 2 ? shell(`echo step ${t.step}`) : { text: "The whole of the last answer.", hangBeforeCompleted: true },
      );
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Work.", verify: "false" }], {
            defaults: { runner: "codex", network: "none" },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            codexBehindGateway(p, fake);
            expect((await p.run()).action).toBe("launched");
            await pollUntil(() => fake.turns.length === 3, "the third response hangs");
            expect((await p.ctl(["stop", "--work-item", "a", "--yes"])).code).toBe(0);
            await p.run([0, 1]);
            const calls = readFileSync(join(p.sessionDir("a", 1), GATEWAY_FILES.usage), "utf8")
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l));
            const cut = calls.filter((c) => c.basis === "worst_case");
            expect(cut).toHaveLength(1);
            expect(cut[0]).toMatchObject({ cutOff: true, estimatedInput: true, usage: { output: DEFAULT_MAX_OUTPUT, cacheRead: 0 } });
            // Its input at most: the request's size and a margin, never below what the fake counted.
            const hung = fake.turns.at(-1)!.usage;
            expect(cut[0].usage.input).toBeGreaterThanOrEqual(hung.input_tokens);
            const recorded = p.projection().items.a!.attempts[0]!.usage!;
            expect(recorded.source).toBe("gateway");
            expect(sumOf(recorded.tokens!)).toBeGreaterThanOrEqual(sumOf(asLoopCounts(fake.served.total)));
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "a token budget stops codex inside one endless turn at the source: the request after the one that reached it is refused, the item settles budget_exhausted",
    async () => {
      const LIMIT = 30_000;
      const fake = await startFakeOpenAI(codexEndless(900));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { tokens: LIMIT } }], {
            defaults: { runner: "codex", model: CODEX_MODEL, network: "none", maxAttempts: 1 },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            codexBehindGateway(p, fake);
            expect((await p.run()).action).toBe("launched");
            await p.runUntil((_r, q) => q.projection().items.a!.status === "failed", { what: "the item failed", maxPolls: 400 });
            const it = p.projection().items.a!;
            expect(it.settleCode).toBe("budget_exhausted");
            // Codex never finished its turn: every figure is the gateway's, to the token.
            const recorded = it.attempts[0]!.usage!.tokens!;
            expect(recorded).toEqual(asLoopCounts(fake.served.total));
            // Within one model request of the limit: the last answer served crossed it, and nothing after it was.
            const last = fake.turns.at(-1)!.usage;
            expect(sumOf(recorded)).toBeGreaterThanOrEqual(LIMIT);
            expect(sumOf(recorded) - sumOf(asLoopCounts(last))).toBeLessThan(LIMIT);
            // Whichever came first, the gateway's refusal of the next request or the step's stop (it reads the
            // gateway's figure as it grows), nothing was served past the limit. Beyond the budget, the gateway
            // refused only what codex tries on its own and works without (never its analytics: turned off).
            const refusedFile = join(p.sessionDir("a", 1), GATEWAY_FILES.refused);
            const refused = existsSync(refusedFile)
              ? readFileSync(refusedFile, "utf8")
                  .trim()
                  .split("\n")
                  .map((l) => JSON.parse(l))
              : [];
            const tried = refused.filter((r) => r.kind === "network").map((r) => `${r.host}:${r.port}`);
            for (const host of tried) expect(PRESET_TRIES.codex).toContain(host);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
