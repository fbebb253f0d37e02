// The event vocabulary: every type, its payload shape (validated with valibot at the append
// boundary, before anything is written), and the row shape stored in `events`.
// docs/events.md documents each one; tests/cmd/docs.test.ts keeps the two lists equal.
import * as v from "valibot";
import { type Check, compileCheck } from "./schema-check.ts";
import {
  BASE_VERIFY_CODES,
  CONTROL_VERBS,
  DRAIN_OUTCOMES,
  REVIEW_CODES,
  END_VERDICTS,
  TRACKER_MOVES,
  LANDING_CODES,
  LANDING_OUTCOMES,
  type LandingCode,
  REACTION_DECISIONS,
  REACTION_SIGNALS,
  SETTLE_CODES,
  type SettleCode,
  SETTLED_OUTCOMES,
  VERIFY_CODES,
  type VerifyCode,
} from "./vocabulary.ts";

const Str = v.string();
const NStr = v.nullable(v.string());
const Int = v.pipe(v.number(), v.safeInteger());
const Pos = v.pipe(Int, v.minValue(1));
const NonNeg = v.pipe(Int, v.minValue(0));

const Timeouts = v.strictObject({ launch: Int, stall: Int, verify: Int, landing: v.optional(Int), setup: v.optional(Int) });
const NormItemSchema = v.strictObject({
  id: Str,
  ref: NStr,
  prompt: Str,
  dependsOn: v.array(Str),
  verify: v.union([Str, v.literal(false)]),
  runner: Str,
  model: NStr,
  maxAttempts: Pos,
  timeouts: Timeouts,
  // Present only for an item that runs in the sandbox (docs/runners.md#the-sandbox).
  sandbox: v.optional(v.literal("bwrap")),
  // Present only in a loop with a forge, and absent in logs written before reactions (docs/forge.md#reactions).
  reactions: v.optional(
    v.strictObject({
      checksFailed: v.picklist(REACTION_DECISIONS),
      changesRequested: v.picklist(REACTION_DECISIONS),
      conflict: v.picklist(REACTION_DECISIONS),
    }),
  ),
  // Present only for an item with a budget (docs/spend.md): tokens, and US dollars in millionths.
  budget: v.optional(v.strictObject({ tokens: v.optional(Pos), microUsd: v.optional(Pos) })),
  // What the session and the verify may reach (docs/loop-json.md#network): absent for "open".
  network: v.optional(v.union([v.literal("none"), v.array(Str)])),
  verifyNetwork: v.optional(v.union([v.literal("none"), v.array(Str)])),
});
const Forge = v.strictObject({
  provider: v.picklist(["github", "gitlab"]),
  repo: Str,
  apiUrl: Str,
  remote: Str,
  // Absent when loop.json gives none (the forge's own https URL, docs/loop-json.md#forge).
  gitUrl: v.optional(Str),
  tokenEnv: Str,
  authorizedUsers: v.array(Str),
  authorizeWriters: v.boolean(),
  pollInterval: Int,
});
// loop.json's Linear or Jira tracker (docs/trackers.md); absent when the forge is the tracker.
const TrackerSettings = v.strictObject({
  provider: v.picklist(["linear", "jira"]),
  apiUrl: Str,
  tokenEnv: Str,
  tokenKind: v.picklist(["personal", "oauth", "basic"]),
  email: v.optional(Str),
  key: Str,
  states: v.array(Str),
  labels: v.array(Str),
  jql: v.optional(Str),
  moveTo: v.strictObject({ started: v.optional(Str), completed: v.optional(Str), reset: v.optional(Str) }),
  authorizedUsers: v.array(Str),
  pollInterval: Int,
  // Present only when loop.json's tracker.query is true (docs/trackers.md#live-query).
  query: v.optional(v.literal(true)),
});
const Settings = v.strictObject({
  landing: v.picklist(["none", "merge", "pr"]),
  forge: v.optional(Forge),
  tracker: v.optional(TrackerSettings),
  // Present only when loop.json's tracker is "none" (the forge's issues and comments are not read).
  trackerNone: v.optional(v.literal(true)),
  base: Str,
  target: Str,
  tmux: v.boolean(),
  keepCheckoutOnClose: v.boolean(),
  requireStartCommand: v.boolean(),
  // Present only when control.review is on (docs/loop-json.md#control).
  review: v.optional(v.literal(true)),
  runners: v.record(Str, v.strictObject({ command: v.array(Str) })),
  // Present only when loop.json names protected paths (docs/loop-json.md#protect).
  protect: v.optional(v.array(Str)),
  // Present only when loop.json sets them (docs/spend.md): the loop's budget, the operator's prices
  // (micro-dollars per million tokens, by model) and the guards when one is turned off.
  budget: v.optional(
    v.strictObject({
      tokens: v.optional(Pos),
      microUsd: v.optional(Pos),
      daily: v.optional(v.strictObject({ tokens: v.optional(Pos), microUsd: v.optional(Pos) })),
    }),
  ),
  prices: v.optional(v.record(Str, v.strictObject({ input: NonNeg, output: NonNeg, cacheRead: v.optional(NonNeg), cacheWrite: v.optional(NonNeg) }))),
  guards: v.optional(v.strictObject({ noProgress: v.boolean(), identicalFailure: v.boolean() })),
  // Present only when loop.json sets them (docs/loop-json.md#workspace).
  setup: v.optional(Str),
  setupNetwork: v.optional(v.union([v.literal("open"), v.literal("none"), v.array(Str)])),
  setupKey: v.optional(v.array(Str)),
  stacked: v.optional(v.literal(true)),
  // The default verify checked on the base (absent without one, or with workspace.baseVerify false).
  baseVerify: v.optional(Str),
});

/** What `loop reset` did with an item's checkout. */
export const CHECKOUT_OUTCOMES = ["removed", "kept", "absent"] as const;
/** The pieces of an item's state `loop reset` erases, by their reported names (docs/cli/loop-reset.md). */
export const RESET_PIECES = ["session", "control", "ledger", "workspace", "branch"] as const;

/**
 * When the wrapper saw its process start and end (started.json, exit.json: docs/events.md#session_ended),
 * each an ISO time or null; absent where nothing was read, and in logs written before it existed.
 */
const WrapperTimes = v.optional(v.strictObject({ started: NStr, ended: NStr }));

const Verify = v.strictObject({
  attempt: Pos,
  passed: v.boolean(),
  exitCode: v.nullable(Int),
  timedOut: v.boolean(),
  sha256: NStr,
  tail: Str,
  log: NStr,
  reason: Str,
  times: WrapperTimes,
});

const LANDING = v.strictObject({
  attempt: Pos,
  outcome: v.picklist(LANDING_OUTCOMES),
  branch: Str,
  target: NStr,
  commit: NStr,
  reason: Str,
  // Landing through a forge named why it ended before every landing had a code (docs/forge.md#landing); absent otherwise.
  code: v.optional(Str),
});

const SETTLED = v.strictObject({ attempt: Int, outcome: v.picklist(SETTLED_OUTCOMES), reason: Str });

const Project = v.strictObject({ repo: Str, gitDir: Str, root: Str, name: NStr });

/** Tokens of an attempt by kind (docs/spend.md): their sum is its `tokens`. */
const TokenCountsSchema = v.strictObject({ input: NonNeg, output: NonNeg, cacheRead: NonNeg, cacheWrite: NonNeg });
/** Where an attempt's usage is read from (docs/spend.md#what-is-counted): a preset's output log, LOOP_USAGE_FILE, or the session's gateway. */
const USAGE_SOURCES = ["claude", "codex", "aider", "gemini", "opencode", "usage_file", "gateway"] as const;

const SESSION_STARTED = v.strictObject({
  attempt: Pos,
  pid: v.nullable(Int),
  tmux: NStr,
  conversationId: NStr,
  argv: v.array(Str),
  log: Str,
  resumed: v.boolean(),
});

/** What a session runs under (lib/supervisor/scope.ts SessionMechanism). */
const MECHANISM = v.union([
  v.strictObject({ kind: v.literal("systemd_scope"), unit: Str, manager: v.picklist(["system", "user"]) }),
  v.strictObject({ kind: v.literal("process_group"), why: Str }),
  v.strictObject({ kind: v.literal("tmux"), why: Str }),
]);

const LAUNCH_RESERVED = v.strictObject({
  attempt: Pos,
  key: Str,
  runner: Str,
  model: NStr,
  branch: Str,
  worktree: Str,
  sessionDir: Str,
  sessionId: Str,
});

// A comment id (docs/trackers.md#comment-ids): a number in logs written before trackers, the
// tracker's own string since; the reducer reads both as strings (projection.ts commentIdOf).
const CommentIdField = v.union([Pos, v.pipe(Str, v.minLength(1), v.maxLength(200))]);
const BASELINED = v.strictObject({ issue: Pos, highWater: v.union([Int, v.pipe(Str, v.minLength(1), v.maxLength(200))]), comments: Int });
const HANDLED = v.strictObject({
  issue: Pos,
  commentId: CommentIdField,
  login: Str,
  action: v.picklist(["control", "reply", "message", "refused"]),
  detail: Str,
});

const REQUEUED = v.strictObject({ attempt: Int, reason: Str, failed: v.boolean(), resetBudget: v.boolean() });

const VERIFY_RESERVED = v.strictObject({ attempt: Pos, key: Str, command: Str, log: Str, timeoutMs: Pos });

const VERIFY_STARTED = v.strictObject({
  attempt: Pos,
  pid: Pos,
  pgid: Pos,
  startTime: NStr,
  log: Str,
  deadline: Str,
  adopted: v.boolean(),
});

export const PAYLOADS = {
  store_opened: v.strictObject({ schema: Int, tool: Str }),
  store_bound: v.strictObject({ project: Project, previous: v.nullable(Project), reason: Str }),
  definition_imported: v.strictObject({
    revision: Pos,
    hash: Str,
    name: Str,
    settings: Settings,
    items: v.array(NormItemSchema),
  }),
  loop_started: v.strictObject({}),
  // The loop waits for a person's review before it launches anything (docs/events.md#review_required).
  review_required: v.strictObject({ revision: Pos, reasons: v.array(v.strictObject({ code: v.picklist(REVIEW_CODES), detail: Str })) }),
  // A person reviewed the definition of `revision` and started the loop (`loop ctl start`).
  loop_reviewed: v.strictObject({ revision: Pos }),
  // `cause` (absent in logs written before it existed): the question of the item in flight, or a person's verb.
  loop_paused: v.strictObject({
    reason: Str,
    cause: v.optional(
      v.union([
        v.strictObject({ kind: v.literal("question"), item: Str }),
        v.strictObject({ kind: v.literal("operator"), verb: v.picklist(["pause", "cancel"]) }),
      ]),
    ),
  }),
  loop_resumed: v.strictObject({}),
  loop_stopped: v.strictObject({ reason: Str }),
  control_recorded: v.strictObject({ verb: v.picklist(CONTROL_VERBS), text: NStr }),
  // `gitExec` (the digest of the repository's hooks and executable git config at the launch,
  // lib/repo/git-exec.ts) is absent in logs written before it existed.
  launch_reserved: v.union([LAUNCH_RESERVED, v.strictObject({ ...LAUNCH_RESERVED.entries, gitExec: Str })]),
  // `mechanism` may be absent: logs written before it existed have none (a process group, or tmux).
  // Two whole shapes rather than an optional entry, which the compiled checks refuse (schema-check.ts).
  // `start` (the commit the attempt's branch must contain: lib/decisions/branch.ts) and `branchAside`
  // (a branch no session of the item worked on, renamed before the branch was made) are absent in
  // logs written before they existed, and in a session adopted from a launch cut short.
  session_started: v.union([
    SESSION_STARTED,
    v.strictObject({ ...SESSION_STARTED.entries, mechanism: MECHANISM }),
    v.strictObject({ ...SESSION_STARTED.entries, mechanism: MECHANISM, start: Str, branchAside: v.nullable(v.strictObject({ branch: Str, commit: Str })) }),
    // `base`: the start point's commit at this launch, the newest base a rework may merge in (docs/threat-model.md#without-the-sandbox).
    v.strictObject({
      ...SESSION_STARTED.entries,
      mechanism: MECHANISM,
      start: Str,
      branchAside: v.nullable(v.strictObject({ branch: Str, commit: Str })),
      base: Str,
    }),
  ]),
  launch_failed: v.strictObject({ attempt: Pos, reason: Str, interrupted: v.boolean() }),
  // A worktree moved out of the state root (docs/events.md#worktree_moved); item null for the landing checkout.
  worktree_moved: v.strictObject({ from: Str, to: Str }),
  // The attempt's worktree made (docs/events.md#workspace_prepared): what its branch was created
  // from (null: the branch was there already), and workspace.setup's run (null: none ran).
  workspace_prepared: v.strictObject({
    attempt: Pos,
    builtOn: v.nullable(v.strictObject({ ref: Str, commit: Str })),
    // `reusedFrom`: the item whose setup made what was copied in instead of running it (null: it ran); absent in older logs.
    setup: v.nullable(v.strictObject({ ms: NonNeg, log: Str, reusedFrom: v.optional(v.nullable(Str)) })),
  }),
  environment_fault: v.strictObject({ kind: Str, attempt: v.nullable(Pos), reason: Str, fix: Str }),
  session_ended: v.strictObject({
    attempt: Pos,
    verdict: v.picklist(END_VERDICTS),
    exitCode: v.nullable(Int),
    signal: NStr,
    reason: Str,
    times: WrapperTimes,
  }),
  needs_input: v.strictObject({ attempt: Pos, question: Str }),
  reply_recorded: v.strictObject({ text: Str }),
  // `head` (the commit the verify runs on, the one landing delivers) is absent in logs written before it existed.
  verify_reserved: v.union([VERIFY_RESERVED, v.strictObject({ ...VERIFY_RESERVED.entries, head: Str })]),
  // `mechanism` may be absent (logs written before it existed; an adopted verify): as session_started.
  // `proof` (the SHA-256 of the secrets that prove its exit status, lib/supervisor/verify-command.ts)
  // is absent in logs written before it existed; with it, `mechanism` is null when unknown (adopted).
  verify_started: v.union([
    VERIFY_STARTED,
    v.strictObject({ ...VERIFY_STARTED.entries, mechanism: MECHANISM }),
    v.strictObject({ ...VERIFY_STARTED.entries, mechanism: v.nullable(MECHANISM), proof: v.strictObject({ pass: Str, fail: Str }) }),
  ]),
  // `code` (why, typed: docs/events.md#verify_finished) and `noProgress` are absent in logs written
  // before them: lib/log/legacy-codes.ts gives those a code. `noProgress` is a flag beside the code,
  // not a code of its own: the guard's finding (the attempt changed nothing) is a second fact about a
  // verdict that still failed in its own way (its exit code, a timeout, a protected path), which a
  // code of its own would hide.
  verify_finished: v.union([Verify, v.strictObject({ ...Verify.entries, code: v.picklist(VERIFY_CODES), noProgress: v.boolean() })]),
  // `drained` (the attempt died with a stopped watcher, lib/step/drain.ts) is absent in every other requeue, and in older logs.
  item_requeued: v.union([REQUEUED, v.strictObject({ ...REQUEUED.entries, drained: v.literal(true) })]),
  // `code` (docs/events.md#item_settled) is absent in logs written before it: lib/log/legacy-codes.ts gives those one.
  item_settled: v.union([SETTLED, v.strictObject({ ...SETTLED.entries, code: v.picklist(SETTLE_CODES) })]),
  // Every landing names why it ended with a `code` (docs/events.md#landing_finished); in logs written
  // before that, only a landing through a forge did (any string then), and lib/log/legacy-codes.ts
  // gives the others one.
  landing_finished: v.union([LANDING, v.strictObject({ ...LANDING.entries, code: v.picklist(LANDING_CODES) })]),
  session_closed: v.strictObject({
    attempt: Pos,
    how: Str,
    worktreeRemoved: v.boolean(),
    reason: Str,
    // The item branch's commit once the close path committed what was left (null: no such branch),
    // which it must keep until the item's next launch (docs/state.md#the-refs-loop-owns). Absent
    // in events written before it was recorded.
    head: v.optional(NStr),
  }),
  loop_drained: v.strictObject({ outcome: v.picklist(DRAIN_OUTCOMES), counts: v.record(Str, Int) }),
  loop_reopened: v.strictObject({ reason: Str }),
  // A `loop run --watch` stopped by a signal while an attempt was in flight (lib/step/drain.ts): what
  // ran beside it may die with it (a pod's end), which is then no fault of the attempt's.
  watcher_stopped: v.strictObject({ attempt: Pos, pid: Pos, signal: Str, signalledAt: Str, running: v.picklist(["session", "verify"]) }),
  lease_taken_over: v.strictObject({
    previous: v.strictObject({ owner: Str, pid: Int, host: Str, started: Str, expires: Str }),
    why: v.picklist(["dead", "expired"]),
  }),
  // Written by `loop reset` (lib/control/reset.ts). Every field but `pieces` is optional: events of
  // the first format carried only `pieces`, and the log is never rewritten.
  work_item_reset: v.strictObject({
    pieces: v.array(Str),
    found: v.optional(v.boolean()),
    wasLive: v.optional(v.boolean()),
    archivedBranch: v.optional(NStr),
    checkout: v.optional(v.strictObject({ outcome: v.picklist(CHECKOUT_OUTCOMES), path: NStr, why: NStr })),
    aside: v.optional(v.array(Str)),
    errors: v.optional(v.array(v.strictObject({ piece: Str, message: Str }))),
  }),
  forge_pr_recorded: v.strictObject({ attempt: Pos, number: Pos, url: Str, head: Str, draft: v.boolean(), reused: v.boolean() }),
  forge_landing_waiting: v.strictObject({ attempt: Pos, code: Str, reason: Str, head: Str }),
  // `through` (the creation time of the newest comment seen, null for threads with none) and
  // `createdAt` (the comment's) were added later: where the log's comment cursor starts (reducer readFrom).
  forge_thread_baselined: v.union([BASELINED, v.strictObject({ ...BASELINED.entries, through: NStr })]),
  forge_comment_handled: v.union([HANDLED, v.strictObject({ ...HANDLED.entries, createdAt: Str })]),
  forge_question_posted: v.strictObject({ attempt: Pos, issue: Pos, commentId: CommentIdField }),
  // An item whose agent gave up, said on its issue once per attempt (docs/runners.md#giving-up).
  forge_gave_up_posted: v.strictObject({ attempt: Pos, issue: Pos, commentId: CommentIdField }),
  // A Linear or Jira issue moved to the state loop.json's tracker.moveTo names (docs/trackers.md#states):
  // once per attempt for `started` and `completed`, once per reset (attempt 0: none yet) for `reset`.
  tracker_issue_moved: v.strictObject({ attempt: v.pipe(Int, v.minValue(0)), issue: Pos, move: v.picklist(TRACKER_MOVES), state: Str }),
  // What became of an item said on its Linear or Jira issue (docs/trackers.md#outcomes), once per attempt.
  tracker_outcome_posted: v.strictObject({ attempt: Pos, issue: Pos, outcome: v.picklist(SETTLED_OUTCOMES), commentId: CommentIdField }),
  // A reaction to what happened on the attempt's pull request (docs/forge.md#reactions): the signals
  // seen on `head` (each with the key that keeps it from triggering twice), what was decided, and
  // the bounded, fenced digest the next attempt is given ("" when it blocked).
  forge_reaction_recorded: v.strictObject({
    attempt: Pos,
    head: Str,
    signals: v.array(v.strictObject({ kind: v.picklist(REACTION_SIGNALS), key: Str, summary: Str })),
    decision: v.picklist(REACTION_DECISIONS),
    reason: Str,
    feedback: Str,
  }),
  // A send to a channel names it (`channel`), moves its cursor in the log when it says so, and when it
  // failed says when it may be tried again (`retryAt`). Absent for the command, and before channels.
  notified: v.strictObject({
    slot: Str,
    key: Str,
    kind: Str,
    ok: v.boolean(),
    exitCode: v.nullable(Int),
    reason: Str,
    channel: v.optional(Str),
    cursor: v.optional(Int),
    retryAt: v.optional(v.nullable(Str)),
  }),
  // What an attempt has used so far (docs/spend.md): a running figure at most once per tick, the final one at its session's end.
  usage_recorded: v.strictObject({
    attempt: Pos,
    final: v.boolean(),
    source: v.picklist(USAGE_SOURCES),
    tokens: v.nullable(TokenCountsSchema),
    microUsd: v.nullable(NonNeg),
    usdFrom: v.nullable(v.picklist(["agent", "prices"])),
    note: NStr,
  }),
  // The default verify run once on the base tree (docs/events.md#base_verify_started): before the
  // loop's first attempt and again when `verify` or `workspace.setup` change; `key` names that pair.
  base_verify_started: v.strictObject({ key: Str, verify: Str, setup: NStr, base: Str, commit: Str, dir: Str }),
  base_verify_finished: v.strictObject({
    key: Str,
    code: v.picklist(BASE_VERIFY_CODES),
    exitCode: v.nullable(Int),
    quote: Str,
    log: Str,
    ms: NonNeg,
    reason: Str,
  }),
  // A person accepted the base's failed verify (`loop ctl resume --yes`): not asked again for the same key.
  base_verify_accepted: v.strictObject({ key: Str }),
  // A budget was reached (docs/spend.md#at-a-limit): an item's (it settles failed) or the loop's (it pauses).
  budget_stopped: v.strictObject({
    attempt: NonNeg,
    scope: v.picklist(["item", "loop"]),
    window: v.picklist(["total", "daily"]),
    unit: v.picklist(["tokens", "usd"]),
    spent: NonNeg,
    limit: Pos,
    reason: Str,
  }),
} as const;

export type EventType = keyof typeof PAYLOADS;
export const EVENT_TYPES = Object.keys(PAYLOADS) as EventType[];
/**
 * A union of payload shapes read as one object: a field only some shapes have is optional. A schema
 * spells an optional field as two whole shapes (the compiled checks refuse optional entries:
 * schema-check.ts), one without it and one with it, and code reads `payload.field` either way.
 */
type KeysOf<U> = U extends unknown ? keyof U : never;
type FieldOf<U, K extends PropertyKey> = U extends unknown ? (K extends keyof U ? U[K] : never) : never;
type Merged<U> = [U] extends [Record<string, unknown>] ? { [K in keyof U]: FieldOf<U, K> } & { [K in Exclude<KeysOf<U>, keyof U>]?: FieldOf<U, K> } : U;
/** A payload of type T, as its schema types it (a field added to the schema is typed everywhere). */
export type Payload<T extends EventType> = Merged<v.InferOutput<(typeof PAYLOADS)[T]>>;
export type NormItemPayload = v.InferOutput<typeof NormItemSchema>;
export type SettingsPayload = v.InferOutput<typeof Settings>;
export type TokenCounts = v.InferOutput<typeof TokenCountsSchema>;
export type UsageSource = (typeof USAGE_SOURCES)[number];

/** An event as the caller proposes it; the store assigns seq, ts (unless given) and the hashes. */
export type EventDraft = {
  [T in EventType]: { type: T; item?: string | null; payload: DraftPayload<T>; id?: string; actor?: string; ts?: string };
}[EventType];

/**
 * What a new event of type T carries: its payload, and for a verdict its code (the schemas also
 * admit an older log's verdicts without one, which nothing writes any more).
 */
type DraftPayload<T extends EventType> = T extends "verify_finished"
  ? Payload<T> & { code: VerifyCode; noProgress: boolean }
  : T extends "landing_finished"
    ? Payload<T> & { code: LandingCode }
    : T extends "item_settled"
      ? Payload<T> & { code: SettleCode }
      : Payload<T>;

/** A stored event row of one type, its payload parsed (and typed by that type's schema). */
export interface StoredEventOf<T extends EventType> {
  seq: number;
  id: string;
  ts: string;
  type: T;
  actor: string;
  item: string | null;
  payload: Payload<T>;
  prev_hash: string;
  hash: string;
}

/** A stored event row, its payload parsed: a union over the types, so `type` narrows `payload`. */
export type StoredEvent = { [T in EventType]: StoredEventOf<T> }[EventType];

function isEventType(t: string): t is EventType {
  return Object.hasOwn(PAYLOADS, t);
}

let CHECKS: Record<EventType, Check> | null = null;
function compileChecks(): Record<EventType, Check> {
  return Object.fromEntries(EVENT_TYPES.map((t) => [t, compileCheck(PAYLOADS[t])])) as Record<EventType, Check>;
}

/** Validate a payload at the boundary; returns the issue text or null. */
export function payloadProblem(type: string, payload: unknown): string | null {
  if (!isEventType(type)) return `unknown event type "${type}"`;
  // Replay validates every payload of the log: a compiled check that allocates nothing answers
  // first; valibot itself explains a payload that fails (and stays the judge if the two disagree).
  if ((CHECKS ??= compileChecks())[type](payload)) return null;
  const r = v.safeParse(PAYLOADS[type], payload);
  if (r.success) return null;
  return r.issues.map((i) => `${v.getDotPath(i) ?? "payload"}: ${i.message}`).join("; ");
}
