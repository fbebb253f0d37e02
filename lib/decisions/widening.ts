// What a definition change does to a loop under control.review (docs/loop-json.md#control): whether
// it widens what the loop may do (landing towards `merge`, a budget raised or removed, a network
// opened or widened, the sandbox turned off, a runner or model no item used, review itself turned
// off), named by typed reasons; and, on an import, whether the loop must wait for a person's review
// again. Adding items under unchanged settings widens nothing: a new item is compared with the widest
// item the loop already had. Pure: plain data in, plain data out (tests/decisions/widening.test.ts).
import type { NormItemPayload, SettingsPayload } from "../log/events.ts";
import type { LoopRecord, ReviewReason } from "../log/projection.ts";
import type { ReviewCode } from "../log/vocabulary.ts";
import { amount } from "./budget.ts";

/** A definition as a review reads it: what definition_imported records (its settings and items). */
export interface ReviewedDefinition {
  settings: Pick<SettingsPayload, "landing" | "runners" | "budget" | "setupNetwork" | "tracker"> & { review?: true };
  items: readonly Pick<NormItemPayload, "id" | "runner" | "model" | "sandbox" | "budget" | "network" | "verifyNetwork">[];
}

type Limit = { tokens?: number; microUsd?: number };
type Net = "open" | "none" | readonly string[];

const LANDING_RANK = { none: 0, pr: 1, merge: 2 } as const;

/** The ways `next` may do more than `prev`, one reason per kind of change (its detail names each change). */
export function widening(prev: ReviewedDefinition, next: ReviewedDefinition): ReviewReason[] {
  const found = new Map<ReviewCode, string[]>();
  const say = (code: ReviewCode, detail: string) => found.set(code, [...(found.get(code) ?? []), detail]);

  if (LANDING_RANK[next.settings.landing] > LANDING_RANK[prev.settings.landing])
    say("landing_widened", `landing ${prev.settings.landing} → ${next.settings.landing}`);
  if (prev.settings.review && !next.settings.review) say("review_off", "control.review turned off");
  if (!prev.settings.tracker?.query && next.settings.tracker?.query)
    say("tracker_query_on", "tracker.query turned on: each issue the tracker's filter selects becomes an item by itself");

  const loopB = prev.settings.budget;
  const nextB = next.settings.budget;
  budgetChange(say, "the loop's budget", limitOf(loopB), limitOf(nextB));
  budgetChange(say, "the loop's daily budget", limitOf(loopB?.daily), limitOf(nextB?.daily));
  netChange(say, "workspace.setupNetwork", setupNet(prev.settings.setupNetwork), setupNet(next.settings.setupNetwork));

  const before = new Map(prev.items.map((it) => [it.id, it]));
  const pairs = new Set(prev.items.map(runnerKey));
  for (const it of next.items) {
    const was = before.get(it.id);
    if (!pairs.has(runnerKey(it))) {
      say("runner_added", `${it.id} runs ${runnerName(it)}, which no item ran before`);
      pairs.add(runnerKey(it));
    }
    if (was) {
      budgetChange(say, `${it.id}'s budget`, limitOf(was.budget), limitOf(it.budget));
      if (was.sandbox && !it.sandbox) say("sandbox_off", `${it.id} no longer runs in the sandbox`);
      netChange(say, `${it.id}'s network`, itemNet(was.network), itemNet(it.network));
      netChange(say, `${it.id}'s verifyNetwork`, itemNet(was.verifyNetwork), itemNet(it.verifyNetwork));
      continue;
    }
    // A new item: compared with the widest the loop already allowed, so one added under the same
    // defaults asks nothing. A loop that had no item has nothing to compare with but its runners.
    if (prev.items.length === 0) continue;
    budgetChange(say, `${it.id}'s budget`, widestLimit(prev.items.map((p) => limitOf(p.budget))), limitOf(it.budget));
    if (!it.sandbox && prev.items.every((p) => p.sandbox)) say("sandbox_off", `${it.id} runs without the sandbox, which every item had`);
    netChange(say, `${it.id}'s network`, widestNet(prev.items.map((p) => itemNet(p.network))), itemNet(it.network));
    netChange(say, `${it.id}'s verifyNetwork`, widestNet(prev.items.map((p) => itemNet(p.verifyNetwork))), itemNet(it.verifyNetwork));
  }
  // A runner's command changed: what runs under its name is something else.
  const used = new Set(next.items.map((it) => it.runner));
  for (const [name, r] of Object.entries(next.settings.runners))
    if (used.has(name) && prev.settings.runners[name] && JSON.stringify(prev.settings.runners[name]!.command) !== JSON.stringify(r.command))
      say("runner_added", `the runner ${name}'s command changed`);

  return [...found].map(([code, details]) => ({ code, detail: details.join("; ") }));
}

/**
 * What an import of `next` records for a review (a review_required's reasons), or null when it
 * records nothing. `prev` is the definition the log held (null before the first import) and
 * `review` the loop's record of its reviews. A loop under control.review that no person has started
 * waits for its first review; one started before waits again when the change widens it. A reason
 * already waited for is not recorded twice, so an edit that adds nothing new says nothing new.
 */
export function reviewOnImport(o: { prev: ReviewedDefinition | null; next: ReviewedDefinition; review: LoopRecord["review"] }): ReviewReason[] | null {
  const on = o.next.settings.review === true;
  const wasOn = o.prev?.settings.review === true;
  if (!on && !wasOn) return null;
  const waiting = o.review?.waiting?.reasons ?? [];
  const never = (o.review?.reviewed ?? null) === null;
  const reasons: ReviewReason[] = never
    ? on
      ? [{ code: "not_started", detail: "no person has started this loop since control.review was turned on" }]
      : []
    : o.prev
      ? widening(o.prev, o.next)
      : [];
  const fresh = reasons.filter((r) => !waiting.some((w) => w.code === r.code && w.detail === r.detail));
  if (fresh.length === 0) return null;
  return [...waiting, ...fresh];
}

function runnerKey(it: Pick<NormItemPayload, "runner" | "model">): string {
  return JSON.stringify([it.runner, it.model]);
}

/** "claude (model opus)", or "claude (its default model)". */
export function runnerName(it: Pick<NormItemPayload, "runner" | "model">): string {
  return `${it.runner} (${it.model === null ? "its default model" : `model ${it.model}`})`;
}

function limitOf(b: Limit | undefined): Limit {
  return { ...(b?.tokens !== undefined ? { tokens: b.tokens } : {}), ...(b?.microUsd !== undefined ? { microUsd: b.microUsd } : {}) };
}

/** Per unit, the largest of the limits; a unit any of them leaves unbounded is unbounded. */
function widestLimit(ls: Limit[]): Limit {
  const out: Limit = {};
  for (const unit of ["tokens", "microUsd"] as const) if (ls.every((l) => l[unit] !== undefined)) out[unit] = Math.max(...ls.map((l) => l[unit]!));
  return out;
}

function budgetChange(say: (c: ReviewCode, d: string) => void, what: string, prev: Limit, next: Limit): void {
  for (const unit of ["tokens", "microUsd"] as const) {
    const a = prev[unit];
    const b = next[unit];
    if (a === undefined) continue;
    const u = unit === "tokens" ? "tokens" : "usd";
    if (b === undefined) say("budget_removed", `${what} of ${amount(u, a)} removed`);
    else if (b > a) say("budget_raised", `${what} ${amount(u, a)} → ${amount(u, b)}`);
  }
}

/** An item's network as loop.json means it: absent is the network as it is. */
function itemNet(n: "none" | string[] | undefined): Net {
  return n ?? "open";
}

/** workspace.setupNetwork: absent is the registries' list (lib/definition/network.ts), named as one entry. */
function setupNet(n: "open" | "none" | string[] | undefined): Net {
  return n ?? ["the package registries"];
}

function widestNet(ns: Net[]): Net {
  if (ns.includes("open")) return "open";
  const lists = ns.filter((n): n is readonly string[] => Array.isArray(n));
  return lists.length ? [...new Set(lists.flat())] : "none";
}

function netText(n: Net): string {
  return n === "open" ? "open" : n === "none" ? "none" : n.join(", ");
}

function netChange(say: (c: ReviewCode, d: string) => void, what: string, prev: Net, next: Net): void {
  if (prev === "open" || next === "none") return;
  const wider = next === "open" || prev === "none" || next.some((h) => !prev.includes(h));
  if (wider) say("network_widened", `${what} ${netText(prev)} → ${netText(next)}`);
}
