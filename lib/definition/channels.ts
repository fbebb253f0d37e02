// Where `loop run` tells people (loop.json `notify.channels`, docs/operations.md#notification-channels):
// the kinds of channel, the events a channel may ask for, and which addresses are accepted.
import { httpsProblem } from "./forge-kinds.ts";

/** A generic JSON webhook, a Slack incoming webhook, an ntfy topic. */
export const CHANNEL_KINDS = ["webhook", "slack", "ntfy"] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/**
 * What a channel can be told of: `attention` (every condition that needs a person), an item `passed`,
 * `failed` or `landed`, the loop's budget at 80% or reached (`budget_80`, `budget_100`), and a loop
 * waiting for review (`review`).
 */
export const NOTIFY_EVENTS = ["attention", "passed", "failed", "landed", "budget_80", "budget_100", "review"] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

export const MAX_CHANNELS = 10;
/** The longest one send may take: the step waits for its channels (all at once) at most this long. */
export const MAX_CHANNEL_TIMEOUT_MS = 30_000;
export const DEFAULT_CHANNEL_TIMEOUT_MS = 10_000;

/** Why a channel's `url` is refused: https, or http to this machine only (a local relay, a test); no credentials or fragment. */
export function channelUrlProblem(s: string): string | undefined {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return "must be a URL such as https://hooks.example.com/loop";
  }
  if (u.username || u.password) return "must not hold credentials (put a secret address in a variable and name it in urlFrom)";
  if (u.hash) return "must not have a fragment";
  return httpsProblem(u);
}
