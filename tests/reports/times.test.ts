// Where an item's time went (lib/reports/times.ts), from plain events (tests/helpers/events.ts ticks
// one second per event): the page's phases with their durations, the sums, loop's own time and what
// no phase covers; the attempt in flight runs to `now`; only the current epoch counts.
import { describe, expect, test } from "bun:test";
import { foldEvents } from "../../lib/reports/history.ts";
import { itemTimes } from "../../lib/reports/times.ts";
import {
  closed,
  definition,
  ended,
  failingAttempt,
  itemDef,
  launch,
  landed,
  LogBuilder,
  loopStarted,
  passingAttempt,
  resetDone,
  settled,
  started,
  verified,
  verifyReserved,
  verifyStarted,
} from "../helpers/events.ts";

const S = 1000;
const times = (b: LogBuilder, now = Date.parse(b.events.at(-1)!.ts)) => itemTimes(foldEvents(b.events).items.get("a"), now);
const iso = (b: LogBuilder, i: number) => b.events[i]!.ts;

function start(): LogBuilder {
  const b = new LogBuilder(); // 0: store_opened
  b.push(definition(1, [itemDef("a")]), loopStarted); // 1, 2
  return b;
}

describe("an item's times", () => {
  test("a passing attempt with setup: each phase's duration, the sums, loop's own time; the phases cover the wall-clock", () => {
    const b = start();
    b.push(launch({ item: "a", attempt: 1 })); // 3
    b.push({ type: "workspace_prepared", item: "a", payload: { attempt: 1, builtOn: null, setup: { ms: 500, log: "/x/setup.log" } } }); // 4
    b.push(
      started({ item: "a", attempt: 1 }), // 5
      ended({ item: "a", attempt: 1 }), // 6
      verifyReserved({ item: "a", attempt: 1 }), // 7
      verifyStarted({ item: "a", attempt: 1 }), // 8
      verified({ item: "a", attempt: 1, passed: true }), // 9
      landed({ item: "a", attempt: 1 }), // 10
      settled({ item: "a", attempt: 1, outcome: "passed", reason: "verify passed" }), // 11
      closed({ item: "a", attempt: 1 }), // 12
    );
    const t = times(b)!;
    expect(t.attempts).toHaveLength(1);
    const a = t.attempts[0]!;
    expect(a.phases.map((p) => [p.phase, p.ms])).toEqual([
      ["launching", 500],
      ["setup", 500],
      ["launching", 1 * S],
      ["agent", 1 * S],
      ["airlock", 1 * S],
      ["verify", 2 * S],
      ["landing", 1 * S],
      ["closing", 2 * S],
    ]);
    expect(a).toMatchObject({ attempt: 1, fate: "passed", from: iso(b, 3), to: iso(b, 12), wallMs: 9 * S, unaccountedMs: 0 });
    expect([a.agentMs, a.setupMs, a.verifyMs, a.ownMs]).toEqual([1 * S, 500, 2 * S, 9 * S - 1 * S - 500 - 2 * S]);
    expect(a.phases[1]).toEqual({ phase: "setup", from: new Date(Date.parse(iso(b, 4)) - 500).toISOString(), to: iso(b, 4), ms: 500 });
    expect(t).toMatchObject({ wallMs: 9 * S, agentMs: 1 * S, setupMs: 500, verifyMs: 2 * S, ownMs: 5500 });
  });

  test("in flight: its phases so far, the running one open and running to now; no end", () => {
    const b = start();
    b.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 })); // 3, 4
    const now = Date.parse(iso(b, 4)) + 7 * S;
    const a = times(b, now)!.attempts[0]!;
    expect(a.fate).toBeNull();
    expect(a.to).toBeNull();
    expect(a.phases).toEqual([
      { phase: "launching", from: iso(b, 3), to: iso(b, 4), ms: 1 * S },
      { phase: "agent", from: iso(b, 4), to: null, ms: 7 * S },
    ]);
    expect([a.wallMs, a.agentMs, a.ownMs, a.unaccountedMs]).toEqual([8 * S, 7 * S, 1 * S, 0]);
  });

  test("an agent that exited waits in the airlock until a step reserves its verify: open, to now", () => {
    const b = start();
    b.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 })); // 3..5
    const a = times(b, Date.parse(iso(b, 5)) + 3 * S)!.attempts[0]!;
    expect(a.phases.map((p) => [p.phase, p.to === null, p.ms])).toEqual([
      ["launching", false, 1 * S],
      ["agent", false, 1 * S],
      ["airlock", true, 3 * S],
    ]);
    expect(a.wallMs).toBe(5 * S);
  });

  test("a failed verdict: closing until the session closed (the worktree removed); a gap no phase covers after it is unaccounted, and still loop's own", () => {
    const b = start();
    b.push(
      launch({ item: "a", attempt: 1 }), // 3
      started({ item: "a", attempt: 1 }), // 4
      ended({ item: "a", attempt: 1, exitCode: 1 }), // 5
      verifyReserved({ item: "a", attempt: 1 }), // 6
      verifyStarted({ item: "a", attempt: 1 }), // 7
      verified({ item: "a", attempt: 1, passed: false }), // 8
      closed({ item: "a", attempt: 1 }), // 9
      settled({ item: "a", attempt: 1, outcome: "failed", reason: "verify failed on the last attempt" }), // 10
    );
    const a = times(b)!.attempts[0]!;
    expect(a.phases.map((p) => [p.phase, p.ms])).toEqual([
      ["launching", 1 * S],
      ["agent", 1 * S],
      ["airlock", 1 * S],
      ["verify", 2 * S],
      ["closing", 1 * S],
    ]);
    expect(a).toMatchObject({ fate: "failed", to: iso(b, 10), wallMs: 7 * S, unaccountedMs: 1 * S, ownMs: 7 * S - 1 * S - 2 * S });
    expect(a.phases.reduce((s, p) => s + p.ms, 0) + a.unaccountedMs).toBe(a.wallMs);
  });

  test("two attempts: each its own, the item's sums over both (the time between them in neither)", () => {
    const b = start();
    b.push(...failingAttempt({ item: "a", attempt: 1 })); // 3..8
    b.push({ type: "loop_paused", payload: { reason: "a pause between" } }); // 9
    b.push(...passingAttempt({ item: "a", attempt: 2 })); // 10..16
    const t = times(b)!;
    expect(t.attempts.map((a) => [a.attempt, a.fate])).toEqual([
      [1, "failed"],
      [2, "passed"],
    ]);
    expect(t.attempts[1]!.from).toBe(iso(b, 10));
    expect(t.wallMs).toBe(t.attempts[0]!.wallMs + t.attempts[1]!.wallMs);
    expect(t.wallMs).toBeLessThan(Date.parse(iso(b, 16)) - Date.parse(iso(b, 3)));
    expect(t.ownMs).toBe(t.wallMs - t.agentMs - t.setupMs - t.verifyMs);
  });

  test("only the current epoch: a reset that removed something leaves its attempts out; none since: null", () => {
    const b = start();
    b.push(...failingAttempt({ item: "a", attempt: 1 }), resetDone("a"));
    expect(times(b)).toBeNull();
    b.push(...passingAttempt({ item: "a", attempt: 1, epoch: 1 }));
    const t = times(b)!;
    expect(t.attempts.map((a) => [a.attempt, a.fate])).toEqual([[1, "passed"]]);
    // An item never launched, or one the log does not name: null.
    expect(itemTimes(undefined, 0)).toBeNull();
  });
});
