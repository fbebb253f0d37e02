// A session's gateway as the wrapper runs it (lib/supervisor/session-gateway.ts), against the fake
// Anthropic API (tests/helpers/fake-anthropic.ts): each call's line names the model its answer named
// and its dollars at the operator's prices; a dollar cap refuses the request after the one that
// reached it, while every answer had a price; an answer without one leaves the dollars unknown and
// the cap to the step. budgetRefusal is the decision, with plain data.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { admission, agentVariables, CUT_OFF_LIMIT, type GatewayLedger, startSessionGateway } from "../../lib/supervisor/session-gateway.ts";
import { GATEWAY_FILES, readGatewayStop, readRefusals } from "../../lib/supervisor/gateway-files.ts";
import { priced } from "../../lib/definition/usage-parsers.ts";
import { type FakeAnthropic, say, startFakeAnthropic, steps } from "../helpers/fake-anthropic.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());
// As loop.json's prices are normalized: micro-dollars per million tokens ($3, $15, $0.30, $3.75).
const PRICE = { input: 3_000_000, output: 15_000_000, cacheRead: 300_000, cacheWrite: 3_750_000 };

/** One agent turn (a request with tools: the fake answers it with its script and realistic usage). */
async function ask(url: string, standIn: string, model: string): Promise<number> {
  const r = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": standIn, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: 100,
      tools: [{ name: "Bash", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: "hi" }],
    }),
  });
  await r.text();
  return r.status;
}

const lines = (dir: string, file: string) =>
  readFileSync(join(dir, file), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

async function withGateway(fake: FakeAnthropic, request: Record<string, unknown>, body: (o: { url: string; dir: string }) => Promise<void>) {
  const dir = temp.make();
  const g = await startSessionGateway({
    dir,
    request: { standIn: "stand-in-1", allow: "none", ...request },
    env: { ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: "sk-ant-real" },
  });
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

  test("admission: a spent budget refuses everything; requests in flight hold their worst case; a session that cut off too many answers is refused", () => {
    const ledger = (o: Partial<GatewayLedger> = {}): GatewayLedger => ({
      tokens: 0,
      microUsd: 0,
      unpriced: new Set(),
      held: { requests: 0, tokens: 0, microUsd: 0 },
      cutOffs: 0,
      ...o,
    });
    const code = (l: GatewayLedger, w: { tokens: number; microUsd: number | null } | null, caps: { maxTokens?: number; maxMicroUsd?: number }) =>
      admission(l, w, caps)?.code ?? null;
    const w = { tokens: 40_000, microUsd: 600_000 };
    // Tokens: at the cap everything is refused, free endpoints too; alone in flight a request goes while the budget is not spent.
    expect(code(ledger({ tokens: 99 }), w, { maxTokens: 100 })).toBeNull();
    expect(code(ledger({ tokens: 100 }), w, { maxTokens: 100 })).toBe("budget_exhausted");
    expect(code(ledger({ tokens: 100 }), null, { maxTokens: 100 })).toBe("budget_exhausted");
    expect(admission(ledger({ tokens: 100 }), w, { maxTokens: 100 })!.reason).toBe("the session's budget is spent (100 of 100 tokens)");
    // With others in flight: it goes only if what is spent, what they hold and its own worst case fit.
    expect(code(ledger({ tokens: 10_000, held: { requests: 1, tokens: 40_000, microUsd: 0 } }), w, { maxTokens: 90_000 })).toBeNull();
    expect(code(ledger({ tokens: 10_000, held: { requests: 1, tokens: 40_000, microUsd: 0 } }), w, { maxTokens: 89_999 })).toBe("budget_in_flight");
    expect(code(ledger({ held: { requests: 3, tokens: 120_000, microUsd: 0 } }), null, { maxTokens: 1 })).toBeNull();
    // Dollars likewise, while every answer so far had a price; a request whose model has none holds no dollars.
    expect(code(ledger({ microUsd: 1_500_000 }), w, { maxMicroUsd: 1_500_000 })).toBe("budget_exhausted");
    expect(admission(ledger({ microUsd: 1_500_000 }), w, { maxMicroUsd: 1_500_000 })!.reason).toBe("the session's budget is spent ($1.50 of $1.50)");
    expect(code(ledger({ microUsd: 9_000_000, unpriced: new Set(["m"]) }), w, { maxMicroUsd: 1 })).toBeNull();
    expect(code(ledger({ microUsd: 500_000, held: { requests: 1, tokens: 0, microUsd: 600_000 } }), w, { maxMicroUsd: 1_700_000 })).toBeNull();
    expect(code(ledger({ microUsd: 500_000, held: { requests: 1, tokens: 0, microUsd: 600_000 } }), w, { maxMicroUsd: 1_699_999 })).toBe("budget_in_flight");
    expect(
      code(ledger({ microUsd: 500_000, held: { requests: 1, tokens: 0, microUsd: 600_000 } }), { tokens: 1, microUsd: null }, { maxMicroUsd: 1_000_000 }),
    ).toBeNull();
    // Cut-offs first: the session is stopped whatever its budget.
    expect(code(ledger({ cutOffs: CUT_OFF_LIMIT - 1 }), w, {})).toBeNull();
    expect(code(ledger({ cutOffs: CUT_OFF_LIMIT }), null, {})).toBe("answers_cut_off");
    expect(code(ledger({}), w, {})).toBeNull();
  });
});

/** An agent turn of a fixed size: 3,000 input and 500 output tokens. */
const turn = () => say("ok", { input_tokens: 3000, output_tokens: 500, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });

describe("a session's gateway: requests in flight", () => {
  test("twenty requests sent at once against a 5,000-token budget: those the budget cannot cover with the ones in flight are refused 429 before the upstream; what is recorded passes the cap by at most the last answer", async () => {
    const fake = await startFakeAnthropic(() => turn());
    try {
      await withGateway(fake, { maxTokens: 5000 }, async ({ url, dir }) => {
        const body = JSON.stringify({
          model: "claude-sonnet-4-5",
          stream: true,
          max_tokens: 1024,
          tools: [{ name: "Bash", input_schema: { type: "object" } }],
          messages: [{ role: "user", content: "hi" }],
        });
        const answers = await Promise.all(
          Array.from({ length: 20 }, async () => {
            const r = await fetch(`${url}/v1/messages`, { method: "POST", headers: { "x-api-key": "stand-in-1", "content-type": "application/json" }, body });
            return { status: r.status, retryAfter: r.headers.get("retry-after"), doc: await r.text() };
          }),
        );
        const served = fake.requests.filter((r) => r.method === "POST").length;
        expect(answers.filter((a) => a.status === 200)).toHaveLength(served);
        expect(served).toBeLessThanOrEqual(2);
        const waited = answers.filter((a) => a.status === 429);
        expect(waited.length).toBeGreaterThan(0);
        for (const a of waited)
          expect({ retryAfter: a.retryAfter, doc: JSON.parse(a.doc) }).toEqual({
            retryAfter: "10",
            doc: { type: "error", error: { type: "rate_limit_error", message: expect.stringContaining("(budget_in_flight)") } },
          });
        for (const a of answers.filter((x) => x.status !== 200 && x.status !== 429))
          expect({ status: a.status, doc: a.doc }).toEqual({ status: 403, doc: expect.stringContaining("(budget_exhausted)") });
        const calls = lines(dir, GATEWAY_FILES.usage);
        const spent = calls.reduce((n, c) => n + c.usage.input + c.usage.output, 0);
        expect(spent - 3500).toBeLessThan(5000);
        const { refused } = readRefusals(dir);
        expect(refused).toHaveLength(20 - served);
        expect(new Set(refused.map((r) => r.kind))).toEqual(new Set(["budget"]));
      });
    } finally {
      await fake.stop();
    }
  });
});

describe("a session's gateway: answers cut off", () => {
  test(`the ${CUT_OFF_LIMIT}rd answer hung up on before its usage stops the session's model requests: each charged its worst case, the stop written for the step, every later request refused`, async () => {
    const fake = await startFakeAnthropic(() => ({
      text: "The whole answer.",
      hangBeforeDelta: true,
      usage: { input_tokens: 1000, output_tokens: 5000, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    }));
    try {
      await withGateway(fake, {}, async ({ url, dir }) => {
        const body = JSON.stringify({
          model: "claude-sonnet-4-5",
          stream: true,
          max_tokens: 8000,
          tools: [{ name: "Bash", input_schema: { type: "object" } }],
          messages: [{ role: "user", content: "hi" }],
        });
        const statuses: number[] = [];
        for (let i = 0; i < CUT_OFF_LIMIT + 2; i++) {
          const ac = new AbortController();
          const r = await fetch(`${url}/v1/messages`, { method: "POST", headers: { "x-api-key": "stand-in-1" }, body, signal: ac.signal });
          statuses.push(r.status);
          if (r.status !== 200) {
            expect(JSON.parse(await r.text()).error).toEqual({ type: "permission_error", message: expect.stringContaining("(answers_cut_off)") });
            continue;
          }
          const reader = r.body!.getReader();
          let got = "";
          while (!got.includes("content_block_stop")) got += new TextDecoder().decode((await reader.read()).value);
          ac.abort();
          for (let t = 0; t < 200 && !(existsSync(join(dir, GATEWAY_FILES.usage)) && lines(dir, GATEWAY_FILES.usage).length > i); t++) await Bun.sleep(5);
        }
        expect(statuses).toEqual([...Array(CUT_OFF_LIMIT).fill(200), 403, 403]);
        const calls = lines(dir, GATEWAY_FILES.usage);
        expect(calls.map((c) => [c.basis, c.cutOff, c.usage.input, c.usage.output])).toEqual(Array(CUT_OFF_LIMIT).fill(["worst_case", true, 1000, 8000]));
        // Never less than what was served (the fake bills each answer whole).
        const t = fake.served.total;
        expect(calls.reduce((n, c) => n + c.usage.input + c.usage.output, 0)).toBeGreaterThanOrEqual(t.input_tokens + t.output_tokens);
        expect(readGatewayStop(dir)).toEqual({ code: "answers_cut_off", reason: expect.stringContaining(`hung up on ${CUT_OFF_LIMIT} model answers`) });
        expect(readRefusals(dir).refused.map((r) => [r.kind, "code" in r ? r.code : null])).toEqual([
          ["cut_off", "answers_cut_off"],
          ["cut_off", "answers_cut_off"],
        ]);
      });
    } finally {
      await fake.stop();
    }
  });
});

describe("the refusals file, as the step and loop logs read it", () => {
  test("each kind with its code; a budget line from before the codes reads as budget_exhausted; a line whose kind and code disagree, or that is not loop's, is counted unreadable", () => {
    const dir = temp.make();
    const at = "2026-12-06T10:00:00.000Z";
    const docs = [
      { kind: "network", host: "registry.npmjs.org", port: 443, at },
      { kind: "budget", reason: "the session's budget is spent (10 of 10 tokens)", at },
      { kind: "budget", code: "budget_in_flight", reason: "wait", at },
      { kind: "endpoint", code: "endpoint_not_allowed", provider: "anthropic", method: "POST", path: "/v1/messages/batches", reason: "no", at },
      { kind: "cut_off", code: "answers_cut_off", reason: "cut", at },
      { kind: "budget", code: "answers_cut_off", reason: "mismatched", at },
      { kind: "endpoint", code: "endpoint_not_allowed", method: "POST", reason: "no path", at },
    ];
    writeFileSync(join(dir, GATEWAY_FILES.refused), docs.map((d) => JSON.stringify(d)).join("\n") + "\nnot json\n");
    const { refused, unreadable } = readRefusals(dir);
    expect(refused).toEqual([
      { kind: "network", host: "registry.npmjs.org", port: 443, at },
      { kind: "budget", code: "budget_exhausted", reason: "the session's budget is spent (10 of 10 tokens)", at },
      { kind: "budget", code: "budget_in_flight", reason: "wait", at },
      { kind: "endpoint", code: "endpoint_not_allowed", method: "POST", path: "/v1/messages/batches", reason: "no", at },
      { kind: "cut_off", code: "answers_cut_off", reason: "cut", at },
    ]);
    expect(unreadable).toBe(3);
    expect(readGatewayStop(dir)).toBeNull();
    writeFileSync(join(dir, GATEWAY_FILES.stopped), JSON.stringify({ code: "budget_exhausted", reason: "not a stop code" }));
    expect(readGatewayStop(dir)).toBeNull();
  });
});

describe("what the agent is given of its gateway (agentVariables)", () => {
  const all = {
    ANTHROPIC_BASE_URL: "http://127.0.0.1:1/anthropic",
    ANTHROPIC_API_KEY: "stand-in",
    OPENAI_BASE_URL: "http://127.0.0.1:1/openai",
    OPENAI_API_KEY: "stand-in",
    HTTP_PROXY: "http://127.0.0.1:2",
    HTTPS_PROXY: "http://127.0.0.1:2",
    ALL_PROXY: "http://127.0.0.1:2",
    http_proxy: "http://127.0.0.1:2",
    https_proxy: "http://127.0.0.1:2",
    all_proxy: "http://127.0.0.1:2",
    NO_PROXY: "127.0.0.1,localhost,::1",
    no_proxy: "127.0.0.1,localhost,::1",
  };
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
