// The verify on the base as plain data: when a step runs it (baseVerifyNeed), what the reducer folds
// of its events (and refuses), and what `loop ctl resume` plans with and without --yes.
import { describe, expect, test } from "bun:test";
import { baseVerifyFault, baseVerifyNeed } from "../../lib/decisions/base-verify.ts";
import { planCtl } from "../../lib/decisions/ctl-plan.ts";
import type { BaseVerifyRecord } from "../../lib/log/projection.ts";
import { fold } from "../../lib/log/reducer.ts";
import type { EventDraft } from "../../lib/log/events.ts";
import { definition, itemDef, LogBuilder, loopStarted } from "../helpers/events.ts";

const record = (over: Partial<BaseVerifyRecord>): BaseVerifyRecord => ({
  key: "k1",
  status: "passed",
  verify: "npm test",
  setup: null,
  commit: "c".repeat(40),
  startedAt: "2025-01-01T00:00:00.000Z",
  finishedAt: null,
  code: null,
  exitCode: null,
  quote: null,
  log: null,
  acceptedBy: null,
  ...over,
});

describe("baseVerifyNeed", () => {
  test.each([
    ["off (no key)", null, undefined, { kind: "none" }],
    ["never run", "k1", undefined, { kind: "run", takeover: false }],
    ["passed for this key", "k1", record({ status: "passed" }), { kind: "none" }],
    ["accepted for this key", "k1", record({ status: "accepted" }), { kind: "none" }],
    ["passed for another key (verify or setup changed)", "k2", record({ status: "passed" }), { kind: "run", takeover: false }],
    ["accepted for another key", "k2", record({ status: "accepted" }), { kind: "run", takeover: false }],
    ["failed, the loop resumed without --yes", "k1", record({ status: "failed" }), { kind: "run", takeover: false }],
    ["left running by a step cut short", "k1", record({ status: "running" }), { kind: "run", takeover: true }],
  ] as const)("%s", (_name, key, rec, want) => {
    expect(baseVerifyNeed(key, rec)).toEqual(want);
  });

  test("the fault names the verify, the base and both ways on", () => {
    const f = baseVerifyFault({
      code: "failed",
      verify: "npm test",
      setup: null,
      commit: "a".repeat(40),
      base: "main",
      why: "the verify exited 1: Error: boom",
      log: "/s/base-verify/verify.log",
    });
    expect(f.kind).toBe("base_verify_failed");
    expect(f.message).toContain('"npm test" failed on the base main (aaaaaaaaaaaa)');
    expect(f.message).toContain("Error: boom");
    expect(f.fix).toContain("`loop ctl resume --yes`");
    expect(
      baseVerifyFault({ code: "setup_failed", verify: "npm test", setup: "npm ci", commit: "a".repeat(40), base: "main", why: "x", log: "/l" }).message,
    ).toContain('workspace.setup ("npm ci") failed');
  });
});

const started: EventDraft = {
  type: "base_verify_started",
  payload: { key: "k1", verify: "npm test", setup: null, base: "main", commit: "c".repeat(40), dir: "/s/base-verify" },
};
const failed: EventDraft[] = [
  {
    type: "base_verify_finished",
    payload: { key: "k1", code: "failed", exitCode: 1, quote: "Error: boom", log: "/s/base-verify/verify.log", ms: 5, reason: "the verify exited 1" },
  },
  { type: "environment_fault", payload: { kind: "base_verify_failed", attempt: null, reason: "failed on the base", fix: "resume" } },
];

function log(...drafts: EventDraft[]): LogBuilder {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a")]), loopStarted, ...drafts);
  return b;
}

describe("the reducer", () => {
  test("started, then failed: the loop paused with the fault, the record failed with its quote", () => {
    const p = fold(log(started, ...failed).events);
    expect(p.loop.baseVerify).toMatchObject({ key: "k1", status: "failed", code: "failed", exitCode: 1, quote: "Error: boom" });
    expect(p.loop).toMatchObject({ state: "paused", cause: { kind: "fault", fault: "base_verify_failed", item: null } });
    expect(p.items.a).toMatchObject({ status: "pending", attempts: [] });
  });

  test("a run started again over one left running takes it over", () => {
    const p = fold(log(started, started).events);
    expect(p.loop.baseVerify?.status).toBe("running");
  });

  test("refused: a finish for a key not running, an acceptance of a run that did not fail, an item named", () => {
    const b = log(started, {
      type: "base_verify_finished",
      payload: { key: "k1", code: "passed", exitCode: 0, quote: "", log: "/l", ms: 1, reason: "passed" },
    });
    expect(() =>
      fold([
        ...b.events,
        b.next({ type: "base_verify_finished", payload: { key: "k1", code: "passed", exitCode: 0, quote: "", log: "/l", ms: 1, reason: "passed" } }),
      ]),
    ).toThrow(/base_verify_order/);
    expect(() => fold([...b.events, b.next({ type: "base_verify_accepted", payload: { key: "k1" } })])).toThrow(/base_verify_order/);
    const c = log();
    expect(() => fold([...c.events, c.next({ ...started, item: "a" })])).toThrow(/item_forbidden/);
  });
});

describe("loop ctl resume after a failure on the base", () => {
  const o = { actor: "alice", keepCheckout: false };
  test("without --yes: resumed, the verify on the base runs again; with --yes: accepted, then resumed", () => {
    const b = log(started, ...failed);
    const plain = planCtl(fold(b.events), "resume", [], o);
    expect(plain.flatMap((a) => a.events.map((e) => e.type))).toEqual(["loop_resumed"]);
    expect(plain[0]!.effect).toContain("runs again");
    const yes = planCtl(fold(b.events), "resume", [], { ...o, accept: true });
    expect(yes.flatMap((a) => a.events.map((e) => e.type))).toEqual(["base_verify_accepted", "loop_resumed"]);
    b.push(...yes.flatMap((a) => a.events.map((e) => ({ ...e, actor: "alice" }))));
    const p = fold(b.events);
    expect(p.loop.state).toBe("running");
    expect(p.loop.baseVerify).toMatchObject({ status: "accepted", acceptedBy: "alice" });
  });

  test("--yes on a loop paused for another reason resumes it and accepts nothing", () => {
    const b = log({ type: "loop_paused", payload: { reason: "by alice", cause: { kind: "operator", verb: "pause" } } });
    expect(planCtl(fold(b.events), "resume", [], { ...o, accept: true }).flatMap((a) => a.events.map((e) => e.type))).toEqual(["loop_resumed"]);
  });
});
