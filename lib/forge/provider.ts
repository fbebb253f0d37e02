// The forge boundary: what `loop` asks of a code-hosting service (GitHub today; GitLab would be
// one more module implementing ForgeProvider). Every call returns a ForgeResult instead of
// throwing: a rate limit, a refusal and a network failure are outcomes the step names and records
// (docs/forge.md), not crashes. Everything a forge returns is untrusted text (lib/forge/untrusted.ts).

import type { NormForge } from "../definition/loop-json.ts";

/** How the loop reaches its forge: loop.json's `forge` section, normalized (lib/definition/loop-json.ts). */
export type ForgeSettings = NormForge;

export interface ForgeIssue {
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

export interface ForgeComment {
  id: number;
  /** The issue or pull request the comment is on. */
  issue: number;
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
export type IssueLookup =
  | { kind: "issue"; issue: ForgeIssue }
  | { kind: "gone"; why: "transferred" | "deleted" | "missing" | "pull_request"; message: string };

export interface ForgePull {
  number: number;
  url: string;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
  /** null while the forge is still computing it, or when a listing does not say: ask the pull request itself. */
  mergeable: boolean | null;
  /** GitHub's mergeable_state: clean, unstable, blocked, behind, dirty, draft, has_hooks, unknown. */
  mergeableState: string;
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
  | { kind: "merged"; sha: string }
  | { kind: "head_moved"; message: string }
  | { kind: "not_mergeable"; message: string };

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

export interface ForgeProvider {
  readonly settings: ForgeSettings;
  /** The issue, or why it is gone; a pull request's number is not an issue. */
  getIssue(number: number): Promise<ForgeResult<IssueLookup>>;
  /** The comments of one issue, oldest first (capped: see the provider; the newest are always read). */
  listIssueComments(number: number): Promise<ForgeResult<ForgeListing<ForgeComment>>>;
  /**
   * Comments of the whole repository created or edited at or after `since`, in the order of their
   * last edit (so the last one read is where the next listing starts); one conditional request
   * when nothing changed. `cut`: more remain, to be read from the last one's `updatedAt`.
   */
  listRepoComments(since: string): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>>;
  createComment(issue: number, body: string): Promise<ForgeResult<{ id: number; url: string }>>;
  /** The user's base permission on the repository: admin, maintain, write, triage, read or none (never a custom role's name). */
  permission(login: string): Promise<ForgeResult<string>>;
  /** The pull request (any state) whose head is `branch` of this repository, open first, else the newest; null if none. */
  findPull(branch: string): Promise<ForgeResult<ForgePull | null>>;
  createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<CreatePullOutcome>>;
  getPull(number: number): Promise<ForgeResult<ForgePull>>;
  /** Every check run and commit status on `sha`. */
  checks(sha: string): Promise<ForgeResult<ForgeChecks>>;
  /** Merge with the head sha loop saw green; a moved head or an unmergeable PR is an outcome, not a failure. */
  merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>>;
  /** Open issues (never pull requests) of the repository matching `search`, in the forge's own search syntax. */
  searchOpenIssues(search: string): Promise<ForgeResult<IssueSearch>>;
  /** Every open pull request of the repository (capped: see the provider). */
  openPulls(): Promise<ForgeResult<ForgePullSummary[]>>;
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

/** A failure as one line for people: never the token, never the forge's raw text unescaped. */
export function describeFailure(f: ForgeFailure): string {
  if (f.kind === "rate_limited") return `rate limited until ${new Date(f.retryAt).toISOString()}: ${f.message}`;
  if (f.kind === "http") return `HTTP ${f.status}: ${f.message}`;
  return `no answer: ${f.message}`;
}
