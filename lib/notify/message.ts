// What a notification channel is sent (docs/operations.md#notification-channels): one document per
// message, shaped for its kind: loop's own JSON for a webhook, Block Kit for Slack, ntfy's JSON
// publish. Pure. Everything in a message but loop's own words came from outside (an agent's
// question, a verify's reason, an item id from a tracker): it goes out as plain text, with control
// and invisible characters shown escaped, and never as markup a receiver would render or act on.
import type { ChannelKind, NotifyEvent } from "../definition/channels.ts";
import type { Message } from "../decisions/notify-plan.ts";
import { printableLines } from "../shared/printable.ts";

/** The loop a message is about. */
export interface MessageContext {
  loop: { name: string | null; state: string; reason: string | null };
  /** The log position the message was made at, and when. */
  seq: number;
  at: string;
  host: string;
  root: string;
  /** The loop's page (loop.json `notify.pageUrl`), or null. */
  page: string | null;
}

/** The generic webhook's body, `loop/notification@1`. */
export interface NotificationDocument {
  schema: "loop/notification@1";
  event: NotifyEvent;
  /** An attention kind (`question`, `environment`, …), `budget_80`, or for an item's outcome `passed`, `failed`, `landed`. */
  kind: string;
  subject: string;
  reason: string;
  item: string | null;
  /** The commands that put it right, in order (conditions); empty for an outcome. */
  fix: string[];
  /** The typed code of an item's outcome, else null. */
  code: string | null;
  /** The same message is never sent twice under one id: conditions by their key, outcomes by their event's seq. */
  id: string;
  loop: MessageContext["loop"];
  seq: number;
  at: string;
  host: string;
  root: string;
  page: string | null;
}

const WHAT: Record<string, string> = {
  question: "an agent asked a question",
  environment: "paused by an environment fault",
  landing: "a landing failed",
  failed: "drained Failed",
  budget: "a budget was reached",
  budget_80: "80% of a budget is spent",
  review: "waits for review before it starts",
  gave_up: "an agent gave up",
  definition: "loop.json is invalid",
  passed: "an item passed",
  landed: "an item landed",
};

export function notificationDocument(m: Message, c: MessageContext): NotificationDocument {
  const kind = m.of === "condition" ? m.condition.kind : m.outcome.event;
  const item = m.of === "condition" ? m.condition.item : m.outcome.item;
  const what = m.of === "outcome" && m.outcome.event === "failed" ? "an item failed" : (WHAT[kind] ?? kind);
  return {
    schema: "loop/notification@1",
    event: m.event,
    kind,
    subject: `loop ${c.loop.name ?? "?"}: ${what}${item ? ` (${item})` : ""}`,
    reason: m.of === "condition" ? m.condition.reason : m.outcome.reason,
    item,
    fix: m.of === "condition" ? m.condition.fix : [],
    code: m.of === "outcome" ? m.outcome.code : null,
    id: m.of === "condition" ? m.condition.key : `${m.outcome.event}:${m.outcome.seq}`,
    loop: c.loop,
    seq: c.seq,
    at: c.at,
    host: c.host,
    root: c.root,
    page: c.page,
  };
}

/** Plain text of outside words for a receiver: escaped control characters, cut to `max` characters. */
function plain(s: string, max: number): string {
  const v = printableLines(s);
  return v.length > max ? `${v.slice(0, max - 1)}…` : v;
}

/**
 * Slack's incoming webhook body: a fallback `text` and Block Kit blocks (header, the reason as plain
 * text, the fix commands, a link to the page). Outside words go in `plain_text` objects only, which
 * Slack renders as typed: no formatting, no links, no mentions. Within Block Kit's published limits
 * (a header's text 150 characters, a section's 3000, a button's 75).
 */
function slackBody(d: NotificationDocument): unknown {
  const blocks: unknown[] = [
    { type: "header", text: { type: "plain_text", text: plain(d.subject, 150), emoji: false } },
    { type: "section", text: { type: "plain_text", text: plain(d.reason || d.subject, 3000), emoji: false } },
  ];
  if (d.fix.length) blocks.push({ type: "section", text: { type: "plain_text", text: plain(`To fix: ${d.fix.join("  then  ")}`, 3000), emoji: false } });
  blocks.push({ type: "context", elements: [{ type: "plain_text", text: plain(`${d.host} · ${d.root} · seq ${d.seq}`, 2000), emoji: false }] });
  if (d.page)
    blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Open the loop's page", emoji: false }, url: d.page }] });
  return { text: plain(d.subject, 3000), blocks };
}

/** ntfy's JSON publish: posted to the server's root, the topic named in the body. */
function ntfyBody(d: NotificationDocument, topic: string): unknown {
  const urgent = d.event === "attention" || d.event === "review" || d.event === "budget_100" || d.event === "failed";
  return {
    topic,
    title: plain(d.subject, 250),
    message: plain([d.reason, d.fix.length ? `To fix: ${d.fix.join(" then ")}` : ""].filter(Boolean).join("\n"), 4000),
    tags: [urgent ? "warning" : "white_check_mark"],
    priority: urgent ? 4 : 3,
    ...(d.page ? { click: d.page } : {}),
  };
}

/** Where a channel's message is posted and the JSON it carries. */
export function channelRequest(kind: ChannelKind, url: string, d: NotificationDocument): { url: string; body: string } {
  if (kind === "slack") return { url, body: JSON.stringify(slackBody(d)) };
  if (kind === "ntfy") {
    const u = new URL(url);
    const topic = decodeURIComponent(u.pathname.replace(/^\/+|\/+$/g, ""));
    return { url: `${u.origin}/`, body: JSON.stringify(ntfyBody(d, topic)) };
  }
  return { url, body: JSON.stringify(d) };
}
