// A session's gateway (docs/threat-model.md#the-gateway): the one way out of a session, outside
// its sandbox, living as long as the session.
//   - The model APIs as a reverse proxy: `/anthropic/…` to loop's Anthropic upstream, `/openai/…`
//     to its OpenAI one, `/gemini/…` to Gemini's API, only the endpoints of lib/gateway/endpoints.ts (what it can meter, and
//     what costs nothing); the answer streamed back unchanged while lib/gateway/meter.ts reads
//     what it used, request by request. A billed answer that ends without its final figure (the
//     agent hung up, the upstream stopped) is charged its worst case, never less than it is billed.
//   - The key stays with loop: a request carrying the session's stand-in token gets loop's real key
//     instead (from loop's environment, never the agent's); any other credential (a CLI signed in
//     with an account) passes as it came, still metered.
//   - A hard cap: before each model request `admit()` is asked with its worst case (the item's and
//     the loop's budget, what the requests in flight hold); a refusal is answered in the provider's
//     error shape, and the upstream never sees the request.
//   - Every other host through an HTTP proxy (CONNECT, and absolute-form plain HTTP) that lets
//     through only what the session's allow-list names; a refusal is reported (host, port, time).
import { connect, createServer, type Server, type Socket } from "node:net";
import { networkAllows, type NetworkPolicy } from "../definition/network.ts";
import { type Endpoint, endpointOf, geminiModelOf, readRequest, type WorstCase } from "./endpoints.ts";
import { type MeteredUsage, UsageMeter } from "./meter.ts";

type Provider = "anthropic" | "openai" | "gemini";

/** Where loop's own model traffic goes unless loop's environment says otherwise. */
export const DEFAULT_UPSTREAMS: Readonly<Record<Provider, string>> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com/v1",
  gemini: "https://generativelanguage.googleapis.com",
};

export interface ModelCall {
  provider: Provider;
  method: string;
  /** The path below the provider's base (`/v1/messages`, `/responses`). */
  path: string;
  /** The answer's status; null: the agent hung up before the upstream answered. */
  status: number | null;
  usage: MeteredUsage;
  /** The model the answer named (what its tokens are priced by), else the one the request named, or null. */
  model: string | null;
  /**
   * How its figure was found. `usage`: the answer's own final figure. `worst_case`: a billed
   * success that ended without it (cut off by the agent, or by the upstream): its input and cache
   * figures as far as the answer gave them (else the request's worst case), and the request's
   * whole output limit. `free`: an endpoint the provider bills nothing for. `error`: no success
   * (the provider bills none).
   */
  basis: "usage" | "worst_case" | "free" | "error";
  /** The agent hung up on the answer before it said its final figure. */
  cutOff: boolean;
  /** Whether the input is the request's worst case rather than a figure the answer gave. */
  estimatedInput: boolean;
  /** Whether the answer was read to its end (false: the client or the upstream went away mid-answer). */
  complete: boolean;
  /** Whether the request carried the stand-in (loop's key was used) rather than the CLI's own credential. */
  standIn: boolean;
  /** What the request held against the budget while in flight (null: a free endpoint). */
  worst: WorstCase | null;
  at: number;
}

export interface ProxyRefusal {
  host: string;
  port: number;
  at: number;
}

/** Why a model request is refused, as a code a step reads (never the sentence) and the sentence for people. */
type ModelRefusalCode = "endpoint_not_allowed" | "budget_exhausted" | "budget_in_flight" | "answers_cut_off" | "no_model_api";
export interface ModelRefusal {
  code: ModelRefusalCode;
  reason: string;
}

interface GatewayOptions {
  upstreams: Record<Provider, string>;
  /** Loop's real keys, from loop's environment; a stand-in request without one is refused. */
  keys: Partial<Record<Provider, string>>;
  /** The per-session stand-in token the agent's environment holds. */
  standIn: string;
  /** What the proxy lets through (undefined: open). The model API never needs it. */
  allow: NetworkPolicy | undefined;
  /**
   * Asked before each model request the allow-list lets through, with its worst case (null: a free
   * endpoint): null to go ahead, else why not. A request let through with a worst case holds it
   * until its ModelCall is reported (exactly once each).
   */
  admit?: (worst: WorstCase | null) => ModelRefusal | null;
  onModelCall?: (call: ModelCall) => void;
  onModelRefused?: (r: { provider: Provider; method: string; path: string; at: number } & ModelRefusal) => void;
  onProxyRefused?: (r: ProxyRefusal) => void;
  now?: () => number;
  /** Also listen on these Unix sockets (a sandbox with its network unshared reaches them through a bridge). */
  unix?: { model: string; proxy: string };
}

interface Gateway {
  /** Base URLs for the agent: ANTHROPIC_BASE_URL, OPENAI_BASE_URL. */
  modelUrl: Record<Provider, string>;
  /** http://127.0.0.1:<port>, for HTTP_PROXY and friends. */
  proxyUrl: string;
  modelPort: number;
  proxyPort: number;
  stop(): Promise<void>;
}

/** Request headers never forwarded: hop-by-hop ones, and what fetch sets itself. */
const HOP = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "accept-encoding",
]);

/** How long a client refused while others are in flight is asked to wait before it tries again. */
const RETRY_AFTER_S = 10;

const STATUS: Record<ModelRefusalCode, number> = {
  endpoint_not_allowed: 403,
  budget_exhausted: 403,
  budget_in_flight: 429,
  answers_cut_off: 403,
  no_model_api: 403,
};

/** An error in the provider's own shape: Anthropic's `{type: "error", error: {type, message}}`, OpenAI's `{error: {message, type, param, code}}`, Gemini's `{error: {code, message, status}}`. */
function providerError(provider: Provider, status: number, message: string, code: string | null = null): Response {
  const anthropic = { 401: "authentication_error", 403: "permission_error", 429: "rate_limit_error" }[status as 401] ?? "api_error";
  const openai =
    status === 429
      ? { type: "requests", code: "rate_limit_exceeded" }
      : { type: status === 403 && code?.startsWith("budget") ? "insufficient_quota" : "invalid_request_error", code };
  const gemini = { 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED" }[status as 401] ?? "UNAVAILABLE";
  const body =
    provider === "anthropic"
      ? { type: "error", error: { type: anthropic, message } }
      : provider === "gemini"
        ? { error: { code: status, message, status: gemini } }
        : { error: { message, type: openai.type, param: null, code: openai.code } };
  return Response.json(body, { status, ...(status === 429 ? { headers: { "retry-after": String(RETRY_AFTER_S) } } : {}) });
}

/** Start a session's gateway on 127.0.0.1 (two ephemeral ports: the model API, the proxy). */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const now = o.now ?? Date.now;
  // Answers in flight, each with how to record it as cut off: a gateway stopped under them charges them.
  const open = new Set<() => void>();
  const model = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (req) => modelRequest(o, now, open, req) });
  const modelUnix = o.unix ? Bun.serve({ unix: o.unix.model, fetch: (req) => modelRequest(o, now, open, req) }) : null;
  const proxy = await startProxy(o, now);
  const proxyUnix = o.unix ? await startProxy(o, now, o.unix.proxy) : null;
  const port = model.port!;
  return {
    modelUrl: { anthropic: `http://127.0.0.1:${port}/anthropic`, openai: `http://127.0.0.1:${port}/openai`, gemini: `http://127.0.0.1:${port}/gemini` },
    proxyUrl: `http://127.0.0.1:${proxy.port}`,
    modelPort: port,
    proxyPort: proxy.port,
    async stop() {
      await model.stop(true);
      await modelUnix?.stop(true);
      // Whatever is still open was cut off with the session: recorded now, before the session's end is.
      for (const cut of [...open]) cut();
      for (const p of [proxy, proxyUnix]) {
        if (!p) continue;
        const closed = new Promise<void>((r) => p.server.close(() => r()));
        for (const s of p.sockets) s.destroy();
        await closed;
      }
    },
  };
}

/** The figure an answer is recorded with, from what its meter read and how it ended. */
function figureOf(o: {
  endpoint: Endpoint;
  status: number | null;
  meter: UsageMeter;
  worst: WorstCase | null;
}): Pick<ModelCall, "usage" | "basis" | "estimatedInput"> {
  const { meter, worst } = o;
  // No status yet: the upstream may be generating the answer the agent no longer waits for.
  const ok = o.status === null || (o.status >= 200 && o.status < 300);
  if (!o.endpoint.billed || !ok) return { usage: { ...meter.usage }, basis: ok ? "free" : "error", estimatedInput: false };
  if (meter.final) return { usage: { ...meter.usage }, basis: "usage", estimatedInput: false };
  // No final figure: never less than the provider bills. What the answer said of its input stands
  // (Anthropic's message_start is exact); its output is all the request allowed.
  const w = worst!;
  const known = meter.seen && o.endpoint.api === "messages";
  const u = meter.usage;
  return {
    usage: {
      input: known ? u.input : Math.max(u.input, w.input),
      output: Math.max(u.output, w.output),
      cacheRead: known ? u.cacheRead : 0,
      cacheWrite: known ? u.cacheWrite : 0,
    },
    basis: "worst_case",
    estimatedInput: !known,
  };
}

async function modelRequest(o: GatewayOptions, now: () => number, open: Set<() => void>, req: Request): Promise<Response> {
  const url = new URL(req.url);
  const m = /^\/(anthropic|openai|gemini)(\/.*)?$/.exec(url.pathname);
  if (!m) return new Response("loop gateway: the model APIs are under /anthropic, /openai and /gemini\n", { status: 404 });
  const provider = m[1] as Provider;
  const path = m[2] ?? "/";
  const method = req.method;
  const refuse = (r: ModelRefusal): Response => {
    o.onModelRefused?.({ provider, method, path: path.slice(0, 200), at: now(), ...r });
    const final = r.code === "budget_exhausted" || r.code === "answers_cut_off" || r.code === "no_model_api" ? "; no further model request is sent" : "";
    return providerError(provider, STATUS[r.code], `loop: ${r.reason}${final} (${r.code})`, r.code);
  };
  const endpoint = endpointOf(provider, method, path);
  if (!endpoint)
    return refuse({
      code: "endpoint_not_allowed",
      reason: `the gateway forwards only the model endpoints it can meter (docs/threat-model.md#the-gateway); ${method} ${path.slice(0, 200)} is not one of them`,
    });
  const headers = new Headers();
  req.headers.forEach((v, k) => {
    if (!HOP.has(k)) headers.set(k, v);
  });
  // The answer is read as it streams: ask for it uncompressed.
  headers.set("accept-encoding", "identity");
  const standIn = swapCredential(provider, headers, o.standIn, o.keys[provider], url.searchParams);
  if (standIn === "no-key")
    return providerError(provider, 401, `loop: the stand-in key needs loop's ${KEY_VARIABLE[provider]}, and loop's environment has none`);
  let body: Uint8Array | undefined = method === "GET" || method === "HEAD" ? undefined : new Uint8Array(await req.arrayBuffer());
  let worst: WorstCase | null = null;
  if (endpoint.billed) {
    const read = readRequest(endpoint.api!, body ?? new Uint8Array(), provider === "gemini" ? geminiModelOf(path) : null);
    if (read.refused !== undefined) return refuse({ code: "endpoint_not_allowed", reason: `${method} ${path}: ${read.refused}` });
    worst = read.worst;
    body = read.body;
  }
  const refused = o.admit?.(worst) ?? null;
  if (refused !== null) return refuse(refused);
  // Admitted: from here every path reports its call exactly once (that releases what it holds).
  let done = false;
  let status: number | null = null;
  // Replaced by one for the answer's kind once it arrives.
  let live = new UsageMeter(false);
  const record = (end: { complete: boolean; hungUp: boolean }) => {
    if (done) return;
    done = true;
    open.delete(cutNow);
    live.end();
    const figure = figureOf({ endpoint, status, meter: live, worst });
    o.onModelCall?.({
      provider,
      method,
      path,
      status,
      ...figure,
      model: live.model ?? worst?.model ?? null,
      cutOff: end.hungUp && figure.basis === "worst_case",
      complete: end.complete,
      standIn: standIn === "swapped",
      worst,
      at: now(),
    });
  };
  // The agent hung up (or its session ended): the upstream request goes too, and the answer is charged as cut off.
  const gone = new AbortController();
  const cutNow = () => {
    record({ complete: false, hungUp: true });
    gone.abort();
  };
  open.add(cutNow);
  req.signal.addEventListener("abort", cutNow, { once: true });
  let upstream: Response;
  try {
    upstream = await fetch(o.upstreams[provider].replace(/\/+$/, "") + path + url.search, {
      method,
      headers,
      body,
      redirect: "manual",
      decompress: false,
      signal: gone.signal,
    } as RequestInit);
  } catch (err) {
    status = 502;
    record({ complete: true, hungUp: false });
    return providerError(provider, 502, `loop gateway: the model API did not answer: ${(err as Error).message}`);
  }
  status = upstream.status;
  const out = new Headers(upstream.headers);
  out.delete("content-length");
  out.delete("transfer-encoding");
  out.delete("connection");
  live = new UsageMeter((upstream.headers.get("content-type") ?? "").includes("text/event-stream"));
  if (!upstream.body) {
    record({ complete: true, hungUp: false });
    return new Response(null, { status: upstream.status, headers: out });
  }
  const reader = upstream.body.getReader();
  const piped = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done: end } = await reader.read();
        if (end) {
          record({ complete: true, hungUp: false });
          controller.close();
          return;
        }
        live.push(value);
        controller.enqueue(value);
      } catch (err) {
        // The upstream went away mid-answer: not the agent's doing.
        record({ complete: false, hungUp: false });
        controller.error(err);
      }
    },
    cancel(reason) {
      // The agent went away mid-answer (hung up, or killed with its session): charged as cut off.
      record({ complete: false, hungUp: true });
      return reader.cancel(reason);
    },
  });
  return new Response(piped, { status: upstream.status, statusText: upstream.statusText, headers: out });
}

/** The variable of loop's environment that holds each provider's key. */
const KEY_VARIABLE: Record<Provider, string> = { anthropic: "ANTHROPIC_API_KEY", openai: "OPENAI_API_KEY", gemini: "GEMINI_API_KEY" };

/**
 * Replace the stand-in by loop's key where it is; "swapped", "passed" (another credential, or none),
 * or "no-key". Gemini's key travels in `x-goog-api-key` or the `key` query parameter (`query`, changed in place).
 */
function swapCredential(
  provider: Provider,
  headers: Headers,
  standIn: string,
  key: string | undefined,
  query: URLSearchParams,
): "swapped" | "passed" | "no-key" {
  const bearer = headers.get("authorization");
  const apiKey = headers.get("x-api-key");
  const google = headers.get("x-goog-api-key");
  const carries = apiKey === standIn || bearer === `Bearer ${standIn}` || (provider === "gemini" && (google === standIn || query.get("key") === standIn));
  if (!carries) return "passed";
  if (!key) return "no-key";
  headers.delete("authorization");
  headers.delete("x-api-key");
  headers.delete("x-goog-api-key");
  query.delete("key");
  if (provider === "anthropic") headers.set("x-api-key", key);
  else if (provider === "gemini") headers.set("x-goog-api-key", key);
  else headers.set("authorization", `Bearer ${key}`);
  return "swapped";
}

const MAX_HEAD = 16 << 10;

function startProxy(o: GatewayOptions, now: () => number, path?: string): Promise<{ server: Server; port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_HEAD) client.end("HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n");
        return;
      }
      client.off("data", onData);
      client.pause();
      proxyRequest(o, now, client, head.subarray(0, end + 4), head.subarray(end + 4));
    };
    client.on("data", onData);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    if (path) server.listen(path, () => resolve({ server, port: 0, sockets }));
    else server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as { port: number }).port, sockets }));
  });
}

/** The target of a proxy request: CONNECT host:port, or an absolute http:// URL. */
export function proxyTarget(requestLine: string): { kind: "connect" | "http"; host: string; port: number; originLine?: string } | null {
  const [method, target, version] = requestLine.split(" ");
  if (!method || !target || !version) return null;
  if (method === "CONNECT") {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(target);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) return null;
    return { kind: "connect", host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) };
  }
  let u: URL;
  try {
    u = new URL(target);
  } catch {
    return null;
  }
  if (u.protocol !== "http:") return null;
  return { kind: "http", host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 80), originLine: `${method} ${u.pathname}${u.search} ${version}` };
}

function proxyRequest(o: GatewayOptions, now: () => number, client: Socket, head: Buffer, rest: Buffer): void {
  const text = head.toString("latin1");
  const firstLine = text.slice(0, text.indexOf("\r\n"));
  const target = proxyTarget(firstLine);
  if (!target) {
    client.end(
      "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nloop gateway: a proxy request is CONNECT host:port or an absolute http:// URL\n",
    );
    return;
  }
  if (!networkAllows(o.allow, target.host, target.port)) {
    o.onProxyRefused?.({ host: target.host, port: target.port, at: now() });
    const why = `loop gateway: ${target.host}:${target.port} is not on this session's network allow-list (docs/loop-json.md#network)\n`;
    client.end(`HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(why)}\r\n\r\n${why}`);
    return;
  }
  // Plain HTTP: one request per connection, its body by Content-Length only. A connection kept
  // alive would carry the client's next request, for any host, to this one unchecked.
  let body = 0;
  if (target.kind === "http") {
    if (/\r\ntransfer-encoding:/i.test(text)) {
      client.end(
        "HTTP/1.1 411 Length Required\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nloop gateway: a proxied plain-HTTP request gives its body's Content-Length\n",
      );
      return;
    }
    body = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
  }
  const upstream = connect({ host: target.host, port: target.port });
  upstream.on("error", (err) => {
    if (!client.writableEnded)
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nloop gateway: ${target.host}:${target.port}: ${err.message}\n`,
      );
    upstream.destroy();
  });
  client.on("close", () => upstream.destroy());
  // An upstream that ended (a mirror answering `Connection: close`) has had the pipe end the client:
  // what the client has not read yet is still to be written, so the socket is not destroyed under it.
  // One cut off (no end) cuts the client off too.
  upstream.on("close", () => {
    if (!client.writableEnded) client.destroy();
  });
  upstream.on("connect", () => {
    if (target.kind === "connect") {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (rest.length) upstream.write(rest);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      return;
    }
    const headers = text.slice(firstLine.length, -4).replace(/\r\n(proxy-connection|connection|keep-alive):[^\r]*/gi, "");
    upstream.write(`${target.originLine}${headers}\r\nConnection: close\r\n\r\n`, "latin1");
    let left = body;
    const send = (chunk: Buffer) => {
      const part = chunk.subarray(0, left);
      left -= part.length;
      if (part.length) upstream.write(part);
      // Anything after the body is a next request: never forwarded on this connection.
      if (left <= 0) client.off("data", send);
    };
    if (left > 0) client.on("data", send);
    if (rest.length) send(rest);
    upstream.pipe(client);
    client.resume();
  });
}

/**
 * The variables that send an agent through its gateway: the CLIs' base URLs, the stand-in as their
 * key, the standard proxy variables, and NO_PROXY for the gateway's own address only (its model
 * API is not reached through its proxy). `own`: that address when it is one of its own (in the
 * sandbox, BRIDGE_HOST: every other loopback host, a listed package mirror on 127.0.0.1 included,
 * goes through the proxy the ordinary way); without it, loopback (the gateway listens on
 * 127.0.0.1 beside the agent, which shares its network: a listed loopback host is reached directly).
 */
export function gatewayEnv(g: Pick<Gateway, "modelUrl" | "proxyUrl">, standIn: string, own?: string): Record<string, string> {
  const proxy = g.proxyUrl;
  const direct = own ?? "127.0.0.1,localhost,::1";
  return {
    ANTHROPIC_BASE_URL: g.modelUrl.anthropic,
    ANTHROPIC_API_KEY: standIn,
    OPENAI_BASE_URL: g.modelUrl.openai,
    OPENAI_API_KEY: standIn,
    GOOGLE_GEMINI_BASE_URL: g.modelUrl.gemini,
    GEMINI_API_KEY: standIn,
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    ALL_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    all_proxy: proxy,
    NO_PROXY: direct,
    no_proxy: direct,
  };
}
