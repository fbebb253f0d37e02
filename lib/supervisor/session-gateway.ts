// The gateway of one session, as the session wrapper runs it (lib/gateway/gateway.ts,
// docs/threat-model.md#the-gateway): started before the agent, stopped after it. Loop's real model
// keys and upstreams are the wrapper's (loop's environment), never the agent's: the agent gets the
// gateway's URLs, a stand-in key and the proxy variables. What it meters and refuses is appended to
// the session folder, one JSON line per model call (GATEWAY_FILES.usage) and per refusal
// (GATEWAY_FILES.refused), where the step reads it.
import { appendFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { NONESSENTIAL_TRAFFIC_OFF } from "../definition/network.ts";
import { DEFAULT_UPSTREAMS, gatewayEnv, type ModelCall, startGateway } from "../gateway/gateway.ts";
import { BRIDGE_PORTS, GATEWAY_FILES, GATEWAY_SOCKETS, type GatewayRequest } from "./gateway-files.ts";

export { GATEWAY_FILES, type GatewayRequest };

const total = (c: ModelCall) => c.usage.input + c.usage.output + c.usage.cacheRead + c.usage.cacheWrite;

/** Start the session's gateway; the variables to give the agent, and how to stop it. */
export async function startSessionGateway(o: { dir: string; request: GatewayRequest; env: Record<string, string | undefined> }): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  let used = 0;
  const line = (file: string, doc: unknown) => appendFileSync(join(o.dir, file), JSON.stringify(doc) + "\n");
  const max = o.request.maxTokens;
  const dir = o.request.socketDir;
  const sockets = dir ? { model: join(dir, GATEWAY_SOCKETS.model), proxy: join(dir, GATEWAY_SOCKETS.proxy) } : null;
  const g = await startGateway({
    upstreams: { anthropic: o.env.ANTHROPIC_BASE_URL || DEFAULT_UPSTREAMS.anthropic, openai: o.env.OPENAI_BASE_URL || DEFAULT_UPSTREAMS.openai },
    keys: { anthropic: o.env.ANTHROPIC_API_KEY || undefined, openai: o.env.OPENAI_API_KEY || undefined },
    standIn: o.request.standIn,
    allow: o.request.allow ?? undefined,
    refuse: () => (max !== undefined && used >= max ? `the session's budget is spent (${used} of ${max} tokens)` : null),
    onModelCall: (c) => {
      used += total(c);
      line(GATEWAY_FILES.usage, { kind: "model", ...c, at: new Date(c.at).toISOString() });
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
    env: { ...NONESSENTIAL_TRAFFIC_OFF, ...gatewayEnv(seen, o.request.standIn) },
    async stop() {
      await g.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
