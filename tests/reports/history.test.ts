// The history `loop serve` draws from, folded from synthetic hash-chained logs (tests/helpers/events.ts):
// each attempt's phases and fate, the waits, epochs, and what an unknown event type does.
import { describe, expect, test } from "bun:test";
import { type AttemptHistory, foldEvents, type History, phasesOf } from "../../lib/reports/history.ts";
import type { EventDraft } from "../../lib/log/events.ts";
import { unknownNote } from "../../lib/serve/page.ts";
import {
  definition,
  drained,
  ended,
  failingAttempt,
  itemDef,
  launch,
  LogBuilder,
  loopStarted,
  passingAttempt,
  requeued,
  resetDone,
  settled,
  started,
  verified,
  verifyReserved,
  verifyStarted,
} from "../helpers/events.ts";

/** The time of the event at index i, as the history keeps times (ms). */
const at = (b: LogBuilder, i: number) => Date.parse(b.events[i]!.ts);

function fold(b: LogBuilder): History {
  return foldEvents(b.events);
}

/** An attempt's phases as `kind from→to` with seconds from the log's first event (LogBuilder ticks one second per event). */
function phases(a: AttemptHistory): string[] {
  const t0 = Date.parse("2025-01-01T00:00:00.000Z");
  const s = (ms: number | null) => (ms === null ? "…" : String((ms - t0) / 1000));
  return phasesOf(a).map((p) => `${p.kind} ${s(p.from)}→${s(p.to)}`);
}

describe("an attempt's phases", () => {
  test("a passing attempt: launching, agent, verify, landing; outcome passed", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted); // 2, 3
    b.push(
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verifyReserved({ item: "a", attempt: 1 }),
      verifyStarted({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
    ); // 4..9
    b.push({
      type: "landing_finished",
      item: "a",
      payload: { attempt: 1, outcome: "merged", branch: "b", target: "t", commit: "c0ffee", code: "merged", reason: "merged" },
    }); // 10
    b.push(settled({ item: "a", attempt: 1, outcome: "passed", reason: "verify passed" }), {
      type: "session_closed",
      item: "a",
      payload: { attempt: 1, how: "not_running", worktreeRemoved: true, reason: "item passed" },
    });
    const a = fold(b).items.get("a")!.attempts[0]!;
    // Closing: the landing → the session closed (the worktree's removal, in the settling step).
    expect(phases(a)).toEqual(["launching 4→5", "agent 5→6", "airlock 6→7", "verify 7→9", "landing 9→10", "closing 10→12"]);
    expect(a.outcome).toEqual({ at: at(b, 10), kind: "passed", code: "passed", reason: "verify passed" });
    expect(a.verify).toMatchObject({ passed: true, command: "bun test", code: "passed", reason: "verify passed", tail: "3 pass" });
    expect(a.landing?.outcome).toBe("merged");
  });

  test("the wrappers' own times (session_ended, verify_finished `times`) draw the agent and the verify; the wait until a step saw each is its own phase", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 })); // 2, 3, 4, 5
    const iso = (s: number) => new Date(Date.parse("2025-01-01T00:00:00.000Z") + s * 1000).toISOString();
    // The agent ran 5.1 s → 5.17 s; the step that saw it came at 6.
    const endedAt = (times: { started: string | null; ended: string | null }) => ({
      type: "session_ended" as const,
      item: "a",
      payload: { attempt: 1, verdict: "exited" as const, exitCode: 0, signal: null, reason: "exited 0", times },
    });
    b.push(endedAt({ started: iso(5.1), ended: iso(5.17) })); // 6
    b.push(verifyReserved({ item: "a", attempt: 1 }), verifyStarted({ item: "a", attempt: 1 })); // 7, 8
    const v = verified({ item: "a", attempt: 1, passed: true }) as Extract<EventDraft, { type: "verify_finished" }>;
    b.push({ ...v, payload: { ...v.payload, times: { started: iso(7.5), ended: iso(8.25) } } }); // 9
    // A time outside its phase (planted in the wrapper's file) is not drawn.
    const a = fold(b).items.get("a")!.attempts[0]!;
    expect(phases(a)).toEqual(["launching 4→5.1", "agent 5.1→5.17", "step 5.17→6", "airlock 6→7", "verify 7→8.25", "step 8.25→9", "landing 9→…"]);
    const bad = new LogBuilder();
    bad.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }));
    bad.push(endedAt({ started: iso(1), ended: "not a time" }));
    expect(phases(fold(bad).items.get("a")!.attempts[0]!)).toEqual(["launching 4→5", "agent 5→6", "airlock 6→…"]);
  });

  test("setup is drawn apart inside the launch, and the airlock between the agent's exit and the verify; while the airlock runs it is open", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 })); // 2, 3, 4
    // The launch's setup ran 0.5 s, ending at the event (5).
    b.push({ type: "workspace_prepared", item: "a", payload: { attempt: 1, builtOn: null, setup: { ms: 500, log: "/x/setup.log" } } });
    b.push(started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 })); // 6, 7
    expect(phases(fold(b).items.get("a")!.attempts[0]!)).toEqual(["launching 4→4.5", "setup 4.5→5", "launching 5→6", "agent 6→7", "airlock 7→…"]);
    b.push(verifyReserved({ item: "a", attempt: 1 })); // 8
    expect(phases(fold(b).items.get("a")!.attempts[0]!)).toEqual(["launching 4→4.5", "setup 4.5→5", "launching 5→6", "agent 6→7", "airlock 7→8", "verify 8→…"]);
    // A setup longer than the launch so far (a clock that moved) starts no earlier than the reservation.
    const c = new LogBuilder();
    c.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }));
    c.push({ type: "workspace_prepared", item: "a", payload: { attempt: 1, builtOn: null, setup: { ms: 60_000, log: "/x/setup.log" } } });
    expect(phases(fold(c).items.get("a")!.attempts[0]!)).toEqual(["launching 4→4", "setup 4→5", "launching 5→…"]);
  });

  test("an attempt in flight has an open phase (`to` null)", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }));
    expect(phases(fold(b).items.get("a")!.attempts[0]!)).toEqual(["launching 4→…"]);
    b.push(started({ item: "a", attempt: 1 }));
    expect(phases(fold(b).items.get("a")!.attempts[0]!)).toEqual(["launching 4→5", "agent 5→…"]);
    b.push(ended({ item: "a", attempt: 1 }), verifyReserved({ item: "a", attempt: 1 }));
    expect(phases(fold(b).items.get("a")!.attempts[0]!)).toEqual(["launching 4→5", "agent 5→6", "airlock 6→7", "verify 7→…"]);
  });

  test("a failed verify then a retry: two attempts, the first failed, the second passed", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, ...failingAttempt({ item: "a", attempt: 1 }), ...passingAttempt({ item: "a", attempt: 2 }));
    const h = fold(b);
    const [one, two] = h.items.get("a")!.attempts;
    expect([one!.outcome?.kind, two!.outcome?.kind]).toEqual(["failed", "passed"]);
    // verify: false-style verdict (no verify_reserved): no verify phase, a passing verdict then landing.
    expect(phasesOf(two!).map((p) => p.kind)).toEqual(["launching", "agent", "airlock", "landing", "closing"]);
    // The failed one: its verdict (4+3 = 7), requeued at 8, the session closed (its worktree removed) at 9: closing from the verdict.
    expect(phases(one!)).toEqual(["launching 4→5", "agent 5→6", "airlock 6→7", "closing 7→9"]);
    expect(h.attempts).toBe(2);
  });

  test("a pull request: landing until it is recorded, then waiting on checks until the landing", () => {
    const b = new LogBuilder();
    b.push(
      definition(1, [itemDef("a")]),
      loopStarted,
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
    ); // ..7
    b.push({
      type: "forge_pr_recorded",
      item: "a",
      payload: { attempt: 1, number: 7, url: "https://github.com/o/r/pull/7", head: "abc", draft: false, reused: false },
    }); // 8
    b.push({ type: "forge_landing_waiting", item: "a", payload: { attempt: 1, code: "checks_pending", reason: "checks are running", head: "abc" } }); // 9
    b.push({
      type: "landing_finished",
      item: "a",
      payload: { attempt: 1, outcome: "merged", branch: "b", target: "main", commit: "m", code: "merged", reason: "merged #7" },
    }); // 10
    const a = fold(b).items.get("a")!.attempts[0]!;
    expect(phases(a)).toEqual(["launching 4→5", "agent 5→6", "airlock 6→7", "landing 7→8", "checks 8→10"]);
    expect(a.pr).toMatchObject({ number: 7, url: "https://github.com/o/r/pull/7" });
    expect(a.landingWaits).toEqual([{ at: at(b, 8), code: "checks_pending", reason: "checks are running" }]);
    expect(a.pr?.label).toBe("#7");
  });

  test("a forge reaction that sends the item back is a rework: counted, and a rework phase until the next attempt is reserved; a block is neither", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, ...failingAttempt({ item: "a", attempt: 1 }));
    const reaction = (decision: "retry" | "block") => ({
      type: "forge_reaction_recorded" as const,
      item: "a",
      payload: {
        attempt: 1,
        head: "c".repeat(40),
        signals: [{ kind: "checksFailed", key: "checksFailed:c", summary: "build failed" }],
        decision,
        reason: "build failed",
        feedback: "",
      },
    });
    b.push(reaction("block") as never, reaction("retry") as never);
    const at1 = Date.parse(b.events.at(-1)!.ts);
    b.push(launch({ item: "a", attempt: 2 }));
    const a = fold(b).items.get("a")!;
    expect(a.reworks).toBe(1);
    expect(a.attempts[0]!.extraPhases).toEqual([{ kind: "rework", from: at1, to: Date.parse(b.events.at(-1)!.ts) }]);
  });

  test("a GitLab merge request is labelled !N (on GitLab #N is an issue), and keeps its label after the forge section is removed", () => {
    const b = new LogBuilder();
    const gitlab = definition(1, [itemDef("a")]) as { payload: { settings: Record<string, unknown> } };
    gitlab.payload.settings = { ...gitlab.payload.settings, forge: { provider: "gitlab" } };
    b.push(
      gitlab as never,
      loopStarted,
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verified({ item: "a", attempt: 1, passed: true }),
    );
    b.push({
      type: "forge_pr_recorded",
      item: "a",
      payload: { attempt: 1, number: 3, url: "https://gitlab.com/g/p/-/merge_requests/3", head: "abc", draft: false, reused: false },
    });
    b.push(definition(2, [itemDef("a")]));
    const h = fold(b);
    expect(h.provider).toBe("gitlab");
    expect(h.items.get("a")!.attempts[0]!.pr?.label).toBe("!3");
  });
});

describe("waits", () => {
  test("a question is an item wait from needs_input until the item is requeued", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 })); // ..5
    b.push(
      { type: "needs_input", item: "a", payload: { attempt: 1, question: "which port?" } },
      { type: "loop_paused", payload: { reason: "a needs input: which port?" } },
    ); // 6, 7
    let h = fold(b);
    expect(h.items.get("a")!.waits).toEqual([{ kind: "needs_input", label: "needs input: which port?", from: at(b, 5), to: null }]);
    expect(h.waits).toEqual([{ kind: "paused", label: "a needs input: which port?", from: at(b, 6), to: null }]);
    b.push(
      { type: "reply_recorded", item: "a", actor: "alice", payload: { text: "8080" } },
      { type: "loop_resumed", payload: {} },
      requeued({ item: "a", attempt: 1, reason: "answered", failed: false }),
    ); // 8, 9, 10
    h = fold(b);
    expect(h.items.get("a")!.waits[0]!.to).toBe(at(b, 9));
    expect(h.waits[0]!.to).toBe(at(b, 8));
    expect(h.items.get("a")!.attempts[0]!.outcome?.kind).toBe("requeued");
    expect(h.items.get("a")!.replies).toEqual([{ at: at(b, 7), actor: "alice" }]);
  });

  test("an environment fault ends its attempt (given back) and pauses the loop until resumed", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }));
    b.push({
      type: "environment_fault",
      item: "a",
      payload: { kind: "program_not_found", attempt: 1, reason: "claude is not on PATH", fix: "install it, then `loop ctl resume`" },
    });
    const h = fold(b);
    const a = h.items.get("a")!.attempts[0]!;
    expect(a.end?.verdict).toBe("environment_fault");
    expect(a.outcome).toMatchObject({ kind: "requeued" });
    expect(phases(a)).toEqual(["launching 4→5"]);
    // The words the reducer gives the loop's pause (lib/log/vocabulary.ts faultSentence), one sentence for both.
    expect(h.waits).toEqual([
      {
        kind: "environment",
        label: "environment fault launching a: claude is not on PATH. To fix: install it, then `loop ctl resume`",
        from: at(b, 4),
        to: null,
      },
    ]);
  });

  test("an environment fault met before the verify (its sandbox) leaves the ended attempt waiting for it, as the reducer does", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), ended({ item: "a", attempt: 1 }));
    b.push({
      type: "environment_fault",
      item: "a",
      payload: { kind: "sandbox_unavailable", attempt: 1, reason: "bwrap cannot make a namespace", fix: "allow user namespaces" },
    });
    const h = fold(b);
    const a = h.items.get("a")!.attempts[0]!;
    expect(a.end?.verdict).toBe("exited");
    expect(a.outcome).toBeNull();
    expect(h.waits.map((w) => w.label)).toEqual(["environment fault verifying a: bwrap cannot make a namespace. To fix: allow user namespaces"]);
    // One met before the next attempt's reservation (none named) is a launch's, whatever the last attempt did.
    const next = new LogBuilder();
    next.push(definition(1, [itemDef("a")]), loopStarted, ...failingAttempt({ item: "a", attempt: 1 }));
    next.push({
      type: "environment_fault",
      item: "a",
      payload: { kind: "program_not_found", attempt: null, reason: "claude is not on PATH", fix: "install it" },
    });
    const h2 = fold(next);
    expect(h2.waits.at(-1)?.label).toBe("environment fault launching a: claude is not on PATH. To fix: install it");
    expect(h2.items.get("a")!.attempts[0]!.end?.verdict).toBe("exited");
  });

  test("stop then resume: one stopped wait", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted, { type: "loop_stopped", payload: { reason: "by alice" } }, { type: "loop_resumed", payload: {} });
    expect(fold(b).waits).toEqual([{ kind: "stopped", label: "by alice", from: at(b, 3), to: at(b, 4) }]);
  });
});

describe("epochs, order and what the fold does not know", () => {
  test("a reset that removed something starts an epoch; an attempt it cut short is marked; one that found nothing does not", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a"), itemDef("b")]), loopStarted, launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), resetDone("a"));
    b.push(resetDone("b", { found: false, pieces: [] }));
    b.push(...passingAttempt({ item: "a", attempt: 1, epoch: 1 }));
    const h = fold(b);
    const a = h.items.get("a")!;
    expect(a.epoch).toBe(1);
    expect(a.attempts.map((x) => [x.epoch, x.n, x.outcome?.kind ?? null, x.abandonedAt !== null])).toEqual([
      [0, 1, null, true],
      [1, 1, "passed", false],
    ]);
    // The cut-short attempt's open phase ends at the reset.
    expect(phasesOf(a.attempts[0]!).every((p) => p.to !== null)).toBe(true);
    expect(h.items.get("b")!.epoch).toBe(0);
    expect(a.resets).toHaveLength(1);
  });

  test("order follows the latest definition, then items no longer in it; prompts and refs are the latest", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a"), itemDef("b")]), definition(2, [itemDef("c"), itemDef("a", { prompt: "new words", ref: "github:o/r#1" })]));
    const h = fold(b);
    expect(h.order).toEqual(["c", "a", "b"]);
    expect(h.items.get("a")).toMatchObject({ prompt: "new words", ref: "github:o/r#1" });
    expect(h.name).toBe("test");
  });

  test("an event type it does not know is counted, and the rest of the log still folds", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a")]), loopStarted);
    const events = [...b.events, { ...b.events[2]!, seq: 4, type: "forge_rework_requested" as never, item: "a", payload: {} as never }];
    const h = foldEvents(events);
    expect(h.unknown).toEqual({ forge_rework_requested: 1 });
    expect(h.seq).toBe(4);
    // The loop's page says so, each type escaped (a type is a store's text, not the page's markup).
    expect(String(unknownNote(h))).toContain("events this version of loop does not know, not drawn: forge_rework_requested ×1");
    const odd = foldEvents([...events, { ...events[3]!, seq: 5, type: "<img src=x>" as never }]);
    expect(String(unknownNote(odd))).toContain("&lt;img src=x&gt; ×1");
    expect(unknownNote(fold(b))).toBe("");
  });

  test("a blocked item settles without an attempt, and a drained loop closes nothing it should not", () => {
    const b = new LogBuilder();
    b.push(definition(1, [itemDef("a"), itemDef("b", { dependsOn: ["a"] })]), loopStarted, ...failingAttempt({ item: "a", attempt: 1, last: true }));
    b.push(settled({ item: "b", attempt: 0, outcome: "blocked", reason: 'dependency "a" failed' }), drained("Failed", { failed: 1, blocked: 1 }));
    const h = fold(b);
    expect(h.items.get("a")!.attempts[0]!.outcome?.kind).toBe("failed");
    expect(h.items.get("b")!.attempts).toEqual([]);
    expect(h.lastTs).toBe(at(b, b.events.length - 1));
  });
});
