// A session's gateway (lib/gateway/gateway.ts) against real servers on 127.0.0.1: a plain-HTTP
// stand-in for each model API that streams what the providers stream (Anthropic Messages events,
// OpenAI Responses events) and checks the key it is sent, and plain TCP servers behind the proxy.
// What the agent's side gets is byte for byte what the upstream sent; the usage recorded is what the
// upstream's answer said, to the token; the real key never reaches the agent's side; a spent budget
// is refused before the upstream sees the request; the allow-list lets through only what it names.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ModelCall, type ProxyRefusal, startGateway, gatewayEnv, proxyTarget } from "../../lib/gateway/gateway.ts";
import { UsageMeter } from "../../lib/gateway/meter.ts";

const REAL_KEY = "sk-ant-real-key-only-loop-holds";
const REAL_OPENAI = "sk-openai-real-key-only-loop-holds";
const STAND_IN = "loop-stand-in-0123456789abcdef";
const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s();
});

function sse(events: [string, unknown][]): string {
  return events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("");
}

const ANTHROPIC_STREAM = sse([
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
        usage: { input_tokens: 1234, cache_creation_input_tokens: 56, cache_read_input_tokens: 7890, output_tokens: 1 },
      },
    },
  ],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: null }, usage: { output_tokens: 40 } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " world" } }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 321 } }],
  ["message_stop", { type: "message_stop" }],
]);
const OPENAI_STREAM = sse([
  ["response.created", { type: "response.created", response: { id: "resp_1", status: "in_progress" } }],
  ["response.output_text.delta", { type: "response.output_text.delta", delta: "Hi" }],
  [
    "response.completed",
    {
      type: "response.completed",
      response: {
        id: "resp_1",
        status: "completed",
        model: "gpt-x-2026",
        usage: {
          input_tokens: 5000,
          input_tokens_details: { cached_tokens: 4000 },
          output_tokens: 77,
          output_tokens_details: { reasoning_tokens: 20 },
          total_tokens: 5077,
        },
      },
    },
  ],
]);

/** A plain-HTTP model API: answers /v1/messages (Anthropic) and /responses (OpenAI) with the streams above; records the credentials it saw. */
function fakeModelApi(o: { holdAfter?: number } = {}) {
  const seen: { path: string; apiKey: string | null; auth: string | null }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push({ path: url.pathname, apiKey: req.headers.get("x-api-key"), auth: req.headers.get("authorization") });
      await req.arrayBuffer();
      const body = url.pathname.endsWith("/messages") ? ANTHROPIC_STREAM : url.pathname.endsWith("/responses") ? OPENAI_STREAM : null;
      if (!body) return new Response("no", { status: 404 });
      if (o.holdAfter === undefined) return new Response(body, { headers: { "content-type": "text/event-stream" } });
      // Send the first `holdAfter` bytes, then never finish (a turn that goes on).
      const bytes = new TextEncoder().encode(body);
      return new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(bytes.subarray(0, o.holdAfter));
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, seen };
}

async function gateway(
  o: {
    allow?: Parameters<typeof startGateway>[0]["allow"];
    admit?: Parameters<typeof startGateway>[0]["admit"];
    api?: ReturnType<typeof fakeModelApi>;
    unix?: Parameters<typeof startGateway>[0]["unix"];
  } = {},
) {
  const api = o.api ?? fakeModelApi();
  const calls: ModelCall[] = [];
  const refusals: ProxyRefusal[] = [];
  const modelRefusals: string[] = [];
  const g = await startGateway({
    upstreams: { anthropic: api.url, openai: `${api.url}/v1`, gemini: api.url },
    keys: { anthropic: REAL_KEY, openai: REAL_OPENAI },
    standIn: STAND_IN,
    allow: o.allow,
    admit: o.admit,
    unix: o.unix,
    onModelCall: (c) => calls.push(c),
    onModelRefused: (r) => modelRefusals.push(r.reason),
    onProxyRefused: (r) => refusals.push(r),
    now: () => 1_700_000_000_000,
  });
  stops.push(() => g.stop());
  return { g, api, calls, refusals, modelRefusals };
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(5);
};

describe("the model APIs through the gateway", () => {
  test("Anthropic: the stream arrives byte for byte; loop's key replaces the stand-in; the usage is the answer's, to the token", async () => {
    const { g, api, calls } = await gateway();
    const r = await fetch(`${g.modelUrl.anthropic}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": STAND_IN, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
    });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(ANTHROPIC_STREAM);
    expect(api.seen.at(-1)).toEqual({ path: "/v1/messages", apiKey: REAL_KEY, auth: null });
    await until(() => calls.length > 0);
    expect(calls).toEqual([
      {
        provider: "anthropic",
        method: "POST",
        path: "/v1/messages",
        status: 200,
        usage: { input: 1234, output: 321, cacheRead: 7890, cacheWrite: 56 },
        model: "claude-x",
        basis: "usage",
        cutOff: false,
        estimatedInput: false,
        complete: true,
        standIn: true,
        worst: { model: "claude-x", input: expect.any(Number), output: 128_000 },
        at: 1_700_000_000_000,
      },
    ]);
  });

  test("OpenAI Responses: the Bearer stand-in becomes loop's key; response.completed's usage, cached tokens apart", async () => {
    const { g, api, calls } = await gateway();
    const r = await fetch(`${g.modelUrl.openai}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${STAND_IN}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(await r.text()).toBe(OPENAI_STREAM);
    expect(api.seen.at(-1)).toEqual({ path: "/v1/responses", apiKey: null, auth: `Bearer ${REAL_OPENAI}` });
    await until(() => calls.length > 0);
    expect(calls[0]!.usage).toEqual({ input: 1000, output: 77, cacheRead: 4000, cacheWrite: 0 });
    // The model the answer named (response.created named none), for the operator's prices.
    expect(calls[0]!.model).toBe("gpt-x-2026");
  });

  test("a CLI signed in with its own account: its credential passes as it came, and is still metered", async () => {
    const { g, api, calls } = await gateway();
    const r = await fetch(`${g.modelUrl.anthropic}/v1/messages`, {
      method: "POST",
      headers: { authorization: "Bearer sk-ant-oat-the-operators-oauth" },
      body: "{}",
    });
    await r.text();
    expect(api.seen.at(-1)).toEqual({ path: "/v1/messages", apiKey: null, auth: "Bearer sk-ant-oat-the-operators-oauth" });
    await until(() => calls.length > 0);
    expect(calls[0]).toMatchObject({ standIn: false, basis: "usage", usage: { input: 1234, output: 321 } });
  });

  test("a turn cut off mid-answer (the session killed): its input as the answer said it, its output the whole limit the request allowed, marked cut off", async () => {
    const cut = ANTHROPIC_STREAM.indexOf(
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world',
    );
    const { g, calls } = await gateway({ api: fakeModelApi({ holdAfter: cut }) });
    const ac = new AbortController();
    const r = await fetch(`${g.modelUrl.anthropic}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": STAND_IN },
      body: JSON.stringify({ max_tokens: 2048 }),
      signal: ac.signal,
    });
    const reader = r.body!.getReader();
    let got = "";
    while (got.length < cut) got += new TextDecoder().decode((await reader.read()).value);
    expect(got).toBe(ANTHROPIC_STREAM.slice(0, cut));
    ac.abort();
    await until(() => calls.length > 0);
    expect(calls[0]).toMatchObject({
      complete: false,
      basis: "worst_case",
      cutOff: true,
      usage: { input: 1234, output: 2048, cacheRead: 7890, cacheWrite: 56 },
    });
  });

  test("a spent budget: the next model request is refused with the provider's error shape, and the upstream never sees it", async () => {
    let spent = false;
    const { g, api, calls, modelRefusals } = await gateway({
      admit: () => (spent ? { code: "budget_exhausted", reason: "the budget of item x is spent (100 of 100 tokens)" } : null),
    });
    await (await fetch(`${g.modelUrl.anthropic}/v1/messages`, { method: "POST", headers: { "x-api-key": STAND_IN }, body: "{}" })).text();
    spent = true;
    const before = api.seen.length;
    const r = await fetch(`${g.modelUrl.anthropic}/v1/messages`, { method: "POST", headers: { "x-api-key": STAND_IN }, body: "{}" });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({
      type: "error",
      error: {
        type: "permission_error",
        message: "loop: the budget of item x is spent (100 of 100 tokens); no further model request is sent (budget_exhausted)",
      },
    });
    const o = await fetch(`${g.modelUrl.openai}/responses`, { method: "POST", headers: { authorization: `Bearer ${STAND_IN}` }, body: "{}" });
    expect(o.status).toBe(403);
    expect(((await o.json()) as any).error.message).toContain("budget_exhausted");
    expect(api.seen.length).toBe(before);
    expect(modelRefusals).toHaveLength(2);
    await until(() => calls.length > 0);
    expect(calls).toHaveLength(1);
  });

  test("the agent's side never sees loop's key: not in the answer, not in the variables it is given", async () => {
    const { g } = await gateway();
    const r = await fetch(`${g.modelUrl.anthropic}/v1/messages`, { method: "POST", headers: { "x-api-key": STAND_IN }, body: "{}" });
    const text = await r.text();
    const headers = JSON.stringify([...r.headers]);
    expect(text + headers).not.toContain(REAL_KEY);
    const env = gatewayEnv(g, STAND_IN);
    expect(JSON.stringify(env)).not.toContain(REAL_KEY);
    expect(env).toMatchObject({
      ANTHROPIC_API_KEY: STAND_IN,
      OPENAI_API_KEY: STAND_IN,
      ANTHROPIC_BASE_URL: g.modelUrl.anthropic,
      HTTPS_PROXY: g.proxyUrl,
      https_proxy: g.proxyUrl,
      ALL_PROXY: g.proxyUrl,
    });
  });
});

/** A TCP server answering one HTTP request with `hello <port>`. */
async function helloServer(): Promise<{ port: number }> {
  const server: Server = createServer((s) => {
    s.once("data", () => {
      const body = `hello ${port}`;
      s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  stops.push(() => new Promise<void>((r) => server.close(() => r())));
  return { port };
}

/** Speak to the proxy on a raw socket: CONNECT (then a GET through the tunnel) or an absolute-form GET. */
function throughProxy(proxyPort: number, target: { host: string; port: number }, kind: "connect" | "http"): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(proxyPort, "127.0.0.1");
    let got = "";
    let tunnelled = false;
    s.on("data", (d) => {
      got += d.toString("latin1");
      if (kind === "connect" && !tunnelled && got.startsWith("HTTP/1.1 200") && got.includes("\r\n\r\n")) {
        tunnelled = true;
        got = "";
        s.write(`GET / HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n\r\n`);
      }
    });
    s.on("close", () => resolve(got));
    s.on("error", reject);
    s.write(
      kind === "connect"
        ? `CONNECT ${target.host}:${target.port} HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n\r\n`
        : `GET http://${target.host}:${target.port}/ HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nProxy-Connection: keep-alive\r\n\r\n`,
    );
  });
}

describe("the proxy and its allow-list", () => {
  test("a host on the list is reached (CONNECT and plain HTTP); one off it is refused 403 and reported with host, port and time", async () => {
    const on = await helloServer();
    const off = await helloServer();
    const { g, refusals } = await gateway({ allow: [`127.0.0.1:${on.port}`] });
    expect(await throughProxy(g.proxyPort, { host: "127.0.0.1", port: on.port }, "connect")).toContain(`hello ${on.port}`);
    expect(await throughProxy(g.proxyPort, { host: "127.0.0.1", port: on.port }, "http")).toContain(`hello ${on.port}`);
    const refused = await throughProxy(g.proxyPort, { host: "127.0.0.1", port: off.port }, "connect");
    expect(refused).toStartWith("HTTP/1.1 403 Forbidden");
    expect(refused).toContain(`127.0.0.1:${off.port} is not on this session's network allow-list`);
    expect(refused).not.toContain("hello");
    expect(await throughProxy(g.proxyPort, { host: "127.0.0.1", port: off.port }, "http")).toStartWith("HTTP/1.1 403");
    expect(refusals).toEqual([
      { host: "127.0.0.1", port: off.port, at: 1_700_000_000_000 },
      { host: "127.0.0.1", port: off.port, at: 1_700_000_000_000 },
    ]);
  });

  test("plain HTTP is one request per connection: a second request kept alive on it, for a host off the list, never reaches the first host", async () => {
    // Servers that keep connections alive (Bun's), as the one the red team's second request would ride.
    const keepAlive = () => {
      const srv: ReturnType<typeof Bun.serve> = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (): Response => new Response(`hello ${srv.port}`) });
      stops.push(() => srv.stop(true));
      return { port: srv.port! };
    };
    const on = keepAlive();
    const off = keepAlive();
    const { g } = await gateway({ allow: [`127.0.0.1:${on.port}`] });
    const got = await new Promise<string>((resolve, reject) => {
      const s = connect(g.proxyPort, "127.0.0.1");
      let text = "";
      s.on("data", (d) => (text += d.toString("latin1")));
      s.on("close", () => resolve(text));
      s.on("error", reject);
      s.write(
        `GET http://127.0.0.1:${on.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${on.port}\r\nConnection: keep-alive\r\n\r\nGET http://127.0.0.1:${off.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${off.port}\r\n\r\n`,
      );
    });
    expect(got.match(/hello \d+/g)).toEqual([`hello ${on.port}`]);
  });

  test("a download arrives whole, through CONNECT and plain HTTP, to a client that reads slower than the server sends and closes", async () => {
    // On the proxy's Unix socket, as the sandbox's bridge reaches it: less is buffered there than on loopback TCP.
    // A package mirror answering with a wheel and closing (python3 -m http.server does): what the
    // proxy still holds for the slow client when the server has closed must reach it (issue 50: pip's
    // wheels cut short, "THESE PACKAGES DO NOT MATCH THE HASHES").
    const body = Buffer.alloc(4 << 20);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7919) & 0xff;
    const server: Server = createServer((s) => {
      s.once("data", () => {
        s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
        s.end(body);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    stops.push(() => new Promise<void>((r) => server.close(() => r())));
    const port = (server.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), "loop-gw-"));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    const proxySocket = join(dir, "proxy.sock");
    const { g } = await gateway({ allow: [`127.0.0.1:${port}`], unix: { model: join(dir, "model.sock"), proxy: proxySocket } });
    expect(g.proxyPort).toBeGreaterThan(0);
    const slowly = (kind: "connect" | "http") =>
      new Promise<Buffer>((resolve, reject) => {
        const s = connect(proxySocket);
        const chunks: Buffer[] = [];
        let tunnelled = kind === "http";
        s.on("data", (d: Buffer) => {
          if (!tunnelled) {
            tunnelled = true;
            s.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
            return;
          }
          chunks.push(d);
          s.pause();
          setTimeout(() => s.resume(), 1);
        });
        s.on("close", () => resolve(Buffer.concat(chunks)));
        s.on("error", reject);
        s.write(
          kind === "connect"
            ? `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`
            : `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
        );
      });
    for (const kind of ["http", "connect"] as const) {
      const got = await slowly(kind);
      const at = got.indexOf("\r\n\r\n") + 4;
      expect(got.length - at).toBe(body.length);
      expect(got.subarray(at).equals(body)).toBe(true);
    }
  });

  test('"none" refuses everything; open lets everything through', async () => {
    const srv = await helloServer();
    const none = await gateway({ allow: "none" });
    expect(await throughProxy(none.g.proxyPort, { host: "127.0.0.1", port: srv.port }, "connect")).toStartWith("HTTP/1.1 403");
    const open = await gateway({ allow: undefined });
    expect(await throughProxy(open.g.proxyPort, { host: "127.0.0.1", port: srv.port }, "connect")).toContain(`hello ${srv.port}`);
  });

  test("what a proxy request names, and what is no proxy request", () => {
    expect(proxyTarget("CONNECT registry.npmjs.org:443 HTTP/1.1")).toEqual({ kind: "connect", host: "registry.npmjs.org", port: 443 });
    expect(proxyTarget("CONNECT [::1]:8080 HTTP/1.1")).toEqual({ kind: "connect", host: "::1", port: 8080 });
    expect(proxyTarget("GET http://example.com/a?b=1 HTTP/1.1")).toEqual({ kind: "http", host: "example.com", port: 80, originLine: "GET /a?b=1 HTTP/1.1" });
    expect(proxyTarget("CONNECT example.com HTTP/1.1")).toBeNull();
    expect(proxyTarget("CONNECT example.com:0 HTTP/1.1")).toBeNull();
    expect(proxyTarget("GET /relative HTTP/1.1")).toBeNull();
    expect(proxyTarget("GET ftp://example.com/ HTTP/1.1")).toBeNull();
  });
});

describe("the meter", () => {
  test("fed in any pieces, an event stream gives the same figures; an unstreamed answer is read whole", () => {
    for (const size of [1, 7, 64, 100_000]) {
      const m = new UsageMeter(true);
      const bytes = new TextEncoder().encode(ANTHROPIC_STREAM);
      for (let i = 0; i < bytes.length; i += size) m.push(bytes.subarray(i, i + size));
      expect(m.end()).toEqual({ input: 1234, output: 321, cacheRead: 7890, cacheWrite: 56 });
    }
    const whole = new UsageMeter(false);
    whole.push(
      new TextEncoder().encode(
        JSON.stringify({
          id: "msg",
          type: "message",
          usage: { input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 3, cache_creation_input_tokens: 4 },
        }),
      ),
    );
    expect(whole.end()).toEqual({ input: 10, output: 20, cacheRead: 3, cacheWrite: 4 });
    const chat = new UsageMeter(true);
    chat.push(
      new TextEncoder().encode(
        `data: {"choices":[]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}}\n\ndata: [DONE]\n\n`,
      ),
    );
    expect(chat.end()).toEqual({ input: 7, output: 8, cacheRead: 2, cacheWrite: 0 });
    const junk = new UsageMeter(true);
    junk.push(new TextEncoder().encode('data: not json\n\ndata: {"usage":"x"}\n\n'));
    expect([junk.end(), junk.seen]).toEqual([{ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, false]);
  });
});
