// What needs a person is decided once (lib/decisions/attention.ts): `loop run` reads it from the
// projection, `loop status` (and so the page's banner and /metrics) from the state document. For
// each condition both inputs must give the same answer, with the command that fixes it.
import { describe, expect, test } from "bun:test";
import { attention, attentionOf, shellWord } from "../../lib/decisions/attention.ts";
import { attentionInputOf } from "../../lib/reports/status.ts";
import { fold } from "../../lib/log/reducer.ts";
import { stateDocument } from "../../lib/log/documents.ts";
import type { EventDraft } from "../../lib/log/events.ts";
import { definition, drained, ended, failingAttempt, itemDef, launch, LogBuilder, loopStarted, settled, started, verified } from "../helpers/events.ts";

function both(drafts: EventDraft[]) {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a"), itemDef("b", { dependsOn: ["a"] })]), loopStarted, ...drafts);
  const p = fold(b.events);
  const doc = stateDocument(p);
  const strip = ({ kind, item, reason, fix }: { kind: string; item: string | null; reason: string; fix: string[] }) => ({ kind, item, reason, fix });
  return { decided: attention(p).map(strip), shown: attentionOf(attentionInputOf(doc, p.loop.drainedSeq, "#")).map(strip) };
}

const landing = (outcome: string): EventDraft => ({
  type: "landing_finished",
  item: "a",
  payload: {
    attempt: 1,
    outcome: outcome as never,
    branch: "loop/t/item/a",
    target: "main",
    commit: null,
    code: outcome === "blocked" ? "checks_failed" : outcome === "failed" ? "merge_failed" : (outcome as never),
    reason: `landing ${outcome}`,
  },
});
const passedVerify = [
  launch({ item: "a", attempt: 1 }),
  started({ item: "a", attempt: 1 }),
  ended({ item: "a", attempt: 1 }),
  verified({ item: "a", attempt: 1, passed: true }),
];

const cases: { name: string; drafts: EventDraft[]; fix: RegExp | null }[] = [
  { name: "nothing wrong", drafts: [], fix: null },
  { name: "an operator's pause needs nobody else", drafts: [{ type: "loop_paused", payload: { reason: "paused by alice" } }], fix: null },
  {
    name: "a question",
    drafts: [
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      { type: "needs_input", item: "a", payload: { attempt: 1, question: "which port?" } },
      { type: "loop_paused", payload: { reason: "a needs input: which port?" } },
    ],
    fix: /^loop ctl reply --work-item a "<answer>" \| loop ctl resume$/,
  },
  {
    name: "an environment fault",
    drafts: [
      {
        type: "environment_fault",
        item: "a",
        payload: { kind: "program_not_found", attempt: null, reason: "claude is not on PATH", fix: "put it on PATH, then `loop ctl resume`" },
      },
    ],
    fix: /^put it on PATH, then `loop ctl resume`$/,
  },
  {
    name: "a merge conflict",
    drafts: [...passedVerify, landing("conflict"), settled({ item: "a", attempt: 1, outcome: "failed", reason: "merge conflict" })],
    fix: /loop ctl retry --work-item a$/,
  },
  {
    name: "a landing blocked on the forge",
    drafts: [...passedVerify, landing("blocked"), settled({ item: "a", attempt: 1, outcome: "landing_blocked", reason: "checks red" })],
    fix: /loop ctl retry --work-item a$/,
  },
  {
    name: "an agent that gave up",
    drafts: [
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1 }),
      {
        type: "verify_finished",
        item: "a",
        payload: {
          attempt: 1,
          passed: false,
          exitCode: null,
          timedOut: false,
          sha256: null,
          tail: "gave_up: …",
          log: null,
          code: "gave_up",
          noProgress: false,
          reason: "gave_up: the agent gave up: the spec is wrong",
        },
      },
      settled({
        item: "a",
        attempt: 1,
        outcome: "failed",
        reason: "gave_up: the agent gave up: the spec is wrong (attempt 1; not retried: a person decides)",
        code: "gave_up",
      }),
    ],
    fix: /loop ctl retry --work-item a \| or loop ctl skip --work-item a \| or loop reset --work-item a to start it over$/,
  },
  {
    name: "a Failed drain",
    drafts: [
      ...failingAttempt({ item: "a", attempt: 1, last: true }),
      settled({ item: "b", attempt: 0, outcome: "blocked", reason: "dependency failed" }),
      drained("Failed", { failed: 1, blocked: 1 }),
    ],
    fix: /^loop ctl retry --all-failed/,
  },
];

describe("attention: `loop status` (the page, /metrics) and `loop run` agree", () => {
  for (const c of cases)
    test(c.name, () => {
      const { decided, shown } = both(c.drafts);
      expect(shown).toEqual(decided);
      if (c.fix) expect(shown.map((a) => a.fix.join(" | ")).join("\n")).toMatch(c.fix);
      else expect(shown).toEqual([]);
    });
});

test("ids in a fixing command are quoted for a shell when they need it", () => {
  expect([shellWord("fix-login"), shellWord("github:acme/api#42"), shellWord("it's; rm -rf /")]).toEqual([
    "fix-login",
    "github:acme/api#42",
    `'it'\\''s; rm -rf /'`,
  ]);
});
