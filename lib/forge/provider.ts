// The forge boundary: what `loop` asks of a code-hosting service (github.ts, gitlab.ts). Every call
// returns a ForgeResult instead of throwing: a rate limit, a refusal and a network failure are
// outcomes the step names and records (docs/forge.md), not crashes. Results are in loop's words, the
// same for every forge: each provider translates its own vocabulary (GitHub's mergeable_state,
// GitLab's detailed_merge_status, their roles, their refusals) before it crosses this line, so the
// step, the planner and status never ask which forge they talk to. Everything a forge returns is
// untrusted text (lib/forge/untrusted.ts).

import type { NormForge } from "../definition/normalized.ts";
import type { CommentId } from "../log/projection.ts";

/** How the loop reaches its forge: loop.json's `forge` section, normalized (lib/definition/normalized.ts). */
export type ForgeSettings = NormForge;

interface ForgeIssue {
  number: number;
  title: string;
  body: string;
  state: "open" | "closed";
  url: string;
}

/** An open issue found by a search (`loop plan --issues`, `loop add --from-issues`). Untrusted text, as the forge gave it. */
export interface ForgeIssueFound {
  number: number;
  title: string;
  body: string;
  labels: string[];
  url: string;
}

/** An open pull request as a listing gives it: what the planner needs to skip issues it covers. */
export interface ForgePullSummary {
  number: number;
  title: string;
  body: string;
  url: string;
}

/**
 * A conversation loop reads and writes: an issue's, or a pull request's (GitLab: a merge request's).
 * GitHub numbers both in one space; GitLab gives issues and merge requests separate `iid`s, so a
 * thread is always named with its kind (`threadKey` says which threads are the same one).
 */
export interface ForgeThread {
  kind: "issue" | "pull";
  number: number;
}

export interface ForgeComment {
  /**
   * The tracker's own id, a string (docs/trackers.md#comment-ids). Ids only increase in the order
   * of compareCommentIds, across an item's issue and pull request threads alike (one high-water
   * mark covers both).
   */
  id: CommentId;
  /** The thread the comment is on. */
  thread: ForgeThread;
  login: string;
  body: string;
  createdAt: string;
  updatedAt: string;
}

/** A listing read page by page: `cut` when it held more than the provider reads at once (said by the caller). */
export interface ForgeListing<T> {
  items: T[];
  cut: boolean;
}

/**
 * What became of an issue an item names. `gone`: it cannot be worked here, and waiting will not
 * change that — transferred to another repository, deleted, missing (the repository answers, the
 * issue does not), or a pull request rather than an issue.
 */
export type IssueLookup = { kind: "issue"; issue: ForgeIssue } | { kind: "gone"; why: "transferred" | "deleted" | "missing" | "pull_request"; message: string };

/**
 * Whether the forge itself would merge now, in loop's words (checks aside: loop reads them itself).
 * `wait`: not yet (still computing, a merge in progress, its own checks still running);
 * `block`: something waiting cannot fix (a conflict, unresolved discussions, missing approvals, a
 * branch that must be rebased, …), named.
 */
export type Mergeability =
  | { kind: "ready" }
  | { kind: "wait"; code: "mergeable_unknown" | "not_mergeable_yet"; reason: string }
  | { kind: "block"; code: MergeBlock; reason: string };
export type MergeBlock = "conflict" | "discussions" | "approvals" | "changes_requested" | "rebase" | "blocked" | "draft" | "refused";

export interface ForgePull {
  number: number;
  /** How people name it: "pull request #12" (GitHub), "merge request !12" (GitLab). */
  label: string;
  url: string;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
  /** What the forge says about merging it now; a listing does not say (`wait`): ask the pull request itself. */
  mergeability: Mergeability;
  headSha: string;
  headRef: string;
  baseRef: string;
  mergeCommitSha: string | null;
}

/**
 * What a check means for a merge, the same for every provider: `passing` (finished and not
 * red), `failing` (finished red, or a result loop does not know), `pending` (not finished).
 */
export type CheckVerdict = "passing" | "failing" | "pending";

/** One check run or commit status on a sha. */
export interface ForgeCheck {
  name: string;
  /** What kind of check it is on the forge ("check run", "status", "combined status"). */
  source: string;
  /** The forge's own word for its result (a conclusion, a state, or its status while it runs). */
  conclusion: string;
  verdict: CheckVerdict;
  /** One line for people: the name, and why it counts as it does. */
  detail: string;
  /** The provider's own handle of it ("check-run:9", "status:ci/x", "pipeline:12", "job:34"), for `checkFailures`; absent where there is none. */
  handle?: string;
}

/**
 * Why a check failed, in the forge's words (docs/forge.md#what-the-rework-is-told):
 * untrusted text, sanitized, bounded and fenced by whoever shows it.
 */
export interface CheckFailure {
  name: string;
  /** The forge's word for how it ended (GitHub: the conclusion; GitLab: the job's failure_reason). */
  reason: string;
  /** GitHub: the check run's output title and summary, as its app wrote them; GitLab: empty (jobs have none). */
  title: string;
  summary: string;
  /** Annotations on lines of files (GitHub check runs), the first ones the forge gives; GitLab: none. */
  annotations: CheckAnnotation[];
  /** The end of its log, at most the bytes asked for (GitLab: the job's trace); empty where the forge keeps none. */
  logTail: string;
  url: string;
}

export interface CheckAnnotation {
  path: string;
  line: number | null;
  /** notice, warning or failure (GitHub's annotation_level). */
  level: string;
  message: string;
}

/**
 * What a reviewer said on a pull request that asks for a change (`changesRequested`, docs/forge.md#reactions):
 * a review requesting changes (GitHub), or a comment on a line of the diff (GitHub: a review
 * comment; GitLab: the notes of an unresolved diff discussion). Untrusted text; who wrote it is
 * checked against the forge's allow-list rules by the caller, fail closed.
 */
export interface ReviewFeedback {
  /** Unique across kinds and never reused: "review:<id>", "comment:<id>" (GitHub), "note:<id>" (GitLab). */
  id: string;
  kind: "changes_requested" | "diff_comment";
  login: string;
  body: string;
  /** The file and line of the diff it is on; null for a review's own body. */
  path: string | null;
  line: number | null;
  createdAt: string;
}

/** Every check on a sha; `unread` says why the list is not complete (the merge gate then blocks). */
export interface ForgeChecks {
  checks: ForgeCheck[];
  unread: string | null;
}

/** Why opening a pull request was refused (a 422): each is its own case for the landing. */
export type PullRefusal = "draft_unsupported" | "no_commits" | "exists" | "invalid";

export type CreatePullOutcome = { kind: "created"; pull: ForgePull } | { kind: "refused"; code: PullRefusal; message: string };

/** Issues a search found: `notes` says what was left out or not searched (foreign results, an incomplete search, the cap). */
export interface IssueSearch {
  issues: ForgeIssueFound[];
  notes: string[];
}

export type MergeOutcome =
  | { kind: "merged"; sha: string | null }
  /** The forge accepted the merge but has not finished it: read the pull request again next tick. */
  | { kind: "merging"; message: string }
  | { kind: "head_moved"; message: string }
  /** Refused: `wait` when waiting may fix it (the forge still computing, its checks running), else a refusal to name. */
  | { kind: "not_mergeable"; wait: boolean; message: string };

export type ForgeFailure =
  /** 403/429 rate limit (primary or secondary): try again at retryAt (epoch ms). */
  | { ok: false; kind: "rate_limited"; retryAt: number; message: string }
  /** Any other HTTP answer that is not the success asked for. */
  | { ok: false; kind: "http"; status: number; message: string }
  /** No answer: DNS, connection, TLS, no answer before the deadline, a body that is not JSON. */
  | { ok: false; kind: "network"; message: string };

export type ForgeResult<T> = { ok: true; value: T } | ForgeFailure;

/** Cached answers of conditional requests (ETag / If-None-Match), kept across steps by the caller. */
export interface ConditionalCache {
  get(key: string): CachedAnswer | undefined;
  set(key: string, entry: CachedAnswer): void;
}
/** An answer kept for its ETag; `link` is its Link header (the next page of a listing), absent in entries older than it. */
export interface CachedAnswer {
  etag: string;
  body: unknown;
  link?: string | null;
}

/**
 * The tracker: where items and their conversation live (docs/trackers.md). Issues (found by a
 * search, read one by one), the comments on them (the control channel: keywords, questions and
 * replies) and who may give loop orders there. GitHub and GitLab are trackers and code hosts at once;
 * Linear (lib/forge/linear.ts) is a tracker only.
 */
export interface Tracker {
  /** The same string for two threads the tracker numbers alike (GitHub: an issue and a pull request share numbers). */
  threadKey(thread: ForgeThread): string;
  /** How people name a thread: "#12", "!12" for a GitLab merge request, "ENG-12" for a Linear issue. */
  threadLabel(thread: ForgeThread): string;
  /**
   * Whether the tracker answers at all, and takes loop's key: one cheap call that names no issue
   * (Linear: the key's user; Jira: /myself; GitHub: the repository; GitLab: the project). Asked when
   * an issue cannot be read, to tell a tracker that is down from one issue's trouble
   * (docs/trackers.md#a-tracker-that-is-down).
   */
  reachable(): Promise<ForgeResult<void>>;
  /** The issue, or why it is gone; a pull request's number is not an issue. */
  getIssue(number: number): Promise<ForgeResult<IssueLookup>>;
  /** The comments of one thread, oldest first, the tracker's own notes (system notes) left out (capped: see the provider; the newest are always read). */
  listThreadComments(thread: ForgeThread): Promise<ForgeResult<ForgeListing<ForgeComment>>>;
  /**
   * Comments created or edited at or after `since`, on `threads` at least (a provider may return
   * comments of other threads too: GitHub reads the repository's one listing; GitLab asks which of
   * these threads changed and reads those), in the order of their last edit (so the last one read
   * is where the next listing starts); conditional requests when nothing changed. `cut`: more
   * remain, to be read from the last one's `updatedAt`.
   */
  listComments(o: { since: string; threads: ForgeThread[] }): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>>;
  createComment(thread: ForgeThread, body: string): Promise<ForgeResult<{ id: CommentId; url: string }>>;
  /**
   * Whether the user may give loop orders (authorizeWriters): GitHub, a base role of write,
   * maintain or admin (never a custom role's name); GitLab, a project member with at least the
   * Developer role; Linear, a user loop.json's tracker names. A user the tracker does not know is
   * `false`, an answer, not a failure.
   */
  canWrite(login: string): Promise<ForgeResult<boolean>>;
  /** Open issues (never pull requests) matching `search`, in the tracker's own search syntax (Linear: loop.json's filter, `search` ignored). */
  searchOpenIssues(search: string): Promise<ForgeResult<IssueSearch>>;
}

/** A move of an issue to a named state: done, or a state the tracker does not have (or cannot reach from the issue's), a named fault. */
export type MoveOutcome = { kind: "moved" } | { kind: "unknown_state"; message: string };

/** Linear or Jira (loop.json's `tracker`): a tracker that also moves its issues through their workflow (docs/trackers.md#states). */
export interface KeyedTrackerClient extends Tracker {
  /** Move issue `number` to the state named `state`; already there: nothing is done, `moved`. */
  moveIssue(number: number, state: string): Promise<ForgeResult<MoveOutcome>>;
}

/** The code host: where the code lands (push, pull requests, checks, reviews, merge). */
interface CodeHost {
  /** What the forge calls what loop opens: "pull request" (GitHub), "merge request" (GitLab). */
  readonly pullNoun: string;
  /** The pull request (any state) whose head is `branch` of this repository, open first, else the newest; null if none. */
  findPull(branch: string): Promise<ForgeResult<ForgePull | null>>;
  createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<CreatePullOutcome>>;
  getPull(number: number): Promise<ForgeResult<ForgePull>>;
  /**
   * Every check on `sha` (GitHub: check runs and commit statuses; GitLab: pipelines and commit
   * statuses, jobs and external ones). `pull`: the pull request whose head `sha` is (GitLab: its
   * merged-results and merge-train pipelines run on the merge ref, not on `sha`).
   */
  checks(sha: string, o?: { pull?: number }): Promise<ForgeResult<ForgeChecks>>;
  /** Merge with the head sha loop saw green; a moved head or an unmergeable PR is an outcome, not a failure. */
  merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>>;
  /**
   * What a failing check (one `checks` returned) says about itself, for a rework's feedback:
   * GitHub, the check run's output title, summary and annotations (a status: its description);
   * GitLab, the failed jobs of a pipeline (or the job a status is), each with its failure reason and
   * the tail of its log (at most `tailBytes`). Empty when the forge keeps nothing more.
   */
  checkFailures(check: ForgeCheck, o: { tailBytes: number }): Promise<ForgeResult<CheckFailure[]>>;
  /**
   * What reviewers asked of pull request `number`, oldest first: GitHub, reviews whose state is
   * CHANGES_REQUESTED and every review comment on the diff; GitLab, the notes of unresolved diff
   * discussions. Conditional requests; `cut` when there were more than the provider reads.
   */
  reviewFeedback(number: number): Promise<ForgeResult<ForgeListing<ReviewFeedback>>>;
  /** The open pull requests of the repository, up to the provider's page cap; `cut` when there were more. */
  openPulls(): Promise<ForgeResult<ForgeListing<ForgePullSummary>>>;
}

/** A GitHub or GitLab provider: the tracker and the code host in one, as loop.json's `forge` names it. */
export interface ForgeProvider extends Tracker, CodeHost {
  readonly settings: ForgeSettings;
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface ProviderOptions {
  settings: ForgeSettings;
  /** The token, read by the caller from the variable named by settings.tokenEnv; never logged. */
  token: string | null;
  fetch?: FetchLike;
  cache?: ConditionalCache;
  /** The clock, for rate-limit arithmetic. */
  now?: () => number;
  /** How long one request may take, answer included (ms): no answer by then is a `network` failure. */
  timeoutMs?: number;
  /** Said to the operator (a warning): something the provider did that changes nothing but should be known (a followed redirect). */
  notice?: (message: string) => void;
}

/** A request's deadline unless the caller sets one (docs/forge.md#deadlines). */
export const DEFAULT_FORGE_TIMEOUT_MS = 30_000;

/**
 * The longest a rate limit holds loop's requests back (docs/forge.md#rate-limits): a forge that asks
 * for more (a retry-after of 3,000 years, a reset past the year 275760 that no date can hold) is
 * asked again after an hour, and the failure says what it asked for.
 */
export const RATE_LIMIT_CAP_MS = 3_600_000;

/** A rate limit until `retryAt` (epoch ms), capped at RATE_LIMIT_CAP_MS from `now`; a time that is no number waits the cap. */
export function rateLimited(now: number, retryAt: number, message: string): ForgeFailure {
  const cap = now + RATE_LIMIT_CAP_MS;
  if (Number.isFinite(retryAt) && retryAt <= cap) return { ok: false, kind: "rate_limited", retryAt, message };
  return {
    ok: false,
    kind: "rate_limited",
    retryAt: cap,
    message: `${message}; asked to wait ${Number.isFinite(retryAt) ? `until ${untilText(retryAt)}` : "for no valid time"}, loop asks again after an hour`,
  };
}

/** A time for people: ISO when a date can hold it, else the epoch milliseconds. */
function untilText(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? `${ms} ms after the epoch` : d.toISOString();
}

/** A failure as one line for people: never the token, never the forge's raw text unescaped. */
export function describeFailure(f: ForgeFailure): string {
  if (f.kind === "rate_limited") return `rate limited until ${untilText(f.retryAt)}: ${f.message}`;
  if (f.kind === "http") return `HTTP ${f.status}: ${f.message}`;
  return `no answer: ${f.message}`;
}

/**
 * What a forge calls what loop opens, and how people write its number: a GitHub "pull request #12",
 * a GitLab "merge request !12". For reports that know the loop's provider only by name (status, the
 * page): the one place outside a provider that knows the difference. An unknown or absent provider
 * (the forge section removed since) reads as GitHub's.
 */
export function pullTerms(provider: string | null | undefined): { noun: string; short: string; sign: string } {
  return provider === "gitlab" ? { noun: "merge request", short: "MR", sign: "!" } : { noun: "pull request", short: "PR", sign: "#" };
}

/**
 * A GitHub, GitLab or Jira comment id as loop keeps it: the decimal string of a positive integer.
 * Anything else (a forge's hostile or broken answer) is "0", at or below every mark, so never acted on.
 */
export function numericCommentId(x: unknown): CommentId {
  const n = typeof x === "string" && /^[0-9]{1,15}$/.test(x) ? Number(x) : x;
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? String(n) : "0";
}

/** A commit id as a forge reported it: 40 (SHA-1) or 64 (SHA-256) hex digits, else null (never "undefined" or ""). */
export function commitIdOf(x: unknown): string | null {
  return typeof x === "string" && /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(x) ? x : null;
}
