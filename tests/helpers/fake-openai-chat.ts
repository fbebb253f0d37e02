// A fake OpenAI Chat Completions API on 127.0.0.1, for running a real CLI that speaks it (Qwen Code)
// as loop's agent (tests/agents/). It answers `POST /v1/chat/completions` as OpenAI's API reference
// gives it (platform.openai.com/docs/api-reference/chat-streaming): streamed, server-sent events
// with no event name, each `data:` a `chat.completion.chunk` (the first delta names the role, then the
// content's deltas or a tool call's: its id, type and name first, then its arguments in pieces; a
// last choice chunk with the `finish_reason`, `stop` or `tool_calls`), then, only when the request
// set `stream_options.include_usage`, one chunk with an empty `choices` and the request's `usage`
// (every chunk before it `usage: null`), then `data: [DONE]`; unstreamed, one `chat.completion`
// with its `usage`. `GET /v1/models` lists the model asked for. Every answer closes its connection.
//
// Scripted per test like fake-openai.ts: `script(turn)` gives the next assistant turn of the agent's
// conversation (a request that offers tools); the step is counted from the assistant messages the
// request carries. A request that offers no tools (a CLI's own side request) gets a short text answer.
// A shell command is sent as a call of whichever shell tool the request offers. Every request is
// logged, and every answer's usage summed in `served`, whether or not the answer said it (as the API
// bills a stream that was not asked for its usage).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ChatUsage {
  /** Input, the cached part included (as the API counts it). */
  prompt_tokens: number;
  /** Of prompt_tokens, read from the cache (`prompt_tokens_details.cached_tokens`). */
  cached_tokens: number;
  completion_tokens: number;
}

export interface ChatTurn {
  text?: string;
  /** A shell command, sent as a call of the shell tool the request offers. */
  shell?: string;
  usage?: Partial<ChatUsage>;
}

export interface ChatTurnContext {
  step: number;
  /** Every text the request's user and tool messages hold, joined. */
  userText: string;
  model: string;
  body: Record<string, unknown>;
}

export interface LoggedChatRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | null;
  /** The request offered tools: the agent's conversation, not a side request. */
  agent: boolean;
}

export interface FakeOpenAIChat {
  url: string;
  port: number;
  requests: LoggedChatRequest[];
  /** Summed over every answer, agent and side requests alike. */
  served: { total: ChatUsage; completions: number };
  /** The agent's turns served, in order. */
  turns: { step: number; usage: ChatUsage; shell: string | null; usageSent: boolean }[];
  script: (t: ChatTurnContext) => ChatTurn;
  stop(): Promise<void>;
}

/** A realistic usage for step `n`: a growing history, the earlier part of it cached. */
export function realisticChatUsage(step: number): ChatUsage {
  return { prompt_tokens: 9_100 + 700 * step, cached_tokens: step === 0 ? 0 : 8_960 + 512 * step, completion_tokens: 160 + 41 * step };
}

export function chatShell(command: string, usage?: Partial<ChatUsage>): ChatTurn {
  return { shell: command, usage };
}
export function chatSay(text: string, usage?: Partial<ChatUsage>): ChatTurn {
  return { text, usage };
}
export function chatSteps(...turns: ChatTurn[]): (t: ChatTurnContext) => ChatTurn {
  return (t) => turns[t.step] ?? chatSay("Done.");
}

/** As loop's gateway counts a Chat Completions usage: input apart from the cache's reads. */
export function chatTokens(u: ChatUsage): { input: number; output: number; cacheRead: number; cacheWrite: number } {
  return { input: u.prompt_tokens - u.cached_tokens, output: u.completion_tokens, cacheRead: u.cached_tokens, cacheWrite: 0 };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

let ids = 0;
function id(prefix: string): string {
  ids += 1;
  return `${prefix}-fake${String(ids).padStart(6, "0")}${Math.random().toString(36).slice(2, 10)}`;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (typeof p === "object" && p !== null && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : ""))
    .join("\n");
}

/** The function call for a shell command, in the shape of the shell tool the request offers. */
function shellCall(tools: Record<string, unknown>[], command: string): { name: string; arguments: string } {
  const names = tools.map((t) => {
    const f = t.function as { name?: unknown } | undefined;
    return typeof f?.name === "string" ? f.name : "";
  });
  const name = ["run_shell_command", "bash", "shell"].find((n) => names.includes(n)) ?? "run_shell_command";
  return { name, arguments: JSON.stringify({ command, description: "run a command" }) };
}

export async function startFakeOpenAIChat(script: (t: ChatTurnContext) => ChatTurn = chatSteps(chatSay("Done."))): Promise<FakeOpenAIChat> {
  const fake: FakeOpenAIChat = {
    url: "",
    port: 0,
    requests: [],
    served: { total: { prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0 }, completions: 0 },
    turns: [],
    script,
    stop: async () => {},
  };

  function account(u: ChatUsage): void {
    for (const k of Object.keys(u) as (keyof ChatUsage)[]) fake.served.total[k] += u[k];
    fake.served.completions += 1;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const raw = req.method === "POST" ? await readBody(req) : "";
    let body: Record<string, unknown> | null = null;
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    const tools = Array.isArray(body?.tools) ? (body!.tools as Record<string, unknown>[]) : [];
    const agent = tools.length > 0;
    fake.requests.push({ method: req.method ?? "", path: url.pathname, headers: req.headers, body, agent });
    res.shouldKeepAlive = false;
    if (req.method === "GET" && url.pathname === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ object: "list", data: [] }));
      return;
    }
    if (req.method !== "POST" || url.pathname !== "/v1/chat/completions" || body === null) {
      res.writeHead(404, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ error: { message: `no ${req.method} ${url.pathname} here`, type: "invalid_request_error", param: null, code: "not_found" } }));
      return;
    }
    const model = typeof body.model === "string" ? body.model : "gpt-unknown";
    const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
    const step = messages.filter((m) => m.role === "assistant").length;
    const turn: ChatTurn = agent
      ? fake.script({
          step,
          userText: messages
            .filter((m) => m.role === "user" || m.role === "tool")
            .map((m) => textOf(m.content))
            .join("\n"),
          model,
          body,
        })
      : // A side request: a short answer (JSON, as such prompts ask for).
        { text: '{"reasoning": "The task is done.", "next_speaker": "user"}', usage: { prompt_tokens: 640, cached_tokens: 0, completion_tokens: 18 } };
    const usage: ChatUsage = { ...(agent ? realisticChatUsage(step) : { prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0 }), ...turn.usage };
    const apiUsage = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
      prompt_tokens_details: { cached_tokens: usage.cached_tokens, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
    const call = turn.shell !== undefined ? { id: id("call"), type: "function", function: shellCall(tools, turn.shell) } : null;
    const finish = call ? "tool_calls" : "stop";
    const completionId = id("chatcmpl");
    const created = Math.floor(Date.now() / 1000);
    const head = { id: completionId, created, model, system_fingerprint: "fp_fake", service_tier: "default" };
    const options = (body.stream_options ?? {}) as { include_usage?: unknown };
    const usageSent = body.stream !== true || options.include_usage === true;
    if (agent) fake.turns.push({ step, usage, shell: turn.shell ?? null, usageSent });
    account(usage);

    if (body.stream !== true) {
      const message: Record<string, unknown> = { role: "assistant", content: turn.text ?? null, refusal: null, annotations: [] };
      if (call) message.tool_calls = [call];
      res.writeHead(200, { "content-type": "application/json", connection: "close", "x-request-id": id("req") });
      res.end(JSON.stringify({ ...head, object: "chat.completion", choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage: apiUsage }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "close", "x-request-id": id("req") });
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => {
      const doc: Record<string, unknown> = {
        ...head,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      };
      if (usageSent) doc.usage = null;
      res.write(`data: ${JSON.stringify(doc)}\n\n`);
    };
    chunk({ role: "assistant", content: "", refusal: null });
    if (turn.text !== undefined) for (let i = 0; i < turn.text.length; i += 40) chunk({ content: turn.text.slice(i, i + 40) });
    if (call) {
      chunk({ tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] });
      const args = call.function.arguments;
      for (let i = 0; i < args.length; i += 32) chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 32) } }] });
    }
    chunk({}, finish);
    if (usageSent) res.write(`data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [], usage: apiUsage })}\n\n`);
    res.write("data: [DONE]\n\n");
    res.end();
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500, { connection: "close" });
      res.end(String(e));
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  fake.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
