// A model API that bills as the providers do, for the corpus's metering attacks (attack.metering):
// every request that reaches it with loop's real key is billed in full when it arrives, whether or
// not the caller reads the answer (a streamed answer the caller hangs up on is still generated and
// billed), and any path but the metered ones is billed as a batch would be, later and outside every
// figure loop keeps. Its answers carry their usage where the published shapes put it: the Messages
// API's message_start (input) and message_delta (output); Chat Completions' last chunk, only when
// the request asks for it (`stream_options.include_usage`). A request with another key is refused
// (401) and not billed: a stand-in is worth nothing at the provider.
const INPUT_BASE = 1000;
/** What a path the gateway must not forward costs, when it does: a message batch, billed later. */
export const UNMETERED_PATH_BILL = 50_000;

export interface BillingUpstream {
  /** ANTHROPIC_BASE_URL and OPENAI_BASE_URL for loop's environment. */
  anthropic: string;
  openai: string;
  /** Tokens billed, and the paths that reached it. */
  billed(): number;
  paths(): string[];
  stop(): void;
}

export function startBillingUpstream(keys: { anthropic: string; openai: string }): BillingUpstream {
  let billed = 0;
  const paths: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const text = await req.text();
      const key = req.headers.get("x-api-key") ?? req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
      if (key !== keys.anthropic && key !== keys.openai)
        return Response.json({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }, { status: 401 });
      paths.push(`${req.method} ${url.pathname}`);
      let body: Record<string, any> = {};
      try {
        body = JSON.parse(text || "{}");
      } catch {}
      const input = INPUT_BASE + text.length;
      if (req.method === "POST" && url.pathname === "/v1/messages") {
        const output = Math.min(Number(body.max_tokens) || 1000, 800);
        billed += input + output;
        return body.stream
          ? sse(messagesStream(input, output))
          : Response.json({
              id: "msg",
              type: "message",
              role: "assistant",
              content: [{ type: "text", text: "x".repeat(400) }],
              stop_reason: "end_turn",
              usage: { input_tokens: input, output_tokens: output },
            });
      }
      if (req.method === "POST" && url.pathname === "/v1/chat/completions") {
        const output = Math.min(Number(body.max_tokens ?? body.max_completion_tokens) || 1000, 500);
        billed += input + output;
        const usage = { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
        if (!body.stream)
          return Response.json({
            id: "c",
            object: "chat.completion",
            choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: "stop" }],
            usage,
          });
        const chunks = Array.from({ length: 10 }, () => ({
          id: "c",
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta: { content: "x".repeat(50) } }],
        }));
        if (body.stream_options?.include_usage) chunks.push({ id: "c", object: "chat.completion.chunk", choices: [], usage } as never);
        return sse(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n");
      }
      if (url.pathname === "/v1/messages/count_tokens") return Response.json({ input_tokens: input });
      if (req.method === "GET" && /^\/v1\/models/.test(url.pathname)) return Response.json({ data: [] });
      billed += UNMETERED_PATH_BILL;
      return Response.json({ id: "batch", processing_status: "in_progress" });
    },
  });
  const at = `http://127.0.0.1:${server.port}`;
  return { anthropic: at, openai: `${at}/v1`, billed: () => billed, paths: () => [...paths], stop: () => server.stop(true) };
}

/** A streamed Messages answer: input in message_start, a long text, the output only in message_delta. */
function messagesStream(input: number, output: number): string {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  return [
    ev("message_start", { message: { id: "msg", type: "message", role: "assistant", content: [], usage: { input_tokens: input, output_tokens: 1 } } }),
    ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    ...Array.from({ length: 40 }, () => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "x".repeat(200) } })),
    ev("content_block_stop", { index: 0 }),
    ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: output } }),
    ev("message_stop", {}),
  ].join("");
}

/** The stream sent slowly enough that a caller who hangs up early is gone before its end. */
function sse(text: string): Response {
  const parts = text.split(/(?<=\n\n)/);
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      const next = parts.shift();
      if (next === undefined) return c.close();
      c.enqueue(new TextEncoder().encode(next));
      await Bun.sleep(5);
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}
