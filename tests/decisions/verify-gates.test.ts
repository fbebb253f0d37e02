// The order of the gates before a verify (lib/decisions/verify-gates.ts) and of what a tick does with
// a running session (lib/decisions/running-order.ts), as tables: security policy, reviewed here in one
// place. A change that reorders them fails these tables before anything else.
import { describe, expect, test } from "bun:test";
import { CHANGE_LIMITS, type GateFact, type GateFacts, verifyGate } from "../../lib/decisions/verify-gates.ts";
import { type RunningFacts, runningNext } from "../../lib/decisions/running-order.ts";
import type { BudgetVerdict } from "../../lib/decisions/budget.ts";
import type { VerifyVerdict } from "../../lib/decisions/verify-verdict.ts";

const withCommand = { command: true, exitCode: 0, noProgressGuard: true, products: [".venv"] };
const withoutCommand = { command: false, exitCode: 0, noProgressGuard: true, products: [".venv"] };
const HEAD = "h".repeat(40);

/** Every gate's fact when it passes. */
const CLEAN: Required<GateFacts> = {
  worktree: "present",
  store: [],
  airlock: { head: HEAD, startHead: "s".repeat(40) },
  gaveUp: null,
  protectedPaths: null,
  changes: { paths: ["src/a.py"], bytes: 10 },
  products: [],
  ownedRefs: [],
  commits: 1,
};

/** The gates, in order, each with a fact that refuses and the code it refuses with. */
const GATES: { fact: GateFact; refusing: GateFacts[GateFact]; code: string }[] = [
  { fact: "worktree", refusing: "missing", code: "worktree_missing" },
  { fact: "store", refusing: ["objects/12/3456"], code: "object_store_tampered" },
  { fact: "airlock", refusing: { code: "seal_failed", reason: "git add failed", timedOut: false }, code: "seal_failed" },
  { fact: "gaveUp", refusing: "the spec says 302 and the test says 200", code: "gave_up" },
  {
    fact: "protectedPaths",
    refusing: { code: "protected_path_changed", branch: "loop/t/item/a", paths: ["tests/check.sh"], start: "main", from: "main" },
    code: "protected_path_changed",
  },
  { fact: "changes", refusing: { paths: [".venv/pyvenv.cfg"], bytes: 10 }, code: "setup_output_committed" },
  { fact: "products", refusing: ["vendor/checker.sh"], code: "setup_output_changed" },
  { fact: "ownedRefs", refusing: ["item b's branch loop/t/item/b was moved"], code: "owned_ref_changed" },
];

/** Gathering from nothing, answering every request with `answer`: the facts asked for, in order, and the decision at the end. */
function walk(options: Parameters<typeof verifyGate>[1], answer: (fact: GateFact) => GateFacts[GateFact]) {
  const facts: GateFacts = {};
  const asked: GateFact[] = [];
  for (;;) {
    const d = verifyGate(facts, options);
    if (d.kind !== "gather") return { asked, decision: d };
    asked.push(d.fact);
    (facts as Record<string, unknown>)[d.fact] = answer(d.fact);
  }
}

describe("verifyGate: the gates before a verify, in order", () => {
  test("the facts are gathered in this order, each once, and a clean attempt runs its verify", () => {
    const r = walk(withCommand, (f) => CLEAN[f]);
    expect(r.asked).toEqual(["worktree", "store", "airlock", "gaveUp", "protectedPaths", "changes", "products", "ownedRefs"]);
    expect(r.decision).toEqual({ kind: "run", head: HEAD });
  });

  test("verify: false counts the attempt's commits last, after every gate", () => {
    const r = walk(withoutCommand, (f) => CLEAN[f]);
    expect(r.asked).toEqual(["worktree", "store", "airlock", "gaveUp", "protectedPaths", "changes", "products", "ownedRefs", "commits"]);
    expect(r.decision).toEqual({ kind: "judged", verdict: { code: "no_command_passed", commits: 1 }, noProgress: false });
  });

  // Every gate from the i-th on refuses: the i-th is the verdict, and nothing after it is gathered.
  for (const [i, gate] of GATES.entries())
    test(`${gate.fact} refuses (${gate.code}) before every later gate`, () => {
      const refusing = new Set(GATES.slice(i).map((g) => g.fact));
      const answer = (f: GateFact) => (refusing.has(f) ? GATES.find((g) => g.fact === f)!.refusing : CLEAN[f]);
      const r = walk(withCommand, answer);
      expect(r.asked).toEqual(GATES.slice(0, i + 1).map((g) => g.fact));
      expect(r.decision).toMatchObject({ kind: "refuse", verdict: { code: gate.code } });
    });

  // A check git could not make fails the attempt at that gate, named by the check.
  const gitFailed = { gitFailed: "git diff-tree failed (exit 128): fatal: index.lock exists" };
  const checks: [GateFact, Extract<VerifyVerdict, { code: "git_failed" }>["check"]][] = [
    ["store", "object_store"],
    ["airlock", "leftovers"],
    ["protectedPaths", "protected_paths"],
    ["changes", "changes"],
    ["ownedRefs", "owned_refs"],
    ["commits", "commits"],
  ];
  for (const [fact, check] of checks)
    test(`git failing at ${fact}: git_failed (${check}), nothing after it gathered`, () => {
      const r = walk(withoutCommand, (f) => (f === fact ? gitFailed : CLEAN[f]));
      expect(r.asked.at(-1)).toBe(fact);
      expect(r.decision).toEqual({ kind: "refuse", verdict: { code: "git_failed", check, message: gitFailed.gitFailed } });
    });

  test("something else in the checkout's place (a link to the operator's checkout) is worktree_replaced, before the store or the airlock is read", () => {
    const message = "/w/a is not the checkout loop made (it is a link to /home/op/project); nothing of it was sealed";
    const r = walk(withCommand, (f) => (f === "worktree" ? { replaced: message } : CLEAN[f]));
    expect(r.asked).toEqual(["worktree"]);
    expect(r.decision).toEqual({ kind: "refuse", verdict: { code: "worktree_replaced", at: "checkout", message } });
  });

  test("an agent that gave up: gave_up with its words, after the airlock wrote its work to the branch, whatever its exit and even without a verify command", () => {
    const text = "The spec and the test disagree.";
    for (const o of [withCommand, { ...withCommand, exitCode: 1 }, withoutCommand]) {
      const r = walk(o, (f) => (f === "gaveUp" ? text : CLEAN[f]));
      expect(r.asked).toEqual(["worktree", "store", "airlock", "gaveUp"]);
      expect(r.decision).toEqual({ kind: "refuse", verdict: { code: "gave_up", text } });
    }
  });

  test("a branch without its start commit is the protected-path gate's own refusal", () => {
    const missing = { code: "start_commit_missing" as const, branch: "loop/t/item/a", recorded: "r".repeat(40), start: "main" };
    expect(verifyGate({ ...CLEAN, protectedPaths: missing, changes: undefined, ownedRefs: undefined }, withCommand)).toEqual({
      kind: "refuse",
      verdict: missing,
    });
  });

  test("every refusal of the airlock is its own verdict, before any later gate", () => {
    const refusals: GateFacts["airlock"][] = [
      { code: "objects_refused", named: "objects/ab/cd (a FIFO)" },
      { code: "object_too_large", named: "objects/pack/x.pack (a blob of 524288000 bytes)", max: 100 * 2 ** 20 },
      { code: "head_invalid", reason: "not a commit" },
      { code: "owned_ref_changed", changes: ["the item branch was moved"] },
    ];
    for (const a of refusals)
      expect(verifyGate({ worktree: "present", store: [], airlock: a }, withCommand)).toEqual({ kind: "refuse", verdict: a as VerifyVerdict });
  });

  test("what setup made, a virtualenv anywhere, a node_modules anywhere: setup_output_committed, naming each path", () => {
    const changes = { paths: ["src/a.py", ".venv/bin/python", "lib/env/pyvenv.cfg", "web/node_modules/x/index.js"], bytes: 100 };
    expect(verifyGate({ ...CLEAN, changes, ownedRefs: undefined }, withCommand)).toEqual({
      kind: "refuse",
      verdict: { code: "setup_output_committed", paths: [".venv/bin/python", "lib/env/pyvenv.cfg", "web/node_modules/x/index.js"] },
    });
  });

  test("more paths or bytes than the limits: change_too_large, with the figures", () => {
    const many = { paths: Array.from({ length: CHANGE_LIMITS.files + 1 }, (_, i) => `f${i}`), bytes: 1 };
    expect(verifyGate({ ...CLEAN, changes: many, ownedRefs: undefined }, withCommand)).toMatchObject({
      kind: "refuse",
      verdict: { code: "change_too_large", files: CHANGE_LIMITS.files + 1 },
    });
    expect(verifyGate({ ...CLEAN, changes: { paths: ["a"], bytes: CHANGE_LIMITS.bytes + 1 }, ownedRefs: undefined }, withCommand)).toMatchObject({
      kind: "refuse",
      verdict: { code: "change_too_large", bytes: CHANGE_LIMITS.bytes + 1 },
    });
  });

  test("an agent that failed and changed nothing is agent_failed, its verify never run; one that changed something is verified", () => {
    const same = { head: HEAD, startHead: HEAD };
    expect(verifyGate({ ...CLEAN, airlock: same }, { ...withCommand, exitCode: 3 })).toEqual({
      kind: "refuse",
      verdict: { code: "agent_failed", exitCode: 3 },
    });
    expect(verifyGate({ ...CLEAN, airlock: same }, { ...withCommand, exitCode: 0 })).toEqual({ kind: "run", head: HEAD });
    expect(verifyGate(CLEAN, { ...withCommand, exitCode: 3 })).toEqual({ kind: "run", head: HEAD });
  });

  const judged: { name: string; exitCode: number | null; commits: number; guard: boolean; code: string; noProgress: boolean }[] = [
    { name: "exit 0 with commits: passed", exitCode: 0, commits: 2, guard: true, code: "no_command_passed", noProgress: false },
    { name: "exit 0, no change: failed, named by the guard", exitCode: 0, commits: 0, guard: true, code: "no_command_no_change", noProgress: true },
    { name: "exit 0, no change, the guard off: failed, not named", exitCode: 0, commits: 0, guard: false, code: "no_command_no_change", noProgress: false },
    {
      name: "a failing exit with commits: the exit decides; changed something, so not named",
      exitCode: 4,
      commits: 1,
      guard: true,
      code: "no_command_agent_failed",
      noProgress: false,
    },
    { name: "a failing exit, no change: named", exitCode: 4, commits: 0, guard: true, code: "no_command_agent_failed", noProgress: true },
    { name: "killed (no exit code), no change: named", exitCode: null, commits: 0, guard: true, code: "no_command_agent_failed", noProgress: true },
  ];
  for (const c of judged)
    test(`verify: false, ${c.name}`, () => {
      const d = verifyGate({ ...CLEAN, commits: c.commits }, { command: false, exitCode: c.exitCode, noProgressGuard: c.guard, products: [] });
      expect(d).toMatchObject({ kind: "judged", verdict: { code: c.code }, noProgress: c.noProgress });
    });
});

const reached = (scope: "item" | "loop"): NonNullable<BudgetVerdict> => ({
  scope,
  window: "total",
  unit: "tokens",
  spent: 120,
  limit: 100,
  reason: "a spent 120 tokens of 100",
});
const drain = { pid: 7, signal: "SIGTERM", signalledAt: "2030-01-01T00:00:00.000Z", running: "session" as const };
const base = (verdict: RunningFacts["verdict"], o: Partial<RunningFacts> = {}): RunningFacts => ({
  verdict,
  recordPresent: true,
  behindGateway: false,
  drain: undefined,
  ...o,
});
const exited = { kind: "exited" as const, code: 0, signal: null, reason: "agent exited with code 0" };
const lost = { kind: "lost" as const, reason: "session process vanished without an exit status" };

describe("runningNext: what a tick does with a running session, in order", () => {
  const cases: { name: string; facts: RunningFacts; want: ReturnType<typeof runningNext> }[] = [
    // 1. Still working: its figure recorded, then its budget.
    {
      name: "working: the budget is judged once its figure is recorded",
      facts: base({ kind: "waiting", reason: "agent is working" }),
      want: { kind: "gather", fact: "budgetWhileWorking" },
    },
    {
      name: "working, within budget: waiting",
      facts: base({ kind: "waiting", reason: "agent is working" }, { budgetWhileWorking: null }),
      want: { kind: "waiting", reason: "agent is working" },
    },
    {
      name: "working, over budget: stopped",
      facts: base({ kind: "waiting", reason: "agent is working" }, { budgetWhileWorking: reached("item") }),
      want: { kind: "budget", reached: reached("item") },
    },
    // 2. Ended: a budget due comes before whatever else it ended as.
    { name: "ended: the budget due is judged first", facts: base(exited), want: { kind: "gather", fact: "budgetDue" } },
    {
      name: "asked a question over budget: the budget, not the question",
      facts: base({ kind: "needs_input", question: "which?" }, { budgetDue: reached("loop") }),
      want: { kind: "budget", reached: reached("loop") },
    },
    {
      name: "lost over budget: the budget, not the loss",
      facts: base(lost, { budgetDue: reached("item") }),
      want: { kind: "budget", reached: reached("item") },
    },
    // 3. A question.
    {
      name: "asked a question: needs input",
      facts: base({ kind: "needs_input", question: "which?" }, { budgetDue: null }),
      want: { kind: "needs_input", question: "which?" },
    },
    // 4. Exited behind a gateway: the final figure's budget before the exit.
    {
      name: "exited behind a gateway: its final figure's budget is judged",
      facts: base(exited, { budgetDue: null, behindGateway: true }),
      want: { kind: "gather", fact: "budgetAtExit" },
    },
    {
      name: "exited behind a gateway over budget: stopped as a running one",
      facts: base(exited, { budgetDue: null, behindGateway: true, budgetAtExit: reached("item") }),
      want: { kind: "budget", reached: reached("item") },
    },
    {
      name: "exited behind a gateway within budget: exited",
      facts: base(exited, { budgetDue: null, behindGateway: true, budgetAtExit: null }),
      want: { kind: "exited", code: 0, signal: null, reason: "agent exited with code 0" },
    },
    // 5. The exit.
    {
      name: "exited: its end recorded",
      facts: base(exited, { budgetDue: null }),
      want: { kind: "exited", code: 0, signal: null, reason: "agent exited with code 0" },
    },
    // 6. Gone or stuck: drained only when the watcher named it and its record is there.
    {
      name: "lost after the watcher was stopped: drained",
      facts: base(lost, { budgetDue: null, drain }),
      want: { kind: "close", verdict: "drained", reason: expect.stringContaining("drained: session process vanished") as unknown as string },
    },
    {
      name: "lost without its record, after the watcher was stopped: lost",
      facts: base(lost, { budgetDue: null, drain, recordPresent: false }),
      want: { kind: "close", verdict: "lost", reason: lost.reason },
    },
    {
      name: "lost while the watcher ran its verify, not its session: lost",
      facts: base(lost, { budgetDue: null, drain: { ...drain, running: "verify" } }),
      want: { kind: "close", verdict: "lost", reason: lost.reason },
    },
    {
      name: "stalled: closed stalled",
      facts: base({ kind: "stalled", reason: "no progress for 601s" }, { budgetDue: null, drain }),
      want: { kind: "close", verdict: "stalled", reason: "no progress for 601s" },
    },
    {
      name: "never started: closed never_started",
      facts: base({ kind: "never_started", reason: "session did not start within 60s" }, { budgetDue: null }),
      want: { kind: "close", verdict: "never_started", reason: "session did not start within 60s" },
    },
  ];
  for (const c of cases) test(c.name, () => expect(runningNext(c.facts)).toEqual(c.want));
});
