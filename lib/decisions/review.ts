// The review a person reads before a loop under control.review launches anything (docs/cli/loop-ctl.md#review-and-start):
// what it will run (each item's runner and model), what its landing does to the repository, where it
// runs (sandbox, network), its budgets and the most it can spend, and why it waits. Built from the
// projection alone (the imported definition: what a step will run), so `loop run` and `loop ctl start`
// show the same. Pure (tests/decisions/widening.test.ts).
import type { NormItemPayload } from "../log/events.ts";
import { type Projection, requireItem, type ReviewReason } from "../log/projection.ts";
import { isSettled } from "../log/vocabulary.ts";
import { usdText } from "./budget.ts";
import { type ReviewedDefinition, runnerName } from "./widening.ts";

export interface LoopReview {
  /** The definition's revision this review is of. */
  revision: number;
  /** Why the loop waits for review (empty when it does not). */
  reasons: ReviewReason[];
  /** The items that may still launch, in the loop's order. */
  items: {
    id: string;
    runner: string;
    model: string | null;
    sandbox: boolean;
    network: string;
    budget: { tokens: number | null; usd: number | null } | null;
    maxSpend: number | null;
  }[];
  landing: { mode: "none" | "merge" | "pr"; effect: string };
  sandbox: string;
  /** What the agents may reach. */
  network: string;
  /** What the verifies may reach (none in the sandbox unless loop.json says). */
  verifyNetwork: string;
  /** What setup may reach (workspace.setupNetwork: the package registries unless it says). */
  setupNetwork: string;
  budgets: { loop: { tokens: number | null; usd: number | null } | null; daily: { tokens: number | null; usd: number | null } | null };
  /** The most the loop can spend, in US dollars: its budgets at the operator's prices; null when no budget bounds it. */
  maxSpend: number | null;
  /** How maxSpend was reached, or "no budget: unbounded". */
  maxSpendText: string;
  /**
   * The default verify on the base (docs/cli/loop-run.md#the-verify-on-the-base): the command, and how
   * its last run for this verify and setup went (`pending` before one ran); null when it is off.
   */
  baseVerify: { verify: string; status: "pending" | "running" | "passed" | "failed" | "accepted"; quote: string | null } | null;
  /** The one command that starts the loop. */
  start: "loop ctl start";
}

type Item = Pick<NormItemPayload, "id" | "runner" | "model" | "sandbox" | "budget" | "network" | "verifyNetwork">;
type Prices = NonNullable<NonNullable<Projection["loop"]["settings"]>["prices"]>;

/** The review of the loop as the projection holds it. */
export function reviewOf(p: Projection): LoopReview {
  const s = p.loop.settings;
  const items: Item[] = p.order
    .map((id) => requireItem(p, id))
    .filter((it) => it.inDefinition && !isSettled(it.status) && it.status !== "withdrawn")
    .map((it) => it.def);
  const prices = s?.prices ?? {};
  const perItem = items.map((it) => itemBound(it, prices));
  const lb = s?.budget;
  const loopBound = min([
    lb?.microUsd ?? null,
    lb?.tokens !== undefined
      ? tokensAt(
          lb.tokens,
          items.map((it) => it.model),
          prices,
        )
      : null,
  ]);
  const sum = perItem.every((b) => b !== null) && items.length > 0 ? perItem.reduce((a, b) => a! + b!, 0)! : null;
  const bound = min([loopBound, sum]);
  const landing = s?.landing ?? "none";
  return {
    revision: p.loop.revision,
    reasons: p.loop.review?.waiting?.reasons ?? [],
    items: items.map((it, i) => ({
      id: it.id,
      runner: it.runner,
      model: it.model,
      sandbox: it.sandbox === "bwrap",
      network: netText(it.network),
      budget: it.budget ? { tokens: it.budget.tokens ?? null, usd: it.budget.microUsd !== undefined ? it.budget.microUsd / 1e6 : null } : null,
      maxSpend: perItem[i] === null ? null : perItem[i]! / 1e6,
    })),
    landing: { mode: landing, effect: landingEffect(landing, p) },
    sandbox: summary(items, (it) =>
      it.sandbox === "bwrap" ? "in the sandbox (bubblewrap)" : "no sandbox: the agent runs as your user, with your files in reach",
    ),
    network: summary(items, (it) => netText(it.network)),
    verifyNetwork: summary(items, (it) => netText(it.verifyNetwork)),
    setupNetwork: setupNetText(s?.setupNetwork, s?.setup !== undefined),
    budgets: { loop: budgetView(lb), daily: budgetView(lb?.daily) },
    maxSpend: bound === null ? null : bound / 1e6,
    maxSpendText:
      bound === null
        ? "no budget: unbounded (set budget.usd, or items' budgets with prices, in loop.json to bound it)"
        : `at most $${usdText(bound)} (${[loopBound !== null ? `the loop's budget: $${usdText(loopBound)}` : null, sum !== null ? `the items' budgets summed: $${usdText(sum)}` : null].filter(Boolean).join("; ")}, at the prices in loop.json)`,
    baseVerify: baseVerifyView(p),
    start: "loop ctl start",
  };
}

/** What the review says of the verify on the base: the last run's, when it was of the verify and setup in force. */
function baseVerifyView(p: Projection): LoopReview["baseVerify"] {
  const verify = p.loop.settings?.baseVerify;
  if (verify === undefined) return null;
  const last = p.loop.baseVerify;
  const current = last && last.verify === verify && last.setup === (p.loop.settings?.setup ?? null);
  return current ? { verify, status: last.status, quote: last.quote } : { verify, status: "pending", quote: null };
}

const BASE_VERIFY_SAID: Record<NonNullable<LoopReview["baseVerify"]>["status"], string> = {
  pending: "runs once before the first launch; if it fails, nothing launches and the loop waits for you",
  running: "running",
  passed: "passed",
  failed: "FAILED: nothing launches until you fix it, or accept it with `loop ctl resume --yes`",
  accepted: "failed, and accepted (the backlog's verify is meant to fail until its items land)",
};

/** The definition the log holds, as a review reads it (lib/decisions/widening.ts). */
export function definitionOfLog(p: Projection): ReviewedDefinition {
  return {
    settings: p.loop.settings!,
    items: p.order
      .map((id) => requireItem(p, id))
      .filter((it) => it.inDefinition)
      .map((it) => it.def),
  };
}

/** The review for people, one line each (loop run's stderr, loop ctl start's prompt; `started`: what `--yes` started). */
export function reviewLines(r: LoopReview, o: { started?: boolean } = {}): string[] {
  return [
    ...(r.reasons.length ? [`${o.started ? "it waited for review" : "waits for review"}: ${r.reasons.map((x) => `${x.code} (${x.detail})`).join("; ")}`] : []),
    `${r.items.length} item${r.items.length === 1 ? "" : "s"} to run:`,
    ...r.items.map((it) => `  ${it.id}: ${runnerName(it)}${it.budget ? `, budget ${budgetText(it.budget)}` : ""}`),
    `landing: ${r.landing.effect}`,
    `sandbox: ${r.sandbox}`,
    `network: ${r.network}`,
    `verify's network: ${r.verifyNetwork}`,
    `setup's network: ${r.setupNetwork}`,
    `budgets: ${r.budgets.loop ? `the loop ${budgetText(r.budgets.loop)}` : "no loop budget"}${r.budgets.daily ? `, daily ${budgetText(r.budgets.daily)}` : ""}`,
    `most it can spend: ${r.maxSpendText}`,
    ...(r.baseVerify
      ? [
          `verify on the base (${JSON.stringify(r.baseVerify.verify)}): ${BASE_VERIFY_SAID[r.baseVerify.status]}${r.baseVerify.quote ? ` (${r.baseVerify.quote})` : ""}`,
        ]
      : []),
    ...(o.started ? [] : [`to start it: ${r.start}`]),
  ];
}

function budgetText(b: { tokens: number | null; usd: number | null }): string {
  return [b.tokens !== null ? `${b.tokens.toLocaleString("en-US")} tokens` : null, b.usd !== null ? `$${usdText(Math.round(b.usd * 1e6))}` : null]
    .filter(Boolean)
    .join(" and ");
}

function budgetView(b: { tokens?: number; microUsd?: number } | undefined): { tokens: number | null; usd: number | null } | null {
  if (!b || (b.tokens === undefined && b.microUsd === undefined)) return null;
  return { tokens: b.tokens ?? null, usd: b.microUsd !== undefined ? b.microUsd / 1e6 : null };
}

/** What landing does to the repository, said plainly. */
function landingEffect(mode: "none" | "merge" | "pr", p: Projection): string {
  const s = p.loop.settings;
  const forge = s?.forge ? `${s.forge.provider} ${s.forge.repo}` : null;
  switch (mode) {
    case "none":
      return `none: each passed item's work stays on its own branch (loop/${p.loop.name ?? "<name>"}/item/<id>); nothing is merged and nothing is pushed`;
    case "pr":
      return `pr: each passed item is pushed to ${forge ?? "the forge"} and a pull request opened; loop merges nothing`;
    case "merge":
      return forge
        ? `merge: each passed item is pushed to ${forge} and its pull request MERGED into ${s?.target ?? "the target"}`
        : `merge: each passed item is MERGED into ${s?.target ?? "the target"} in this repository (nothing is pushed)`;
  }
}

/** One sentence for all items when they agree, else item by item. */
function summary(items: readonly Item[], say: (it: Item) => string): string {
  if (items.length === 0) return "no items";
  const all = new Set(items.map(say));
  if (all.size === 1) return `${[...all][0]}, for every item`;
  return items.map((it) => `${it.id}: ${say(it)}`).join("; ");
}

/** workspace.setupNetwork for people (lib/definition/network.ts setupAllowList gives the list it stands for). */
function setupNetText(n: "open" | "none" | string[] | undefined, hasSetup: boolean): string {
  if (!hasSetup) return "no setup";
  if (n === undefined) return "the package registries only (npm, PyPI, crates.io, the Go proxy, and those your registry variables name)";
  return n === "open" ? "open (the network as it is)" : netText(n);
}

function netText(n: "none" | string[] | undefined): string {
  return n === undefined ? "open (the network as it is)" : n === "none" ? "none" : `only ${n.join(", ")}`;
}

/** The most an item can spend, in micro-dollars: its dollar budget, or its tokens at its model's dearest price; null when unbounded or unpriced. */
function itemBound(it: Item, prices: Prices): number | null {
  return min([it.budget?.microUsd ?? null, it.budget?.tokens !== undefined ? tokensAt(it.budget.tokens, [it.model], prices) : null]);
}

/** Tokens at the dearest price of any of these models (micro-dollars per million tokens); null when one has no price. */
function tokensAt(tokens: number, models: readonly (string | null)[], prices: Prices): number | null {
  if (models.length === 0) return null;
  let rate = 0;
  for (const m of models) {
    const pr = m === null ? undefined : prices[m];
    if (!pr) return null;
    rate = Math.max(rate, pr.input, pr.output, pr.cacheRead ?? 0, pr.cacheWrite ?? 0);
  }
  return Math.ceil((tokens * rate) / 1e6);
}

function min(xs: (number | null)[]): number | null {
  const known = xs.filter((x): x is number => x !== null);
  return known.length ? Math.min(...known) : null;
}
