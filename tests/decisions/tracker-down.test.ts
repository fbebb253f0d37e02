// Whose failure an unread issue is (lib/decisions/tracker-down.ts), from plain data: the read's and
// the probe's kinds and statuses, never their words.
import { describe, expect, test } from "bun:test";
import { asksReachable, judgeUnreadIssue, type RequestFailure, trackerFault, type UnreadVerdict } from "../../lib/decisions/tracker-down.ts";

const net: RequestFailure = { kind: "network" };
const limited: RequestFailure = { kind: "rate_limited" };
const http = (status: number): RequestFailure => ({ kind: "http", status });

describe("asksReachable: only a failure that says nothing of the issue asks the tracker", () => {
  const cases: [string, RequestFailure, boolean][] = [
    ["no answer", net, true],
    ["500", http(500), true],
    ["502", http(502), true],
    ["503", http(503), true],
    ["401", http(401), true],
    ["403", http(403), true],
    ["404", http(404), false],
    ["410", http(410), false],
    ["400", http(400), false],
    ["200 with errors (Linear)", http(200), false],
    ["a rate limit", limited, false],
  ];
  for (const [name, f, asks] of cases) test(name, () => expect(asksReachable(f)).toBe(asks));
});

describe("judgeUnreadIssue", () => {
  const issue: UnreadVerdict = { kind: "issue" };
  const wait: UnreadVerdict = { kind: "wait" };
  const down: UnreadVerdict = { kind: "fault", fault: "tracker_down" };
  const refused: UnreadVerdict = { kind: "fault", fault: "tracker_unauthorized" };
  const cases: [string, RequestFailure, RequestFailure | "ok" | null, UnreadVerdict][] = [
    ["a rate limit on the read is a wait, the probe not asked", limited, null, wait],
    ["a 502 on the read, the probe answers: the issue's own trouble", http(502), "ok", issue],
    ["no answer, the probe answers: the issue's", net, "ok", issue],
    ["a 503 on both: the tracker is down", http(503), http(503), down],
    ["no answer to either: down", net, net, down],
    ["a 500 read, no answer to the probe: down", http(500), net, down],
    ["a 401 on both: the key refused", http(401), http(401), refused],
    ["a 503 read, a 403 probe: the key refused", http(503), http(403), refused],
    ["a 502 read, a rate-limited probe: a wait", http(502), limited, wait],
    ["a 502 read, a 404 probe (the repository cannot be seen): the issue's", http(502), http(404), issue],
    ["a 404 read never asks: the issue's, whatever the probe", http(404), http(503), issue],
    ["a 200 with errors (Linear) never asks: the issue's", http(200), http(503), issue],
    ["not asked: the issue's", http(503), null, issue],
  ];
  for (const [name, read, probe, verdict] of cases) test(name, () => expect(judgeUnreadIssue(read, probe)).toEqual(verdict));
});

describe("trackerFault", () => {
  const named = {
    name: "Linear",
    host: "api.linear.app",
    key: "the variable LINEAR_API_KEY (tracker.tokenEnv)",
    issue: "ENG-1",
    read: "HTTP 503: POST /graphql: HTTP 503",
    probe: "HTTP 503: POST /graphql: HTTP 503",
  };
  test("tracker_down names the tracker, its host and both failures; the fix says the loop resumes by itself", () => {
    const f = trackerFault("tracker_down", named);
    expect(f.kind).toBe("tracker_down");
    expect(f.message).toBe(
      "Linear (api.linear.app) does not answer: reading ENG-1 failed (HTTP 503: POST /graphql: HTTP 503), and so did asking Linear who loop's key belongs to (HTTP 503: POST /graphql: HTTP 503)",
    );
    expect(f.fix).toContain("the loop resumes by itself once it answers");
    expect(f.fix).toContain("`loop ctl resume` to go on at once");
  });
  test("tracker_unauthorized names where the key comes from, and says what to do", () => {
    const f = trackerFault("tracker_unauthorized", { ...named, read: "HTTP 401: Linear: …", probe: "HTTP 401: Linear: …" });
    expect(f.kind).toBe("tracker_unauthorized");
    expect(f.message).toStartWith("Linear (api.linear.app) refuses loop's key, from the variable LINEAR_API_KEY (tracker.tokenEnv): reading ENG-1 failed");
    expect(f.fix).toContain("put a valid key, with access to the issues, in the variable LINEAR_API_KEY (tracker.tokenEnv)");
    expect(f.fix).toEndWith("then `loop ctl resume`");
  });
});
