// The reducer's rules for the forge events (docs/events.md): each comment acted on once (ids above
// the high-water mark only), a thread baselined once per epoch, a PR and a landing wait only after
// a passing verify, landing_blocked only after a blocked landing; and work_item_reset forgets the
// item's forge ledger, so after a reset the thread is first-sight again (what `loop reset`'s
// ledger piece must cover).
import { describe, expect, test } from "bun:test";
import type { EventDraft } from "../../lib/log/events.ts";
import { fold } from "../../lib/log/reducer.ts";
import { IllegalEventError } from "../../lib/shared/errors.ts";
import { recordedPieces } from "../../lib/log/projection.ts";
import { definition, ended, itemDef, launch, LogBuilder, loopStarted, reset, started, verified } from "../helpers/events.ts";

const pr = (attempt = 1): EventDraft => ({
  type: "forge_pr_recorded",
  item: "a",
  payload: { attempt, number: 7, url: "https://github.com/acme/api/pull/7", head: "a".repeat(40), draft: false, reused: false },
});
const baseline = (highWater: number | string = 100): EventDraft => ({
  type: "forge_thread_baselined",
  item: "a",
  payload: { issue: 1, highWater, comments: 2 },
});
const handled = (commentId: number | string): EventDraft => ({
  type: "forge_comment_handled",
  item: "a",
  actor: "github:alice",
  payload: { issue: 1, commentId, login: "alice", action: "message", detail: "hi" },
});

function log(...more: EventDraft[]) {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a", { ref: "github:acme/api#1" })]), loopStarted, ...more);
  return b;
}
function rule(b: LogBuilder, d: EventDraft): string {
  try {
    fold([...b.events, b.next(d)]);
  } catch (e) {
    if (e instanceof IllegalEventError) return (e as IllegalEventError & { rule: string }).rule;
    throw e;
  }
  return "accepted";
}

describe("forge events", () => {
  test("comments: baselined once; acted on only above the mark, which then moves", () => {
    const b = log(baseline(100), handled(101));
    const a = fold(b.events).items.a!;
    // A log written before trackers holds numbers: the fold reads them as the tracker's strings.
    expect(a.forge).toMatchObject({ highWater: "101", lastComment: { id: "101", login: "alice", action: "message" }, messages: [{ id: "101", text: "hi" }] });
    expect(rule(b, handled(101))).toBe("comment_seen");
    expect(rule(b, handled(50))).toBe("comment_seen");
    expect(rule(b, handled(102))).toBe("accepted");
    expect(rule(b, baseline(200))).toBe("already_baselined");
    expect(rule(log(), handled(5))).toBe("not_baselined");
  });

  test("comment ids are strings since trackers: decimal ones ordered by value, mixed with an older log's numbers", () => {
    const b = log(baseline(99), handled("100"));
    expect(fold(b.events).items.a!.forge!.highWater).toBe("100");
    // "99" < "100" by value, not as text: an id of one more digit is newer.
    expect(rule(b, handled("99"))).toBe("comment_seen");
    expect(rule(b, handled(100))).toBe("comment_seen");
    expect(rule(b, handled("0100"))).toBe("comment_seen");
    expect(rule(b, handled("101"))).toBe("accepted");
    expect(rule(b, handled(1000))).toBe("accepted");
    // An empty id is no id.
    expect(rule(b, handled(""))).not.toBe("accepted");
  });

  test("a Linear comment id, <createdAt>~<uuid>, orders by its time", () => {
    const id = (t: string, u: string) => `${t}~${u}`;
    const b = log(baseline("0"), handled(id("2026-03-01T10:00:00.000Z", "ffff")));
    expect(rule(b, handled(id("2026-03-01T10:00:00.000Z", "ffff")))).toBe("comment_seen");
    expect(rule(b, handled(id("2026-02-28T23:59:59.999Z", "0000")))).toBe("comment_seen");
    expect(rule(b, handled(id("2026-03-01T10:00:00.001Z", "0000")))).toBe("accepted");
    // The baseline's "0" (a thread with no comment) is below every such id.
    expect(rule(log(baseline("0")), handled(id("2000-01-01T00:00:00.000Z", "a")))).toBe("accepted");
  });

  test("readFrom: the baseline's newest comment's creation, then each handled comment's; older payloads keep a safe start", () => {
    const at = (b: LogBuilder) => fold(b.events).items.a!.forge!.readFrom;
    const withTimes = log({ type: "forge_thread_baselined", item: "a", payload: { issue: 1, highWater: 100, comments: 2, through: "2026-03-01T10:00:00Z" } });
    expect(at(withTimes)).toBe("2026-03-01T10:00:00Z");
    withTimes.push({
      type: "forge_comment_handled",
      item: "a",
      actor: "github:alice",
      payload: { issue: 1, commentId: 101, login: "alice", action: "message", detail: "hi", createdAt: "2026-03-01T11:00:00Z" },
    });
    expect(at(withTimes)).toBe("2026-03-01T11:00:00Z");
    // A handled comment recorded without its creation time leaves the start where it was.
    withTimes.push(handled(102));
    expect(at(withTimes)).toBe("2026-03-01T11:00:00Z");
    // Threads without comments, or a baseline recorded without `through`: the baseline's own time.
    const empty = log({ type: "forge_thread_baselined", item: "a", payload: { issue: 1, highWater: 0, comments: 0, through: null } });
    expect(at(empty)).toBe(empty.events.at(-1)!.ts);
    const old = log(baseline(100));
    expect(at(old)).toBe(old.events.at(-1)!.ts);
  });

  test("work_item_reset forgets the forge ledger: the thread is first-sight again", () => {
    // A baseline alone is state `loop reset` must find (its ledger piece), or it would say "nothing to reset".
    expect(recordedPieces(fold(log(baseline(100)).events).items.a!)).toEqual(["ledger"]);
    const b = log(baseline(100), handled(101), reset("a"));
    expect(fold(b.events).items.a!.forge).toBeNull();
    expect(rule(b, baseline(300))).toBe("accepted");
    expect(rule(b, handled(301))).toBe("not_baselined");
  });

  test("a PR and a landing wait need a passing verify; landing_blocked needs a blocked landing", () => {
    const failing = log(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: false }),
    );
    expect(rule(failing, pr())).toBe("landing_unverified");
    const passing = log(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
    );
    expect(rule(passing, { type: "forge_landing_waiting", item: "a", payload: { attempt: 1, code: "checks_pending", reason: "r", head: "b" } })).toBe(
      "no_pull_request",
    );
    expect(rule(passing, { type: "item_settled", item: "a", payload: { attempt: 1, outcome: "landing_blocked", code: "landing_blocked", reason: "x" } })).toBe(
      "landing_not_blocked",
    );
    passing.push(pr(), {
      type: "forge_landing_waiting",
      item: "a",
      payload: { attempt: 1, code: "checks_pending", reason: "waiting for 1 of 3 checks", head: "b".repeat(40) },
    });
    const a = fold(passing.events).items.a!;
    expect(a.forge!.landing).toMatchObject({ code: "checks_pending", head: "b".repeat(40) });
    expect(a.reason).toBe("landing: waiting for 1 of 3 checks");
    passing.push({
      type: "landing_finished",
      item: "a",
      payload: { attempt: 1, outcome: "blocked", branch: "x", target: "main", commit: null, reason: "the head moved", code: "head_moved" },
    });
    expect(rule(passing, pr())).toBe("already_landed");
    // The landing record ends on the code and reason it ended with: never the stale wait before it.
    expect(fold(passing.events).items.a!.forge!.landing).toMatchObject({ code: "head_moved", reason: "the head moved", head: "b".repeat(40) });
    passing.push({
      type: "item_settled",
      item: "a",
      payload: { attempt: 1, outcome: "landing_blocked", code: "landing_blocked", reason: "landing_blocked: deadline" },
    });
    expect(fold(passing.events).items.a!.status).toBe("landing_blocked");
  });

  test("tracker events: a move names an attempt the item has, and is kept per moment; an outcome only once the item settled", () => {
    const moved = (move: "started" | "completed" | "reset", attempt: number): EventDraft => ({
      type: "tracker_issue_moved",
      item: "a",
      payload: { attempt, issue: 1, move, state: "In Progress" },
    });
    const outcome: EventDraft = { type: "tracker_outcome_posted", item: "a", payload: { attempt: 1, issue: 1, outcome: "passed", commentId: "9" } };
    expect(rule(log(), moved("reset", 0))).toBe("accepted");
    expect(rule(log(), moved("started", 1))).toBe("no_attempt");
    const b = log(launch({ item: "a", attempt: 1 }), moved("started", 1));
    expect(fold(b.events).items.a!.forge!.trackerMoved).toEqual({ started: 1 });
    expect(rule(b, outcome)).toBe("not_settled");
  });
});
