// The reducer, pure: synthetic hash-chained logs (sealed like the store seals them) folded in memory.
import { describe, expect, test } from "bun:test";
import { canonicalJson } from "../../lib/log/canonical.ts";
import type { EventDraft, StoredEvent } from "../../lib/log/events.ts";
import { apply, fold } from "../../lib/log/reducer.ts";
import { emptyProjection, recordedPieces } from "../../lib/log/projection.ts";
import { IllegalEventError } from "../../lib/shared/errors.ts";
import {
  closed,
  control,
  definition,
  drained,
  ended,
  failingAttempt,
  itemDef,
  landed,
  launch,
  LogBuilder,
  loopStarted,
  passingAttempt,
  rechain,
  requeued,
  reset,
  resetDone,
  settled,
  started,
  verified,
  verifyReserved,
  verifyStarted,
} from "../helpers/events.ts";

/** store_opened, a definition of a, b, c (revision 1), loop_started. */
function base(items = ["a", "b", "c"]): LogBuilder {
  const log = new LogBuilder();
  log.push(
    definition(
      1,
      items.map((id) => itemDef(id)),
    ),
    loopStarted,
  );
  return log;
}

/** The IllegalEventError folding `events` throws (fails the test if the fold accepts them). */
function illegal(events: StoredEvent[]): IllegalEventError {
  try {
    fold(events);
  } catch (e) {
    if (e instanceof IllegalEventError) return e;
    throw e;
  }
  throw new Error("the fold accepted the log");
}

/** Assert that appending `probe` to the log is rejected at its seq with `rule`, by fold and by apply. */
function expectIllegal(log: LogBuilder, probe: StoredEvent, rule: string): void {
  const err = illegal([...log.events, probe]);
  expect(err.seq).toBe(probe.seq);
  expect(err.rule).toBe(rule);
  expect(err.message).toContain(`seq ${probe.seq}`);
  expect(err.message).toContain(rule);
  // apply() rejects it the same way, and leaves the projection it was given untouched.
  const p = fold(log.events);
  const before = canonicalJson(p);
  expect(() => apply(p, probe)).toThrow(IllegalEventError);
  expect(canonicalJson(p)).toBe(before);
}

function withTs(ts: string[], drafts: EventDraft[]): EventDraft[] {
  return drafts.map((d, i) => ({ ...d, ts: ts[i] ?? `2030-01-01T00:00:${String(i).padStart(2, "0")}.000Z` }));
}

describe("fold and apply", () => {
  function richLog(): LogBuilder {
    const log = base();
    log.push(
      ...passingAttempt({ item: "a" }),
      control("b", "reply", "use postgres"),
      ...failingAttempt({ item: "b", attempt: 1 }),
      ...failingAttempt({ item: "b", attempt: 2, last: true }),
      reset("b"),
      ...passingAttempt({ item: "b", attempt: 1, epoch: 1 }),
      definition(2, [itemDef("a", { prompt: "changed" }), itemDef("b"), itemDef("d")]),
      ...passingAttempt({ item: "d" }),
      drained("Succeeded", { passed: 3, withdrawn: 1 }),
    );
    return log;
  }

  test("folding the same log twice gives equal projections", () => {
    const { events } = richLog();
    const one = fold(events);
    const two = fold(events);
    expect(two).toEqual(one);
    expect(canonicalJson(two)).toBe(canonicalJson(one));
    expect(one.seq).toBe(events.length);
    expect(one.hash).toBe(events.at(-1)!.hash);
    expect(one.loop.state).toBe("drained");
  });

  test("folding does not change the events, and apply one by one equals the fold", () => {
    const { events } = richLog();
    const before = canonicalJson(events);
    let p = emptyProjection();
    for (const e of events) p = apply(p, e);
    expect(canonicalJson(events)).toBe(before);
    expect(canonicalJson(p)).toBe(canonicalJson(fold(events)));
  });

  test("folding from an intermediate projection equals folding from the start", () => {
    const { events } = richLog();
    const mid = fold(events.slice(0, 17));
    const midText = canonicalJson(mid);
    expect(canonicalJson(fold(events.slice(17), mid))).toBe(canonicalJson(fold(events)));
    expect(canonicalJson(mid)).toBe(midText); // `from` is not mutated
  });

  test("apply() does not mutate the projection or the event it is given", () => {
    const log = base();
    const probes: EventDraft[] = [
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
      landed({ item: "a", attempt: 1 }),
      settled({ item: "a", attempt: 1, outcome: "passed" }),
      closed({ item: "a", attempt: 1 }),
      control("b", "stop", "wait"),
      definition(2, [itemDef("b", { prompt: "new" }), itemDef("z")]),
      reset("a"),
    ];
    for (const d of probes) {
      const p = fold(log.events);
      const frozenP = structuredClone(p);
      const pText = canonicalJson(p);
      const e = log.next(d);
      const eText = canonicalJson(e);
      const next = apply(p, e);
      expect(p).toEqual(frozenP);
      expect(canonicalJson(p)).toBe(pText);
      expect(canonicalJson(e)).toBe(eText);
      expect(next).not.toBe(p);
      expect(next.seq).toBe(p.seq + 1);
      expect(canonicalJson(next)).not.toBe(pText);
      // The result shares nothing mutable with the input.
      next.order.push("mutated");
      for (const it of Object.values(next.items)) it.status = "blocked";
      next.loop.state = "stopped";
      expect(canonicalJson(p)).toBe(pText);
      log.push(d);
    }
  });
});

describe("illegal sequences name the seq and the rule", () => {
  test("the first event is not store_opened", () => {
    const events = rechain([{ id: "x", ts: "2025-01-01T00:00:00.000Z", type: "loop_started", actor: "loop", item: null, payload: {} }]);
    const err = illegal(events);
    expect([err.seq, err.rule]).toEqual([1, "store_opened_first"]);
  });

  test("store_opened anywhere but first", () => {
    const log = base();
    expectIllegal(log, log.next({ type: "store_opened", payload: { schema: 1, tool: "loop" } }), "store_opened_first");
  });

  test("store_bound sets the owner, in any loop state; a binding must name the owner it replaces (store_bound_previous)", () => {
    const log = base();
    const a = { repo: "/srv/api", gitDir: "/srv/api/.git", root: ".", name: "api" };
    const b = { ...a, repo: "/srv/api2", gitDir: "/srv/api2/.git" };
    expectIllegal(log, log.next({ type: "store_bound", payload: { project: b, previous: a, reason: "x" } }), "store_bound_previous");
    log.push({ type: "store_bound", payload: { project: a, previous: null, reason: "a new store" } });
    expect(fold(log.events).loop.owner).toEqual(a);
    expectIllegal(log, log.next({ type: "store_bound", payload: { project: b, previous: null, reason: "x" } }), "store_bound_previous");
    log.push({ type: "store_bound", payload: { project: b, previous: a, reason: "adopted" } });
    expect(fold(log.events).loop.owner).toEqual(b);
    expect(fold(log.events).loop.state).toBe("running");
  });

  test("an unknown type, even one named like an Object property, is unknown_type (never called)", () => {
    const log = base();
    for (const type of ["no_such_event", "constructor", "toString", "__proto__"])
      expectIllegal(log, log.next({ type: type as never, payload: {} }), "unknown_type");
  });

  test("a seq gap (and a repeated seq)", () => {
    const log = base();
    expectIllegal(log, log.next(loopStarted, { seq: log.seq + 2 }), "seq_gap");
    expectIllegal(log, log.next(control("a", "start"), { seq: log.seq }), "seq_gap");
  });

  test("a prev_hash that does not link to the previous event", () => {
    const log = base();
    expectIllegal(log, log.next(control("a", "start"), { prev_hash: "f".repeat(64) }), "prev_hash");
    expectIllegal(log, log.next(control("a", "start"), { prev_hash: log.events[0]!.hash }), "prev_hash");
  });

  test("a launch while another item is in flight (launching, running, ended, needs_input)", () => {
    const log = base();
    log.push(launch({ item: "a", attempt: 1 }));
    expectIllegal(log, log.next(launch({ item: "b", attempt: 1 })), "one_in_flight");
    log.push(started({ item: "a", attempt: 1 }));
    expectIllegal(log, log.next(launch({ item: "b", attempt: 1 })), "one_in_flight");
    log.push(ended({ item: "a", attempt: 1, exitCode: 1 }));
    expectIllegal(log, log.next(launch({ item: "b", attempt: 1 })), "one_in_flight");
    const asked = base();
    asked.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), {
      type: "needs_input",
      item: "a",
      payload: { attempt: 1, question: "which db?" },
    });
    expectIllegal(asked, asked.next(launch({ item: "b", attempt: 1 })), "one_in_flight");
  });

  test("a launch while the loop is not running (new, paused, stopped, drained)", () => {
    const fresh = new LogBuilder();
    fresh.push(definition(1, [itemDef("a")]));
    expectIllegal(fresh, fresh.next(launch({ item: "a", attempt: 1 })), "loop_state");
    const paused = base();
    paused.push({ type: "loop_paused", payload: { reason: "operator" } });
    expectIllegal(paused, paused.next(launch({ item: "a", attempt: 1 })), "loop_state");
    const stopped = base();
    stopped.push({ type: "loop_stopped", payload: { reason: "operator" } });
    expectIllegal(stopped, stopped.next(launch({ item: "a", attempt: 1 })), "loop_state");
    const done = base(["a"]);
    done.push(drained("Succeeded", {}));
    expectIllegal(done, done.next(launch({ item: "a", attempt: 1 })), "loop_state");
  });

  test("session_started before launch_reserved", () => {
    const log = base();
    expectIllegal(log, log.next(started({ item: "a", attempt: 1 })), "item_status");
  });

  test("item_settled passed without a passing verify", () => {
    const failedVerify = base();
    failedVerify.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1, exitCode: 1 }),
      verified({ item: "a", attempt: 1, passed: false }),
    );
    expectIllegal(failedVerify, failedVerify.next(settled({ item: "a", attempt: 1, outcome: "passed" })), "passed_unverified");
    const noVerify = base();
    noVerify.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 }));
    expectIllegal(noVerify, noVerify.next(settled({ item: "a", attempt: 1, outcome: "passed" })), "passed_unverified");
    // An earlier attempt's passing verify does not count for the current one.
    const older = base();
    older.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
      requeued({ item: "a", attempt: 1, reason: "operator retry", failed: false }),
    );
    older.push(launch({ item: "a", attempt: 2 }), started({ item: "a", attempt: 2 }), ended({ item: "a", attempt: 2 }));
    expectIllegal(older, older.next(settled({ item: "a", attempt: 2, outcome: "passed" })), "passed_unverified");
    // Still running: not even at the verify stage.
    const running = base();
    running.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
    expectIllegal(running, running.next(settled({ item: "a", attempt: 1, outcome: "passed" })), "item_status");
  });

  test("landing before a passing verify", () => {
    const log = base();
    log.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: false }),
    );
    expectIllegal(log, log.next(landed({ item: "a", attempt: 1 })), "landing_unverified");
  });

  test("loop_drained with an item in flight", () => {
    const log = base();
    log.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
    expectIllegal(log, log.next(drained("Succeeded", {})), "one_in_flight");
  });

  test("definition revisions out of order", () => {
    const log = base();
    expectIllegal(log, log.next(definition(3, [itemDef("a")])), "revision_order");
    expectIllegal(log, log.next(definition(1, [itemDef("a")])), "revision_order");
    const fresh = new LogBuilder();
    expectIllegal(fresh, fresh.next(definition(2, [itemDef("a")])), "revision_order");
  });

  test("an unknown item, and an item event without an item", () => {
    const log = base();
    expectIllegal(log, log.next(launch({ item: "zzz", attempt: 1 })), "unknown_item");
    expectIllegal(log, log.next(control("zzz", "start")), "unknown_item");
    expectIllegal(log, log.next(reset("zzz")), "unknown_item");
    expectIllegal(log, log.next({ ...launch({ item: "a", attempt: 1 }), item: null }), "item_required");
  });

  test("a verify is reserved once per attempt, after an exit, and started once after its reservation", () => {
    const running = base();
    running.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
    expectIllegal(running, running.next(verifyReserved({ item: "a", attempt: 1 })), "item_status");
    const stalled = base();
    stalled.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), {
      type: "session_ended",
      item: "a",
      payload: { attempt: 1, verdict: "stalled", exitCode: null, signal: null, reason: "no output" },
    });
    expectIllegal(stalled, stalled.next(verifyReserved({ item: "a", attempt: 1 })), "verify_order");
    const exited = base();
    exited.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 }));
    expectIllegal(exited, exited.next(verifyStarted({ item: "a", attempt: 1 })), "verify_order");
    expectIllegal(exited, exited.next(verifyReserved({ item: "a", attempt: 2 })), "attempt_mismatch");
    exited.push(verifyReserved({ item: "a", attempt: 1 }));
    expectIllegal(exited, exited.next({ ...verifyReserved({ item: "a", attempt: 1 }), id: "another-id" }), "verify_order");
    exited.push(verifyStarted({ item: "a", attempt: 1 }));
    expectIllegal(exited, exited.next(verifyStarted({ item: "a", attempt: 1 })), "verify_order");
    exited.push(verified({ item: "a", attempt: 1, passed: true }));
    expectIllegal(exited, exited.next(verifyStarted({ item: "a", attempt: 1 })), "verify_order");
    // Judged without a command (verify: false): no reservation may follow the verdict.
    const judged = base();
    judged.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: false }),
    );
    expectIllegal(judged, judged.next(verifyReserved({ item: "a", attempt: 1 })), "verify_order");
  });

  test("attempt numbers must follow each other", () => {
    const log = base();
    expectIllegal(log, log.next(launch({ item: "a", attempt: 2 })), "attempt_order");
    log.push(launch({ item: "a", attempt: 1 }));
    expectIllegal(log, log.next(started({ item: "a", attempt: 2 })), "attempt_mismatch");
  });
});

describe("a verify run", () => {
  test("is recorded on its attempt: reserved, started with its deadline, then judged; the reason follows it", () => {
    const log = base();
    log.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verifyReserved({ item: "a", attempt: 1 }),
    );
    let it = fold(log.events).items.a!;
    expect(it.status).toBe("ended");
    expect(it.reason).toBe("verify reserved");
    expect(it.attempts[0]!.verifyRun).toMatchObject({
      key: "verify:a:e0:a1",
      command: "bun test",
      timeoutMs: 900_000,
      pid: null,
      startTime: null,
      deadline: null,
    });
    log.push(verifyStarted({ item: "a", attempt: 1, deadline: "2025-01-01T00:20:00.000Z" }));
    it = fold(log.events).items.a!;
    expect(it.attempts[0]!.verifyRun).toMatchObject({ pid: 4343, startTime: "123456", deadline: "2025-01-01T00:20:00.000Z" });
    expect(it.reason).toBe("verify running (deadline 2025-01-01T00:20:00.000Z)");
    log.push(verified({ item: "a", attempt: 1, passed: false }));
    it = fold(log.events).items.a!;
    expect(it.attempts[0]!.verify).toMatchObject({ passed: false, reason: "verify failed" });
    expect(it.reason).toBe("verify failed (verify failed)");
  });

  test("a history without verify runs (older versions, verify: false) folds as before: no verifyRun, the reason untouched", () => {
    const log = base();
    log.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
    );
    const it = fold(log.events).items.a!;
    expect(it.attempts[0]!.verifyRun).toBeNull();
    expect(it.reason).toBe("exited 0");
  });

  test("a reset forgets the run with the attempt", () => {
    const log = base();
    log.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verifyReserved({ item: "a", attempt: 1 }),
      verifyStarted({ item: "a", attempt: 1 }),
      reset("a"),
    );
    expect(fold(log.events).items.a!.attempts).toEqual([]);
  });
});

describe("definition revisions (docs/loop-json.md#editing-a-running-loop)", () => {
  test("an edit never re-runs a settled item", () => {
    const log = base();
    log.push(...passingAttempt({ item: "a" }), ...failingAttempt({ item: "c", attempt: 1, last: true }));
    const before = fold(log.events);
    log.push(definition(2, [itemDef("a", { prompt: "a completely different prompt", maxAttempts: 5 }), itemDef("b"), itemDef("c", { maxAttempts: 9 })]));
    const p = fold(log.events);
    const a = p.items.a!;
    expect(a.status).toBe("passed");
    expect(a.def.prompt).toBe("a completely different prompt");
    expect(a.attempts).toEqual(before.items.a!.attempts);
    expect(a.settledAt).toBe(before.items.a!.settledAt);
    expect(a.landing).toEqual(before.items.a!.landing);
    expect(p.items.c!.status).toBe("failed");
    expect(p.items.c!.failures).toBe(1);
    expect(p.loop.revision).toBe(2);
    // Nothing can launch either of them again.
    expectIllegal(log, log.next(launch({ item: "a", attempt: 2 })), "item_status");
    expectIllegal(log, log.next(launch({ item: "c", attempt: 2 })), "item_status");
  });

  test("an edit never orphans the in-flight item: removed while running, it keeps running and settles normally", () => {
    const log = base();
    log.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
    log.push(definition(2, [itemDef("b"), itemDef("c")]));
    let p = fold(log.events);
    expect(p.items.a!.status).toBe("running");
    expect(p.items.a!.inDefinition).toBe(false);
    expect(p.items.a!.session).not.toBeNull();
    expect(p.loop.current).toBe("a");
    expect(p.order).toEqual(["b", "c", "a"]);
    expectIllegal(log, log.next(launch({ item: "b", attempt: 1 })), "one_in_flight");
    log.push(
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
      landed({ item: "a", attempt: 1 }),
      settled({ item: "a", attempt: 1, outcome: "passed" }),
      closed({ item: "a", attempt: 1 }),
    );
    p = fold(log.events);
    expect(p.items.a!.status).toBe("passed");
    expect(p.items.a!.inDefinition).toBe(false);
    expect(p.loop.current).toBeNull();
    log.push(launch({ item: "b", attempt: 1 }));
    expect(fold(log.events).loop.current).toBe("b");
  });

  test("an in-flight item removed from the definition gets no further attempt after a failed one", () => {
    const log = base();
    log.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      definition(2, [itemDef("b")]),
      ended({ item: "a", attempt: 1, exitCode: 1 }),
      verified({ item: "a", attempt: 1, passed: false }),
    );
    log.push(requeued({ item: "a", attempt: 1 }));
    const p = fold(log.events);
    expect(p.items.a!.status).toBe("withdrawn");
    expect(p.items.a!.failures).toBe(1);
    expect(p.loop.current).toBeNull();
    expectIllegal(log, log.next(launch({ item: "a", attempt: 2 })), "item_status");
  });

  test("removed pending items are withdrawn; re-adding one makes it pending again", () => {
    const log = base();
    log.push(definition(2, [itemDef("a")]));
    let p = fold(log.events);
    expect(p.items.b!.status).toBe("withdrawn");
    expect(p.items.b!.inDefinition).toBe(false);
    expect(p.items.b!.reason).toContain("revision 2");
    expect(p.items.c!.status).toBe("withdrawn");
    expectIllegal(log, log.next(launch({ item: "b", attempt: 1 })), "item_status");
    log.push(definition(3, [itemDef("a"), itemDef("b", { prompt: "back again" })]));
    p = fold(log.events);
    expect(p.items.b!.status).toBe("pending");
    expect(p.items.b!.reason).toBeNull();
    expect(p.items.b!.inDefinition).toBe(true);
    expect(p.items.b!.def.prompt).toBe("back again");
    expect(p.items.c!.status).toBe("withdrawn");
    expect(p.order).toEqual(["a", "b", "c"]);
    log.push(launch({ item: "b", attempt: 1 }));
    expect(fold(log.events).items.b!.status).toBe("launching");
  });

  test("new items are appended; order is the new definition's, then items no longer in it", () => {
    const log = base();
    log.push(definition(2, [itemDef("c"), itemDef("d"), itemDef("a")]));
    const p = fold(log.events);
    expect(p.order).toEqual(["c", "d", "a", "b"]);
    expect(p.items.d!.status).toBe("pending");
    expect(p.items.d!.epoch).toBe(0);
    expect(p.items.b!.status).toBe("withdrawn");
    expect(Object.keys(p.items).sort()).toEqual(["a", "b", "c", "d"]);
  });
});

describe("work_item_reset is an epoch boundary", () => {
  /** b gets everything: control, a question and a reply, a failed attempt, a pass with landing. */
  function bHistory(): EventDraft[] {
    return [
      control("b", "start", null, "alice"),
      launch({ item: "b", attempt: 1 }),
      started({ item: "b", attempt: 1 }),
      { type: "needs_input", item: "b", payload: { attempt: 1, question: "which database?" } },
      { type: "reply_recorded", item: "b", actor: "alice", payload: { text: "postgres" } },
      requeued({ item: "b", attempt: 1, reason: "answered", failed: false }),
      ...failingAttempt({ item: "b", attempt: 2 }),
      launch({ item: "b", attempt: 3 }),
      started({ item: "b", attempt: 3 }),
      ended({ item: "b", attempt: 3 }),
      verified({ item: "b", attempt: 3, passed: true }),
      landed({ item: "b", attempt: 3 }),
      settled({ item: "b", attempt: 3, outcome: "passed", reason: "verify passed" }),
      closed({ item: "b", attempt: 3, worktreeRemoved: false }),
    ];
  }

  test("after a reset the item's session, control, replies, attempts, failures, workspace and landing are gone", () => {
    const log = base(["a", "b"]);
    log.push(...bHistory());
    const before = fold(log.events).items.b!;
    expect(before.status).toBe("passed");
    expect(before.attempts).toHaveLength(3);
    expect(before.failures).toBe(1);
    expect(before.replies).toHaveLength(1);
    expect(before.control).toHaveLength(1);
    expect(before.started).toBe(true);
    expect(before.session).not.toBeNull();
    expect(before.workspace).toEqual({ branch: "loop/test/b", worktree: "/state/workspaces/b", present: true });
    expect(before.landing).not.toBeNull();

    log.push({ ...reset("b"), actor: "carol", ts: "2030-02-01T00:00:00.000Z" });
    const p = fold(log.events);
    const b = p.items.b!;
    expect(b).toEqual({
      id: "b",
      def: before.def,
      inDefinition: true,
      status: "pending",
      reason: null,
      settleCode: null,
      epoch: 1,
      settledAt: null,
      attempts: [],
      failures: 0,
      replies: [],
      question: null,
      control: [],
      held: false,
      started: false,
      session: null,
      workspace: null,
      landing: null,
      forge: null,
      // Who reset it, and when: what `loop status` shows with the new epoch.
      reset: { actor: "carol", at: "2030-02-01T00:00:00.000Z" },
    });
    // A second reset moves the epoch on again.
    log.push(reset("b"));
    expect(fold(log.events).items.b!.epoch).toBe(2);
  });

  test("folding the whole log equals folding a log where the item never had those events (modulo epoch)", () => {
    const tsA = Array.from({ length: 7 }, (_, i) => `2030-06-01T00:00:0${i}.000Z`);
    const withReset = base(["a", "b"]);
    withReset.push(...bHistory(), reset("b"), ...withTs(tsA, passingAttempt({ item: "a" })));
    const without = base(["a", "b"]);
    without.push(...withTs(tsA, passingAttempt({ item: "a" })));
    const p1 = fold(withReset.events);
    const p2 = fold(without.events);
    expect(p1.items.b!.reset).not.toBeNull();
    expect(p1.items.b).toEqual({ ...p2.items.b!, epoch: 1, reset: p1.items.b!.reset });
    expect(p1.items.a).toEqual(p2.items.a);
    // The loop's usage keeps what the reset epoch's sessions spent (docs/spend.md): money spent is spent.
    expect({ ...p1.loop, usage: undefined }).toEqual({ ...p2.loop, usage: undefined });
    expect(p1.loop.usage!.sessions).toBeGreaterThan(p2.loop.usage!.sessions);
    expect(p1.order).toEqual(p2.order);
  });

  test("events of the old epoch cannot bring anything back", () => {
    const log = base(["a", "b"]);
    log.push(...bHistory(), reset("b"));
    expectIllegal(log, log.next(closed({ item: "b", attempt: 3 })), "no_session");
    expectIllegal(log, log.next(verified({ item: "b", attempt: 3, passed: true })), "item_status");
    expectIllegal(log, log.next(landed({ item: "b", attempt: 3 })), "item_status");
    expectIllegal(log, log.next(settled({ item: "b", attempt: 3, outcome: "passed" })), "item_status");
    expectIllegal(log, log.next(launch({ item: "b", attempt: 4 })), "attempt_order");
    // The new epoch starts at attempt 1, and the old reply is not delivered to it.
    log.push(launch({ item: "b", attempt: 1, epoch: 1 }));
    const b = fold(log.events).items.b!;
    expect(b.attempts.map((a) => a.n)).toEqual([1]);
    expect(b.session!.deliveries).toEqual([]);
    expect(b.replies).toEqual([]);
  });

  test("a reset of the in-flight item clears loop.current", () => {
    const log = base();
    log.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), closed({ item: "a", attempt: 1 }), reset("a"));
    const p = fold(log.events);
    expect(p.loop.current).toBeNull();
    expect(p.items.a!.status).toBe("pending");
    expect(p.items.a!.session).toBeNull();
    // Nothing is in flight any more: another item may launch, and the loop may drain.
    expect(() => fold([...log.events, log.next(launch({ item: "b", attempt: 1 }))])).not.toThrow();
    expect(() => fold([...log.events, log.next(drained("Stopped", {}))])).not.toThrow();
  });

  test("a reset that found nothing is an audit record: legal only when the log holds nothing for the item, and no boundary", () => {
    // Given a and b imported, b never touched
    const log = base(["a", "b"]);
    const before = fold(log.events).items.b!;
    // When a reset that found nothing is recorded for b
    log.push(resetDone("b", { found: false, pieces: [], archivedBranch: null, checkout: { outcome: "absent", path: null, why: null } }));
    // Then b is exactly as it was: same epoch, no reset record
    expect(fold(log.events).items.b).toEqual(before);
    // And a reset claiming "found nothing" for an item that holds state is illegal
    const busy = base(["a", "b"]);
    busy.push(control("b", "start"));
    expectIllegal(busy, busy.next(resetDone("b", { found: false, pieces: [] })), "reset_found_nothing");
    // So is one that says it found nothing and yet names pieces it removed
    expectIllegal(log, log.next(resetDone("b", { found: false, pieces: ["branch"] })), "reset_found_nothing");
  });

  test("a reset that found state but removed nothing (its errors say why) changes nothing", () => {
    const log = base(["a", "b"]);
    log.push(launch({ item: "b", attempt: 1 }), started({ item: "b", attempt: 1 }));
    const before = fold(log.events).items.b!;
    log.push(resetDone("b", { pieces: [], wasLive: true, errors: [{ piece: "session", message: "the agent could not be ended" }] }));
    expect(fold(log.events).items.b).toEqual(before);
  });

  test("recordedPieces names what the log holds for an item", () => {
    const log = base(["a", "b", "c"]);
    expect(recordedPieces(fold(log.events).items.a!)).toEqual([]);
    log.push(control("a", "start"), launch({ item: "b", attempt: 1 }), started({ item: "b", attempt: 1 }));
    const p = fold(log.events);
    expect(recordedPieces(p.items.a!)).toEqual(["control"]);
    expect(recordedPieces(p.items.b!)).toEqual(["session", "ledger", "workspace"]);
    log.push(
      ended({ item: "b", attempt: 1 }),
      verified({ item: "b", attempt: 1, passed: true }),
      landed({ item: "b", attempt: 1 }),
      settled({ item: "b", attempt: 1, outcome: "passed" }),
      closed({ item: "b", attempt: 1, worktreeRemoved: true }),
    );
    // A checkout the close path removed is no longer a piece; the session record still is.
    expect(recordedPieces(fold(log.events).items.b!)).toEqual(["session", "ledger"]);
    log.push(settled({ item: "c", attempt: 0, outcome: "blocked", reason: "dependency failed" }));
    expect(recordedPieces(fold(log.events).items.c!)).toEqual(["ledger"]);
  });

  test("a reset of an item no longer in the definition leaves it withdrawn", () => {
    const log = base();
    log.push(...passingAttempt({ item: "c" }), definition(2, [itemDef("a"), itemDef("b")]), reset("c"));
    const c = fold(log.events).items.c!;
    expect(c.status).toBe("withdrawn");
    expect(c.inDefinition).toBe(false);
    expect(c.epoch).toBe(1);
    expect(c.attempts).toEqual([]);
  });
});

describe("a watcher's stop (watcher_stopped) and what died with it", () => {
  const stop = (item: string, attempt: number, running: "session" | "verify" = "session"): EventDraft => ({
    type: "watcher_stopped",
    item,
    payload: { attempt, pid: 41, signal: "SIGTERM", signalledAt: "2030-01-01T00:00:00.000Z", running },
  });
  const drainedRequeue = (item: string, attempt: number): EventDraft => ({
    type: "item_requeued",
    item,
    payload: { attempt, reason: "drained: gone", failed: false, resetBudget: false, drained: true },
  });

  test("is kept on the attempt whose session ran; given back drained, the attempt is marked and not counted", () => {
    const log = base(["a"]);
    log.push(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), stop("a", 1));
    const seq = log.seq;
    expect(fold(log.events).items.a!.attempts[0]!.drain).toEqual({
      seq,
      pid: 41,
      signal: "SIGTERM",
      signalledAt: "2030-01-01T00:00:00.000Z",
      running: "session",
    });
    log.push(
      { type: "session_ended", item: "a", payload: { attempt: 1, verdict: "drained", exitCode: null, signal: null, reason: "drained: gone" } },
      drainedRequeue("a", 1),
    );
    const a = fold(log.events).items.a!;
    expect({ status: a.status, failures: a.failures, drained: a.attempts[0]!.drained, outcome: a.attempts[0]!.outcome }).toEqual({
      status: "pending",
      failures: 0,
      drained: true,
      outcome: "requeued: drained: gone",
    });
    // Another requeue leaves no such mark.
    log.push(
      launch({ item: "a", attempt: 2 }),
      started({ item: "a", attempt: 2 }),
      ended({ item: "a", attempt: 2 }),
      requeued({ item: "a", attempt: 2, reason: "stopped by alice", failed: false }),
    );
    expect(fold(log.events).items.a!.attempts[1]!.drained).toBeUndefined();
  });

  test("names the attempt in flight only: its current attempt, its session while it is launching or running, its verify while that runs", () => {
    const log = base(["a", "b"]);
    expectIllegal(log, log.next(stop("a", 1)), "item_status");
    log.push(launch({ item: "a", attempt: 1 }));
    log.push(stop("a", 1)); // launching: the session is starting
    expectIllegal(log, log.next(stop("a", 2)), "attempt_mismatch");
    expectIllegal(log, log.next(stop("a", 1, "verify")), "verify_order");
    log.push(started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 }));
    // Ended, no verify running: nothing of the attempt runs beside the watcher.
    expectIllegal(log, log.next(stop("a", 1, "verify")), "verify_order");
    log.push(verifyReserved({ item: "a", attempt: 1 }), verifyStarted({ item: "a", attempt: 1 }), stop("a", 1, "verify"));
    expectIllegal(log, log.next(stop("a", 1, "session")), "verify_order");
    expect(fold(log.events).items.a!.attempts[0]!.drain?.running).toBe("verify");
  });
});

describe("control.review: review_required and loop_reviewed", () => {
  const asks = (revision: number, code: "not_started" | "landing_widened" = "not_started"): EventDraft => ({
    type: "review_required",
    payload: { revision, reasons: [{ code, detail: code }] },
  });
  const reviewed = (revision: number): EventDraft => ({ type: "loop_reviewed", payload: { revision } });

  test("a review asked for waits until a person's start of the same revision; the start is remembered", () => {
    const log = new LogBuilder();
    log.push(definition(1, [itemDef("a")]), asks(1));
    expect(fold(log.events).loop.review).toEqual({ waiting: { reasons: [{ code: "not_started", detail: "not_started" }], seq: 3 }, reviewed: null });
    expectIllegal(log, log.next(reviewed(2)), "revision_order");
    log.push(reviewed(1), loopStarted);
    const p = fold(log.events);
    expect(p.loop.review).toEqual({ waiting: null, reviewed: 1 });
    expect(p.loop.state).toBe("running");
    // A widening later asks again, and keeps the revision last started.
    log.push(definition(2, [itemDef("a")]), asks(2, "landing_widened"));
    expect(fold(log.events).loop.review).toEqual({ waiting: { reasons: [{ code: "landing_widened", detail: "landing_widened" }], seq: 7 }, reviewed: 1 });
  });

  test("a start with no review waiting, and a review of another revision, are illegal", () => {
    const log = new LogBuilder();
    log.push(definition(1, [itemDef("a")]));
    expectIllegal(log, log.next(reviewed(1)), "loop_state");
    expectIllegal(log, log.next(asks(2)), "revision_order");
  });

  test("a log without them folds as before: no review record", () => {
    const log = new LogBuilder();
    log.push(definition(1, [itemDef("a")]), loopStarted);
    expect(fold(log.events).loop.review).toBeUndefined();
  });
});
