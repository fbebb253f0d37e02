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

export interface ForgePull {
  number: number;
  url: string;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
  /** null while the forge is still computing it: ask again later. */
  mergeable: boolean | null;
  /** GitHub's mergeable_state: clean, unstable, blocked, behind, dirty, draft, has_hooks, unknown. */
  mergeableState: string;
  headSha: string;
  headRef: string;
  baseRef: string;
  mergeCommitSha: string | null;
}

/** One check run or commit status on a sha, reduced to what the merge gate needs. */
export interface ForgeCheck {
  name: string;
  /** "pending" until it finished; then "success", or what made it not green. */
  state: "pending" | "success" | "failure";
  detail: string;
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
  /** No answer: DNS, connection, TLS, a body that is not JSON. */
  | { ok: false; kind: "network"; message: string };

export type ForgeResult<T> = { ok: true; value: T } | ForgeFailure;

/** Cached answers of conditional requests (ETag / If-None-Match), kept across steps by the caller. */
export interface ConditionalCache {
  get(key: string): { etag: string; body: unknown } | undefined;
  set(key: string, entry: { etag: string; body: unknown }): void;
}

export interface ForgeProvider {
  readonly settings: ForgeSettings;
  getIssue(number: number): Promise<ForgeResult<ForgeIssue>>;
  /** Every comment of one issue, oldest first (capped: see the provider). */
  listIssueComments(number: number): Promise<ForgeResult<ForgeComment[]>>;
  /** Comments of the whole repository created or edited at or after `since`; one conditional request. */
  listRepoComments(since: string): Promise<ForgeResult<{ comments: ForgeComment[]; notModified: boolean }>>;
  createComment(issue: number, body: string): Promise<ForgeResult<{ id: number; url: string }>>;
  /** The user's permission on the repository: admin, maintain, write, triage, read or none. */
  permission(login: string): Promise<ForgeResult<string>>;
  /** The pull request (any state) whose head is `branch` of this repository, newest first; null if none. */
  findPull(branch: string): Promise<ForgeResult<ForgePull | null>>;
  createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<ForgePull>>;
  getPull(number: number): Promise<ForgeResult<ForgePull>>;
  /** Every check run and commit status on `sha`. */
  checks(sha: string): Promise<ForgeResult<ForgeCheck[]>>;
  /** Merge with the head sha loop saw green; a moved head or an unmergeable PR is an outcome, not a failure. */
  merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>>;
  /** Open issues (never pull requests) of the repository matching `search`, in the forge's own search syntax. */
  searchOpenIssues(search: string): Promise<ForgeResult<ForgeIssueFound[]>>;
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
}

/** A failure as one line for people: never the token, never the forge's raw text unescaped. */
export function describeFailure(f: ForgeFailure): string {
  if (f.kind === "rate_limited") return `rate limited until ${new Date(f.retryAt).toISOString()}: ${f.message}`;
  if (f.kind === "http") return `HTTP ${f.status}: ${f.message}`;
  return `no answer: ${f.message}`;
}
