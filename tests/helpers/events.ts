// Synthetic event logs for pure reducer tests. Events are sealed exactly as the store seals them:
// the payload is stored as canonical JSON, the hash is sha256 over hashInput(row, payloadText), and
// each event's prev_hash is the previous event's hash (GENESIS_HASH for seq 1).
import { canonicalJson, GENESIS_HASH, sha256Hex } from "../../lib/log/canonical.ts";
import type { EventDraft, NormItemPayload, Payload, SettingsPayload, StoredEvent } from "../../lib/log/events.ts";
import { type EventRowBase, hashInput } from "../../lib/log/integrity.ts";
import type { SettleCode } from "../../lib/log/vocabulary.ts";

export type RowBase = EventRowBase;

/** Seal one event row: canonical payload, hash over every other column. */
export function seal(base: RowBase, payload: unknown): StoredEvent {
  const payloadText = canonicalJson(payload);
  const hash = sha256Hex(hashInput(base, payloadText));
  return { ...base, payload: JSON.parse(payloadText), hash } as StoredEvent;
}

const T0 = Date.parse("2025-01-01T00:00:00.000Z");

/** Builds a hash-chained log from drafts; ts advances one second per event unless a draft sets it. */
export class LogBuilder {
  readonly events: StoredEvent[] = [];
  private n = 0;

  constructor(opts: { open?: boolean } = {}) {
    if (opts.open !== false) this.push({ type: "store_opened", payload: { schema: 1, tool: "loop" } });
  }

  get seq(): number {
    return this.events.length;
  }
  get hash(): string {
    return this.events.at(-1)?.hash ?? GENESIS_HASH;
  }

  push(...drafts: EventDraft[]): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const d of drafts) {
      this.n++;
      const e = seal(
        {
          seq: this.seq + 1,
          id: d.id ?? `ev-${String(this.n).padStart(4, "0")}`,
          ts: d.ts ?? new Date(T0 + this.n * 1000).toISOString(),
          type: d.type,
          actor: d.actor ?? "loop",
          item: d.item ?? null,
          prev_hash: this.hash,
        },
        d.payload,
      );
      this.events.push(e);
      out.push(e);
    }
    return out;
  }

  /** Seal a draft as the next event without adding it (to probe what the reducer does with it). */
  next(d: EventDraft, over: Partial<RowBase> = {}): StoredEvent {
    return seal(
      {
        seq: this.seq + 1,
        id: d.id ?? `probe-${this.seq + 1}`,
        ts: d.ts ?? new Date(T0 + (this.n + 1) * 1000).toISOString(),
        type: d.type,
        actor: d.actor ?? "loop",
        item: d.item ?? null,
        prev_hash: this.hash,
        ...over,
      },
      d.payload,
    );
  }
}

/** Re-seal a list of rows as a fresh chain: seq 1.., prev_hash and hash recomputed. */
export function rechain(rows: { id: string; ts: string; type: string; actor: string; item: string | null; payload: unknown }[]): StoredEvent[] {
  const out: StoredEvent[] = [];
  let prev = GENESIS_HASH;
  rows.forEach((r, i) => {
    const e = seal({ seq: i + 1, id: r.id, ts: r.ts, type: r.type, actor: r.actor, item: r.item, prev_hash: prev }, r.payload);
    out.push(e);
    prev = e.hash;
  });
  return out;
}

// Payload builders ------------------------------------------------------------------------------

export const SETTINGS: SettingsPayload = {
  landing: "none",
  base: "main",
  target: "loop/test/landed",
  tmux: false,
  keepCheckoutOnClose: false,
  requireStartCommand: false,
  runners: {},
};

export function itemDef(id: string, over: Partial<NormItemPayload> = {}): NormItemPayload {
  return {
    id,
    ref: null,
    prompt: `do ${id}`,
    dependsOn: [],
    verify: "bun test",
    runner: "demo",
    model: null,
    maxAttempts: 2,
    timeouts: { launch: 300_000, stall: 3_600_000, verify: 900_000 },
    ...over,
  };
}

export function definition(revision: number, items: NormItemPayload[], name = "test"): EventDraft {
  return {
    type: "definition_imported",
    payload: { revision, hash: `def-${revision}`, name, settings: SETTINGS, items },
  };
}

/** The attempt an event is about: every attempt builder takes one object, named fields, no positional flags. */
export interface Attempt {
  item: string;
  attempt: number;
}

export function launch({ item, attempt, epoch = 0 }: Attempt & { epoch?: number }): EventDraft {
  return {
    type: "launch_reserved",
    item,
    payload: {
      attempt,
      key: `${item}:${epoch}:${attempt}`,
      runner: "demo",
      model: null,
      branch: `loop/test/${item}`,
      worktree: `/state/workspaces/${item}`,
      sessionDir: `/state/sessions/${item}/${epoch === 0 ? attempt : `e${epoch}-${attempt}`}`,
      sessionId: `s-${item}-${epoch}-${attempt}`,
    },
  };
}

export function started({ item, attempt }: Attempt): EventDraft {
  return {
    type: "session_started",
    item,
    payload: { attempt, pid: 4242, tmux: null, conversationId: null, argv: ["demo", "--go"], log: "agent.log", resumed: false },
  };
}

export function ended({ item, attempt, exitCode = 0 }: Attempt & { exitCode?: number }): EventDraft {
  return {
    type: "session_ended",
    item,
    payload: { attempt, verdict: "exited", exitCode, signal: null, reason: `exited ${exitCode}` },
  };
}

export function verifyReserved({ item, attempt, epoch = 0 }: Attempt & { epoch?: number }): EventDraft {
  const key = `verify:${item}:e${epoch}:a${attempt}`;
  return {
    type: "verify_reserved",
    item,
    id: key,
    payload: { attempt, key, command: "bun test", log: `/state/sessions/${item}/${attempt}/verify.log`, timeoutMs: 900_000 },
  };
}

export function verifyStarted({ item, attempt, ...o }: Attempt & { adopted?: boolean; deadline?: string }): EventDraft {
  return {
    type: "verify_started",
    item,
    payload: {
      attempt,
      pid: 4343,
      pgid: 4343,
      startTime: "123456",
      log: `/state/sessions/${item}/${attempt}/verify.log`,
      deadline: o.deadline ?? "2025-01-01T00:15:00.000Z",
      adopted: o.adopted ?? false,
    },
  };
}

export function verified({ item, attempt, passed }: Attempt & { passed: boolean }): EventDraft {
  return {
    type: "verify_finished",
    item,
    payload: {
      attempt,
      passed,
      exitCode: passed ? 0 : 1,
      timedOut: false,
      sha256: null,
      tail: passed ? "3 pass" : "1 fail",
      log: null,
      code: passed ? "passed" : "exit_nonzero",
      noProgress: false,
      reason: passed ? "verify passed" : "verify failed",
    },
  };
}

export function landed({ item, attempt }: Attempt): EventDraft {
  return {
    type: "landing_finished",
    item,
    payload: {
      attempt,
      outcome: "none",
      branch: `loop/test/${item}`,
      target: null,
      commit: null,
      code: "branch_delivered",
      reason: "the branch is the deliverable",
    },
  };
}

/** The code an item_settled of each outcome carries unless a test names another. */
const SETTLE_CODE = {
  passed: "passed",
  failed: "verify_failed",
  skipped: "operator_skipped",
  cancelled: "operator_cancelled",
  blocked: "dependency_failed",
  landing_blocked: "landing_blocked",
} as const satisfies Record<Payload<"item_settled">["outcome"], SettleCode>;

export function settled({
  item,
  attempt,
  outcome,
  reason = outcome,
  code = SETTLE_CODE[outcome],
}: Attempt & { outcome: Payload<"item_settled">["outcome"]; reason?: string; code?: SettleCode }): EventDraft {
  return { type: "item_settled", item, payload: { attempt, outcome, reason, code } };
}

export function requeued({
  item,
  attempt,
  reason = "verify failed, next attempt",
  ...opts
}: Attempt & { reason?: string; failed?: boolean; resetBudget?: boolean }): EventDraft {
  return { type: "item_requeued", item, payload: { attempt, reason, failed: opts.failed ?? true, resetBudget: opts.resetBudget ?? false } };
}

export function closed({ item, attempt, worktreeRemoved = true }: Attempt & { worktreeRemoved?: boolean }): EventDraft {
  return { type: "session_closed", item, payload: { attempt, how: "exited", worktreeRemoved, reason: "attempt decided" } };
}

export function control(item: string, verb: Payload<"control_recorded">["verb"], text: string | null = null, actor = "alice"): EventDraft {
  return { type: "control_recorded", item, actor, payload: { verb, text } };
}

export function reset(item: string, pieces: string[] = ["session", "control", "ledgers", "workspace"]): EventDraft {
  return { type: "work_item_reset", item, payload: { pieces } };
}

/** A reset as `loop reset` writes it: every field of the payload. */
export function resetDone(item: string, o: Partial<Payload<"work_item_reset">> = {}): EventDraft {
  return {
    type: "work_item_reset",
    item,
    payload: {
      pieces: ["session", "control", "ledger", "workspace", "branch"],
      found: true,
      wasLive: false,
      archivedBranch: `loop/test/reset/${item}/e0`,
      checkout: { outcome: "removed", path: `/state/workspaces/${item}`, why: null },
      aside: [],
      errors: [],
      ...o,
    },
  };
}

export const loopStarted: EventDraft = { type: "loop_started", payload: {} };

export function drained(outcome: Payload<"loop_drained">["outcome"], counts: Record<string, number>): EventDraft {
  return { type: "loop_drained", payload: { outcome, counts } };
}

/** One whole attempt that passes: launch, start, exit 0, verify pass, landing, settle, close. */
export function passingAttempt({ item, attempt = 1, epoch = 0 }: { item: string; attempt?: number; epoch?: number }): EventDraft[] {
  return [
    launch({ item, attempt, epoch }),
    started({ item, attempt }),
    ended({ item, attempt }),
    verified({ item, attempt, passed: true }),
    landed({ item, attempt }),
    settled({ item, attempt, outcome: "passed", reason: "verify passed" }),
    closed({ item, attempt }),
  ];
}

/** One whole attempt whose verify fails, then requeued (or, `last`, settled failed). */
export function failingAttempt({
  item,
  attempt = 1,
  last = false,
  epoch = 0,
}: {
  item: string;
  attempt?: number;
  last?: boolean;
  epoch?: number;
}): EventDraft[] {
  return [
    launch({ item, attempt, epoch }),
    started({ item, attempt }),
    ended({ item, attempt, exitCode: 1 }),
    verified({ item, attempt, passed: false }),
    last ? settled({ item, attempt, outcome: "failed", reason: "verify failed on the last attempt" }) : requeued({ item, attempt }),
    closed({ item, attempt }),
  ];
}
