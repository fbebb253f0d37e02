// The trackers loop takes items from (docs/trackers.md) and what differs between them in loop.json:
// the default API and token variable, how an issue's key is written (a Linear team's, a Jira
// project's), a user's shape in `authorizedUsers`. Pure.

/** Where items and their conversation live: a forge's own issues, Linear, Jira, or loop.json alone. */
export const TRACKER_KINDS = ["github", "gitlab", "linear", "jira", "none"] as const;
/** The trackers that are not a forge: their refs are `<kind>:<KEY>-<number>` (lib/definition/refs.ts). */
const KEYED_TRACKERS = ["linear", "jira"] as const;
export type KeyedTracker = (typeof KEYED_TRACKERS)[number];

export const TRACKER_KIND: Record<KeyedTracker, { apiUrl: string | null; tokenEnv: string; key: RegExp; keyRule: string; user: RegExp; userRule: string }> = {
  // A Linear team key: up to 5 characters in Linear's UI, letters and digits; held to a looser 10.
  linear: {
    apiUrl: "https://api.linear.app/graphql",
    tokenEnv: "LINEAR_API_KEY",
    key: /^[A-Z][A-Z0-9]{0,9}$/,
    keyRule: "a Linear team key (ASCII capital letters and digits, starting with a letter, at most 10)",
    user: /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[^\s@]{1,64}@[^\s@]{1,190})$/,
    userRule: "a Linear user id (a UUID) or email",
  },
  // A Jira project key: a capital letter, then capitals, digits or '_' (Jira's default rule), at most 10.
  jira: {
    apiUrl: null,
    tokenEnv: "JIRA_API_TOKEN",
    key: /^[A-Z][A-Z0-9_]{0,9}$/,
    keyRule: "a Jira project key (ASCII capital letters, digits and '_', starting with a letter, at most 10)",
    user: /^[A-Za-z0-9:_-]{1,128}$/,
    userRule: "a Jira account id (letters, digits, ':', '_' and '-')",
  },
};

/** Linear's two kinds of key (docs/trackers.md#linear): a personal API key goes bare in `Authorization`, an OAuth token after `Bearer`. */
export const LINEAR_TOKEN_KINDS = ["personal", "oauth"] as const;

export function isKeyedTracker(kind: unknown): kind is KeyedTracker {
  return (KEYED_TRACKERS as readonly unknown[]).includes(kind);
}
