// Logs written before verdicts had codes: their verify_finished, landing_finished and item_settled
// get a code from their words, once, in the fold (lib/log/legacy-codes.ts). The reasons of those logs
// are the words loop still writes beside the code (the renderers kept them), so each verdict rendered
// today, stripped of its code, must come back as the same code.
import { describe, expect, test } from "bun:test";
import { landingCodeOf, settleCodeOf, verifyCodeOf } from "../../lib/log/legacy-codes.ts";
import { noProgressReason } from "../../lib/decisions/guards.ts";
import { type VerifyVerdict, verifyReason } from "../../lib/decisions/verify-verdict.ts";
import type { EventDraft, Payload } from "../../lib/log/events.ts";
import { fold } from "../../lib/log/reducer.ts";
import { definition, ended, itemDef, launch, LogBuilder, loopStarted, started, verifyReserved } from "../helpers/events.ts";

const VERDICTS: { verdict: VerifyVerdict; exitCode?: number | null; timedOut?: boolean }[] = [
  { verdict: { code: "passed" }, exitCode: 0 },
  { verdict: { code: "exit_nonzero", exitCode: 2 }, exitCode: 2 },
  { verdict: { code: "killed", signal: "SIGKILL" } },
  { verdict: { code: "could_not_run", error: 'loop: cannot start "sh": ENOENT' }, exitCode: 127 },
  { verdict: { code: "timed_out", timeoutMs: 60_000 }, timedOut: true },
  { verdict: { code: "lost", why: "verify process vanished without an exit status" } },
  { verdict: { code: "never_started", why: "verify did not start within 60s" } },
  { verdict: { code: "verify_result_forged", file: "verify-exit.json", pid: 4242 }, exitCode: 0 },
  { verdict: { code: "no_command_passed", commits: 2 }, exitCode: 0 },
  { verdict: { code: "no_command_agent_failed", exitCode: 3 }, exitCode: 3 },
  { verdict: { code: "no_command_no_change" }, exitCode: 0 },
  { verdict: { code: "worktree_missing" } },
  {
    verdict: {
      code: "worktree_replaced",
      at: "leftovers",
      message: "worktree_replaced: /w/x is not the checkout loop made (it is a symbolic link to /r); nothing committed",
    },
  },
  {
    verdict: {
      code: "worktree_replaced",
      at: "sandbox",
      message: "no sandbox over /w/x: worktree_replaced: /w/x is not the checkout loop made (its .git is missing); nothing committed",
    },
  },
  { verdict: { code: "objects_refused", named: "objects/ab/cdef (holds 0123456789ab…, not the object its name says)" } },
  { verdict: { code: "object_store_tampered", objects: ["objects/12/3456: holds 6543"] } },
  { verdict: { code: "git_failed", check: "object_store", message: "git rev-parse failed (exit 128): fatal: x" } },
  { verdict: { code: "git_failed", check: "leftovers", message: "git add -A failed (exit 128): fatal: index.lock exists" } },
  { verdict: { code: "git_failed", check: "protected_paths", message: "git diff-tree failed (exit 128): fatal: x" } },
  { verdict: { code: "git_failed", check: "protected_bytes", message: "git ls-tree failed (exit 128): fatal: x" } },
  { verdict: { code: "git_failed", check: "owned_refs", message: "git for-each-ref failed (exit 128): fatal: x" } },
  { verdict: { code: "git_failed", check: "commits", message: "git rev-list failed (exit 128): fatal: x" } },
  { verdict: { code: "start_commit_missing", branch: "loop/t/item/a", recorded: "a".repeat(40), start: "main" } },
  { verdict: { code: "protected_path_changed", branch: "loop/t/item/a", paths: ["tests/check.sh"], start: "main", from: "b".repeat(40) } },
  {
    verdict: {
      code: "protected_bytes_differ",
      branch: "loop/t/item/a",
      head: "c".repeat(40),
      files: [{ path: "tests/check.sh", differs: "bytes", attributes: ["eol=crlf"] }],
    },
  },
  { verdict: { code: "owned_ref_changed", changes: ["item b's branch loop/t/item/b was moved from 1 to 2"] } },
];

/** A verify_finished as a version before codes wrote it: the same words, no code. */
function old(v: (typeof VERDICTS)[number], reason = verifyReason(v.verdict).reason): Payload<"verify_finished"> {
  const passed = v.verdict.code === "passed" || v.verdict.code === "no_command_passed";
  return { attempt: 1, passed, exitCode: v.exitCode ?? null, timedOut: v.timedOut ?? false, sha256: null, tail: "", log: null, reason };
}

describe("verifyCodeOf: a verdict of an older log", () => {
  for (const v of VERDICTS)
    test(`${v.verdict.code}: ${verifyReason(v.verdict).reason.slice(0, 60)}`, () => {
      expect(verifyCodeOf(old(v))).toEqual({ code: v.verdict.code, noProgress: false });
      // Named by the no-progress guard (its words first, before the flag existed): the same code, flagged.
      if (!old(v).passed) expect(verifyCodeOf(old(v, noProgressReason(verifyReason(v.verdict).reason)))).toEqual({ code: v.verdict.code, noProgress: true });
    });
  test("a verdict with its code is read as it says, whatever its words", () => {
    expect(verifyCodeOf({ ...old(VERDICTS[1]!), reason: "protected_path_changed: x", code: "exit_nonzero", noProgress: true })).toEqual({
      code: "exit_nonzero",
      noProgress: true,
    });
  });
  test("words no version matched here: failed with an exit code, or not run", () => {
    expect(verifyCodeOf({ ...old(VERDICTS[1]!), reason: "something else", exitCode: 1 }).code).toBe("exit_nonzero");
    expect(verifyCodeOf({ ...old(VERDICTS[1]!), reason: "something else", exitCode: null }).code).toBe("could_not_run");
  });
});

describe("landingCodeOf: a landing of an older log", () => {
  const landing = (outcome: Payload<"landing_finished">["outcome"], reason: string, code?: string): Payload<"landing_finished"> => ({
    attempt: 1,
    outcome,
    branch: "loop/t/item/a",
    target: null,
    commit: null,
    reason,
    ...(code !== undefined ? { code } : {}),
  });
  const cases: [Payload<"landing_finished">, string][] = [
    [landing("none", "branch loop/t/item/a is the deliverable"), "branch_delivered"],
    [landing("merged", "merged"), "merged"],
    [landing("already_contained", "already contained in loop/t/landed (at 0123456789ab): nothing was merged, nothing changed"), "already_contained"],
    [landing("conflict", "merge conflict in out.txt"), "conflict"],
    [
      landing("failed", "target_moved: the landing target loop/t/landed was moved from 1 to 2; loop does not merge on top (put it back: git update-ref …)"),
      "target_moved",
    ],
    [landing("failed", "worktree_replaced: /s/landing is not the checkout loop made (it is a symbolic link to /r); nothing merged"), "landing_replaced"],
    [landing("failed", "branch loop/t/item/a moved since its verify (verified 0123456789ab, now gone); nothing merged"), "branch_moved"],
    [landing("failed", "target branch loop/t/landed is checked out in /r; loop never merges into it"), "target_checked_out"],
    [landing("failed", "git merge failed: fatal: x"), "merge_failed"],
    // Through a forge, landings carried their code from the start.
    [landing("blocked", "checks not green on abc", "checks_failed"), "checks_failed"],
    [landing("pr_opened", "draft #3 https://x/3", "pr_opened"), "pr_opened"],
    [landing("blocked", "a refusal under a code no longer known", "behind_forever"), "refused"],
  ];
  for (const [p, code] of cases) test(`${p.outcome}: ${p.reason.slice(0, 50)} → ${code}`, () => expect(landingCodeOf(p)).toBe(code as never));
});

describe("settleCodeOf: a settlement of an older log", () => {
  const settled = (outcome: Payload<"item_settled">["outcome"], reason: string): Payload<"item_settled"> => ({ attempt: 1, outcome, reason });
  const cases: [Payload<"item_settled">, string][] = [
    [settled("passed", "verify passed (exit 0); merged"), "passed"],
    [settled("landing_blocked", "landing_blocked: checks not green"), "landing_blocked"],
    [settled("failed", "merge_conflict: merge conflict in out.txt"), "merge_conflict"],
    [settled("failed", "landing_failed: git merge failed: x"), "landing_failed"],
    [settled("failed", "budget_exhausted: a spent 120 tokens of its budget of 100"), "budget_exhausted"],
    [
      settled(
        "failed",
        "identical_failure: attempts 1 and 2 failed the same way (exit 1, verify output sha256 0123456789ab…), so no further attempt is made; verify failed: exit 1 (failed attempt 2 of 3)",
      ),
      "identical_failure",
    ],
    [settled("failed", "verify failed: exit 1 (failed attempt 2 of 2)"), "verify_failed"],
    [settled("failed", "no progress in the output for 601s (stall timeout 600s) (failed attempt 1 of 1)"), "session_failed"],
    [settled("skipped", "skipped by alice: not needed"), "operator_skipped"],
    [settled("skipped", "issue #7 is closed (https://x/7)"), "issue_closed"],
    [settled("skipped", "issue #7 was transferred to another repository"), "issue_gone"],
    [settled("cancelled", "cancelled by alice"), "operator_cancelled"],
    [settled("blocked", 'dependency "a" failed'), "dependency_failed"],
    [settled("blocked", 'dependency "a" is not an item of the loop'), "dependency_unknown"],
    [settled("blocked", 'dependency "a" was removed from the definition'), "dependency_removed"],
    [settled("blocked", "issue #9 could not be read for 5m (timeouts.launch): no answer; `loop ctl retry --work-item a` tries again"), "issue_unreadable"],
    [settled("blocked", "#9 is a pull request, not an issue; fix the item's ref"), "issue_ref_invalid"],
  ];
  for (const [p, code] of cases) test(`${p.outcome}: ${p.reason.slice(0, 50)} → ${code}`, () => expect(settleCodeOf(p)).toBe(code as never));
});

describe("the fold gives an older log's verdicts their codes", () => {
  test("verify_finished, landing_finished and item_settled without codes: the attempt and the item carry them", () => {
    const b = new LogBuilder();
    b.push(
      definition(1, [itemDef("a")]),
      loopStarted,
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      verifyReserved({ item: "a", attempt: 1 }),
    );
    // Events as an older loop wrote them: nothing writes these shapes any more, so the drafts are cast.
    b.push({ type: "verify_finished", item: "a", payload: old(VERDICTS[0]!) } as EventDraft);
    b.push({
      type: "landing_finished",
      item: "a",
      payload: { attempt: 1, outcome: "none", branch: "loop/t/item/a", target: null, commit: null, reason: "branch loop/t/item/a is the deliverable" },
    } as EventDraft);
    b.push({
      type: "item_settled",
      item: "a",
      payload: { attempt: 1, outcome: "passed", reason: "verify passed (exit 0); branch loop/t/item/a is the deliverable" },
    } as EventDraft);
    const it = fold(b.events).items.a!;
    expect(it.attempts[0]!.verify).toMatchObject({ code: "passed", noProgress: false, reason: "exit 0" });
    expect(it.attempts[0]!.landing).toMatchObject({ code: "branch_delivered", outcome: "none" });
    expect(it).toMatchObject({ status: "passed", settleCode: "passed" });
  });
});
