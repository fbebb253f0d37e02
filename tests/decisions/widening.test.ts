// control.review's pure decisions with plain data: what a definition change widens
// (lib/decisions/widening.ts widening), what an import records for a review (reviewOnImport), and the
// review itself with the most the loop can spend (lib/decisions/review.ts reviewOf), over a folded log.
import { describe, expect, test } from "bun:test";
import { reviewOnImport, type ReviewedDefinition, widening } from "../../lib/decisions/widening.ts";
import { reviewLines, reviewOf } from "../../lib/decisions/review.ts";
import { fold } from "../../lib/log/reducer.ts";
import type { NormItemPayload, SettingsPayload } from "../../lib/log/events.ts";
import type { ReviewReason } from "../../lib/log/projection.ts";
import { itemDef, LogBuilder, SETTINGS } from "../helpers/events.ts";

type Item = ReviewedDefinition["items"][number];
const item = (id: string, over: Partial<Item> = {}): Item => ({
  id,
  runner: "claude",
  model: "opus",
  sandbox: "bwrap",
  network: "none",
  verifyNetwork: "none",
  ...over,
});
const def = (settings: Partial<ReviewedDefinition["settings"]>, items: Item[]): ReviewedDefinition => ({
  settings: { landing: "none", runners: {}, review: true, ...settings },
  items,
});
const BASE = def({ budget: { microUsd: 10_000_000, daily: { tokens: 1_000_000 } } }, [
  item("a", { budget: { tokens: 500_000 } }),
  item("b", { budget: { tokens: 500_000 } }),
]);
const LINEAR: NonNullable<ReviewedDefinition["settings"]["tracker"]> = {
  provider: "linear",
  apiUrl: "https://api.linear.app/graphql",
  tokenEnv: "LINEAR_API_KEY",
  tokenKind: "personal",
  key: "ENG",
  states: [],
  labels: ["agent"],
  moveTo: {},
  authorizedUsers: [],
  pollInterval: 60_000,
};
const codes = (prev: ReviewedDefinition, next: ReviewedDefinition): string[] => widening(prev, next).map((r) => r.code);

describe("widening: what a change lets the loop do that it could not", () => {
  const cases: [string, ReviewedDefinition, string[]][] = [
    ["nothing changed", BASE, []],
    ["an item added under the same settings", def(BASE.settings, [...BASE.items, item("c", { budget: { tokens: 500_000 } })]), []],
    ["an item removed", def(BASE.settings, [BASE.items[0]!]), []],
    ["a budget lowered", def({ ...BASE.settings, budget: { microUsd: 5_000_000, daily: { tokens: 1_000_000 } } }, [...BASE.items]), []],
    ["the landing none → merge", def({ ...BASE.settings, landing: "merge" }, [...BASE.items]), ["landing_widened"]],
    ["the landing none → pr", def({ ...BASE.settings, landing: "pr" }, [...BASE.items]), ["landing_widened"]],
    ["the loop's budget raised", def({ ...BASE.settings, budget: { microUsd: 20_000_000, daily: { tokens: 1_000_000 } } }, [...BASE.items]), ["budget_raised"]],
    ["the loop's budget removed", def({ ...BASE.settings, budget: undefined }, [...BASE.items]), ["budget_removed"]],
    ["an item's budget raised", def(BASE.settings, [item("a", { budget: { tokens: 900_000 } }), BASE.items[1]!]), ["budget_raised"]],
    ["an item's budget removed", def(BASE.settings, [item("a"), BASE.items[1]!]), ["budget_removed"]],
    ["a new item with a bigger budget than any", def(BASE.settings, [...BASE.items, item("c", { budget: { tokens: 2_000_000 } })]), ["budget_raised"]],
    ["an item's network opened", def(BASE.settings, [item("a", { budget: { tokens: 500_000 }, network: undefined }), BASE.items[1]!]), ["network_widened"]],
    [
      "an item's network none → a host",
      def(BASE.settings, [item("a", { budget: { tokens: 500_000 }, network: ["api.example.com"] }), BASE.items[1]!]),
      ["network_widened"],
    ],
    [
      "a new item whose verify reaches a host",
      def(BASE.settings, [...BASE.items, item("c", { budget: { tokens: 500_000 }, verifyNetwork: ["x.example"] })]),
      ["network_widened"],
    ],
    ["workspace.setupNetwork opened", def({ ...BASE.settings, setupNetwork: "open" }, [...BASE.items]), ["network_widened"]],
    ["tracker.query turned on", def({ ...BASE.settings, tracker: { ...LINEAR, query: true } }, [...BASE.items]), ["tracker_query_on"]],
    ["a Linear tracker without its query", def({ ...BASE.settings, tracker: LINEAR }, [...BASE.items]), []],
    [
      "the sandbox turned off for an item",
      def(BASE.settings, [item("a", { budget: { tokens: 500_000 }, sandbox: undefined }), BASE.items[1]!]),
      ["sandbox_off"],
    ],
    ["a model no item used", def(BASE.settings, [item("a", { budget: { tokens: 500_000 }, model: "sonnet" }), BASE.items[1]!]), ["runner_added"]],
    ["a runner no item used", def(BASE.settings, [...BASE.items, item("c", { budget: { tokens: 500_000 }, runner: "codex", model: null })]), ["runner_added"]],
    ["control.review turned off", def({ ...BASE.settings, review: undefined }, [...BASE.items]), ["review_off"]],
    [
      "landing and budget at once: each named",
      def({ ...BASE.settings, landing: "merge", budget: undefined }, [...BASE.items]),
      ["landing_widened", "budget_removed"],
    ],
  ];
  for (const [what, next, want] of cases) test(what, () => expect(codes(BASE, next)).toEqual(want));

  test("a runner's command changed is a new runner", () => {
    const prev = def({ runners: { mine: { command: ["mine", "{prompt}"] } } }, [item("a", { runner: "mine", model: null })]);
    const next = def({ runners: { mine: { command: ["mine", "--yolo", "{prompt}"] } } }, [item("a", { runner: "mine", model: null })]);
    expect(widening(prev, next)).toEqual([{ code: "runner_added", detail: "the runner mine's command changed" }]);
  });

  test("each reason names the change", () => {
    const next = def({ ...BASE.settings, landing: "merge", budget: { microUsd: 20_000_000, daily: { tokens: 1_000_000 } } }, [...BASE.items]);
    expect(widening(BASE, next)).toEqual([
      { code: "landing_widened", detail: "landing none → merge" },
      { code: "budget_raised", detail: "the loop's budget $10.00 → $20.00" },
    ]);
  });
});

describe("reviewOnImport: what an import records for a review", () => {
  const notStarted: ReviewReason = { code: "not_started", detail: "no person has started this loop since control.review was turned on" };
  test("a first import under control.review waits for the first review", () => {
    expect(reviewOnImport({ prev: null, next: BASE, review: undefined })).toEqual([notStarted]);
  });
  test("without control.review, nothing, ever", () => {
    const off = def({ review: undefined }, [item("a")]);
    expect(reviewOnImport({ prev: null, next: off, review: undefined })).toBeNull();
    expect(reviewOnImport({ prev: off, next: def({ review: undefined, landing: "merge" }, [item("a")]), review: undefined })).toBeNull();
  });
  test("a loop waiting for its first review: an edit asks nothing new", () => {
    const waiting = { waiting: { reasons: [notStarted], seq: 4 }, reviewed: null };
    expect(reviewOnImport({ prev: BASE, next: def({ ...BASE.settings, landing: "merge" }, [...BASE.items]), review: waiting })).toBeNull();
  });
  test("a started loop: a widening asks again, adding items does not", () => {
    const reviewed = { waiting: null, reviewed: 1 };
    expect(reviewOnImport({ prev: BASE, next: def(BASE.settings, [...BASE.items, item("c", { budget: { tokens: 1 } })]), review: reviewed })).toBeNull();
    expect(reviewOnImport({ prev: BASE, next: def({ ...BASE.settings, landing: "merge" }, [...BASE.items]), review: reviewed })).toEqual([
      { code: "landing_widened", detail: "landing none → merge" },
    ]);
  });
  test("a second widening while one waits keeps both", () => {
    const first = { code: "landing_widened" as const, detail: "landing none → merge" };
    const r = reviewOnImport({
      prev: BASE,
      next: def({ ...BASE.settings, budget: undefined }, [...BASE.items]),
      review: { waiting: { reasons: [first], seq: 9 }, reviewed: 1 },
    });
    expect(r!.map((x) => x.code)).toEqual(["landing_widened", "budget_removed"]);
  });
  test("control.review turned off after a start asks once more", () => {
    expect(
      reviewOnImport({ prev: BASE, next: def({ ...BASE.settings, review: undefined }, [...BASE.items]), review: { waiting: null, reviewed: 1 } })!.map(
        (x) => x.code,
      ),
    ).toEqual(["review_off"]);
  });
});

describe("reviewOf: the most the loop can spend is its budgets at the operator's prices", () => {
  // Prices in micro-dollars per million tokens: opus's dearest is $75 (output).
  const prices = { opus: { input: 15_000_000, output: 75_000_000 }, sonnet: { input: 3_000_000, output: 15_000_000 } };
  function projection(settings: Partial<SettingsPayload>, items: NormItemPayload[]) {
    const log = new LogBuilder();
    log.push({ type: "definition_imported", payload: { revision: 1, hash: "h1", name: "t", settings: { ...SETTINGS, review: true, ...settings }, items } });
    log.push({ type: "review_required", payload: { revision: 1, reasons: [{ code: "not_started", detail: "never" }] } });
    return fold(log.events);
  }
  test("items' dollar budgets summed", () => {
    const r = reviewOf(projection({}, [itemDef("a", { budget: { microUsd: 2_000_000 } }), itemDef("b", { budget: { microUsd: 3_500_000 } })]));
    expect(r.maxSpend).toBe(5.5);
    expect(r.items.map((it) => it.maxSpend)).toEqual([2, 3.5]);
    expect(r.reasons.map((x) => x.code)).toEqual(["not_started"]);
  });
  test("token budgets at the model's dearest price", () => {
    const r = reviewOf(
      projection({ prices }, [itemDef("a", { model: "opus", budget: { tokens: 100_000 } }), itemDef("b", { model: "sonnet", budget: { tokens: 1_000_000 } })]),
    );
    // 100k × $75/M = $7.50; 1M × $15/M = $15.
    expect(r.maxSpend).toBe(22.5);
  });
  test("the loop's budget bounds the sum", () => {
    const r = reviewOf(
      projection({ budget: { microUsd: 4_000_000 } }, [itemDef("a", { budget: { microUsd: 3_000_000 } }), itemDef("b", { budget: { microUsd: 3_000_000 } })]),
    );
    expect(r.maxSpend).toBe(4);
    expect(r.maxSpendText).toContain("at most $4.00");
  });
  test("no budget, or a token budget without a price: unbounded, said plainly", () => {
    expect(reviewOf(projection({}, [itemDef("a")])).maxSpend).toBeNull();
    const r = reviewOf(projection({}, [itemDef("a", { model: "opus", budget: { tokens: 100 } }), itemDef("b", { budget: { microUsd: 1_000_000 } })]));
    expect(r.maxSpend).toBeNull();
    expect(r.maxSpendText).toStartWith("no budget: unbounded");
  });
  test("the verify on the base: pending before it ran, then how it went for this verify and setup (docs/cli/loop-run.md#the-verify-on-the-base)", () => {
    expect(reviewOf(projection({}, [itemDef("a")])).baseVerify).toBeNull();
    expect(reviewOf(projection({ baseVerify: "npm test" }, [itemDef("a")])).baseVerify).toEqual({ verify: "npm test", status: "pending", quote: null });
    const log = new LogBuilder();
    log.push({
      type: "definition_imported",
      payload: { revision: 1, hash: "h1", name: "t", settings: { ...SETTINGS, baseVerify: "npm test" }, items: [itemDef("a")] },
    });
    log.push({ type: "loop_started", payload: {} });
    log.push({ type: "base_verify_started", payload: { key: "k1", verify: "npm test", setup: null, base: "main", commit: "c".repeat(40), dir: "/x" } });
    log.push({
      type: "base_verify_finished",
      payload: { key: "k1", code: "failed", exitCode: 1, quote: "FAIL src/a.test.js", log: "/x/verify.log", ms: 10, reason: "the verify failed on the base" },
    });
    const r = reviewOf(fold(log.events));
    expect(r.baseVerify).toEqual({ verify: "npm test", status: "failed", quote: "FAIL src/a.test.js" });
    expect(reviewLines(r).at(-2)).toBe(
      'verify on the base ("npm test"): FAILED: nothing launches until you fix it, or accept it with `loop ctl resume --yes` (FAIL src/a.test.js)',
    );
  });
  test("what the agents, the verifies and setup may reach, each said", () => {
    const plain = reviewOf(projection({}, [itemDef("a", { network: ["api.example.com"], verifyNetwork: "none" })]));
    expect([plain.network, plain.verifyNetwork, plain.setupNetwork]).toEqual(["only api.example.com, for every item", "none, for every item", "no setup"]);
    const registries = reviewOf(projection({ setup: "npm ci" }, [itemDef("a")]));
    expect(registries.setupNetwork).toStartWith("the package registries only");
    expect(reviewLines(registries)).toContain(`setup's network: ${registries.setupNetwork}`);
    expect(reviewOf(projection({ setup: "npm ci", setupNetwork: "open" }, [itemDef("a")])).setupNetwork).toBe("open (the network as it is)");
    expect(reviewOf(projection({ setup: "npm ci", setupNetwork: ["registry.internal"] }, [itemDef("a")])).setupNetwork).toBe("only registry.internal");
  });
  test("the landing says plainly what it does to the repository", () => {
    expect(reviewOf(projection({}, [itemDef("a")])).landing.effect).toContain("nothing is merged");
    expect(reviewOf(projection({ landing: "merge" }, [itemDef("a")])).landing.effect).toContain("MERGED into loop/test/landed");
  });
});
