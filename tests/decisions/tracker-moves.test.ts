// What a step owes a Linear or Jira tracker (lib/decisions/tracker-moves.ts), on plain data: each
// move once per attempt (a reset's once, before its epoch's first launch), only the moves
// tracker.moveTo names, and the outcome once per settled attempt (not a give-up, said apart).
import { describe, expect, test } from "bun:test";
import { type TrackerDue, trackerDue } from "../../lib/decisions/tracker-moves.ts";
import type { ItemState, Projection } from "../../lib/log/projection.ts";

type Shape = {
  status: ItemState["status"];
  attempts?: number;
  moved?: Record<string, number>;
  posted?: number;
  reset?: boolean;
  settleCode?: string;
  pr?: string;
};

/** A projection of items with just what the decision reads. */
function loop(items: Record<string, Shape>): Projection {
  const out: Record<string, unknown> = {};
  for (const [id, s] of Object.entries(items))
    out[id] = {
      id,
      def: { ref: `linear:ENG-${id.replace(/\D/g, "")}` },
      status: s.status,
      reason: `${s.status} because`,
      settleCode: s.settleCode ?? null,
      attempts: Array.from({ length: s.attempts ?? 0 }, (_, i) => ({ n: i + 1 })),
      reset: s.reset ? { actor: "alice", at: "2026-01-01T00:00:00.000Z" } : null,
      forge: {
        trackerMoved: s.moved,
        ...(s.posted ? { outcomePosted: { attempt: s.posted, commentId: "9" } } : {}),
        pr: s.pr ? { url: s.pr } : null,
      },
    };
  return { order: Object.keys(items), items: out } as unknown as Projection;
}

const ALL = { started: "In Progress", completed: "Done", reset: "Todo" };
const moves = (d: TrackerDue[]) =>
  d.map((x) => (x.kind === "move" ? `${x.item} ${x.move}->${x.state} @${x.attempt}` : `${x.item} outcome ${x.outcome} @${x.attempt}`));

describe("trackerDue", () => {
  test("a launched attempt is owed `started` once; a passed one `completed` and its outcome, with the PR's link", () => {
    expect(moves(trackerDue(loop({ "eng-1": { status: "running", attempts: 1 } }), ALL))).toEqual(["eng-1 started->In Progress @1"]);
    expect(trackerDue(loop({ "eng-1": { status: "running", attempts: 1, moved: { started: 1 } } }), ALL)).toEqual([]);
    // A second attempt is moved again (a rework after the issue was moved by a person).
    expect(moves(trackerDue(loop({ "eng-1": { status: "running", attempts: 2, moved: { started: 1 } } }), ALL))).toEqual(["eng-1 started->In Progress @2"]);
    const passed = trackerDue(loop({ "eng-1": { status: "passed", attempts: 1, moved: { started: 1 }, pr: "https://github.com/a/b/pull/3" } }), ALL);
    expect(moves(passed)).toEqual(["eng-1 completed->Done @1", "eng-1 outcome passed @1"]);
    expect(passed[1]).toMatchObject({ kind: "outcome", issue: 1, pr: "https://github.com/a/b/pull/3" });
    expect(trackerDue(loop({ "eng-1": { status: "passed", attempts: 1, moved: { started: 1, completed: 1 }, posted: 1 } }), ALL)).toEqual([]);
  });

  test("only the moves tracker.moveTo names; the outcome is owed without any", () => {
    expect(moves(trackerDue(loop({ "eng-1": { status: "passed", attempts: 1 } }), {}))).toEqual(["eng-1 outcome passed @1"]);
    expect(moves(trackerDue(loop({ "eng-1": { status: "running", attempts: 1 } }), { completed: "Done" }))).toEqual([]);
  });

  test("a reset is owed `reset` once, before its epoch's first launch; a launch since makes it moot", () => {
    expect(moves(trackerDue(loop({ "eng-1": { status: "pending", reset: true } }), ALL))).toEqual(["eng-1 reset->Todo @0"]);
    expect(trackerDue(loop({ "eng-1": { status: "pending", reset: true, moved: { reset: 0 } } }), ALL)).toEqual([]);
    expect(moves(trackerDue(loop({ "eng-1": { status: "running", attempts: 1, reset: true } }), ALL))).toEqual(["eng-1 started->In Progress @1"]);
    expect(trackerDue(loop({ "eng-1": { status: "pending" } }), ALL)).toEqual([]);
  });

  test("settled: other outcomes are said too, but not a give-up (said apart), nor a settle with no attempt, nor a withdrawn item", () => {
    expect(moves(trackerDue(loop({ "eng-1": { status: "blocked", attempts: 2, moved: { started: 2 } } }), ALL))).toEqual(["eng-1 outcome blocked @2"]);
    expect(trackerDue(loop({ "eng-1": { status: "failed", attempts: 1, moved: { started: 1 }, settleCode: "gave_up" } }), ALL)).toEqual([]);
    expect(trackerDue(loop({ "eng-1": { status: "skipped" } }), ALL)).toEqual([]);
    expect(trackerDue(loop({ "eng-1": { status: "withdrawn", attempts: 1 } }), ALL)).toEqual([]);
  });

  test("items in the loop's order, each item's moves before its outcome", () => {
    const p = loop({ "eng-2": { status: "passed", attempts: 1, moved: { started: 1 } }, "eng-1": { status: "running", attempts: 1 } });
    expect(moves(trackerDue(p, ALL))).toEqual(["eng-2 completed->Done @1", "eng-2 outcome passed @1", "eng-1 started->In Progress @1"]);
  });
});
