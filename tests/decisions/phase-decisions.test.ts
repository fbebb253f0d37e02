// Landing's pure decisions (lib/decisions/landing.ts), the launch verdict and the branch a launch
// builds on (lib/decisions/branch.ts), on plain data.
import { describe, expect, test } from "bun:test";
import { isOwnMergeOnTop, landingRoute, settledByLanding } from "../../lib/decisions/landing.ts";
import { classifyLaunching } from "../../lib/decisions/session-verdict.ts";
import { asideBranchName, branchAtLaunch } from "../../lib/decisions/branch.ts";

describe("landingRoute", () => {
  test("a loop without a forge lands locally, whatever landing says", () => {
    for (const landing of ["none", "merge", "pr"] as const) expect(landingRoute({ forge: false, landing, forgeLandingStarted: false })).toBe("local");
  });
  test("with a forge: merge and pr go through it; none stays local unless a forge landing is under way", () => {
    expect(landingRoute({ forge: true, landing: "merge", forgeLandingStarted: false })).toBe("forge");
    expect(landingRoute({ forge: true, landing: "pr", forgeLandingStarted: false })).toBe("forge");
    expect(landingRoute({ forge: true, landing: "none", forgeLandingStarted: false })).toBe("local");
    expect(landingRoute({ forge: true, landing: "none", forgeLandingStarted: true })).toBe("forge");
  });
});

describe("isOwnMergeOnTop", () => {
  const landedCommit = "a".repeat(40);
  const head = "b".repeat(40);
  test("exactly one merge more: first parent the recorded commit, second this branch's head", () => {
    expect(isOwnMergeOnTop({ landedCommit, parents: [landedCommit, head, head] })).toBe(true);
  });
  test("anything else is a moved target: another first parent, another second parent, no merge at all", () => {
    expect(isOwnMergeOnTop({ landedCommit, parents: ["c".repeat(40), head, head] })).toBe(false);
    expect(isOwnMergeOnTop({ landedCommit, parents: [landedCommit, "c".repeat(40), head] })).toBe(false);
    expect(isOwnMergeOnTop({ landedCommit, parents: [landedCommit, head] })).toBe(false);
  });
});

describe("settledByLanding", () => {
  const o = { landingReason: "merged into main as abc", verifyReason: "exit 0" };
  test("landed: passed, naming the verify and the landing", () => {
    expect(settledByLanding({ ...o, landed: true, outcome: "merged" })).toEqual({
      outcome: "passed",
      code: "passed",
      reason: "verify passed (exit 0); merged into main as abc",
    });
  });
  test("blocked through the forge: landing_blocked; a conflict and any other failure: failed, each with its code", () => {
    expect(settledByLanding({ ...o, landed: false, outcome: "blocked" })).toMatchObject({ outcome: "landing_blocked", code: "landing_blocked" });
    expect(settledByLanding({ ...o, landed: false, outcome: "conflict" })).toEqual({
      outcome: "failed",
      code: "merge_conflict",
      reason: "merge_conflict: merged into main as abc",
    });
    expect(settledByLanding({ ...o, landed: false, outcome: "failed" })).toMatchObject({ outcome: "failed", code: "landing_failed" });
  });
});

describe("classifyLaunching", () => {
  const o = { launched: true, carried: true, ageMs: 1_000, launchTimeoutMs: 30_000 };
  test("launched and alive within the launch timeout: waiting", () => {
    expect(classifyLaunching(o)).toEqual({ kind: "waiting", reason: "session is starting" });
  });
  test("no launch record, or nothing alive carrying the mark: interrupted (not counted)", () => {
    expect(classifyLaunching({ ...o, launched: false, carried: false })).toMatchObject({ kind: "failed", interrupted: true });
    expect(classifyLaunching({ ...o, carried: false })).toMatchObject({ kind: "failed", interrupted: true });
  });
  test("alive but past the launch timeout: the attempt's failure, naming the timeout", () => {
    expect(classifyLaunching({ ...o, ageMs: 31_000 })).toEqual({ kind: "failed", reason: "session did not start within 30s", interrupted: false });
  });
});

describe("branchAtLaunch", () => {
  const S = "5".repeat(40);
  test("no branch: made at the start point's commit", () => {
    expect(branchAtLaunch({ inherited: null, startCommit: S, branchHead: null })).toEqual({ kind: "create", start: S });
  });
  test("a branch an earlier session of this epoch worked on is built on, keeping that session's start", () => {
    expect(branchAtLaunch({ inherited: "1".repeat(40), startCommit: S, branchHead: "2".repeat(40) })).toEqual({ kind: "reuse", start: "1".repeat(40) });
  });
  test("a first launch finds the branch at the start point (loop made it, the launch was cut short): used", () => {
    expect(branchAtLaunch({ inherited: null, startCommit: S, branchHead: S })).toEqual({ kind: "reuse", start: S });
  });
  test("a first launch finds the branch anywhere else: moved aside, made again at the start point", () => {
    expect(branchAtLaunch({ inherited: null, startCommit: S, branchHead: "9".repeat(40) })).toEqual({ kind: "move_aside", start: S, found: "9".repeat(40) });
  });
  test("a first launch finds the branch at a commit the start point contains (loop made it at an older base; its setup failed): started again at the start point, nothing aside", () => {
    expect(branchAtLaunch({ inherited: null, startCommit: S, branchHead: "9".repeat(40), headInStart: true })).toEqual({
      kind: "restart",
      start: S,
      found: "9".repeat(40),
    });
    // A branch a session worked on is built on, wherever it is.
    expect(branchAtLaunch({ inherited: "1".repeat(40), startCommit: S, branchHead: "9".repeat(40), headInStart: true })).toEqual({
      kind: "reuse",
      start: "1".repeat(40),
    });
  });
  test("the aside name is beside the item branches and never reused", () => {
    const taken = new Set(["loop/t/aside/b/e0-a1"]);
    expect(asideBranchName("t", "b", 0, 1, (n) => taken.has(n))).toBe("loop/t/aside/b/e0-a1-2");
    expect(asideBranchName("t", "b", 1, 2, () => false)).toBe("loop/t/aside/b/e1-a2");
  });
});
