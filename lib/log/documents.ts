// The documents materialized from the projection (state.json, terminal_state.json): pure
// functions of it, apart from the files lib/log/materialize.ts writes them to. `loop status` and
// `loop replay` render them to compare, so they do not load the writing side.
import { type ItemState, type LoopCause, type LoopRecord, type Projection, requireAttempt, requireItem, totalTokens } from "./projection.ts";
import type { TokenCounts } from "./events.ts";

export function counts(p: Projection): Record<string, number> {
  const c: Record<string, number> = {};
  for (const id of p.order) {
    const s = requireItem(p, id).status;
    c[s] = (c[s] ?? 0) + 1;
  }
  return c;
}

function lastVerify(p: Projection, id: string) {
  const it = requireItem(p, id);
  for (let i = it.attempts.length - 1; i >= 0; i--) {
    const v = it.attempts[i]!.verify;
    if (v)
      return {
        attempt: v.attempt,
        passed: v.passed,
        code: v.code,
        noProgress: v.noProgress,
        exitCode: v.exitCode,
        timedOut: v.timedOut,
        reason: v.reason,
        sha256: v.sha256,
        tail: v.tail,
      };
  }
  return null;
}

/**
 * state.json: the loop and every item, as of the projection's seq. `loop status` reports from this
 * document (read from the file when its hash matches the projection's `state_sha`), so it carries
 * every field status shows.
 */
export function stateDocument(p: Projection) {
  return {
    schema: "loop/state@1",
    seq: p.seq,
    hash: p.hash,
    loop: {
      name: p.loop.name,
      // Field by field, like landing below: the same text from a fold and from the tables.
      owner: p.loop.owner ? { repo: p.loop.owner.repo, gitDir: p.loop.owner.gitDir, root: p.loop.owner.root, name: p.loop.owner.name } : null,
      state: p.loop.state,
      reason: p.loop.reason,
      cause: causeView(p.loop.cause),
      revision: p.loop.revision,
      current: p.loop.current,
      outcome: p.loop.outcome,
      usage: loopUsage(p.loop),
      // control.review's record (docs/cli/loop-status.md), field by field; absent until a review was first asked for, so older stores' state.json stays the same text.
      ...(p.loop.review
        ? {
            review: {
              waiting: p.loop.review.waiting
                ? { reasons: p.loop.review.waiting.reasons.map((r) => ({ code: r.code, detail: r.detail })), seq: p.loop.review.waiting.seq }
                : null,
              reviewed: p.loop.review.reviewed,
            },
          }
        : {}),
    },
    counts: counts(p),
    items: p.order.map((id) => {
      const it = requireItem(p, id);
      return {
        id,
        ref: it.def.ref,
        status: it.status,
        reason: it.reason,
        // Why a settled item settled (item_settled's code); null while it is not settled.
        code: it.settleCode,
        inDefinition: it.inDefinition,
        epoch: it.epoch,
        attempts: it.attempts.length,
        failures: it.failures,
        maxAttempts: it.def.maxAttempts,
        dependsOn: it.def.dependsOn,
        branch: it.workspace?.branch ?? null,
        worktree: it.workspace?.present ? it.workspace.worktree : null,
        // What the branch was created from (docs/cli/loop-status.md), field by field as below.
        builtOn: it.workspace?.builtOn ? { ref: it.workspace.builtOn.ref, commit: it.workspace.builtOn.commit } : null,
        // How what setup made came into the checkout there now: run, or copied from what another item's setup made.
        setup: it.workspace?.present && it.workspace.setup ? { ms: it.workspace.setup.ms, reusedFrom: it.workspace.setup.reusedFrom } : null,
        question: it.question,
        session: it.session
          ? {
              attempt: it.session.attempt,
              runner: it.session.runner,
              model: it.session.model,
              pid: it.session.pid,
              tmux: it.session.tmux,
              conversationId: it.session.conversationId,
              log: it.session.log,
              startedAt: it.session.startedAt,
              endedAt: it.session.endedAt,
              // `head` only where it was recorded, so older stores' state.json stays the same text.
              closed: it.session.closed
                ? {
                    at: it.session.closed.at,
                    how: it.session.closed.how,
                    reason: it.session.closed.reason,
                    ...(it.session.closed.head !== undefined ? { head: it.session.closed.head } : {}),
                  }
                : null,
            }
          : null,
        lastVerify: lastVerify(p, id),
        // Built field by field: a projection read back from the tables has its nested objects in
        // canonical (sorted) key order, a fold has them in reducer order, and state.json must be
        // the same text for both.
        landing: it.landing
          ? { outcome: it.landing.outcome, code: it.landing.code, target: it.landing.target, commit: it.landing.commit, reason: it.landing.reason }
          : null,
        // Null until the item has a forge side (docs/forge.md#status), field by field as above.
        forge: it.forge ? forgeView(it.forge, it) : null,
        reset: it.reset ? { actor: it.reset.actor, at: it.reset.at } : null,
        // What the item's attempts used (docs/spend.md), and its budget.
        usage: itemUsage(it),
        budget: itemBudget(it),
      };
    }),
  };
}

/** The loop's cause field by field (a fold and the tables give its keys in different orders). */
function causeView(c: LoopCause | null) {
  if (c === null) return null;
  switch (c.kind) {
    case "question":
      return { kind: c.kind, item: c.item, seq: c.seq };
    case "fault":
      return { kind: c.kind, fault: c.fault, item: c.item, fix: c.fix, seq: c.seq };
    case "budget":
      return { kind: c.kind, seq: c.seq };
    case "operator":
      return { kind: c.kind, verb: c.verb, seq: c.seq };
  }
}

/** Dollars from the log's micro-dollars (null stays null: unknown, never zero). */
export function usd(micro: number | null): number | null {
  return micro === null ? null : micro / 1e6;
}

function breakdown(t: TokenCounts | null) {
  return { input: t?.input ?? null, output: t?.output ?? null, cacheRead: t?.cacheRead ?? null, cacheWrite: t?.cacheWrite ?? null };
}

/**
 * What an item's attempts of this epoch used (the one in flight so far included), field by field:
 * `tokens` and `usd` null when no attempt reported them, `unknown` counting the attempts that ran
 * without reporting, the breakdown when tokens are known, and `attempt`: the latest attempt's own
 * figure, once one is recorded. Null before any attempt ran. state.json holds this compact form
 * (the breakdown and `attempt` absent when unknown: every item is in the file);
 * fullUsage gives status's stable shape.
 */
export function itemUsage(it: ItemState) {
  const ran = it.attempts.filter((a) => a.startedAt !== null);
  if (ran.length === 0) return null;
  let tokens: TokenCounts | null = null;
  let micro: number | null = null;
  let unknownTokens = 0;
  let unknownUsd = 0;
  for (const a of ran) {
    const u = a.usage;
    if (u?.tokens) {
      const t: TokenCounts = tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      tokens = {
        input: t.input + u.tokens.input,
        output: t.output + u.tokens.output,
        cacheRead: t.cacheRead + u.tokens.cacheRead,
        cacheWrite: t.cacheWrite + u.tokens.cacheWrite,
      };
    } else unknownTokens += 1;
    if (u && u.microUsd !== null) micro = (micro ?? 0) + u.microUsd;
    else unknownUsd += 1;
  }
  const last = requireAttempt(it);
  const lu = last.usage;
  return {
    tokens: tokens ? totalTokens(tokens) : null,
    usd: usd(micro),
    ...(tokens ? breakdown(tokens) : {}),
    attempts: ran.length,
    unknown: { tokens: unknownTokens, usd: unknownUsd },
    ...(lu
      ? {
          attempt: {
            n: last.n,
            tokens: lu.tokens ? totalTokens(lu.tokens) : null,
            usd: usd(lu.microUsd),
            source: lu.source,
            usdFrom: lu.usdFrom,
            final: lu.final,
            note: lu.note,
          },
        }
      : {}),
  };
}

/** An item's usage in its full, stable shape (status, export): what state.json leaves out, as null. */
export function fullUsage(u: ReturnType<typeof itemUsage> | undefined) {
  if (!u) return null;
  const b = u as { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
  return {
    tokens: u.tokens,
    usd: u.usd,
    input: b.input ?? null,
    output: b.output ?? null,
    cacheRead: b.cacheRead ?? null,
    cacheWrite: b.cacheWrite ?? null,
    attempts: u.attempts,
    unknown: u.unknown,
    attempt: (u as { attempt?: unknown }).attempt ?? null,
  } as {
    tokens: number | null;
    usd: number | null;
    input: number | null;
    output: number | null;
    cacheRead: number | null;
    cacheWrite: number | null;
    attempts: number;
    unknown: { tokens: number; usd: number };
    attempt: { n: number; tokens: number | null; usd: number | null; source: string; usdFrom: string | null; final: boolean; note: string | null } | null;
  };
}

/** An item's budget (loop.json) and, when it stopped the item, what was spent of it. */
function itemBudget(it: ItemState) {
  const b = it.def.budget;
  const stop = it.budgetStop;
  if (!b && !stop) return null;
  return {
    tokens: b?.tokens ?? null,
    usd: usd(b?.microUsd ?? null),
    stopped: stop
      ? {
          attempt: stop.attempt,
          unit: stop.unit,
          spent: stop.unit === "usd" ? usd(stop.spent) : stop.spent,
          limit: stop.unit === "usd" ? usd(stop.limit) : stop.limit,
          reason: stop.reason,
          at: stop.at,
        }
      : null,
  };
}

/** What the loop's agents used over every attempt ever made (a reset gives nothing back), field by field. */
export function loopUsage(loop: Pick<LoopRecord, "usage">) {
  const u = loop.usage;
  const tokens = u && u.withTokens > 0 ? u.tokens : null;
  return {
    tokens: tokens ? totalTokens(tokens) : null,
    usd: usd(u && u.withUsd > 0 ? u.microUsd : null),
    ...breakdown(tokens),
    attempts: u?.sessions ?? 0,
    unknown: { tokens: (u?.sessions ?? 0) - (u?.withTokens ?? 0), usd: (u?.sessions ?? 0) - (u?.withUsd ?? 0) },
  };
}

function forgeView(f: NonNullable<Projection["items"][string]["forge"]>, it: Projection["items"][string]) {
  // The last reaction to the item's pull request (docs/forge.md#reactions), whichever attempt it was on.
  const reacted = [...it.attempts].reverse().find((a) => a.reaction !== null);
  const r = reacted?.reaction;
  return {
    pr: f.pr ? { number: f.pr.number, url: f.pr.url } : null,
    landing: f.landing ? { since: f.landing.since, code: f.landing.code, reason: f.landing.reason, head: f.landing.head } : null,
    lastComment: f.lastComment
      ? { id: f.lastComment.id, login: f.lastComment.login, action: f.lastComment.action, detail: f.lastComment.detail, at: f.lastComment.at }
      : null,
    baselined: f.highWater !== null,
    lastReaction: r ? { attempt: reacted!.n, head: r.head, decision: r.decision, signals: r.signals.map((x) => x.kind), reason: r.reason, at: r.at } : null,
  };
}

/** terminal_state.json: present exactly while the loop is drained. */
export function terminalDocument(p: Projection) {
  if (p.loop.state !== "drained") return null;
  return {
    schema: "loop/terminal@1",
    outcome: p.loop.outcome,
    drainedSeq: p.loop.drainedSeq,
    drainedAt: p.loop.drainedAt,
    counts: counts(p),
    items: p.order.map((id) => ({ id, status: requireItem(p, id).status, reason: requireItem(p, id).reason })),
  };
}

/** The text of a materialized document: one line of JSON. Indenting would make state.json a third
 * larger, and it is rendered (and hashed) after every commit and read by every `loop status`. */
export function jsonText(doc: unknown): string {
  return JSON.stringify(doc) + "\n";
}
