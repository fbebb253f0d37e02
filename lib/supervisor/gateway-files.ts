// What a session's launch record asks of its gateway, and the files the gateway appends to the
// session folder (lib/supervisor/session-gateway.ts): names only, so that the wrapper, the launch
// and the usage reader know them without loading a server.
import type { NetworkPolicy } from "../definition/network.ts";

/** What the launch record asks of the session's gateway (lib/supervisor/session-gateway.ts). */
export interface GatewayRequest {
  /** The per-session stand-in the agent's key variables hold. */
  standIn: string;
  /** The proxy's allow-list; null: open. */
  allow: NetworkPolicy | null;
  /**
   * In the sandbox (its network unshared): the folder of the gateway's two Unix sockets, bound into
   * the sandbox, where `loop __bridge` serves them on BRIDGE_PORTS of the sandbox's own loopback.
   */
  socketDir?: string;
  /** Tokens the session may still use (the least of what is left of its item's and the loop's budgets); none: no cap. */
  maxTokens?: number;
}

/** What a session's gateway appends to its folder (lib/supervisor/session-gateway.ts): loaded only with one, so its name lives here. */
export const GATEWAY_FILES = { usage: "gateway-usage.jsonl", refused: "gateway-refused.jsonl" } as const;

/** The loopback ports inside a sandbox where the bridge serves the gateway (the network namespace is the session's own: nothing else listens there). */
export const BRIDGE_PORTS = { model: 41001, proxy: 41002 } as const;
/** The gateway's sockets in GatewayRequest.socketDir. */
export const GATEWAY_SOCKETS = { model: "model.sock", proxy: "proxy.sock" } as const;
