// loop.json's spend keys (docs/loop-json.md#budget, #prices, #guards): budgets, prices and guards as
// they are normalized (dollars in millionths: the log holds no fractions), what each refuses and
// where, and that a definition without them hashes as before (nothing is re-imported).
import { describe, expect, test } from "bun:test";
import { DefinitionError } from "../../lib/shared/errors.ts";
import { definitionHash, normalizeDefinition } from "../../lib/definition/normalize.ts";

const base = () =>
  ({
    name: "n",
    defaults: { verify: "true" },
    items: [
      { id: "a", prompt: "p" },
      { id: "b", prompt: "p" },
    ],
  }) as Record<string, any>;

function issues(raw: unknown): string[] {
  try {
    normalizeDefinition(raw);
  } catch (e) {
    if (e instanceof DefinitionError) return e.issues.map((i) => `${i.path}: ${i.message}`);
    throw e;
  }
  return [];
}

describe("budgets, prices and guards", () => {
  test("an item inherits defaults.budget; its own replaces it whole; {} is none", () => {
    const raw = base();
    raw.defaults.budget = { tokens: 1000, usd: 2.5 };
    raw.items[1].budget = { usd: 0.000001 };
    raw.items.push({ id: "c", prompt: "p", budget: {} });
    const d = normalizeDefinition(raw);
    expect(d.items.map((i) => i.budget ?? null)).toEqual([{ tokens: 1000, microUsd: 2_500_000 }, { microUsd: 1 }, null]);
  });

  test("the loop's budget, its daily part, prices in micro-dollars per million tokens, guards only when one is off", () => {
    const raw = base();
    raw.budget = { usd: 100, daily: { tokens: 5_000_000 } };
    raw.prices = { "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125 } };
    raw.guards = { identicalFailure: false };
    const d = normalizeDefinition(raw);
    expect(d.budget).toEqual({ microUsd: 100_000_000, daily: { tokens: 5_000_000 } });
    expect(d.prices).toEqual({ "gpt-5": { input: 1_250_000, output: 10_000_000, cacheRead: 125_000 } });
    expect(d.guards).toEqual({ noProgress: true, identicalFailure: false });
    const on = base();
    on.guards = { noProgress: true, identicalFailure: true };
    expect(normalizeDefinition(on).guards).toBeUndefined();
  });

  test("a definition without them hashes as before: an upgrade re-imports nothing", () => {
    const plain = normalizeDefinition(base());
    const withEmpty = base();
    withEmpty.budget = {};
    withEmpty.guards = {};
    withEmpty.defaults.budget = {};
    expect(definitionHash(normalizeDefinition(withEmpty))).toBe(definitionHash(plain));
    expect(Object.keys(plain)).not.toContain("budget");
  });

  const bad: [string, (r: Record<string, any>) => void, string][] = [
    ["tokens must be a whole number from 1", (r) => (r.items[0].budget = { tokens: 0 }), "items[0].budget.tokens: must be at least 1"],
    ["tokens not a fraction", (r) => (r.defaults.budget = { tokens: 1.5 }), "defaults.budget.tokens: must be a whole number of tokens"],
    ["dollars above 0", (r) => (r.budget = { usd: 0 }), "budget.usd: must be a number of US dollars above 0 (at most 1000000000)"],
    ["dollars as a number, not a string", (r) => (r.budget = { daily: { usd: "5" } }), "budget.daily.usd: must be a number of US dollars"],
    ["no dollars under a millionth", (r) => (r.budget = { usd: 0.0000001 }), "budget.usd: must be at least 0.000001 (a millionth of a dollar)"],
    ["an unknown key in a budget", (r) => (r.items[0].budget = { dollars: 5 }), "items[0].budget.dollars: unknown key (allowed: tokens, usd, $comment)"],
    ["a price needs input and output", (r) => (r.prices = { m: { input: 1 } }), "prices.m.output: required"],
    [
      "a price is not negative",
      (r) => (r.prices = { m: { input: -1, output: 1 } }),
      "prices.m.input: must be a price in US dollars per million tokens, from 0 to 1000000",
    ],
    [
      "a model named like an object's own property",
      (r) => (r.prices = JSON.parse('{"__proto__": {"input": 1, "output": 1}}')),
      'prices.__proto__: "__proto__" cannot be a model name here',
    ],
    ["a guard is true or false", (r) => (r.guards = { noProgress: "no" }), "guards.noProgress: must be true or false"],
  ];
  test.each(bad)("%s", (_name, mutate, issue) => {
    const raw = base();
    mutate(raw);
    expect(issues(raw)).toEqual([issue]);
  });
});
