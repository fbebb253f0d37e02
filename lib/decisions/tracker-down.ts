// Whose failure it is when an issue cannot be read before a launch (docs/trackers.md#a-tracker-that-is-down):
// the one issue's (the item waits, then is blocked after its timeouts.launch), or the tracker's as a
// whole, asked with a call that names no issue (Tracker.reachable): a tracker that does not answer
// is the environment fault `tracker_down`, one that refuses loop's key `tracker_unauthorized`; the
// loop pauses before anything is reserved, no attempt spent. A rate limit is a wait either way.
// Pure: the failures are read by their kind and HTTP status, never their words.
import type { EnvironmentFault } from "./faults.ts";

/** A failed request as the forge layer types it (lib/forge/provider.ts ForgeFailure): what the decision reads of it. */
export interface RequestFailure {
  kind: "rate_limited" | "http" | "network";
  /** The HTTP status, for `http`. */
  status?: number;
}

/** What a failed issue read means: the issue's own trouble, a wait, or a fault of the tracker as a whole. */
export type UnreadVerdict = { kind: "issue" } | { kind: "wait" } | { kind: "fault"; fault: "tracker_down" | "tracker_unauthorized" };

/** No answer, or an answer that says nothing about the issue (a 5xx, a refused key: 401, 403): ask whether the tracker answers at all. */
export function asksReachable(f: RequestFailure): boolean {
  if (f.kind === "network") return true;
  if (f.kind !== "http" || f.status === undefined) return false;
  return f.status >= 500 || f.status === 401 || f.status === 403;
}

/**
 * A failed issue read, judged with the answer to the tracker's own probe: "ok" when it answered,
 * null when it was not asked (the read's failure did not call for it). A probe that gets no answer or
 * a 5xx is `tracker_down`; a 401 or 403 `tracker_unauthorized`; a rate limit a wait; anything else
 * (it answered, or said something of its own, such as a 404) leaves the failure to the issue.
 */
export function judgeUnreadIssue(read: RequestFailure, probe: RequestFailure | "ok" | null): UnreadVerdict {
  if (read.kind === "rate_limited") return { kind: "wait" };
  if (probe === null || probe === "ok" || !asksReachable(read)) return { kind: "issue" };
  if (probe.kind === "rate_limited") return { kind: "wait" };
  if (probe.kind === "network" || (probe.status ?? 0) >= 500) return { kind: "fault", fault: "tracker_down" };
  if (probe.status === 401 || probe.status === 403) return { kind: "fault", fault: "tracker_unauthorized" };
  return { kind: "issue" };
}

/** The tracker as the fault names it. */
interface TrackerNamed {
  /** "Linear", "Jira", "GitHub", "GitLab". */
  name: string;
  /** Its API's host (tracker.apiUrl's or forge.apiUrl's). */
  host: string;
  /** Where its key comes from: "the variable LINEAR_API_KEY (tracker.tokenEnv)". */
  key: string;
  /** The issue that could not be read ("ENG-12", "#12"), and the two failures, each one sanitized line. */
  issue: string;
  read: string;
  probe: string;
}

/** The environment fault of a verdict's kind, naming the tracker, its host and where its key is; never the key. */
export function trackerFault(fault: "tracker_down" | "tracker_unauthorized", t: TrackerNamed): EnvironmentFault {
  if (fault === "tracker_down")
    return {
      kind: "tracker_down",
      message: `${t.name} (${t.host}) does not answer: reading ${t.issue} failed (${t.read}), and so did asking ${t.name} who loop's key belongs to (${t.probe})`,
      fix: `nothing, if ${t.name} is down (its status page): each step asks it again, and the loop resumes by itself once it answers; if it is this machine's network or the URL loop.json names (${t.host}), fix that (or \`loop ctl resume\` to go on at once)`,
    };
  return {
    kind: "tracker_unauthorized",
    message: `${t.name} (${t.host}) refuses loop's key, from ${t.key}: reading ${t.issue} failed (${t.read}), and so did asking who the key belongs to (${t.probe})`,
    fix: `put a valid key, with access to the issues, in ${t.key} of \`loop run\`'s environment (a revoked or expired one: make a new one), then \`loop ctl resume\``,
  };
}
