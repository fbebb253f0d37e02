// lib/log/schema-check.ts must answer exactly as valibot's `is` for every event payload schema: a
// payload it accepts and valibot rejects would let replay fold an invalid event. Compared here on a
// valid sample of every event type and on every single-field mutation of each.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { EVENT_TYPES, type EventType, PAYLOADS } from "../../lib/log/events.ts";
import { compileCheck } from "../../lib/log/schema-check.ts";
import { UnsupportedSchemaError } from "../../lib/shared/errors.ts";
import {
  closed,
  control,
  definition,
  drained,
  ended,
  itemDef,
  landed,
  launch,
  loopStarted,
  requeued,
  reset,
  resetDone,
  settled,
  started,
  verified,
  verifyReserved,
  verifyStarted,
} from "../helpers/events.ts";

const SAMPLES: Record<EventType, unknown> = {
  store_opened: { schema: 2, tool: "loop" },
  store_bound: {
    project: { repo: "/srv/api", gitDir: "/srv/api/.git", root: ".", name: "api" },
    previous: { repo: "/old/api", gitDir: "/old/api/.git", root: ".", name: null },
    reason: "adopted",
  },
  definition_imported: definition(1, [itemDef("a"), itemDef("b", { dependsOn: ["a"], ref: "github:acme/api#7", verify: false })]).payload,
  loop_started: loopStarted.payload,
  review_required: { revision: 1, reasons: [{ code: "not_started", detail: "never started" }] },
  loop_reviewed: { revision: 1 },
  loop_paused: { reason: "needs input" },
  loop_resumed: {},
  loop_stopped: { reason: "stopped by alice" },
  control_recorded: control("a", "reply", "use the small patch").payload,
  launch_reserved: launch({ item: "a", attempt: 1 }).payload,
  session_started: started({ item: "a", attempt: 1 }).payload,
  launch_failed: { attempt: 1, reason: "runner not found", interrupted: false },
  worktree_moved: { from: "/srv/api/.loop/workspaces/a", to: "/home/me/.local/state/loop/api-0123456789ab/a" },
  workspace_prepared: { attempt: 1, builtOn: { ref: "main", commit: "0".repeat(40) }, setup: { ms: 1200, log: "/srv/api/.loop/sessions/a/1/setup.log" } },
  environment_fault: { kind: "program_not_found", attempt: null, reason: 'runner "claude": program "claude" was not found', fix: "install it" },
  session_ended: ended({ item: "a", attempt: 1, exitCode: 3 }).payload,
  needs_input: { attempt: 1, question: "which database?" },
  reply_recorded: { text: "postgres" },
  verify_reserved: verifyReserved({ item: "a", attempt: 1 }).payload,
  verify_started: verifyStarted({ item: "a", attempt: 1 }).payload,
  verify_finished: verified({ item: "a", attempt: 1, passed: false }).payload,
  item_requeued: requeued({ item: "a", attempt: 1 }).payload,
  item_settled: settled({ item: "a", attempt: 1, outcome: "passed" }).payload,
  landing_finished: { ...landed({ item: "a", attempt: 1 }).payload, code: "merged" },
  session_closed: closed({ item: "a", attempt: 1 }).payload,
  loop_drained: drained("Succeeded", { passed: 2 }).payload,
  loop_reopened: { reason: "new work items" },
  watcher_stopped: { attempt: 1, pid: 7, signal: "SIGTERM", signalledAt: "2026-01-01T00:00:00.000Z", running: "session" },
  lease_taken_over: { previous: { owner: "o", pid: 12, host: "h", started: "2026-01-01T00:00:00.000Z", expires: "2026-01-01T00:30:00.000Z" }, why: "dead" },
  work_item_reset: resetDone("a").payload,
  forge_pr_recorded: { attempt: 1, number: 12, url: "https://github.com/acme/api/pull/12", head: "a".repeat(40), draft: true, reused: false },
  forge_landing_waiting: { attempt: 1, code: "checks_pending", reason: "waiting for 1 of 3 checks", head: "b".repeat(40) },
  forge_thread_baselined: { issue: 7, highWater: 1002, comments: 3 },
  forge_comment_handled: { issue: 7, commentId: 1003, login: "alice", action: "control", detail: "/loop retry" },
  forge_question_posted: { attempt: 1, issue: 7, commentId: 1004 },
  forge_gave_up_posted: { attempt: 1, issue: 7, commentId: 1005 },
  tracker_issue_moved: { attempt: 1, issue: 7, move: "started", state: "In Progress" },
  tracker_outcome_posted: { attempt: 1, issue: 7, outcome: "passed", commentId: "2026-01-01T00:00:00.000Z~7a1e" },
  forge_reaction_recorded: {
    attempt: 1,
    head: "b".repeat(40),
    signals: [{ kind: "checksFailed", key: "checksFailed:bbbb", summary: "check run build concluded failure" }],
    decision: "retry",
    reason: "checks failed",
    feedback: "```text\nbuild\n```",
  },
  notified: { slot: "environment", key: "environment:12", kind: "environment", ok: false, exitCode: 3, reason: "notify exited 3" },
  usage_recorded: {
    attempt: 1,
    final: false,
    source: "claude",
    tokens: { input: 10, output: 20, cacheRead: 300, cacheWrite: 40 },
    microUsd: 12_345,
    usdFrom: "agent",
    note: null,
  },
  budget_stopped: { attempt: 1, scope: "item", window: "total", unit: "tokens", spent: 1200, limit: 1000, reason: "spent 1,200 tokens of 1,000" },
  base_verify_started: { key: "0123456789abcdef", verify: "npm test", setup: "npm ci", base: "main", commit: "a".repeat(40), dir: "/state/base-verify" },
  base_verify_finished: {
    key: "0123456789abcdef",
    code: "failed",
    exitCode: 1,
    quote: "Error: nope",
    log: "/state/base-verify/verify.log",
    ms: 1200,
    reason: "the verify exited 1: Error: nope",
  },
  base_verify_accepted: { key: "0123456789abcdef" },
};

const VALUES: unknown[] = [
  null,
  undefined,
  0,
  -0,
  -1,
  1,
  2,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2 ** 53,
  "",
  "x",
  "passed",
  "dead",
  true,
  false,
  [],
  {},
  ["x"],
  [1],
  { a: 1 },
  { a: "x" },
  // Keys that are special to objects: a parsed payload can carry any of them as own keys.
  JSON.parse('{"__proto__":1}'),
  JSON.parse('{"constructor":"x"}'),
  JSON.parse('{"toString":1}'),
  JSON.parse('{"hasOwnProperty":1}'),
];

/** Every value reachable in the sample, with a way to rebuild the sample with that value replaced or removed. */
function* mutations(sample: unknown): Generator<unknown> {
  for (const value of VALUES) yield value; // the whole payload replaced
  if (sample === null || typeof sample !== "object") return;
  const clone = () => structuredClone(sample) as Record<string, unknown>;
  if (!Array.isArray(sample)) {
    const extra = clone();
    extra.extra = 1;
    yield extra;
  } else {
    yield [...sample, "extra"];
    yield [...sample, 1];
  }
  for (const key of Object.keys(sample)) {
    const without = clone();
    delete without[key];
    yield without;
    for (const inner of mutations((sample as Record<string, unknown>)[key])) {
      const m = clone();
      m[key] = inner;
      yield m;
    }
  }
}

describe("compileCheck answers as valibot's is", () => {
  test("every event type has a valid sample", () => {
    for (const t of EVENT_TYPES) expect(v.is(PAYLOADS[t], SAMPLES[t]), t).toBe(true);
  });

  for (const t of EVENT_TYPES) {
    test(`${t}: the sample and each of its single-field mutations`, () => {
      const check = compileCheck(PAYLOADS[t]);
      let n = 0;
      for (const candidate of [SAMPLES[t], ...mutations(SAMPLES[t])]) {
        expect(check(candidate), `${t} ${JSON.stringify(candidate)}`).toBe(v.is(PAYLOADS[t], candidate));
        n++;
      }
      expect(n).toBeGreaterThan(VALUES.length);
    });
  }

  test("work_item_reset of the first format (pieces only) is still valid, with each later field optional", () => {
    const check = compileCheck(PAYLOADS.work_item_reset);
    for (const payload of [reset("a").payload, { pieces: [] }, { pieces: [], found: false }, { pieces: ["branch"], archivedBranch: null }]) {
      expect(check(payload), JSON.stringify(payload)).toBe(true);
      expect(v.is(PAYLOADS.work_item_reset, payload)).toBe(true);
    }
  });

  test("verify_started with a mechanism (and each mutation of it) answers as valibot; without one (older logs) it is valid", () => {
    const check = compileCheck(PAYLOADS.verify_started);
    const plain = verifyStarted({ item: "a", attempt: 1 }).payload;
    expect(check(plain)).toBe(true);
    const scoped = { ...plain, mechanism: { kind: "systemd_scope", unit: "loop-api-a-e0-a1-verify-1cdf3587.scope", manager: "system" } };
    const grouped = { ...plain, mechanism: { kind: "process_group", why: "systemd-run is not on PATH" } };
    for (const sample of [scoped, grouped]) {
      expect(v.is(PAYLOADS.verify_started, sample)).toBe(true);
      for (const candidate of [sample, ...mutations(sample)])
        expect(check(candidate), JSON.stringify(candidate)).toBe(v.is(PAYLOADS.verify_started, candidate));
    }
  });

  test("every sample against every other type's schema", () => {
    for (const t of EVENT_TYPES) for (const u of EVENT_TYPES) expect(compileCheck(PAYLOADS[t])(SAMPLES[u]), `${u} as ${t}`).toBe(v.is(PAYLOADS[t], SAMPLES[u]));
  });

  test("an optional entry without a default answers as valibot does", () => {
    const schema = v.strictObject({ a: v.optional(v.pipe(v.number(), v.safeInteger())), b: v.string() });
    const check = compileCheck(schema);
    for (const x of [
      { b: "" },
      { a: 1, b: "" },
      { a: undefined, b: "" },
      { a: "1", b: "" },
      { a: 1.5, b: "" },
      { a: null, b: "" },
      { a: 1 },
      { a: 1, b: "", c: 1 },
    ])
      expect(check(x), JSON.stringify(x)).toBe(v.is(schema, x));
  });

  test("a construct it does not know is refused when compiled, never guessed", () => {
    for (const schema of [
      v.strictObject({ a: v.nullish(v.string()) }),
      v.strictObject({ a: v.exactOptional(v.string()) }),
      v.strictObject({ a: v.optional(v.string(), "default") }),
      v.object({ a: v.string() }),
      v.pipe(v.string(), v.regex(/x/)),
      v.nullable(v.string(), "default"),
      v.date(),
    ])
      expect(() => compileCheck(schema as v.GenericSchema)).toThrow(UnsupportedSchemaError);
  });
});
