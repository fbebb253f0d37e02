// The gateway forwards only what it can meter (lib/gateway/gateway.ts, lib/gateway/endpoints.ts),
// against a plain-HTTP model API on 127.0.0.1 that answers as the providers do: an answer the agent
// hangs up on before its usage (streamed or not) is charged its worst case, never the little it said
// so far; an answer the upstream ends without its usage likewise; a batch, a file, a background
// response never reach the upstream and are refused in the provider's own error shape; a Chat
// Completions stream is asked for its usage by the gateway itself; an error answer costs nothing.
import { afterAll, describe, expect, test } from "bun:test";
import { type ModelCall, startGateway } from "../../lib/gateway/gateway.ts";

/** What the gateway adds to a request's size for its worst-case input (lib/gateway/endpoints.ts INPUT_MARGIN; written out so this file runs on a tree without it). */
const INPUT_MARGIN = 4096;
const KEY = "sk-ant-real-key-only-loop-holds";
const STAND_IN = "loop-stand-in-metering";
const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s();
});

const sse = (events: [string, unknown][]) => events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("");
/** An Anthropic answer up to its last content block: what an agent reads before it hangs up. */
const HEAD = sse([
  [
    "message_start",
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-x",
        content: [],
        usage: { input_tokens: 1000, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000, output_tokens: 1 },
      },
    },
  ],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "The whole answer." } }],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
]);
const TAIL = sse([
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5000 } }],
  ["message_stop", { type: "message_stop" }],
]);
/** A Gemini stream (ai.google.dev/api/generate-content): usageMetadata in each chunk, cumulative; the last names its finishReason. promptTokenCount counts the cached tokens; candidatesTokenCount leaves thinking out. */
const GEMINI_CHUNKS = [
  {
    candidates: [{ content: { role: "model", parts: [{ text: "Working" }] }, index: 0 }],
    usageMetadata: { promptTokenCount: 900, cachedContentTokenCount: 600, candidatesTokenCount: 2, totalTokenCount: 902 },
    modelVersion: "gemini-x-001",
  },
  {
    candidates: [{ content: { role: "model", parts: [{ text: " done." }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 900, cachedContentTokenCount: 600, candidatesTokenCount: 40, thoughtsTokenCount: 25, totalTokenCount: 965 },
    modelVersion: "gemini-x-001",
  },
];
const MESSAGE = {
  id: "msg_2",
  type: "message",
  role: "assistant",
  model: "claude-x",
  content: [{ type: "text", text: "hi" }],
  stop_reason: "end_turn",
  usage: { input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
};

/**
 * The upstream. POST /v1/messages: `hang` sends HEAD and holds the rest (the model goes on, its usage
 * never comes); `drop` sends HEAD and closes (the upstream ends it); `slow` answers unstreamed after
 * 300 ms; `half` sends half an unstreamed body and holds; else HEAD + TAIL. POST /chat/completions:
 * a chat stream, its last chunk the usage only when asked for. POST /v1/messages/count_tokens, GET
 * /v1/models: free answers. A 400 for `bad`. Every request it sees is recorded.
 */
function upstream() {
  const seen: { method: string; path: string; body: string }[] = [];
  const seenKeys: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = await req.text();
      seen.push({ method: req.method, path: url.pathname, body });
      const mode = url.searchParams.get("mode");
      const events = { "content-type": "text/event-stream" };
      if (url.pathname === "/v1/messages/count_tokens") return Response.json({ input_tokens: 12 });
      if (url.pathname === "/v1/models") return Response.json({ data: [], has_more: false, first_id: null, last_id: null });
      if (url.pathname === "/v1/chat/completions") {
        const doc = JSON.parse(body);
        const chunk = (o: object) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "gpt-x", ...o })}\n\n`;
        let text = chunk({ choices: [{ index: 0, delta: { content: "hi" } }], ...(doc.stream_options?.include_usage ? { usage: null } : {}) });
        if (doc.stream_options?.include_usage)
          text += chunk({ choices: [], usage: { prompt_tokens: 700, completion_tokens: 80, prompt_tokens_details: { cached_tokens: 600 } } });
        return new Response(text + "data: [DONE]\n\n", { headers: events });
      }
      const gemini = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent)$/.exec(url.pathname);
      if (gemini) {
        seenKeys.push(req.headers.get("x-goog-api-key") ?? `query:${url.searchParams.get("key")}`);
        if (gemini[2] === "generateContent") return Response.json(GEMINI_CHUNKS.at(-1));
        if (mode === "cut") return new Response(`data: ${JSON.stringify(GEMINI_CHUNKS[0])}\r\n\r\n`, { headers: events });
        if (url.searchParams.get("alt") === "sse")
          return new Response(GEMINI_CHUNKS.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join(""), { headers: events });
        return Response.json(GEMINI_CHUNKS);
      }
      if (url.pathname !== "/v1/messages") return new Response("no", { status: 404 });
      if (mode === "bad") return Response.json({ type: "error", error: { type: "invalid_request_error", message: "no" } }, { status: 400 });
      if (mode === "slow") return Bun.sleep(300).then(() => Response.json(MESSAGE));
      if (mode === "half") {
        const json = JSON.stringify(MESSAGE);
        return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(json.slice(0, 40))) }), {
          headers: { "content-type": "application/json" },
        });
      }
      if (mode === "hang") return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(HEAD)) }), { headers: events });
      if (mode === "drop") return new Response(HEAD, { headers: events });
      return new Response(HEAD + TAIL, { headers: events });
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, seen, seenKeys };
}

async function gateway() {
  const api = upstream();
  const calls: ModelCall[] = [];
  const refused: { provider: string; method: string; path: string; code: string }[] = [];
  const g = await startGateway({
    upstreams: { anthropic: api.url, openai: `${api.url}/v1`, gemini: api.url },
    keys: { anthropic: KEY, openai: KEY, gemini: KEY },
    standIn: STAND_IN,
    allow: "none",
    onModelCall: (c) => calls.push(c),
    onModelRefused: (r) => refused.push({ provider: r.provider, method: r.method, path: r.path, code: r.code }),
  });
  stops.push(() => g.stop());
  return { g, api, calls, refused };
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(5);
};
const REQUEST = JSON.stringify({ model: "claude-x", max_tokens: 8000, stream: true, messages: [{ role: "user", content: "go" }] });
const post = (url: string, body = REQUEST, signal?: AbortSignal) =>
  fetch(url, { method: "POST", headers: { "x-api-key": STAND_IN, "content-type": "application/json" }, body, signal });

describe("an answer cut off before its usage is charged its worst case", () => {
  test("streamed: the agent reads the whole text and hangs up before message_delta; its input as message_start said, its output all of max_tokens", async () => {
    const { g, calls } = await gateway();
    const ac = new AbortController();
    const r = await post(`${g.modelUrl.anthropic}/v1/messages?mode=hang`, REQUEST, ac.signal);
    const reader = r.body!.getReader();
    let got = "";
    while (!got.includes("content_block_stop")) got += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await until(() => calls.length > 0);
    // Not the 1,000 + 1 + cache that message_start said: the 5,000 output tokens it was generating are under the 8,000 charged.
    expect(calls[0]).toMatchObject({
      basis: "worst_case",
      cutOff: true,
      complete: false,
      estimatedInput: false,
      usage: { input: 1000, cacheRead: 3000, cacheWrite: 200, output: 8000 },
    });
  });

  test("unstreamed: hung up on before the body's usage arrives, and before the answer's headers: each charged the request's worst case", async () => {
    const { g, calls } = await gateway();
    const body = JSON.stringify({ model: "claude-x", max_tokens: 3000, messages: [{ role: "user", content: "go" }] });
    const worst = { input: Buffer.byteLength(body) + INPUT_MARGIN, output: 3000, cacheRead: 0, cacheWrite: 0 };
    const half = new AbortController();
    const r = await post(`${g.modelUrl.anthropic}/v1/messages?mode=half`, body, half.signal);
    await r.body!.getReader().read();
    half.abort();
    await until(() => calls.length > 0);
    expect(calls[0]).toMatchObject({ basis: "worst_case", cutOff: true, estimatedInput: true, usage: worst });
    const early = new AbortController();
    const pending = post(`${g.modelUrl.anthropic}/v1/messages?mode=slow`, body, early.signal).catch(() => "aborted");
    await Bun.sleep(50);
    early.abort();
    expect(await pending).toBe("aborted");
    await until(() => calls.length > 1);
    expect(calls[1]).toMatchObject({ basis: "worst_case", cutOff: true, usage: worst });
  });

  test("the upstream ends a success without its usage: charged the worst case too (never an unmetered success), but not counted as the agent's cut-off", async () => {
    const { g, calls } = await gateway();
    expect((await post(`${g.modelUrl.anthropic}/v1/messages?mode=drop`)).status).toBe(200);
    await until(() => calls.length > 0);
    expect(calls[0]).toMatchObject({ basis: "worst_case", cutOff: false, usage: { input: 1000, output: 8000 } });
  });

  test("an answer read to its end: its own figure; an error answer: nothing, as the provider bills none", async () => {
    const { g, calls } = await gateway();
    await (await post(`${g.modelUrl.anthropic}/v1/messages`)).text();
    await (await post(`${g.modelUrl.anthropic}/v1/messages?mode=bad`)).text();
    await until(() => calls.length > 1);
    expect(calls.map((c) => [c.basis, c.cutOff, c.usage])).toEqual([
      ["usage", false, { input: 1000, output: 5000, cacheRead: 3000, cacheWrite: 200 }],
      ["error", false, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }],
    ]);
  });
});

describe("only what the gateway can meter is forwarded", () => {
  test("batches, files and a background response are refused in the provider's error shape, recorded, and never reach the upstream", async () => {
    const { g, api, refused } = await gateway();
    const tries: [string, string, string, string?][] = [
      [
        "anthropic",
        "POST",
        "/v1/messages/batches",
        JSON.stringify({ requests: [{ custom_id: "a", params: { model: "claude-x", max_tokens: 9, messages: [] } }] }),
      ],
      ["anthropic", "GET", "/v1/files"],
      ["anthropic", "DELETE", "/v1/files/file_011"],
      ["openai", "POST", "/batches", "{}"],
      ["openai", "GET", "/files"],
      ["openai", "POST", "/responses", JSON.stringify({ model: "gpt-x", background: true, input: "go" })],
    ];
    for (const [provider, method, path, body] of tries) {
      const r = await fetch(`${g.modelUrl[provider as "anthropic"]}${path}`, {
        method,
        headers: { "x-api-key": STAND_IN, authorization: `Bearer ${STAND_IN}` },
        body,
      });
      expect(r.status).toBe(403);
      const doc = (await r.json()) as Record<string, any>;
      if (provider === "anthropic")
        expect(doc).toEqual({ type: "error", error: { type: "permission_error", message: expect.stringContaining("(endpoint_not_allowed)") } });
      else
        expect(doc).toEqual({
          error: { message: expect.stringContaining("(endpoint_not_allowed)"), type: "invalid_request_error", param: null, code: "endpoint_not_allowed" },
        });
    }
    expect(api.seen).toEqual([]);
    expect(refused).toEqual(tries.map(([provider, method, path]) => ({ provider, method, path, code: "endpoint_not_allowed" })));
  });

  test("what the CLIs send goes through: count_tokens and the model listing as free, a HEAD probe", async () => {
    const { g, api, calls } = await gateway();
    expect((await post(`${g.modelUrl.anthropic}/v1/messages/count_tokens?beta=true`, "{}")).status).toBe(200);
    expect((await fetch(`${g.modelUrl.anthropic}/v1/models?limit=1000`, { headers: { "x-api-key": STAND_IN } })).status).toBe(200);
    await until(() => calls.length === 2);
    expect(calls.map((c) => [c.method, c.path, c.basis])).toEqual([
      ["POST", "/v1/messages/count_tokens", "free"],
      ["GET", "/v1/models", "free"],
    ]);
    expect(api.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["POST /v1/messages/count_tokens", "GET /v1/models"]);
  });

  test("a Chat Completions stream that did not ask for its usage is forwarded asking for it, and metered", async () => {
    const { g, api, calls } = await gateway();
    for (const options of [undefined, { include_usage: false }]) {
      const body = JSON.stringify({
        model: "gpt-x",
        stream: true,
        ...(options ? { stream_options: options } : {}),
        messages: [{ role: "user", content: "go" }],
      });
      const r = await fetch(`${g.modelUrl.openai}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${STAND_IN}` }, body });
      expect(await r.text()).toContain('"prompt_tokens":700');
      expect(JSON.parse(api.seen.at(-1)!.body).stream_options).toEqual({ include_usage: true });
    }
    await until(() => calls.length === 2);
    for (const c of calls) expect(c).toMatchObject({ basis: "usage", usage: { input: 100, cacheRead: 600, output: 80, cacheWrite: 0 } });
  });
});

describe("Gemini's API (usageMetadata)", () => {
  const GEMINI_REQUEST = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "go" }] }], generationConfig: { maxOutputTokens: 2000 } });
  const exact = { input: 300, cacheRead: 600, cacheWrite: 0, output: 65 };
  const postGemini = (url: string, headers: Record<string, string> = { "x-goog-api-key": STAND_IN }) =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: GEMINI_REQUEST });

  test("streamed (alt=sse), as a JSON array, and unstreamed: metered exactly, cached tokens apart, thinking counted as output, the model as the answer names it", async () => {
    const { g, calls } = await gateway();
    for (const path of [
      "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
      "/v1beta/models/gemini-x:streamGenerateContent",
      "/v1beta/models/gemini-x:generateContent",
    ]) {
      const r = await postGemini(`${g.modelUrl.gemini}${path}`);
      expect(r.status).toBe(200);
      await r.text();
    }
    await until(() => calls.length >= 3);
    for (const c of calls) expect(c).toMatchObject({ provider: "gemini", basis: "usage", model: "gemini-x-001", usage: exact, standIn: true });
  });

  test("loop's key replaces the stand-in, in the header or the key query parameter; a cut-off stream is charged maxOutputTokens", async () => {
    const { g, api, calls } = await gateway();
    await (await postGemini(`${g.modelUrl.gemini}/v1beta/models/gemini-x:generateContent?key=${STAND_IN}`, {})).text();
    await (await postGemini(`${g.modelUrl.gemini}/v1beta/models/gemini-x:generateContent`)).text();
    expect(api.seenKeys).toEqual([KEY, KEY]);
    await (await postGemini(`${g.modelUrl.gemini}/v1beta/models/gemini-x:streamGenerateContent?alt=sse&mode=cut`)).text();
    await until(() => calls.length >= 3);
    expect(calls[2]).toMatchObject({ basis: "worst_case", usage: { output: 2000 }, model: "gemini-x-001" });
  });

  test("an endpoint it cannot meter is refused in Gemini's error shape, and never reaches the upstream", async () => {
    const { g, api, refused } = await gateway();
    const r = await fetch(`${g.modelUrl.gemini}/v1beta/cachedContents`, { method: "POST", headers: { "x-goog-api-key": STAND_IN }, body: "{}" });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ error: { code: 403, status: "PERMISSION_DENIED" } });
    expect(refused).toMatchObject([{ provider: "gemini", code: "endpoint_not_allowed" }]);
    expect(api.seen.filter((s) => s.path.includes("cachedContents"))).toEqual([]);
  });
});
