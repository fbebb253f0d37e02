// A fake Anthropic Messages API on 127.0.0.1, for running the real Claude Code CLI as loop's agent
// (tests/agents/). It answers `POST /v1/messages` as the real API streams (server-sent events:
// message_start, ping, content_block_start / content_block_delta / content_block_stop per block,
// message_delta with the stop reason and the message's usage, message_stop), a non-streaming request
// with the message as one JSON body, `POST /v1/messages/count_tokens`, and the `HEAD` probes the CLI
// sends to see the API is there. Every answer closes its connection when it is done: a kept-alive
// socket after a stream makes some CLI versions wait for more.
//
// What the model "says" is scripted per test: `script(turn)` is asked for the next assistant turn of
// the agent's conversation (a request that offers tools); a request that offers none (the CLI's own
// side requests: a conversation title, a topic check) gets a short text answer of its own. The step a
// conversation is at is counted from the history the request carries (its assistant messages), so a
// resumed conversation goes on where it was, whatever process sends it.
//
// Every request is logged (`requests`: path, headers, body) so a test can assert what reached the
// model, and every answer's usage is added to `served` so a test can compare what loop recorded with
// what was served.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** One assistant turn: text, a tool call, or both (text first). */
export interface AnthropicTurn {
  text?: string;
  tool?: { name: string; input: Record<string, unknown> };
  /** The message's usage (defaults: a realistic figure that grows with the step). */
  usage?: Partial<AnthropicUsage>;
  /** Send message_start, then nothing more, the connection kept open (a model that stops answering mid-message). */
  hangAfterStart?: boolean;
  /**
   * Send the whole message but its end (message_delta with the usage, message_stop), then nothing
   * more, the connection kept open: the model said (and the API bills) all of it, but its output
   * count never arrives. Served (and accounted) with its full usage.
   */
  hangBeforeDelta?: boolean;
}

export interface TurnContext {
  /** How many assistant messages the conversation already has (0: its first request). */
  step: number;
  /** The text of the last user message (a tool result's content, or the prompt). */
  lastUser: string;
  /** Every text the conversation's user messages hold, joined (to assert a reply reached the model). */
  userText: string;
  model: string;
  body: Record<string, unknown>;
}

export interface LoggedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | null;
  /** The request offered tools: the agent's conversation, not a side request. */
  agent: boolean;
}

export interface FakeAnthropic {
  url: string;
  port: number;
  requests: LoggedRequest[];
  /** What was served, summed over every answer (agent and side requests), and per model. */
  served: { total: AnthropicUsage; byModel: Record<string, AnthropicUsage>; messages: number };
  /** The agent's turns served, in order (usage as sent). */
  turns: { step: number; model: string; usage: AnthropicUsage; tool: string | null }[];
  script: (t: TurnContext) => AnthropicTurn;
  stop(): Promise<void>;
}

function zero(): AnthropicUsage {
  return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

/** A realistic usage for step `n` of a conversation: a cached system prompt, a growing history. */
export function realisticUsage(step: number, output = 180 + 37 * step): AnthropicUsage {
  return {
    input_tokens: 3 + 11 * step,
    output_tokens: output,
    cache_creation_input_tokens: step === 0 ? 12_408 : 420 + 13 * step,
    cache_read_input_tokens: step === 0 ? 0 : 12_408 + 450 * step,
  };
}

// --- Turns a test scripts with. ----------------------------------------------------------------

/** claude's Bash tool running one command. */
export function bash(command: string, usage?: Partial<AnthropicUsage>): AnthropicTurn {
  return { tool: { name: "Bash", input: { command, description: "run a command" } }, usage };
}

/** claude's Write tool writing one file (an absolute path). */
export function write(filePath: string, content: string, usage?: Partial<AnthropicUsage>): AnthropicTurn {
  return { tool: { name: "Write", input: { file_path: filePath, content } }, usage };
}

/** A question to loop, the documented way: the question's text written to $LOOP_ASK_FILE. */
export function ask(question: string, usage?: Partial<AnthropicUsage>): AnthropicTurn {
  return bash(`printf '%s\\n' '${question.replace(/'/g, "'\\''")}' > "$LOOP_ASK_FILE"`, usage);
}

export function say(text: string, usage?: Partial<AnthropicUsage>): AnthropicTurn {
  return { text, usage };
}

/** A script from a list of turns, by step; past its end, a closing text. */
export function steps(...turns: AnthropicTurn[]): (t: TurnContext) => AnthropicTurn {
  return (t) => turns[t.step] ?? say("Done.");
}

/** A model that never stops calling tools. */
export function endless(output = 900): (t: TurnContext) => AnthropicTurn {
  return (t) => bash(`echo tick ${t.step}`, { output_tokens: output });
}

// --- The server. --------------------------------------------------------------------------------

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => {
      if (typeof b !== "object" || b === null) return "";
      const o = b as Record<string, unknown>;
      if (o.type === "text" && typeof o.text === "string") return o.text;
      if (o.type === "tool_result") return textOf(o.content);
      return "";
    })
    .join("\n");
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
  return `${prefix}_01Fake${String(ids).padStart(6, "0")}${Math.random().toString(36).slice(2, 10)}`;
}

function sse(res: ServerResponse, event: string, data: Record<string, unknown>): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

export async function startFakeAnthropic(script: (t: TurnContext) => AnthropicTurn = steps(say("Done."))): Promise<FakeAnthropic> {
  const fake: FakeAnthropic = {
    url: "",
    port: 0,
    requests: [],
    served: { total: zero(), byModel: {}, messages: 0 },
    turns: [],
    script,
    stop: async () => {},
  };
  const hanging = new Set<ServerResponse>();

  function account(model: string, u: AnthropicUsage): void {
    const m = (fake.served.byModel[model] ??= zero());
    for (const k of Object.keys(u) as (keyof AnthropicUsage)[]) {
      m[k] += u[k];
      fake.served.total[k] += u[k];
    }
    fake.served.messages += 1;
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
    const tools = Array.isArray(body?.tools) ? (body!.tools as unknown[]) : [];
    const agent = tools.length > 0;
    fake.requests.push({ method: req.method ?? "", path: url.pathname, headers: req.headers, body, agent });
    res.shouldKeepAlive = false;
    if (req.method === "HEAD" || req.method === "OPTIONS") {
      res.writeHead(200, { connection: "close" });
      res.end();
      return;
    }
    if (req.method === "POST" && url.pathname === "/v1/messages/count_tokens") {
      res.writeHead(200, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
      return;
    }
    if (req.method !== "POST" || url.pathname !== "/v1/messages" || body === null) {
      res.writeHead(404, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${req.method} ${url.pathname} here` } }));
      return;
    }
    const model = typeof body.model === "string" ? body.model : "claude-unknown";
    const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
    const step = messages.filter((m) => m.role === "assistant").length;
    const users = messages.filter((m) => m.role === "user");
    let turn: AnthropicTurn;
    if (agent) {
      turn = fake.script({ step, lastUser: textOf(users[users.length - 1]?.content), userText: users.map((u) => textOf(u.content)).join("\n"), model, body });
    } else {
      // A side request (title, topic): a short answer of the shape these prompts ask for.
      turn = {
        text: '{"title": "Fake task", "isNewTopic": false}',
        usage: { input_tokens: 120, output_tokens: 14, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      };
    }
    const full: AnthropicUsage = { ...(agent ? realisticUsage(step) : zero()), ...turn.usage };
    // A message that hangs after message_start was served its input and one output token only.
    const usage: AnthropicUsage = turn.hangAfterStart ? { ...full, output_tokens: 1 } : full;
    const msgId = id("msg");
    const content: Record<string, unknown>[] = [];
    if (turn.text !== undefined) content.push({ type: "text", text: turn.text });
    if (turn.tool) content.push({ type: "tool_use", id: id("toolu"), name: turn.tool.name, input: turn.tool.input });
    const stopReason = turn.tool ? "tool_use" : "end_turn";
    if (agent) fake.turns.push({ step, model, usage, tool: turn.tool?.name ?? null });

    if (body.stream !== true) {
      account(model, usage);
      res.writeHead(200, { "content-type": "application/json", connection: "close", "request-id": id("req") });
      res.end(JSON.stringify({ id: msgId, type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "close", "request-id": id("req") });
    // As the API does: message_start carries the input figures and a first output token; the running
    // output count comes in message_delta.
    sse(res, "message_start", {
      message: {
        id: msgId,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    sse(res, "ping", {});
    if (turn.hangAfterStart) {
      account(model, usage);
      hanging.add(res);
      return;
    }
    content.forEach((block, index) => {
      if (block.type === "text") {
        sse(res, "content_block_start", { index, content_block: { type: "text", text: "" } });
        const text = block.text as string;
        for (let i = 0; i < text.length; i += 40) sse(res, "content_block_delta", { index, delta: { type: "text_delta", text: text.slice(i, i + 40) } });
      } else {
        sse(res, "content_block_start", { index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
        const json = JSON.stringify(block.input);
        for (let i = 0; i < json.length; i += 64)
          sse(res, "content_block_delta", { index, delta: { type: "input_json_delta", partial_json: json.slice(i, i + 64) } });
      }
      sse(res, "content_block_stop", { index });
    });
    if (turn.hangBeforeDelta) {
      account(model, usage);
      hanging.add(res);
      return;
    }
    sse(res, "message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage });
    sse(res, "message_stop", {});
    account(model, usage);
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
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}

/** The environment that points Claude Code at the fake: its key, its base URL, no other traffic. */
export function claudeEnv(fake: FakeAnthropic): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: "sk-ant-fake-key-for-tests",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_MAX_RETRIES: "0",
  };
}
