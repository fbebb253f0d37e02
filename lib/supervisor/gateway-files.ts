// What a session's launch record asks of its gateway, and the files the gateway appends to the
// session folder (lib/supervisor/session-gateway.ts): names only, so that the wrapper, the launch
// and the usage reader know them without loading a server; and the reader of its refusals, for loop logs and loop status.
import { join } from "node:path";
import type { NetworkPolicy } from "../definition/network.ts";
import type { ModelPrice } from "../definition/normalized.ts";
import { readRegularFile } from "../shared/fsutil.ts";

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
  /** Micro-dollars the session may still spend, the same way; none: no cap. Enforced while every answer's model has a price. */
  maxMicroUsd?: number;
  /** The operator's prices (loop.json `prices`), by the model an answer names: each call's dollars. */
  prices?: Record<string, ModelPrice>;
  /**
   * A verify's (`verifyNetwork` a list): the proxy alone. No model API is served (every model request
   * is refused), no key or stand-in is given, and each refusal is a line of the verify's log.
   */
  proxyOnly?: true;
}

/** What a session's gateway appends to its folder (lib/supervisor/session-gateway.ts): loaded only with one, so its name lives here. */
export const GATEWAY_FILES = { usage: "gateway-usage.jsonl", refused: "gateway-refused.jsonl" } as const;

/** The loopback ports inside a sandbox where the bridge serves the gateway (the network namespace is the session's own: nothing else listens there). */
export const BRIDGE_PORTS = { model: 41001, proxy: 41002 } as const;
/** The gateway's sockets in GatewayRequest.socketDir. */
export const GATEWAY_SOCKETS = { model: "model.sock", proxy: "proxy.sock" } as const;

/** One refusal of an attempt's gateway (docs/threat-model.md#the-gateway): a host its proxy refused, or a model request its budget refused. */
export type GatewayRefusal = { kind: "network"; host: string; port: number; at: string } | { kind: "budget"; reason: string; at: string };

/** The well-formed refusals of a session folder's gateway-refused.jsonl, and how many lines were not. */
export function readRefusals(dir: string): { refused: GatewayRefusal[]; unreadable: number } {
  const r = readRegularFile(join(dir, GATEWAY_FILES.refused), { maxBytes: 16 * 2 ** 20, noLinks: true });
  const refused: GatewayRefusal[] = [];
  let unreadable = 0;
  if (r.kind === "ok")
    for (const line of r.bytes.toString("utf8").split("\n")) {
      if (!line) continue;
      let d: Record<string, unknown>;
      try {
        d = JSON.parse(line);
      } catch {
        unreadable++;
        continue;
      }
      const at = typeof d.at === "string" && d.at.length <= 40 ? d.at : null;
      if (at && d.kind === "network" && typeof d.host === "string" && d.host.length <= 255 && Number.isSafeInteger(d.port)) refused.push({ kind: "network", host: d.host, port: d.port as number, at });
      else if (at && d.kind === "budget" && typeof d.reason === "string" && d.reason.length <= 1000) refused.push({ kind: "budget", reason: d.reason, at });
      else unreadable++;
    }
  return { refused, unreadable };
}

