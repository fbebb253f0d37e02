// The projection: what the fold of the log holds (the loop, every item, its attempts, sessions,
// control and forge records), its empty start, and the read helpers every reader uses. Types and
// pure reads only; what an event does to it is lib/log/reducer.ts.
import type { NormItemPayload, Payload, SettingsPayload, TokenCounts, UsageSource } from "./events.ts";
import { GENESIS_HASH } from "./canonical.ts";
import type {
  AttemptEndVerdict,
  BaseVerifyCode,
  ControlVerb,
  DrainOutcome,
  ItemStatus,
  LandingCode,
  LandingOutcome,
  ReactionDecision,
  ReviewCode,
  SettleCode,
  TrackerMove,
  VerifyCode,
} from "./vocabulary.ts";

export type LoopState = "new" | "running" | "paused" | "stopped" | "drained";

interface VerifyRecord {
  attempt: number;
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  sha256: string | null;
  tail: string;
  log: string | null;
  /** Why the verdict is what it is; decisions read this, never `reason` (the reducer gives an older log's verdict one: lib/log/legacy-codes.ts). */
  code: VerifyCode;
  /** The no-progress guard named the failed verdict: the attempt changed nothing (docs/spend.md#guards). */
  noProgress: boolean;
  reason: string;
  at: string;
}

/**
 * An attempt's verify command as a process (verify_reserved, then verify_started): reserved under
 * its key before anything is spawned, observed by later steps until verify_finished.
 */
export interface VerifyRun {
  key: string;
  command: string;
  log: string;
  timeoutMs: number;
  reservedAt: string;
  /** The wrapper that runs the command, leader of its process group; null until verify_started. */
  pid: number | null;
  /** Its start time (/proc, clock ticks since boot): with the pid it names that process, never a later one. */
  startTime: string | null;
  startedAt: string | null;
  /** Past this, a step ends the verify and records it timed out. */
  deadline: string | null;
  /** The commit the verify runs on, which landing delivers (absent in logs from before it was recorded). */
  head?: string;
  /** The SHA-256 of the secrets its wrapper reveals in its exit status (absent in logs from before them). */
  proof?: { pass: string; fail: string };
}

export interface AttemptRecord {
  n: number;
  key: string;
  reservedAt: string;
  startedAt: string | null;
  end: { verdict: AttemptEndVerdict; exitCode: number | null; signal: string | null; reason: string; at: string } | null;
  launchFailed: string | null;
  question: string | null;
  verify: VerifyRecord | null;
  /** The attempt's verify command as a process, once reserved. */
  verifyRun: VerifyRun | null;
  /** "passed", "failed", "requeued:<reason>" once the attempt's fate is decided. */
  outcome: string | null;
  /** The digest of the repository's hooks and executable git config at its launch (absent in older logs). */
  gitExec?: string;
  /**
   * The commit this attempt's branch must contain: where loop made the branch in this epoch
   * (session_started's `start`; docs/threat-model.md#what-the-verify-runs). Absent in older logs
   * and in a session adopted from a launch cut short.
   */
  start?: string;
  /** The start point's commit at this attempt's launch: the newest base its branch may merge in (absent in older logs). */
  base?: string;
  /** How this attempt's landing ended (landing_finished); null until it did. */
  landing: LandingRecord | null;
  /** This attempt's landing wait through a forge (forge_pr_recorded, then forge_landing_waiting); null before its PR is recorded. */
  landingWait: LandingWait | null;
  /** What a reaction to this attempt's pull request decided (forge_reaction_recorded; docs/forge.md#reactions); null: none. */
  reaction: ReactionRecord | null;
  /** What the attempt used, as last recorded (usage_recorded; docs/spend.md); absent while nothing was. */
  usage?: AttemptUsage;
  /** The session continued an earlier conversation (session_started's `resumed`); absent otherwise. */
  resumed?: true;
  /** The watcher stopped while this attempt's session or verify ran (watcher_stopped); absent otherwise. */
  drain?: WatcherStop;
  /** It died with that watcher and was given back, uncounted (item_requeued's `drained`); absent otherwise. */
  drained?: true;
}

/** A `loop run --watch` stopped by a signal while an attempt was in flight (watcher_stopped). */
interface WatcherStop {
  /** The event's seq. */
  seq: number;
  pid: number;
  signal: string;
  /** When the signal reached the watcher. */
  signalledAt: string;
  running: "session" | "verify";
}

/** How a landing ended (landing_finished). */
interface LandingRecord {
  outcome: LandingOutcome;
  /** Why it ended so: decisions read this, never `reason`. */
  code: LandingCode;
  target: string | null;
  commit: string | null;
  reason: string;
}

/** A landing wait through a forge: since when (its deadline counts from there), why, and the head loop pushed. */
interface LandingWait {
  since: string;
  code: string;
  reason: string;
  head: string;
}

/** A reaction to what happened on a pull request (docs/forge.md#reactions), as forge_reaction_recorded says it. */
interface ReactionRecord {
  head: string;
  signals: Payload<"forge_reaction_recorded">["signals"];
  decision: ReactionDecision;
  reason: string;
  /** The digest the next attempt is given (fenced and bounded when it was recorded); "" when it blocked. */
  feedback: string;
  at: string;
}

/** An attempt's usage as recorded: null where the agent reported nothing (unknown, never zero). */
export interface AttemptUsage {
  source: UsageSource;
  tokens: TokenCounts | null;
  /** US dollars in millionths. */
  microUsd: number | null;
  /** Who gave the dollars: the agent, or the operator's prices in loop.json. */
  usdFrom: "agent" | "prices" | null;
  /** The figure of the session's end: nothing is recorded for the attempt after it. */
  final: boolean;
  /** What could not be read, when something could not. */
  note: string | null;
  at: string;
}

/** A budget reached (budget_stopped): what was spent of which limit. */
export interface BudgetStop {
  attempt: number;
  window: "total" | "daily";
  unit: "tokens" | "usd";
  spent: number;
  limit: number;
  reason: string;
  at: string;
}

/**
 * What the loop's agents used, over every attempt ever made (a reset does not give it back): the
 * sums of each attempt's latest figure, and the spend per hour of the last day for the daily budget.
 */
export interface LoopUsage {
  /** Sessions started: the attempts the agents ran. */
  sessions: number;
  /** Of them, how many reported tokens, and how many dollars (the rest are unknown). */
  withTokens: number;
  withUsd: number;
  tokens: TokenCounts;
  microUsd: number;
  /** Spend per UTC hour ("2025-06-01T09"), oldest first, for the hours of the last day that had any. */
  hours: { hour: string; tokens: number; microUsd: number }[];
}

/** A notification channel as the log has it (docs/operations.md#notification-channels). */
export interface ChannelState {
  /** The last event of the log it was told of, or decided it need not be told of. */
  cursor: number;
  /** Sends that failed in a row, the time it may be tried again, and the last failure's words. */
  failures: number;
  retryAt: string | null;
  lastError: string | null;
}

export function emptyLoopUsage(): LoopUsage {
  return { sessions: 0, withTokens: 0, withUsd: 0, tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, microUsd: 0, hours: [] };
}

/** All the tokens of a count: input, output, cache reads and cache writes. */
export function totalTokens(t: TokenCounts): number {
  return t.input + t.output + t.cacheRead + t.cacheWrite;
}

/** The UTC hour of an ISO time, as LoopUsage.hours names it. */
export function hourOf(iso: string): string {
  return iso.slice(0, 13);
}

export interface SessionRecord {
  attempt: number;
  runner: string;
  model: string | null;
  sessionId: string;
  conversationId: string | null;
  pid: number | null;
  tmux: string | null;
  argv: string[];
  sessionDir: string;
  log: string | null;
  worktree: string;
  branch: string;
  startedAt: string | null;
  endedAt: string | null;
  /** `head`: the item branch's commit when it closed (session_closed's), when recorded. */
  closed: { how: string; reason: string; at: string; head?: string | null } | null;
  /** Replies delivered to this session (by resume or handoff), as indexes into ledger.replies. */
  deliveries: number[];
}

export interface ControlRecord {
  verb: ControlVerb;
  actor: string;
  text: string | null;
  ts: string;
}

export interface ItemState {
  id: string;
  def: NormItemPayload;
  inDefinition: boolean;
  status: ItemStatus;
  reason: string | null;
  /** While the item is settled: why (item_settled's code); null otherwise. Decisions read this, never `reason`. */
  settleCode: SettleCode | null;
  epoch: number;
  settledAt: string | null;
  // ledgers
  attempts: AttemptRecord[];
  /** Failed attempts since the budget was last reset; compared with def.maxAttempts. */
  failures: number;
  replies: { text: string; actor: string; ts: string; delivered: number | null }[];
  question: string | null;
  // control
  control: ControlRecord[];
  held: boolean;
  started: boolean;
  // session and workspace
  session: SessionRecord | null;
  /**
   * `builtOn`: what the branch was created from (workspace_prepared); absent until recorded.
   * `setup`: how what setup made came into the checkout (workspace_prepared): run (`reusedFrom` null) or copied from the item named; absent until recorded, gone with the checkout.
   */
  workspace: {
    branch: string;
    worktree: string;
    present: boolean;
    builtOn?: { ref: string; commit: string };
    setup?: { ms: number; reusedFrom: string | null };
  } | null;
  /** The current attempt's landing record (AttemptRecord.landing), as refreshItemView derives it. */
  landing: LandingRecord | null;
  /** Null until the item has a forge side (a loop without a forge never gives it one). */
  forge: ForgeRecord | null;
  /** Who last reset the item, and when (the work_item_reset that began this epoch), or null. */
  reset: { actor: string; at: string } | null;
  /** The item's budget stopped it (budget_stopped, docs/spend.md); absent otherwise. */
  budgetStop?: BudgetStop;
}

/**
 * What the loop knows of an item's forge side (docs/forge.md). A ledger: `work_item_reset` forgets
 * it with the rest of the item, so after a reset the thread is first-sight again.
 */
export interface ForgeRecord {
  /** The item's pull request, once recorded; kept across attempts (a retry reuses it). */
  pr: { number: number; url: string; head: string; draft: boolean } | null;
  /** The current attempt's landing wait (AttemptRecord.landingWait), as refreshItemView derives it. */
  landing: LandingWait | null;
  /**
   * The comment high-water mark: comments with ids at or below it (compareCommentIds) are never
   * acted on. Null: not seen yet (first sight). A tracker's own id, as a string; logs written
   * before trackers recorded numbers, read as their decimal strings.
   */
  highWater: CommentId | null;
  /**
   * Where a listing of the item's comments starts so that it misses none above the mark: every
   * comment on its threads created before this time is at or below `highWater` (ids grow with
   * creation). The creation time, on the forge's clock, of the last comment handled, else of the
   * newest one its baseline saw; the baseline's own time (this machine's clock) when its threads
   * had none. The step's comment cursor is derived from it (lib/forge/comments.ts commentCursor).
   */
  readFrom: string | null;
  /** The last comment acted on. */
  lastComment: { id: CommentId; login: string; action: Payload<"forge_comment_handled">["action"]; detail: string; at: string } | null;
  /** Authorized comments for the agent (inbox and the next handoff), oldest first. */
  messages: { id: CommentId; login: string; text: string; at: string }[];
  /** The question posted on the issue for the current needs_input, by attempt. */
  questionPosted: { attempt: number; commentId: CommentId } | null;
  /** That the agent gave up, posted on the issue, by attempt; absent until it was (and in older logs). */
  gaveUpPosted?: { attempt: number; commentId: CommentId };
  /** A Linear or Jira issue's moves (docs/trackers.md#states): the attempt each was last made for (0: a reset's, before any); absent until one was. */
  trackerMoved?: Partial<Record<TrackerMove, number>>;
  /** The outcome said on the tracker's issue, by attempt; absent until it was. */
  outcomePosted?: { attempt: number; commentId: CommentId };
}

/**
 * A comment's id as its tracker gives it, a string whose order is the order of the comments
 * (docs/trackers.md#comment-ids): GitHub's, GitLab's and Jira's are decimal numbers; Linear's are
 * `<createdAt>~<uuid>`, which sort as text.
 */
export type CommentId = string;

/** The order of two comment ids: decimal strings by value, anything else as text (code units). */
export function compareCommentIds(a: CommentId, b: CommentId): number {
  const da = /^[0-9]+$/.test(a);
  const db = /^[0-9]+$/.test(b);
  if (da && db) {
    const x = a.replace(/^0+(?=.)/, "");
    const y = b.replace(/^0+(?=.)/, "");
    return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An id as the log holds it: a number in logs written before trackers (upcast here), a string since. */
export function commentIdOf(x: number | string): CommentId {
  return typeof x === "number" ? String(x) : x;
}

export function emptyForge(): ForgeRecord {
  return { pr: null, landing: null, highWater: null, readFrom: null, lastComment: null, messages: [], questionPosted: null };
}

/** The project a store belongs to (lib/log/ownership.ts), as recorded by `store_bound`. */
export interface OwnerRecord {
  repo: string;
  gitDir: string;
  root: string;
  name: string | null;
}

/**
 * Why the loop is paused or stopped, for decisions: the `reason` beside it is a sentence for people,
 * and nothing decides by its words. `seq` is the event that paused or stopped the loop.
 */
export type LoopCause =
  /** The item in flight asked a question (needs_input). */
  | { kind: "question"; item: string; seq: number }
  /** An environment fault (lib/decisions/faults.ts): its kind, the item it was met for, how to fix it. */
  | { kind: "fault"; fault: string; item: string | null; fix: string; seq: number }
  /** The loop's own budget (budget_stopped). */
  | { kind: "budget"; seq: number }
  /** A person: `loop ctl pause`, `stop`, `cancel` (or the same comment on the forge). */
  | { kind: "operator"; verb: "pause" | "stop" | "cancel"; seq: number };

export interface LoopRecord {
  name: string | null;
  /** The project this store belongs to; null until its first write binds it. */
  owner: OwnerRecord | null;
  state: LoopState;
  /** For people: why the loop is where it is. Decisions read `cause`. */
  reason: string | null;
  /** While paused or stopped: why, typed; null otherwise. */
  cause: LoopCause | null;
  revision: number;
  definitionHash: string | null;
  settings: SettingsPayload | null;
  current: string | null;
  outcome: DrainOutcome | null;
  startedAt: string | null;
  drainedAt: string | null;
  drainedSeq: number | null;
  updatedAt: string | null;
  /** While the loop is paused by an environment fault: its kind and the seq of the event. */
  fault: { kind: string; seq: number } | null;
  /** The last condition needing a person that `notify` was run for, by slot (lib/step/notify.ts). */
  notified: Record<string, string>;
  /** Each notification channel's place in the log and health, by its id; absent until one was used (lib/step/notify.ts). */
  channels?: Record<string, ChannelState>;
  /** What the agents used (docs/spend.md); absent until the first session starts. */
  usage?: LoopUsage;
  /** While the loop is paused by its budget: which, and the seq of the event (budget_stopped). */
  budgetStop?: (BudgetStop & { seq: number }) | null;
  /**
   * control.review (docs/loop-json.md#control); absent until the first review_required. `waiting`:
   * why nothing launches until a person starts the loop (`loop ctl start`), and the seq of the
   * review_required; `reviewed`: the revision a person last started it at.
   */
  review?: { waiting: { reasons: ReviewReason[]; seq: number } | null; reviewed: number | null };
  /** The default verify on the base tree (lib/step/base-verify.ts); absent until the first is started. */
  baseVerify?: BaseVerifyRecord;
}

/** One reason a loop waits for review: its typed code, and what changed, for people. */
export interface ReviewReason {
  code: ReviewCode;
  detail: string;
}

/** The last run of the default verify on the base tree, for the pair of verify and setup `key` names. */
export interface BaseVerifyRecord {
  key: string;
  /** running: started, not finished (a step cut short there; the next runs it again). accepted: failed, and a person accepted it. */
  status: "running" | "passed" | "failed" | "accepted";
  verify: string;
  setup: string | null;
  /** The commit of the base it ran on. */
  commit: string;
  startedAt: string;
  finishedAt: string | null;
  code: BaseVerifyCode | null;
  exitCode: number | null;
  /** The telling lines of its output (lib/supervisor/setup-command.ts setupQuote). */
  quote: string | null;
  log: string | null;
  /** Who accepted a failure, when one did. */
  acceptedBy: string | null;
}

export interface Projection {
  seq: number;
  hash: string;
  loop: LoopRecord;
  /** Items in presentation order: the current definition's order, then items no longer in it. */
  order: string[];
  items: Record<string, ItemState>;
}

export function emptyProjection(): Projection {
  return {
    seq: 0,
    hash: GENESIS_HASH,
    loop: {
      name: null,
      owner: null,
      state: "new",
      reason: null,
      cause: null,
      revision: 0,
      definitionHash: null,
      settings: null,
      current: null,
      outcome: null,
      startedAt: null,
      drainedAt: null,
      drainedSeq: null,
      updatedAt: null,
      fault: null,
      notified: {},
    },
    order: [],
    items: {},
  };
}

/**
 * The item with this id, if the projection has one. Use it wherever the id may be unknown:
 * `p.items` is a plain object, and an id like "constructor" would find Object's own property.
 */
export function itemOf(p: Pick<Projection, "items">, id: string): ItemState | undefined {
  return Object.hasOwn(p.items, id) ? p.items[id] : undefined;
}

/** The item with this id, which the projection must have (an id from its own order, or one just chosen from it): none is a bug, named. */
export function requireItem(p: Pick<Projection, "items">, id: string): ItemState {
  const it = itemOf(p, id);
  if (!it) throw new Error(`the projection has no item "${id}"`);
  return it;
}

/** The item's current attempt (its last), or null before its first. */
export function currentAttemptOf(it: ItemState): AttemptRecord | null {
  return it.attempts[it.attempts.length - 1] ?? null;
}

/** The current attempt of an item that must have one (every phase after a reservation): none is a bug, named. */
export function requireAttempt(it: ItemState): AttemptRecord {
  const a = currentAttemptOf(it);
  if (!a) throw new Error(`item ${it.id} has no attempt`);
  return a;
}

/**
 * The pieces of an item's state the log itself holds (docs/cli/loop-reset.md names them): a
 * session record, control records (commands, a hold, replies, a question), ledgers (attempts,
 * failures, verify and landing records, a settlement) and a checkout recorded present. What lives
 * only on disk (a session folder, a branch) is for `loop reset` to find; none of this is the epoch.
 * A per-item record a later feature adds must be named here under one of these pieces, and left out
 * of fresh(), so that a reset finds it and the boundary drops it: the forge side (a PR, the comment
 * baseline, messages for the agent) is ledger.
 * An attempt's verify run (`verifyRun`), its usage and an environment fault given back are ledger
 * (in `attempts`), and so is a budget stop (`budgetStop`, on a settled item); the fault pause, the
 * budget pause, the loop's usage, `notified` and the store's owner are the loop's, not an item's.
 */
export function recordedPieces(it: ItemState): ("session" | "control" | "ledger" | "workspace")[] {
  const out: ("session" | "control" | "ledger" | "workspace")[] = [];
  if (it.session) out.push("session");
  if (it.control.length > 0 || it.held || it.started || it.replies.length > 0 || it.question !== null) out.push("control");
  if (it.attempts.length > 0 || it.failures > 0 || it.landing !== null || it.forge !== null || (it.status !== "pending" && it.status !== "withdrawn"))
    out.push("ledger");
  if (it.workspace?.present) out.push("workspace");
  return out;
}
