// The gateway's allow-list and what a billed request may cost at most (lib/gateway/endpoints.ts),
// and what the meter calls a final figure (lib/gateway/meter.ts), as data.
import { describe, expect, test } from "bun:test";
import { DEFAULT_MAX_OUTPUT, endpointOf, geminiModelOf, INPUT_MARGIN, readRequest } from "../../lib/gateway/endpoints.ts";
import { UsageMeter } from "../../lib/gateway/meter.ts";

const sse = (events: [string, unknown][]) => events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("");
const HEAD = sse([
  ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", model: "claude-x", usage: { input_tokens: 1000, output_tokens: 1 } } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "The whole answer." } }],
]);
const TAIL = sse([
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5000 } }],
  ["message_stop", { type: "message_stop" }],
]);
const MESSAGE = { id: "msg_2", type: "message", role: "assistant", model: "claude-x", content: [], usage: { input_tokens: 10, output_tokens: 20 } };

describe("the allow-list and a request's worst case, as data", () => {
  test("endpointOf: what the presets' CLIs send, and nothing else", () => {
    expect(endpointOf("anthropic", "POST", "/v1/messages")).toEqual({ billed: true, api: "messages" });
    expect(endpointOf("anthropic", "POST", "/v1/messages/count_tokens")).toEqual({ billed: false, api: null });
    expect(endpointOf("anthropic", "GET", "/v1/models/claude-sonnet-4-5")).toEqual({ billed: false, api: null });
    expect(endpointOf("anthropic", "HEAD", "/")).toEqual({ billed: false, api: null });
    expect(endpointOf("openai", "POST", "/responses")).toEqual({ billed: true, api: "responses" });
    expect(endpointOf("openai", "POST", "/chat/completions")).toEqual({ billed: true, api: "chat" });
    for (const [p, m, path] of [
      ["anthropic", "GET", "/v1/messages"],
      ["anthropic", "POST", "/v1/messages/batches"],
      ["anthropic", "POST", "/v1/files"],
      ["anthropic", "POST", "/v1/complete"],
      ["openai", "POST", "/batches"],
      ["openai", "GET", "/responses/resp_1"],
      ["openai", "POST", "/embeddings"],
      ["openai", "POST", "/responses/"],
    ] as const)
      expect({ p, m, path, e: endpointOf(p, m, path) }).toEqual({ p, m, path, e: null });
  });

  test("Gemini: generateContent and streamGenerateContent billed, countTokens and the model list free, the model read from the path; anything else refused", () => {
    expect(endpointOf("gemini", "POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent")).toEqual({ billed: true, api: "gemini" });
    expect(endpointOf("gemini", "POST", "/v1/models/gemini-2.5-flash:generateContent")).toEqual({ billed: true, api: "gemini" });
    expect(endpointOf("gemini", "POST", "/v1beta/models/gemini-2.5-pro:countTokens")).toEqual({ billed: false, api: null });
    expect(endpointOf("gemini", "GET", "/v1beta/models")).toEqual({ billed: false, api: null });
    for (const [m, path] of [
      ["POST", "/v1beta/cachedContents"],
      ["POST", "/v1beta/models/x:batchGenerateContent"],
      ["POST", "/upload/v1beta/files"],
      ["POST", "/v1beta/models/x:embedContent"],
      ["GET", "/v1beta/models/x:generateContent"],
    ] as const)
      expect({ m, path, e: endpointOf("gemini", m, path) }).toEqual({ m, path, e: null });
    expect(geminiModelOf("/v1beta/models/gemini-2.5-pro:generateContent")).toBe("gemini-2.5-pro");
    const doc = { contents: [], generationConfig: { maxOutputTokens: 900, candidateCount: 2 } };
    expect(readRequest("gemini", new TextEncoder().encode(JSON.stringify(doc)), "gemini-2.5-pro")).toMatchObject({
      worst: { model: "gemini-2.5-pro", output: 1800 },
    });
    expect(readRequest("gemini", new TextEncoder().encode("{}"), "m")).toMatchObject({ worst: { model: "m", output: DEFAULT_MAX_OUTPUT } });
  });

  test("readRequest: the output limit each API names (× n for chat), else the largest any model writes; the input at the request's size and a margin", () => {
    const worst = (api: "messages" | "responses" | "chat", doc: unknown) => {
      const r = readRequest(api, new TextEncoder().encode(JSON.stringify(doc)));
      return r.refused ?? r.worst;
    };
    const size = (doc: unknown) => Buffer.byteLength(JSON.stringify(doc)) + INPUT_MARGIN;
    expect(worst("messages", { model: "m", max_tokens: 32000 })).toEqual({ model: "m", input: size({ model: "m", max_tokens: 32000 }), output: 32000 });
    expect(worst("responses", { model: "g", max_output_tokens: 700 })).toMatchObject({ output: 700 });
    expect(worst("responses", { model: "g" })).toMatchObject({ output: DEFAULT_MAX_OUTPUT });
    expect(worst("chat", { max_tokens: 100, n: 3 })).toMatchObject({ model: null, output: 300 });
    expect(worst("chat", { max_completion_tokens: 50, max_tokens: 100 })).toMatchObject({ output: 50 });
    expect(worst("messages", { max_tokens: -5 })).toMatchObject({ output: DEFAULT_MAX_OUTPUT });
    expect(worst("responses", { background: true })).toContain("background");
    expect(readRequest("messages", new TextEncoder().encode("not json"))).toMatchObject({
      worst: { model: null, input: 8 + INPUT_MARGIN, output: DEFAULT_MAX_OUTPUT },
    });
    // Only a streamed chat request is changed, and only to ask for the usage.
    const chat = readRequest("chat", new TextEncoder().encode(JSON.stringify({ stream: true, stream_options: { foo: 1 } })));
    expect(JSON.parse(new TextDecoder().decode(chat.refused === undefined ? chat.body : new Uint8Array()))).toEqual({
      stream: true,
      stream_options: { foo: 1, include_usage: true },
    });
    const same = new TextEncoder().encode(JSON.stringify({ stream: false }));
    expect(readRequest("chat", same)).toMatchObject({ body: same });
  });

  test("the meter tells a final figure from one so far", () => {
    const feed = (text: string, stream = true) => {
      const m = new UsageMeter(stream);
      m.push(new TextEncoder().encode(text));
      m.end();
      return [m.seen, m.final];
    };
    expect(feed(HEAD)).toEqual([true, false]);
    expect(feed(HEAD + sse([["message_delta", { type: "message_delta", delta: { stop_reason: null }, usage: { output_tokens: 9 } }]]))).toEqual([true, false]);
    expect(feed(HEAD + TAIL)).toEqual([true, true]);
    expect(feed(`data: {"choices":[],"usage":null}\n\n`)).toEqual([false, false]);
    expect(feed(JSON.stringify(MESSAGE), false)).toEqual([true, true]);
    expect(feed(JSON.stringify(MESSAGE).slice(0, 50), false)).toEqual([false, false]);
  });
});
