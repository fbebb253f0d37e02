// Sending a channel's messages over HTTP (docs/operations.md#notification-channels): one POST each,
// in order, all within the channel's deadline, redirects not followed; a webhook's body signed with
// the channel's key. The first failure ends the channel's turn: its messages wait for the next try.
import { createHmac } from "node:crypto";
import type { ChannelDef } from "../definition/normalized.ts";
import { channelUrlProblem } from "../definition/channels.ts";
import { channelRequest, type NotificationDocument } from "./message.ts";

/** How one send went. */
type SendResult = { ok: true } | { ok: false; reason: string };

/** The address and key a channel uses, from loop.json or loop's environment; or why it has none. */
export function channelTarget(c: ChannelDef, env: Record<string, string | undefined>): { url: string; secret: string | null } | { problem: string } {
  const url = c.url ?? env[c.urlFrom!] ?? "";
  if (!url) return { problem: `${c.urlFrom} is not set in loop run's environment` };
  const bad = channelUrlProblem(url);
  // The value may be a secret: its words are never repeated.
  if (bad) return { problem: c.url ? `its url ${bad}` : `the address in ${c.urlFrom} ${bad}` };
  if (!c.secretFrom) return { url, secret: null };
  const secret = env[c.secretFrom];
  return secret ? { url, secret } : { problem: `${c.secretFrom} (its secretFrom) is not set in loop run's environment` };
}

/** POST one message; `signal` is the channel's deadline. */
export async function sendOne(
  c: ChannelDef,
  target: { url: string; secret: string | null },
  doc: NotificationDocument,
  signal: AbortSignal,
): Promise<SendResult> {
  const req = channelRequest(c.kind, target.url, doc);
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": "loop-notify/1",
    "X-Loop-Event": doc.event,
    "X-Loop-Delivery": doc.id,
  };
  if (target.secret) headers["X-Loop-Signature-256"] = `sha256=${createHmac("sha256", target.secret).update(req.body).digest("hex")}`;
  try {
    const res = await fetch(req.url, { method: "POST", headers, body: req.body, redirect: "manual", signal });
    await res.body?.cancel();
    return res.status >= 200 && res.status < 300 ? { ok: true } : { ok: false, reason: `answered HTTP ${res.status}` };
  } catch (err) {
    const e = err as Error;
    if (e.name === "TimeoutError" || e.name === "AbortError") return { ok: false, reason: `no answer within ${Math.round(c.timeout / 1000)}s` };
    return { ok: false, reason: `could not be reached (${e.message})` };
  }
}
