// The pure decisions of spend (lib/decisions/budget.ts) and the guards (lib/decisions/guards.ts), with plain
// data: what an item and the loop spent, when a budget is reached before a launch and while an
// attempt runs, what a claude cap gets, the next recorded figure, a resumed conversation's base.
import { describe, expect, test } from "bun:test";
import type { AttemptRecord, AttemptUsage, ItemState, LoopUsage } from "../../lib/log/projection.ts";
import {
  attemptsSpend,
  beforeLaunch,
  conversationBase,
  loopSpend,
  nextUsage,
  reached,
  remainingMicroUsd,
  usdText,
  whileRunning,
} from "../../lib/decisions/budget.ts";
import { identicalFailure, NO_PROGRESS, noProgressReason } from "../../lib/decisions/guards.ts";

const NOW = Date.parse("2025-06-02T12:30:00.000Z");

function u(tokens: number | null, microUsd: number | null, final = true): AttemptUsage {
  return {
    source: "usage_file",
    tokens: tokens === null ? null : { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 },
    microUsd,
    usdFrom: microUsd === null ? null : "agent",
    final,
    note: null,
    at: "2025-06-02T12:00:00.000Z",
  };
}

function attempt(n: number, o: Partial<AttemptRecord> = {}): AttemptRecord {
  return {
    n,
    key: `k${n}`,
    reservedAt: "",
    startedAt: "2025-06-02T12:00:00.000Z",
    end: null,
    launchFailed: null,
    question: null,
    verify: null,
    verifyRun: null,
    outcome: null,
    landing: null,
    landingWait: null,
    reaction: null,
    ...o,
  };
}

function item(attempts: AttemptRecord[], budget?: { tokens?: number; microUsd?: number }): Pick<ItemState, "id" | "attempts" | "def"> {
  return {
    id: "fix-login",
    attempts,
    def: {
      id: "fix-login",
      ref: null,
      prompt: "p",
      dependsOn: [],
      verify: "true",
      runner: "claude",
      model: null,
      maxAttempts: 2,
      timeouts: { launch: 1, stall: 1, verify: 1 },
      ...(budget ? { budget } : {}),
    },
  };
}

function loopUsage(tokens: number, microUsd: number, hours: LoopUsage["hours"] = []): LoopUsage {
  return { sessions: 3, withTokens: 3, withUsd: 3, tokens: { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 }, microUsd, hours };
}

describe("spend", () => {
  test("an item's spend sums its attempts' figures; an unit no attempt reported is unknown, never zero", () => {
    expect(attemptsSpend([attempt(1, { usage: u(100, 5) }), attempt(2, { usage: u(50, null) }), attempt(3)])).toEqual({ tokens: 150, microUsd: 5 });
    expect(attemptsSpend([attempt(1, { usage: u(null, null) }), attempt(2)])).toEqual({ tokens: null, microUsd: null });
  });

  test("the loop's rolling day is the last 24 whole hours up to now", () => {
    const hours = [
      { hour: "2025-06-01T12", tokens: 1000, microUsd: 10 }, // 24½ hours ago: out
      { hour: "2025-06-01T13", tokens: 200, microUsd: 2 },
      { hour: "2025-06-02T12", tokens: 30, microUsd: 3 },
    ];
    expect(loopSpend(loopUsage(1230, 15, hours), NOW)).toEqual({ total: { tokens: 1230, microUsd: 15 }, daily: { tokens: 230, microUsd: 5 } });
    expect(loopSpend(undefined, NOW)).toEqual({ total: { tokens: null, microUsd: null }, daily: { tokens: null, microUsd: null } });
  });

  test("a limit is reached at its figure; an unknown spend reaches nothing", () => {
    expect(reached({ tokens: 100, microUsd: null }, { tokens: 100 })).toEqual({ unit: "tokens", spent: 100, limit: 100 });
    expect(reached({ tokens: 99, microUsd: 2_000_000 }, { tokens: 100, microUsd: 1_000_000 })).toEqual({ unit: "usd", spent: 2_000_000, limit: 1_000_000 });
    expect(reached({ tokens: null, microUsd: null }, { tokens: 1, microUsd: 1 })).toBeNull();
    expect(reached({ tokens: 5, microUsd: 5 }, undefined)).toBeNull();
    expect(usdText(1_234_500)).toBe("1.2345");
    expect(usdText(10_000_000)).toBe("10.00");
  });
});

describe("budgets", () => {
  const cases: {
    name: string;
    it: Pick<ItemState, "id" | "attempts" | "def">;
    usage?: LoopUsage;
    budget?: { tokens?: number; microUsd?: number; daily?: { tokens?: number; microUsd?: number } };
    launch: string | null;
    running: string | null;
  }[] = [
    { name: "no budgets: nothing stops", it: item([attempt(1, { usage: u(10_000_000, 9_000_000) })]), launch: null, running: null },
    {
      name: "the item's budget spent over its attempts: the item stops",
      it: item([attempt(1, { usage: u(600, null) }), attempt(2, { usage: u(400, null) })], { tokens: 1000 }),
      launch: "item total tokens",
      running: "item total tokens",
    },
    { name: "the item's budget not yet spent", it: item([attempt(1, { usage: u(999, null) })], { tokens: 1000 }), launch: null, running: null },
    {
      name: "the loop's total reached: the loop stops",
      it: item([]),
      usage: loopUsage(100, 5_000_000),
      budget: { microUsd: 5_000_000 },
      launch: "loop total usd",
      running: "loop total usd",
    },
    {
      name: "the loop's day reached",
      it: item([]),
      usage: loopUsage(100, 0, [{ hour: "2025-06-02T11", tokens: 100, microUsd: 0 }]),
      budget: { daily: { tokens: 100 } },
      launch: "loop daily tokens",
      running: "loop daily tokens",
    },
    {
      name: "what is left of the loop's budget cannot cover the item's own: no launch, but a running attempt goes on",
      it: item([], { tokens: 1000 }),
      usage: loopUsage(9500, 0),
      budget: { tokens: 10_000 },
      launch: "loop total tokens",
      running: null,
    },
    {
      name: "the item's budget in another unit than the loop's: only reached limits stop",
      it: item([], { microUsd: 1_000_000 }),
      usage: loopUsage(9500, 0),
      budget: { tokens: 10_000 },
      launch: null,
      running: null,
    },
  ];
  const say = (v: ReturnType<typeof beforeLaunch>) => (v ? `${v.scope} ${v.window} ${v.unit}` : null);
  for (const c of cases)
    test(c.name, () => {
      const o = { item: c.it, usage: c.usage, budget: c.budget, now: NOW };
      expect(say(beforeLaunch(o))).toBe(c.launch);
      expect(say(whileRunning(o))).toBe(c.running);
    });

  test("the reasons name the figures, the key in loop.json and the command that goes on", () => {
    const i = beforeLaunch({ item: item([attempt(1, { usage: u(1200, null) })], { tokens: 1000 }), usage: undefined, budget: undefined, now: NOW })!;
    expect(i.reason).toBe(
      "fix-login spent 1,200 tokens of its budget of 1,000 tokens over its attempts (budget.tokens); to go on, raise items[].budget (or defaults.budget) in loop.json, then `loop ctl retry --work-item fix-login`",
    );
    const l = beforeLaunch({ item: item([]), usage: loopUsage(0, 12_500_000), budget: { microUsd: 10_000_000 }, now: NOW })!;
    expect(l.reason).toBe(
      "the loop spent $12.50 of its budget of $10.00 (budget.usd in loop.json); no attempt starts until it is raised: raise it, then `loop ctl resume`",
    );
  });

  test("claude's cap: the least of what is left of the item's, the loop's and the day's dollars; none without one", () => {
    const it = item([attempt(1, { usage: u(0, 400_000) })], { microUsd: 1_000_000 });
    expect(
      remainingMicroUsd({
        item: it,
        usage: loopUsage(0, 9_800_000, [{ hour: "2025-06-02T12", tokens: 0, microUsd: 100_000 }]),
        budget: { microUsd: 10_000_000, daily: { microUsd: 5_000_000 } },
        now: NOW,
      }),
    ).toBe(200_000);
    expect(remainingMicroUsd({ item: it, usage: undefined, budget: undefined, now: NOW })).toBe(600_000);
    expect(remainingMicroUsd({ item: item([]), usage: undefined, budget: { tokens: 5 }, now: NOW })).toBeNull();
  });
});

describe("the next recorded figure", () => {
  const reading = (tokens: number | null, microUsd: number | null, note: string | null = null) => ({
    tokens: tokens === null ? null : { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 },
    microUsd,
    usdFrom: microUsd === null ? null : ("agent" as const),
    note,
  });
  test("a running figure is recorded only when it changed; the final one always once something is known", () => {
    expect(nextUsage(undefined, reading(null, null), false)).toBeNull();
    expect(nextUsage(undefined, reading(10, null), false)).toMatchObject({ tokens: { input: 10 } });
    expect(nextUsage(u(10, null, false), reading(10, null), false)).toBeNull();
    // The recorded figure as the store gives it back: its keys in another order, the same figure.
    const stored = { ...u(10, null, false), tokens: { cacheRead: 0, cacheWrite: 0, input: 10, output: 0 } };
    expect(nextUsage(stored, reading(10, null), false)).toBeNull();
    expect(nextUsage(u(10, null, false), reading(10, null), true)).toMatchObject({ tokens: { input: 10 } });
    expect(nextUsage(undefined, reading(null, null), true)).toBeNull();
    expect(nextUsage(undefined, reading(null, null, "its usage file was not read: it is a symbolic link"), true)).toMatchObject({
      tokens: null,
      note: expect.stringContaining("symbolic link"),
    });
  });

  test("never lower than recorded: a lower or unknown reading keeps the recorded figure", () => {
    expect(nextUsage(u(500, 70, false), reading(100, 10), true)).toMatchObject({ tokens: { input: 500 }, microUsd: 70 });
    expect(nextUsage(u(500, 70, false), reading(null, null), true)).toMatchObject({ tokens: { input: 500 }, microUsd: 70 });
    expect(nextUsage(u(500, 70, false), reading(600, null), false)).toMatchObject({ tokens: { input: 600 }, microUsd: 70 });
  });

  test("a resumed conversation's base: the attempts back to the one that began it", () => {
    const as = [
      attempt(1, { usage: u(100, 10) }),
      attempt(2, { usage: u(200, 20) }),
      attempt(3, { usage: u(40, null), resumed: true }),
      attempt(4, { resumed: true }),
    ];
    expect(conversationBase(as, 4)).toEqual({ tokens: { input: 240, output: 0, cacheRead: 0, cacheWrite: 0 }, microUsd: 20 });
    expect(conversationBase(as, 2)).toBeNull();
  });
});

describe("the guards", () => {
  const v = (exitCode: number | null, sha256: string | null, passed = false) => ({
    attempt: 0,
    passed,
    exitCode,
    timedOut: false,
    sha256,
    tail: "",
    log: null,
    code: passed ? ("passed" as const) : ("exit_nonzero" as const),
    noProgress: false,
    reason: `exit ${exitCode}`,
    at: "",
  });
  test("two failures in a row with the same exit code and output digest are identical", () => {
    expect(identicalFailure([attempt(1, { verify: v(1, "aa"), outcome: "failed" }), attempt(2, { verify: v(1, "aa") })])).toEqual({
      previous: 1,
      exitCode: 1,
      sha256: "aa",
    });
  });
  test("another digest, another exit code, a pass, no digest: not identical", () => {
    expect(identicalFailure([attempt(1, { verify: v(1, "aa"), outcome: "failed" }), attempt(2, { verify: v(1, "bb") })])).toBeNull();
    expect(identicalFailure([attempt(1, { verify: v(1, "aa"), outcome: "failed" }), attempt(2, { verify: v(2, "aa") })])).toBeNull();
    expect(identicalFailure([attempt(1, { verify: v(0, "aa", true), outcome: "passed" }), attempt(2, { verify: v(0, "aa") })])).toBeNull();
    expect(identicalFailure([attempt(1, { verify: v(1, null), outcome: "failed" }), attempt(2, { verify: v(1, null) })])).toBeNull();
    expect(identicalFailure([attempt(1, { verify: v(1, "aa") })])).toBeNull();
  });
  test("attempts that were no failures (a question, an interrupted launch) stand between no two failures", () => {
    const as = [attempt(1, { verify: v(1, "aa"), outcome: "failed" }), attempt(2, { outcome: "requeued: reply received" }), attempt(3, { verify: v(1, "aa") })];
    expect(identicalFailure(as)).toEqual({ previous: 1, exitCode: 1, sha256: "aa" });
  });
  test("the no-progress verdict names itself first, once", () => {
    expect(noProgressReason("exit 1")).toBe(`${NO_PROGRESS}; exit 1`);
  });
});
