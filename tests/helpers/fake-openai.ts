// A fake OpenAI Responses API on 127.0.0.1, for running the real Codex CLI as loop's agent
// (tests/agents/). It answers `POST /v1/responses` as the real API streams (server-sent events:
// response.created, response.in_progress, per output item response.output_item.added, its deltas
// (response.output_text.delta, response.function_call_arguments.delta) and response.output_item.done,
// then response.completed with the response's usage), `GET /v1/models` with an empty list, and HEAD
// probes; every answer closes its connection when it is done.
//
// Codex 0.171 ignores OPENAI_BASE_URL: it is pointed here by a `model_providers` entry with
// `wire_api = "responses"` in $CODEX_HOME/config.toml (codexHome below writes one).
//
// Scripted per test like fake-anthropic.ts: `script(turn)` gives the next model response of the
// conversation; the step is counted from the history the request carries (its assistant messages and
// function calls), so a resumed thread goes on where it was. A tool call is sent as a call of
// whichever shell tool the request offers (its name and argument shape differ between codex
// versions). Every request is logged and every usage summed in `served`.
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export interface OpenAIUsage {
  input_tokens: number;
  /** Of input_tokens, read from the cache. */
  cached_tokens: number;
  output_tokens: number;
  /** Of output_tokens, reasoning. */
  reasoning_tokens: number;
}

export interface OpenAITurn {
  text?: string;
  /** A shell command, sent as a call of the shell tool the request offers. */
  shell?: string;
  usage?: Partial<OpenAIUsage>;
  /**
   * Send the whole response but its end (response.completed, which alone carries the usage), then
   * nothing more, the connection kept open: the model said (and the API bills) all of it, but what
   * it used never arrives. Served (and accounted) with its full usage.
   */
  hangBeforeCompleted?: boolean;
}

export interface OpenAITurnContext {
  step: number;
  /** Every text the request's user messages and tool outputs hold, joined. */
  userText: string;
  model: string;
  body: Record<string, unknown>;
}

export interface LoggedOpenAIRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> | null;
}

export interface FakeOpenAI {
  url: string;
  port: number;
  requests: LoggedOpenAIRequest[];
  served: { total: OpenAIUsage; responses: number };
  turns: { step: number; usage: OpenAIUsage; shell: string | null }[];
  script: (t: OpenAITurnContext) => OpenAITurn;
  stop(): Promise<void>;
}

export function realisticOpenAIUsage(step: number): OpenAIUsage {
  return { input_tokens: 8_200 + 640 * step, cached_tokens: step === 0 ? 0 : 7_936 + 512 * step, output_tokens: 210 + 45 * step, reasoning_tokens: 64 };
}

export function shell(command: string, usage?: Partial<OpenAIUsage>): OpenAITurn {
  return { shell: command, usage };
}
export function reply(text: string, usage?: Partial<OpenAIUsage>): OpenAITurn {
  return { text, usage };
}
export function askCodex(question: string, usage?: Partial<OpenAIUsage>): OpenAITurn {
  return shell(`printf '%s\\n' '${question.replace(/'/g, "'\\''")}' > "$LOOP_ASK_FILE"`, usage);
}
export function codexSteps(...turns: OpenAITurn[]): (t: OpenAITurnContext) => OpenAITurn {
  return (t) => turns[t.step] ?? reply("Done.");
}
export function codexEndless(output = 900): (t: OpenAITurnContext) => OpenAITurn {
  return (t) => shell(`echo tick ${t.step}`, { output_tokens: output });
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
  return `${prefix}_fake${String(ids).padStart(6, "0")}${Math.random().toString(36).slice(2, 10)}`;
}

function textOf(item: Record<string, unknown>): string {
  if (item.type === "function_call_output") return typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? "");
  if (item.type !== "message" || item.role === "assistant") return "";
  const c = item.content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return c
    .map((p) => (typeof p === "object" && p !== null && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : ""))
    .join("\n");
}

/** The function call for a shell command, in the shape of the shell tool the request offers. */
function shellCall(tools: Record<string, unknown>[], command: string): { name: string; arguments: string } {
  const names = tools.map((t) => (typeof t.name === "string" ? t.name : ""));
  if (names.includes("exec_command")) return { name: "exec_command", arguments: JSON.stringify({ cmd: command }) };
  if (names.includes("shell_command")) return { name: "shell_command", arguments: JSON.stringify({ command }) };
  return { name: "shell", arguments: JSON.stringify({ command: ["bash", "-lc", command] }) };
}

function sse(res: ServerResponse, seq: { n: number }, event: string, data: Record<string, unknown>): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, sequence_number: seq.n++, ...data })}\n\n`);
}

export async function startFakeOpenAI(script: (t: OpenAITurnContext) => OpenAITurn = codexSteps(reply("Done."))): Promise<FakeOpenAI> {
  const fake: FakeOpenAI = {
    url: "",
    port: 0,
    requests: [],
    served: { total: { input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0 }, responses: 0 },
    turns: [],
    script,
    stop: async () => {},
  };
  const hanging = new Set<ServerResponse>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const raw = req.method === "POST" ? await readBody(req) : "";
    let body: Record<string, unknown> | null = null;
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    fake.requests.push({ method: req.method ?? "", path: url.pathname, headers: req.headers, body });
    res.shouldKeepAlive = false;
    if (req.method === "HEAD") {
      res.writeHead(200, { connection: "close" });
      res.end();
      return;
    }
    if (req.method === "GET" && url.pathname.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ object: "list", data: [], models: [] }));
      return;
    }
    if (req.method !== "POST" || !url.pathname.endsWith("/responses") || body === null) {
      res.writeHead(404, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ error: { message: `no ${req.method} ${url.pathname} here`, type: "invalid_request_error", code: "not_found" } }));
      return;
    }
    const model = typeof body.model === "string" ? body.model : "gpt-unknown";
    const input = Array.isArray(body.input) ? (body.input as Record<string, unknown>[]) : [];
    const step = input.filter((i) => i.type === "function_call" || (i.type === "message" && i.role === "assistant")).length;
    const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
    const turn = fake.script({ step, userText: input.map(textOf).join("\n"), model, body });
    const usage: OpenAIUsage = { ...realisticOpenAIUsage(step), ...turn.usage };
    fake.turns.push({ step, usage, shell: turn.shell ?? null });
    const respId = id("resp");
    const created = Math.floor(Date.now() / 1000);
    const base = { id: respId, object: "response", created_at: created, model, parallel_tool_calls: false, tool_choice: "auto", tools: [] };
    const seq = { n: 0 };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "close", "x-request-id": id("req") });
    sse(res, seq, "response.created", { response: { ...base, status: "in_progress", output: [], usage: null } });
    sse(res, seq, "response.in_progress", { response: { ...base, status: "in_progress", output: [], usage: null } });
    const output: Record<string, unknown>[] = [];
    if (turn.text !== undefined) {
      const itemId = id("msg");
      const index = output.length;
      sse(res, seq, "response.output_item.added", {
        output_index: index,
        item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] },
      });
      sse(res, seq, "response.content_part.added", {
        item_id: itemId,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      });
      sse(res, seq, "response.output_text.delta", { item_id: itemId, output_index: index, content_index: 0, delta: turn.text });
      sse(res, seq, "response.output_text.done", { item_id: itemId, output_index: index, content_index: 0, text: turn.text });
      const part = { type: "output_text", text: turn.text, annotations: [] };
      sse(res, seq, "response.content_part.done", { item_id: itemId, output_index: index, content_index: 0, part });
      const item = { id: itemId, type: "message", status: "completed", role: "assistant", content: [part] };
      sse(res, seq, "response.output_item.done", { output_index: index, item });
      output.push(item);
    }
    if (turn.shell !== undefined) {
      const call = shellCall(tools, turn.shell);
      const itemId = id("fc");
      const index = output.length;
      const callId = id("call");
      sse(res, seq, "response.output_item.added", {
        output_index: index,
        item: { id: itemId, type: "function_call", status: "in_progress", call_id: callId, name: call.name, arguments: "" },
      });
      sse(res, seq, "response.function_call_arguments.delta", { item_id: itemId, output_index: index, delta: call.arguments });
      sse(res, seq, "response.function_call_arguments.done", { item_id: itemId, output_index: index, arguments: call.arguments });
      const item = { id: itemId, type: "function_call", status: "completed", call_id: callId, name: call.name, arguments: call.arguments };
      sse(res, seq, "response.output_item.done", { output_index: index, item });
      output.push(item);
    }
    if (turn.hangBeforeCompleted) {
      for (const k of Object.keys(usage) as (keyof OpenAIUsage)[]) fake.served.total[k] += usage[k];
      fake.served.responses += 1;
      hanging.add(res);
      return;
    }
    const apiUsage = {
      input_tokens: usage.input_tokens,
      input_tokens_details: { cached_tokens: usage.cached_tokens },
      output_tokens: usage.output_tokens,
      output_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
      total_tokens: usage.input_tokens + usage.output_tokens,
    };
    sse(res, seq, "response.completed", { response: { ...base, status: "completed", output, usage: apiUsage } });
    for (const k of Object.keys(usage) as (keyof OpenAIUsage)[]) fake.served.total[k] += usage[k];
    fake.served.responses += 1;
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

/**
 * A CODEX_HOME folder whose config.toml points codex at the fake (a model provider speaking the
 * Responses API, no retries), and the environment that selects it.
 */
export function codexHome(fake: FakeOpenAI, dir: string, model = "gpt-5.1-codex"): Record<string, string> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "config.toml"),
    [
      `model = "${model}"`,
      `model_provider = "fake"`,
      `[model_providers.fake]`,
      `name = "fake"`,
      `base_url = "${fake.url}/v1"`,
      `wire_api = "responses"`,
      `env_key = "FAKE_OPENAI_API_KEY"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      "",
    ].join("\n"),
  );
  return { CODEX_HOME: dir, FAKE_OPENAI_API_KEY: "sk-fake-key-for-tests" };
}
