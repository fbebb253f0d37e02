// A session's gateway as the wrapper runs it (lib/supervisor/session-gateway.ts), against the fake
// Anthropic API (tests/helpers/fake-anthropic.ts): each call's line names the model its answer named
// and its dollars at the operator's prices; a dollar cap refuses the request after the one that
// reached it, while every answer had a price; an answer without one leaves the dollars unknown and
// the cap to the step. budgetRefusal is the decision, with plain data.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { agentVariables, budgetRefusal, startSessionGateway } from "../../lib/supervisor/session-gateway.ts";
import { GATEWAY_FILES } from "../../lib/supervisor/gateway-files.ts";
import { priced } from "../../lib/definition/usage-parsers.ts";
import { type FakeAnthropic, say, startFakeAnthropic, steps } from "../helpers/fake-anthropic.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());
// As loop.json's prices are normalized: micro-dollars per million tokens ($3, $15, $0.30, $3.75).
const PRICE = { input: 3_000_000, output: 15_000_000, cacheRead: 300_000, cacheWrite: 3_750_000 };

/** One agent turn (a request with tools: the fake answers it with its script and realistic usage). */
async function ask(url: string, standIn: string, model: string): Promise<number> {
  const r = await fetch(`${url}/v1/messages`, { method: "POST", headers: { "x-api-key": standIn, "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model, stream: true, max_tokens: 100, tools: [{ name: "Bash", input_schema: { type: "object" } }], messages: [{ role: "user", content: "hi" }] }) });
  await r.text();
  return r.status;
}

const lines = (dir: string, file: string) => readFileSync(join(dir, file), "utf8").trim().split("\n").map((l) => JSON.parse(l));

async function withGateway(fake: FakeAnthropic, request: Record<string, unknown>, body: (o: { url: string; dir: string }) => Promise<void>) {
  const dir = temp.make();
  const g = await startSessionGateway({ dir, request: { standIn: "stand-in-1", allow: "none", ...request }, env: { ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: "sk-ant-real" } });
  try {
    await body({ url: g.env.ANTHROPIC_BASE_URL!, dir });
  } finally {
    await g.stop();
  }
}

describe("a session's gateway: dollars at the source", () => {
  test("each call is priced by the model its answer named; the request after the one that reached the dollar cap is refused, and the upstream never sees it", async () => {
    const fake = await startFakeAnthropic(steps(say("a"), say("b"), say("c"), say("d")));
    try {
      // Each answer (a first turn, its cache written) costs about $0.049 at these prices: the second reaches the cap.
      await withGateway(fake, { prices: { "claude-sonnet-4-5": PRICE }, maxMicroUsd: 55_000 }, async ({ url, dir }) => {
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) statuses.push(await ask(url, "stand-in-1", "claude-sonnet-4-5"));
        const calls = lines(dir, GATEWAY_FILES.usage);
        expect(calls.every((c) => c.model === "claude-sonnet-4-5")).toBe(true);
        for (const c of calls) expect(c.microUsd).toBe(priced(c.usage, PRICE));
        const served = calls.length;
        expect(statuses).toEqual([...Array(served).fill(200), ...Array(4 - served).fill(403)]);
        expect(served).toBe(2);
        const spent = calls.reduce((n, c) => n + c.microUsd, 0);
        expect(spent).toBeGreaterThanOrEqual(55_000);
        expect(spent - calls.at(-1).microUsd).toBeLessThan(55_000);
        expect(fake.requests.filter((r) => r.method === "POST").length).toBe(served);
        expect(lines(dir, GATEWAY_FILES.refused)[0]).toMatchObject({ kind: "budget", reason: expect.stringContaining("of $0.055)") });
      });
    } finally {
      await fake.stop();
    }
  });

  test("an answer whose model has no price: its dollars are unknown (null), and the dollar cap is left to the step", async () => {
    const fake = await startFakeAnthropic(steps(say("a"), say("b"), say("c")));
    try {
      await withGateway(fake, { prices: { "claude-sonnet-4-5": PRICE }, maxMicroUsd: 1 }, async ({ url, dir }) => {
        expect(await ask(url, "stand-in-1", "claude-haiku-4-5")).toBe(200);
        expect(await ask(url, "stand-in-1", "claude-sonnet-4-5")).toBe(200);
        expect(lines(dir, GATEWAY_FILES.usage).map((c) => [c.model, c.microUsd === null])).toEqual([
          ["claude-haiku-4-5", true],
          ["claude-sonnet-4-5", false],
        ]);
      });
    } finally {
      await fake.stop();
    }
  });

  test("budgetRefusal: tokens at their cap; dollars at theirs only while every answer had a price", () => {
    const none = new Set<string>();
    expect(budgetRefusal({ tokens: 99, microUsd: 0, unpriced: none }, { maxTokens: 100 })).toBeNull();
    expect(budgetRefusal({ tokens: 100, microUsd: 0, unpriced: none }, { maxTokens: 100 })).toBe("the session's budget is spent (100 of 100 tokens)");
    expect(budgetRefusal({ tokens: 0, microUsd: 1_500_000, unpriced: none }, { maxMicroUsd: 1_500_000 })).toBe("the session's budget is spent ($1.50 of $1.50)");
    expect(budgetRefusal({ tokens: 0, microUsd: 1_499_999, unpriced: none }, { maxMicroUsd: 1_500_000 })).toBeNull();
    expect(budgetRefusal({ tokens: 0, microUsd: 9_000_000, unpriced: new Set(["m"]) }, { maxMicroUsd: 1 })).toBeNull();
    expect(budgetRefusal({ tokens: 5, microUsd: 5, unpriced: none }, {})).toBeNull();
  });
});

describe("what the agent is given of its gateway (agentVariables)", () => {
  const all = { ANTHROPIC_BASE_URL: "http://127.0.0.1:1/anthropic", ANTHROPIC_API_KEY: "stand-in", OPENAI_BASE_URL: "http://127.0.0.1:1/openai", OPENAI_API_KEY: "stand-in", HTTP_PROXY: "http://127.0.0.1:2", HTTPS_PROXY: "http://127.0.0.1:2", ALL_PROXY: "http://127.0.0.1:2", http_proxy: "http://127.0.0.1:2", https_proxy: "http://127.0.0.1:2", all_proxy: "http://127.0.0.1:2", NO_PROXY: "127.0.0.1,localhost,::1", no_proxy: "127.0.0.1,localhost,::1" };
  const held = { ANTHROPIC_API_KEY: true, OPENAI_API_KEY: true };

  test("with a network list: the gateway's URLs, its stand-ins and its proxy, the CLIs' own traffic off", () => {
    const env = agentVariables(all, { open: false, held });
    expect(env).toMatchObject(all);
    expect(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
  });

  test("open: no proxy (the agent's connections are its own, through the operator's proxy if any), the gateway's loopback added to the operator's NO_PROXY", () => {
    const env = agentVariables(all, { open: true, held, noProxy: "corp.example, .internal" });
    expect(Object.keys(env).filter((k) => /_proxy$/i.test(k) && !/^no_proxy$/i.test(k))).toEqual([]);
    expect(env.NO_PROXY).toBe("corp.example,.internal,127.0.0.1,localhost,::1");
    expect(env.no_proxy).toBe(env.NO_PROXY);
    expect(env.ANTHROPIC_BASE_URL).toBe(all.ANTHROPIC_BASE_URL);
  });

  test("a stand-in only for a key loop holds: a CLI signed in with an account uses its own credential, passed through", () => {
    const env = agentVariables(all, { open: true, held: { ANTHROPIC_API_KEY: false, OPENAI_API_KEY: true } });
    expect("ANTHROPIC_API_KEY" in env).toBe(false);
    expect(env.OPENAI_API_KEY).toBe("stand-in");
  });
});
