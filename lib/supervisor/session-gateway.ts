// The gateway of one session, as the session wrapper runs it (lib/gateway/gateway.ts,
// docs/threat-model.md#the-gateway): started before the agent, stopped after it. Loop's real model
// keys and upstreams are handed to the wrapper privately (session-wrapper.ts WrapperPrivate), never
// the agent's: the agent gets the gateway's URLs, a stand-in for each key loop holds (none for a
// provider whose key loop does not hold: a CLI signed in with an account uses its own credential,
// passed through and metered), and, unless its network is open, the proxy variables. What it meters and refuses is appended to
// the session folder, one JSON line per model call (GATEWAY_FILES.usage) and per refusal
// (GATEWAY_FILES.refused), where the step reads it.
import { appendFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { NONESSENTIAL_TRAFFIC_OFF } from "../definition/network.ts";
import { priced } from "../definition/usage-parsers.ts";
import { amount } from "../decisions/budget.ts";
import { DEFAULT_UPSTREAMS, gatewayEnv, type ModelCall, startGateway } from "../gateway/gateway.ts";
import { BRIDGE_PORTS, GATEWAY_FILES, GATEWAY_SOCKETS, type GatewayRequest } from "./gateway-files.ts";


const total = (c: ModelCall) => c.usage.input + c.usage.output + c.usage.cacheRead + c.usage.cacheWrite;

/**
 * Why the next model request is refused, or null: the tokens left at the launch are used, or the
 * dollars are — known only while every answer so far had a price (an unknown spend reaches nothing;
 * the step still checks the figure it records, the CLI's own dollars included).
 */
export function budgetRefusal(spent: { tokens: number; microUsd: number; unpriced: ReadonlySet<string> }, r: Pick<GatewayRequest, "maxTokens" | "maxMicroUsd">): string | null {
  if (r.maxTokens !== undefined && spent.tokens >= r.maxTokens) return `the session's budget is spent (${spent.tokens} of ${r.maxTokens} tokens)`;
  if (r.maxMicroUsd !== undefined && spent.unpriced.size === 0 && spent.microUsd >= r.maxMicroUsd) return `the session's budget is spent (${amount("usd", spent.microUsd)} of ${amount("usd", r.maxMicroUsd)})`;
  return null;
}

/** Start the session's gateway; the variables to give the agent, and how to stop it. */
export async function startSessionGateway(o: {
  dir: string;
  request: GatewayRequest;
  env: Record<string, string | undefined>;
  /** Where a proxy-only gateway's refusals are said (the verify's log); a session's are appended to GATEWAY_FILES.refused. */
  say?: (line: string) => void;
}): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  if (o.request.proxyOnly) return startProxyOnly(o);
  const spent = { tokens: 0, microUsd: 0, unpriced: new Set<string>() };
  const line = (file: string, doc: unknown) => appendFileSync(join(o.dir, file), JSON.stringify(doc) + "\n");
  const prices = o.request.prices ?? {};
  const dir = o.request.socketDir;
  const sockets = dir ? { model: join(dir, GATEWAY_SOCKETS.model), proxy: join(dir, GATEWAY_SOCKETS.proxy) } : null;
  const g = await startGateway({
    upstreams: { anthropic: o.env.ANTHROPIC_BASE_URL || DEFAULT_UPSTREAMS.anthropic, openai: o.env.OPENAI_BASE_URL || DEFAULT_UPSTREAMS.openai },
    keys: { anthropic: o.env.ANTHROPIC_API_KEY || undefined, openai: o.env.OPENAI_API_KEY || undefined },
    standIn: o.request.standIn,
    allow: o.request.allow ?? undefined,
    refuse: () => budgetRefusal(spent, o.request),
    onModelCall: (c) => {
      spent.tokens += total(c);
      // An answer that used nothing costs nothing, priced or not.
      const microUsd = total(c) === 0 ? 0 : c.model !== null && Object.hasOwn(prices, c.model) ? priced(c.usage, prices[c.model]) : null;
      if (microUsd === null) spent.unpriced.add(c.model ?? "(no model named)");
      else spent.microUsd += microUsd;
      line(GATEWAY_FILES.usage, { kind: "model", ...c, microUsd, at: new Date(c.at).toISOString() });
    },
    onModelRefused: (r) => line(GATEWAY_FILES.refused, { kind: "budget", provider: r.provider, reason: r.reason, at: new Date(r.at).toISOString() }),
    onProxyRefused: (r) => line(GATEWAY_FILES.refused, { kind: "network", host: r.host, port: r.port, at: new Date(r.at).toISOString() }),
    ...(sockets ? { unix: sockets } : {}),
  });
  // In the sandbox the agent reaches the gateway on its own loopback, through the bridge.
  const seen = sockets
    ? { modelUrl: { anthropic: `http://127.0.0.1:${BRIDGE_PORTS.model}/anthropic`, openai: `http://127.0.0.1:${BRIDGE_PORTS.model}/openai` }, proxyUrl: `http://127.0.0.1:${BRIDGE_PORTS.proxy}` }
    : g;
  return {
    env: agentVariables(gatewayEnv(seen, o.request.standIn), { open: o.request.allow === null, held: { ANTHROPIC_API_KEY: Boolean(o.env.ANTHROPIC_API_KEY), OPENAI_API_KEY: Boolean(o.env.OPENAI_API_KEY) }, noProxy: o.env.NO_PROXY ?? o.env.no_proxy }),
    async stop() {
      await g.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

const PROXY_VARS = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"] as const;

/**
 * What the agent is given of the gateway's variables: a stand-in only for a key loop holds; on an
 * open network no proxy (the agent's connections are its own, through the operator's proxy if any),
 * the gateway's loopback added to NO_PROXY so that a proxy of the operator's never carries the model
 * requests. And the CLIs' traffic of their own turned off (NONESSENTIAL_TRAFFIC_OFF).
 */
export function agentVariables(all: Record<string, string>, o: { open: boolean; held: Record<"ANTHROPIC_API_KEY" | "OPENAI_API_KEY", boolean>; noProxy?: string }): Record<string, string> {
  const env: Record<string, string> = { ...NONESSENTIAL_TRAFFIC_OFF, ...all };
  for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] as const) if (!o.held[k]) delete env[k];
  if (o.open) {
    for (const k of PROXY_VARS) delete env[k];
    const noProxy = [...new Set([...(o.noProxy ?? "").split(",").map((h) => h.trim()).filter(Boolean), ...(all.NO_PROXY ?? "").split(",")])].join(",");
    Object.assign(env, { NO_PROXY: noProxy, no_proxy: noProxy });
  }
  return env;
}

/**
 * A verify's gateway (its `verifyNetwork` a list): the proxy and its list, nothing else. Its model
 * side refuses everything and holds no key; the verify is given only the proxy variables.
 */
async function startProxyOnly(o: { request: GatewayRequest; say?: (line: string) => void }): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const say = o.say ?? (() => {});
  const dir = o.request.socketDir;
  const g = await startGateway({
    upstreams: DEFAULT_UPSTREAMS,
    keys: {},
    standIn: o.request.standIn,
    allow: o.request.allow ?? undefined,
    refuse: () => "a verify has no model API through loop (verifyNetwork lists hosts for its proxy)",
    onModelRefused: (r) => say(`loop: ${r.reason}; refused a request to the ${r.provider} API\n`),
    onProxyRefused: (r) => say(`loop: the verify's network refused ${r.host}:${r.port} (not in verifyNetwork)\n`),
    ...(dir ? { unix: { model: join(dir, GATEWAY_SOCKETS.model), proxy: join(dir, GATEWAY_SOCKETS.proxy) } } : {}),
  });
  const proxyUrl = dir ? `http://127.0.0.1:${BRIDGE_PORTS.proxy}` : g.proxyUrl;
  const all = gatewayEnv({ modelUrl: g.modelUrl, proxyUrl }, o.request.standIn);
  return {
    env: Object.fromEntries(PROXY_VARS.map((k) => [k, all[k]!])),
    async stop() {
      await g.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
