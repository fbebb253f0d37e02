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

/**
 * What a session's gateway writes to its folder (lib/supervisor/session-gateway.ts): loaded only
 * with one, so its name lives here. `stopped`: written once, when it stops the session's model
 * requests for good (`answers_cut_off`), for the step to end the session.
 */
export const GATEWAY_FILES = { usage: "gateway-usage.jsonl", refused: "gateway-refused.jsonl", stopped: "gateway-stopped.json" } as const;

/** Why a session's gateway stopped its model requests (GATEWAY_FILES.stopped), or null: it did not (or ran without one). */
export function readGatewayStop(dir: string): { code: "answers_cut_off"; reason: string } | null {
  const r = readRegularFile(join(dir, GATEWAY_FILES.stopped), { maxBytes: 4096, noLinks: true });
  if (r.kind !== "ok") return null;
  try {
    const d = JSON.parse(r.bytes.toString("utf8")) as Record<string, unknown>;
    return d.code === "answers_cut_off" && text(d.reason, 1000) ? { code: "answers_cut_off", reason: d.reason } : null;
  } catch {
    return null;
  }
}

/** The ports inside a sandbox where the bridge serves the gateway, on BRIDGE_HOST (lib/definition/network.ts). */
export const BRIDGE_PORTS = { model: 41001, proxy: 41002 } as const;
/** The gateway's sockets in GatewayRequest.socketDir. */
export const GATEWAY_SOCKETS = { model: "model.sock", proxy: "proxy.sock" } as const;

/** The codes of a refused model request (lib/gateway/gateway.ts ModelRefusalCode), and the kind each is filed under. */
const REFUSAL_KINDS = {
  budget_exhausted: "budget",
  budget_in_flight: "budget",
  answers_cut_off: "cut_off",
  endpoint_not_allowed: "endpoint",
  no_model_api: "endpoint",
} as const;
type RefusalCode = keyof typeof REFUSAL_KINDS;

/** The kind a refused model request is filed under in GATEWAY_FILES.refused. */
export function refusalKind(code: RefusalCode): (typeof REFUSAL_KINDS)[RefusalCode] {
  return REFUSAL_KINDS[code];
}

/**
 * One refusal of an attempt's gateway (docs/threat-model.md#the-gateway): a host its proxy refused;
 * a model request past a budget (`budget_exhausted`, or `budget_in_flight`: it would have passed it
 * with the requests in flight); an endpoint it does not forward; a request after the session cut
 * off too many answers (`answers_cut_off`: the step stops it). A line from before the codes (a
 * budget refusal with its reason only) reads as `budget_exhausted`.
 */
export type GatewayRefusal =
  | { kind: "network"; host: string; port: number; at: string }
  | { kind: "budget"; code: "budget_exhausted" | "budget_in_flight"; reason: string; at: string }
  | { kind: "endpoint"; code: "endpoint_not_allowed" | "no_model_api"; method: string; path: string; reason: string; at: string }
  | { kind: "cut_off"; code: "answers_cut_off"; reason: string; at: string };

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
      const r = at ? refusalOf(d, at) : null;
      if (r) refused.push(r);
      else unreadable++;
    }
  return { refused, unreadable };
}

const text = (x: unknown, max: number): x is string => typeof x === "string" && x.length <= max;

function refusalOf(d: Record<string, unknown>, at: string): GatewayRefusal | null {
  if (d.kind === "network") return text(d.host, 255) && Number.isSafeInteger(d.port) ? { kind: "network", host: d.host, port: d.port as number, at } : null;
  if (!text(d.reason, 1000)) return null;
  const code = d.code === undefined && d.kind === "budget" ? "budget_exhausted" : d.code;
  if (typeof code !== "string" || !Object.hasOwn(REFUSAL_KINDS, code) || REFUSAL_KINDS[code as RefusalCode] !== d.kind) return null;
  if (d.kind === "budget") return { kind: "budget", code: code as "budget_exhausted" | "budget_in_flight", reason: d.reason, at };
  if (d.kind === "cut_off") return { kind: "cut_off", code: "answers_cut_off", reason: d.reason, at };
  return text(d.method, 16) && text(d.path, 200)
    ? { kind: "endpoint", code: code as "endpoint_not_allowed" | "no_model_api", method: d.method, path: d.path, reason: d.reason, at }
    : null;
}
