// A tracker's move or outcome comment that fails (docs/trackers.md#states, #outcomes), end to end
// through `loop run` against the fake Linear and the fake Jira: the move to tracker.moveTo.completed,
// or the outcome comment, first answered a 5xx or a rate limit (Linear: RATELIMITED in an HTTP 200
// body, X-RateLimit-Requests-Reset in epoch ms; Jira: 429 with Retry-After). Nothing is lost: the move
// and the comment happen on a later step, once, never twice; the item's outcome is what it was; the
// failure is said once on stderr.
import { afterEach, describe, expect, test } from "bun:test";
import type { Project } from "../../helpers/project.ts";
import { closeProjects, project, TRACKERS, type TrackerUnderTest } from "../../helpers/trackers.ts";

afterEach(closeProjects);

type Failure = "5xx" | "rate limit";
type Target = "move" | "comment";

/** The next request of `target` answers `failure`, once, as the tracker sends it. */
function failOnce(t: TrackerUnderTest, target: Target, failure: Failure): void {
  if (t.linear) {
    const s = t.linear.switches;
    s.only = target === "move" ? "issueUpdate" : "commentCreate";
    if (failure === "5xx") s.serverErrors = 1;
    else Object.assign(s, { rateLimited: 1, rateLimitStatus: 200, rateLimitReset: Date.now() + 1_000 });
  } else {
    const s = t.jira!.switches;
    s.only = target === "move" ? /^POST \/rest\/api\/3\/issue\/[^/]+\/transitions$/ : /^POST \/rest\/api\/3\/issue\/[^/]+\/comment$/;
    if (failure === "5xx") s.serverErrors = 1;
    else Object.assign(s, { rateLimited: 1, rateLimitStatus: 429, retryAfter: "1", rateLimitReset: null });
  }
}

/** Step until `done` holds for the store, at most 100 steps; every step's stderr. Never measures time. */
async function stepUntil(p: Project, done: () => boolean): Promise<string[]> {
  const stderr: string[] = [];
  for (let i = 0; i < 100; i++) {
    stderr.push((await p.run()).stderr);
    if (done()) return stderr;
    await Bun.sleep(200);
  }
  throw new Error(`not reached after 100 steps\n${p.history()}`);
}

/** The lines of every step's stderr that hold `s`. */
const linesWith = (all: string[], s: string) => all.flatMap((e) => e.split("\n")).filter((l) => l.includes(s));

const CASES: [Target, Failure][] = [
  ["move", "5xx"],
  ["move", "rate limit"],
  ["comment", "5xx"],
  ["comment", "rate limit"],
];

describe.each(TRACKERS)("%s", (_name, make) => {
  test.each(CASES)("the %s first answered a %s: done on a later step, once; the outcome unchanged; said once", async (target, failure) => {
    const { p, t } = project(make, { items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo write a.txt a\n@demo commit add a" }], landing: "none" });
    // The launch step moves the issue to started; the failure waits for the completed move, or the outcome.
    await p.runUntil(() => p.eventsOf("tracker_issue_moved").length === 1, { what: "moved to started" });
    failOnce(t, target, failure);
    const label = t.ref(1).split(":")[1]!;
    const stderr = await stepUntil(p, () => p.eventsOf("tracker_outcome_posted").length === 1);
    // Said once: the tracker's own line, never the forge's too, never again by the step's second pass.
    const said = target === "move" ? `could not move ${label} to "Done" (tracker.moveTo.completed)` : `could not comment on ${label}`;
    const failed = linesWith(stderr, failure === "5xx" ? "HTTP 500" : "rate limited until");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain(said);
    expect(linesWith(stderr, said)).toHaveLength(1);
    // Nothing lost, nothing twice: one move of each kind, one outcome comment, on the tracker as in the log.
    expect(p.eventsOf("tracker_issue_moved").map((e) => [e.payload.move, e.payload.attempt])).toEqual([
      ["started", 1],
      ["completed", 1],
    ]);
    expect(p.eventsOf("tracker_outcome_posted").map((e) => [e.payload.outcome, e.payload.attempt])).toEqual([["passed", 1]]);
    expect(t.state(1)).toBe("Done");
    expect(t.loopComments(1)).toHaveLength(1);
    // The tracker's failure changed nothing of the item's: passed, on its one attempt.
    const it = p.projection().items[t.id(1)]!;
    expect([it.status, it.attempts.length]).toEqual(["passed", 1]);
    expect(p.eventsOf("environment_fault")).toHaveLength(0);
    // Nothing more is owed: another step asks the tracker nothing and records nothing.
    const head = p.head();
    await p.run();
    expect(p.head()).toBe(head);
    expect(t.loopComments(1)).toHaveLength(1);
    await p.finish();
  });
});
