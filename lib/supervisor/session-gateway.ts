// The gateway of one session, as the session wrapper runs it (lib/gateway/gateway.ts,
// docs/threat-model.md#the-gateway): started before the agent, stopped after it. Loop's real model
// keys and upstreams are handed to the wrapper privately (session-wrapper.ts WrapperPrivate), never
// the agent's: the agent gets the gateway's URLs, a stand-in for each key loop holds (none for a
// provider whose key loop does not hold: a CLI signed in with an account uses its own credential,
// passed through and metered), and, unless its network is open, the proxy variables. What it meters and refuses is appended to
// the session folder, one JSON line per model call (GATEWAY_FILES.usage) and per refusal
// (GATEWAY_FILES.refused), where the step reads it.
import { appendFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BRIDGE_HOST, NONESSENTIAL_TRAFFIC_OFF } from "../definition/network.ts";
import { priced } from "../definition/usage-parsers.ts";
import { amount } from "../decisions/budget.ts";
import { DEFAULT_UPSTREAMS, gatewayEnv, type ModelRefusal, startGateway } from "../gateway/gateway.ts";
import type { WorstCase } from "../gateway/endpoints.ts";
import type { ModelPrice } from "../definition/normalized.ts";
import { BRIDGE_PORTS, GATEWAY_FILES, GATEWAY_SOCKETS, type GatewayRequest, refusalKind } from "./gateway-files.ts";

const total = (c: { input: number; output: number; cacheRead: number; cacheWrite: number }) => c.input + c.output + c.cacheRead + c.cacheWrite;

/**
 * Answers a session may hang up on before their usage is known: each is charged its worst case,
 * and the one after this many stops the session's model requests (`answers_cut_off`). A session
 * ended by loop (a budget, `loop ctl stop`, a stall) cuts off at most one per request in flight.
 */
export const CUT_OFF_LIMIT = 3;

/** What a session's gateway has counted: spent (known figures), held by the requests in flight, cut off. */
export interface GatewayLedger {
  tokens: number;
  microUsd: number;
  /** Models of answers without a price: while one is here, the dollar cap is the step's. */
  unpriced: Set<string>;
  held: { requests: number; tokens: number; microUsd: number };
  cutOffs: number;
}

/**
 * Whether the next model request goes ahead (null) or why not, given its worst case (null: a free
 * endpoint). In order: a session that cut off CUT_OFF_LIMIT answers is refused everything
 * (`answers_cut_off`); a spent budget refuses everything (`budget_exhausted`: the tokens left at
 * the launch are used, or the dollars are, known only while every answer so far had a price); a
 * billed request whose worst case, added to what is spent and what the requests in flight hold,
 * passes the cap waits (`budget_in_flight`, answered 429: the client tries again once the others'
 * usage is known). A request alone in flight is let through while the budget is not spent, so the
 * cap is crossed by at most one request, sent alone or with others.
 */
export function admission(
  l: GatewayLedger,
  worst: { tokens: number; microUsd: number | null } | null,
  r: Pick<GatewayRequest, "maxTokens" | "maxMicroUsd">,
): ModelRefusal | null {
  if (l.cutOffs >= CUT_OFF_LIMIT)
    return {
      code: "answers_cut_off",
      reason: `the session hung up on ${l.cutOffs} model answers before they said what they used (each charged its worst case)`,
    };
  const dollars = r.maxMicroUsd !== undefined && l.unpriced.size === 0;
  if (r.maxTokens !== undefined && l.tokens >= r.maxTokens)
    return { code: "budget_exhausted", reason: `the session's budget is spent (${l.tokens} of ${r.maxTokens} tokens)` };
  if (dollars && l.microUsd >= r.maxMicroUsd!)
    return { code: "budget_exhausted", reason: `the session's budget is spent (${amount("usd", l.microUsd)} of ${amount("usd", r.maxMicroUsd!)})` };
  if (!worst || l.held.requests === 0) return null;
  const wait = (what: string) => ({
    code: "budget_in_flight" as const,
    reason: `${what}: what is spent, what the ${l.held.requests} request(s) in flight may still use and this request's worst case would pass the session's budget; try again when they are answered`,
  });
  if (r.maxTokens !== undefined && l.tokens + l.held.tokens + worst.tokens > r.maxTokens)
    return wait(`${l.tokens} + ${l.held.tokens} + ${worst.tokens} of ${r.maxTokens} tokens`);
  if (dollars && worst.microUsd !== null && l.microUsd + l.held.microUsd + worst.microUsd > r.maxMicroUsd!)
    return wait(`${amount("usd", l.microUsd + l.held.microUsd + worst.microUsd)} of ${amount("usd", r.maxMicroUsd!)}`);
  return null;
}

/** A request's worst case in dollars at the operator's price for the model it names: its input at the dearest input price (cache writes cost more). Null without a price. */
function worstMicroUsd(w: WorstCase, price: ModelPrice | undefined): number | null {
  if (!price) return null;
  return priced({ input: w.input, output: w.output, cacheRead: 0, cacheWrite: 0 }, { ...price, input: Math.max(price.input, price.cacheWrite ?? 0) });
}

/** Start the session's gateway; the variables to give the agent, and how to stop it. */
export async function startSessionGateway(o: {
  dir: string;
  request: GatewayRequest;
  env: Record<string, string | undefined>;
  /** Where a proxy-only gateway's refusals are said (the verify's log); a session's are appended to GATEWAY_FILES.refused. */
  say?: (line: string) => void;
  /** Whose list a proxy-only gateway keeps, for what it says: a verify's (verifyNetwork), or setup's (workspace.setupNetwork). */
  role?: "verify" | "setup";
}): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  if (o.request.proxyOnly) return startProxyOnly(o);
  const ledger: GatewayLedger = { tokens: 0, microUsd: 0, unpriced: new Set<string>(), held: { requests: 0, tokens: 0, microUsd: 0 }, cutOffs: 0 };
  const line = (file: string, doc: unknown) => appendFileSync(join(o.dir, file), JSON.stringify(doc) + "\n");
  const prices = o.request.prices ?? {};
  const priceOf = (model: string | null) => (model !== null && Object.hasOwn(prices, model) ? prices[model] : undefined);
  // What a request holds while in flight: its worst case in tokens, and in dollars where its model has a price (else none).
  const holdOf = (w: WorstCase) => ({ tokens: w.input + w.output, microUsd: worstMicroUsd(w, priceOf(w.model)) });
  const dir = o.request.socketDir;
  const sockets = dir ? { model: join(dir, GATEWAY_SOCKETS.model), proxy: join(dir, GATEWAY_SOCKETS.proxy) } : null;
  const g = await startGateway({
    upstreams: {
      anthropic: o.env.ANTHROPIC_BASE_URL || DEFAULT_UPSTREAMS.anthropic,
      openai: o.env.OPENAI_BASE_URL || DEFAULT_UPSTREAMS.openai,
      gemini: o.env.GOOGLE_GEMINI_BASE_URL || DEFAULT_UPSTREAMS.gemini,
    },
    keys: { anthropic: o.env.ANTHROPIC_API_KEY || undefined, openai: o.env.OPENAI_API_KEY || undefined, gemini: o.env.GEMINI_API_KEY || undefined },
    standIn: o.request.standIn,
    allow: o.request.allow ?? undefined,
    admit: (w) => {
      const h = w && holdOf(w);
      const refused = admission(ledger, h, o.request);
      if (refused === null && h) {
        ledger.held.requests++;
        ledger.held.tokens += h.tokens;
        ledger.held.microUsd += h.microUsd ?? 0;
      }
      return refused;
    },
    onModelCall: (c) => {
      if (c.worst) {
        const h = holdOf(c.worst);
        ledger.held.requests--;
        ledger.held.tokens -= h.tokens;
        ledger.held.microUsd -= h.microUsd ?? 0;
      }
      if (c.cutOff) ledger.cutOffs++;
      ledger.tokens += total(c.usage);
      // An answer that used nothing costs nothing, priced or not. An input the answer never gave is
      // priced as the request's worst case was: at the dearest input price.
      const price = priceOf(c.model);
      const microUsd =
        total(c.usage) === 0
          ? 0
          : c.estimatedInput
            ? worstMicroUsd({ model: c.model, input: c.usage.input, output: c.usage.output }, price)
            : priced(c.usage, price);
      if (microUsd === null) ledger.unpriced.add(c.model ?? "(no model named)");
      else ledger.microUsd += microUsd;
      line(GATEWAY_FILES.usage, { kind: "model", ...c, microUsd, at: new Date(c.at).toISOString() });
      // The limit reached: from now on every model request is refused, and the step ends the session.
      if (c.cutOff && ledger.cutOffs === CUT_OFF_LIMIT) {
        const stop = admission(ledger, null, o.request)!;
        writeFileSync(join(o.dir, GATEWAY_FILES.stopped), JSON.stringify({ code: stop.code, reason: stop.reason, at: new Date(c.at).toISOString() }) + "\n");
      }
    },
    onModelRefused: (r) =>
      line(GATEWAY_FILES.refused, {
        kind: refusalKind(r.code),
        code: r.code,
        provider: r.provider,
        method: r.method,
        path: r.path,
        reason: r.reason,
        at: new Date(r.at).toISOString(),
      }),
    onProxyRefused: (r) => line(GATEWAY_FILES.refused, { kind: "network", host: r.host, port: r.port, at: new Date(r.at).toISOString() }),
    ...(sockets ? { unix: sockets } : {}),
  });
  // In the sandbox the agent reaches the gateway on its own loopback, through the bridge.
  const env = sockets ? gatewayEnv(bridgeUrls(), o.request.standIn, BRIDGE_HOST) : gatewayEnv(g, o.request.standIn);
  return {
    env: agentVariables(env, {
      open: o.request.allow === null,
      held: {
        ANTHROPIC_API_KEY: Boolean(o.env.ANTHROPIC_API_KEY),
        OPENAI_API_KEY: Boolean(o.env.OPENAI_API_KEY),
        GEMINI_API_KEY: Boolean(o.env.GEMINI_API_KEY),
      },
      noProxy: o.env.NO_PROXY ?? o.env.no_proxy,
    }),
    async stop() {
      await g.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Where the bridge serves the gateway inside the sandbox (lib/supervisor/bridge.ts). */
function bridgeUrls(): { modelUrl: Record<"anthropic" | "openai" | "gemini", string>; proxyUrl: string } {
  const at = `http://${BRIDGE_HOST}`;
  return {
    modelUrl: {
      anthropic: `${at}:${BRIDGE_PORTS.model}/anthropic`,
      openai: `${at}:${BRIDGE_PORTS.model}/openai`,
      gemini: `${at}:${BRIDGE_PORTS.model}/gemini`,
    },
    proxyUrl: `${at}:${BRIDGE_PORTS.proxy}`,
  };
}

const PROXY_VARS = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"] as const;

/**
 * What the agent is given of the gateway's variables: a stand-in only for a key loop holds; on an
 * open network no proxy (the agent's connections are its own, through the operator's proxy if any),
 * the gateway's loopback added to NO_PROXY so that a proxy of the operator's never carries the model
 * requests. And the CLIs' traffic of their own turned off (NONESSENTIAL_TRAFFIC_OFF).
 */
export function agentVariables(
  all: Record<string, string>,
  o: { open: boolean; held: Partial<Record<"ANTHROPIC_API_KEY" | "OPENAI_API_KEY" | "GEMINI_API_KEY", boolean>>; noProxy?: string },
): Record<string, string> {
  const env: Record<string, string> = { ...NONESSENTIAL_TRAFFIC_OFF, ...all };
  for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"] as const) if (!o.held[k]) delete env[k];
  if (o.open) {
    for (const k of PROXY_VARS) delete env[k];
    const noProxy = [
      ...new Set([
        ...(o.noProxy ?? "")
          .split(",")
          .map((h) => h.trim())
          .filter(Boolean),
        ...(all.NO_PROXY ?? "").split(","),
      ]),
    ].join(",");
    Object.assign(env, { NO_PROXY: noProxy, no_proxy: noProxy });
  }
  return env;
}

/**
 * A verify's gateway (its `verifyNetwork` a list): the proxy and its list, nothing else. Its model
 * side refuses everything and holds no key; the verify is given only the proxy variables.
 */
async function startProxyOnly(o: {
  request: GatewayRequest;
  say?: (line: string) => void;
  role?: "verify" | "setup";
}): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const say = o.say ?? (() => {});
  const [who, setting] = o.role === "setup" ? ["setup", "workspace.setupNetwork"] : ["a verify", "verifyNetwork"];
  const dir = o.request.socketDir;
  const g = await startGateway({
    upstreams: DEFAULT_UPSTREAMS,
    keys: {},
    standIn: o.request.standIn,
    allow: o.request.allow ?? undefined,
    admit: () => ({ code: "no_model_api", reason: `${who} has no model API through loop (${setting} lists hosts for its proxy)` }),
    onModelRefused: (r) => say(`loop: ${r.reason}; refused a request to the ${r.provider} API\n`),
    onProxyRefused: (r) => say(`loop: ${who === "setup" ? "setup's" : "the verify's"} network refused ${r.host}:${r.port} (not in ${setting})\n`),
    ...(dir ? { unix: { model: join(dir, GATEWAY_SOCKETS.model), proxy: join(dir, GATEWAY_SOCKETS.proxy) } } : {}),
  });
  const all = dir ? gatewayEnv(bridgeUrls(), o.request.standIn, BRIDGE_HOST) : gatewayEnv(g, o.request.standIn);
  return {
    env: Object.fromEntries(PROXY_VARS.map((k) => [k, all[k]!])),
    async stop() {
      await g.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
