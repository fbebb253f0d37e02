// The GitHub provider (github.com and GitHub Enterprise Server, whose apiUrl is
// https://HOST/api/v3): a small typed client over `fetch`, about ten endpoints. It never retries
// by itself (a 405 or 409 is an answer the landing phase reads, not a glitch), never throws on a
// 304 (a conditional request's cached body is returned), and turns a rate limit into a
// `rate_limited` result carrying when to try again. The token goes into one header and nowhere
// else: every message this module builds has it scrubbed.
import {
  type ConditionalCache,
  type FetchLike,
  type ForgeCheck,
  type ForgeComment,
  type ForgeFailure,
  type ForgeIssue,
  type ForgeIssueFound,
  type ForgeProvider,
  type ForgePull,
  type ForgePullSummary,
  type ForgeResult,
  type ForgeSettings,
  type MergeOutcome,
  type ProviderOptions,
} from "./provider.ts";
import { sanitizeLine } from "./untrusted.ts";

/** Pages read of one listing at most (100 per page): a thread longer than this is cut, and said so by the caller. */
const MAX_PAGES = 10;

type Json = any;

interface Answer {
  status: number;
  headers: Headers;
  body: Json;
  notModified: boolean;
}

export class GitHubProvider implements ForgeProvider {
  readonly settings: ForgeSettings;
  readonly #token: string | null;
  readonly #fetch: FetchLike;
  readonly #cache: ConditionalCache | undefined;
  readonly #now: () => number;
  readonly #base: string;

  constructor(o: ProviderOptions) {
    this.settings = o.settings;
    this.#token = o.token;
    this.#fetch = o.fetch ?? ((input, init) => fetch(input, init));
    this.#cache = o.cache;
    this.#now = o.now ?? Date.now;
    this.#base = o.settings.apiUrl.replace(/\/+$/, "");
  }

  get #repoPath(): string {
    const [owner, repo] = this.settings.repo.split("/");
    return `/repos/${encodeURIComponent(owner!)}/${encodeURIComponent(repo!)}`;
  }

  /** One request. `conditional`: send If-None-Match from the cache and answer a 304 from it. */
  async #request(method: string, path: string, o: { body?: unknown; conditional?: boolean } = {}): Promise<ForgeFailure | Answer> {
    const url = `${this.#base}${path}`;
    const headers: Record<string, string> = {
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
      "user-agent": "loop",
    };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    const cached = o.conditional ? this.#cache?.get(url) : undefined;
    if (cached) headers["if-none-match"] = cached.etag;
    if (o.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await this.#fetch(url, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body), redirect: "error" });
    } catch (err) {
      return { ok: false, kind: "network", message: this.#scrub(`${method} ${path}: ${(err as Error).message}`) };
    }
    if (res.status === 304 && cached) return { status: 304, headers: res.headers, body: cached.body, notModified: true };
    const text = await res.text().catch(() => "");
    let body: Json = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        if (res.ok) return { ok: false, kind: "network", message: `${method} ${path}: answer is not JSON` };
      }
    }
    const limited = this.#rateLimit(res, body);
    if (limited) return limited;
    const etag = res.headers.get("etag");
    if (o.conditional && res.ok && etag) this.#cache?.set(url, { etag, body });
    return { status: res.status, headers: res.headers, body, notModified: false };
  }

  /** A 403 or 429 that is a rate limit, primary or secondary; null for any other answer. */
  #rateLimit(res: Response, body: Json): ForgeFailure | null {
    if (res.status !== 403 && res.status !== 429) return null;
    const message = typeof body?.message === "string" ? body.message : "";
    const retryAfter = res.headers.get("retry-after");
    const remaining = res.headers.get("x-ratelimit-remaining");
    const reset = res.headers.get("x-ratelimit-reset");
    const secondary = /secondary rate limit|abuse/i.test(message);
    if (retryAfter !== null && /^\d+$/.test(retryAfter))
      return { ok: false, kind: "rate_limited", retryAt: this.#now() + Number(retryAfter) * 1000, message: `retry-after ${retryAfter}s` };
    if (remaining === "0" && reset !== null && /^\d+$/.test(reset))
      return { ok: false, kind: "rate_limited", retryAt: Number(reset) * 1000, message: "primary rate limit exhausted" };
    // A secondary limit without retry-after: GitHub asks for at least a minute.
    if (secondary || res.status === 429) return { ok: false, kind: "rate_limited", retryAt: this.#now() + 60_000, message: "secondary rate limit" };
    return null;
  }

  #fail(method: string, path: string, a: Answer): ForgeFailure {
    const message = typeof a.body?.message === "string" ? sanitizeLine(a.body.message, 300) : "no message";
    return { ok: false, kind: "http", status: a.status, message: this.#scrub(`${method} ${path}: ${message}`) };
  }

  /** Defence in depth: no message leaves this module holding the token. */
  #scrub(s: string): string {
    return this.#token ? s.split(this.#token).join("[token]") : s;
  }

  async getIssue(number: number): Promise<ForgeResult<ForgeIssue>> {
    const path = `${this.#repoPath}/issues/${number}`;
    const a = await this.#request("GET", path, { conditional: true });
    if ("ok" in a) return a;
    if (a.status !== 200 && a.status !== 304) return this.#fail("GET", path, a);
    const b = a.body;
    return { ok: true, value: { number: b.number, title: String(b.title ?? ""), body: String(b.body ?? ""), state: b.state === "closed" ? "closed" : "open", url: String(b.html_url ?? "") } };
  }

  async listIssueComments(number: number): Promise<ForgeResult<ForgeComment[]>> {
    const out: ForgeComment[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const path = `${this.#repoPath}/issues/${number}/comments?per_page=100&page=${page}`;
      const a = await this.#request("GET", path, { conditional: true });
      if ("ok" in a) return a;
      if (a.status !== 200 && a.status !== 304) return this.#fail("GET", path, a);
      const list = Array.isArray(a.body) ? a.body : [];
      out.push(...list.map((c: Json) => comment(c, number)));
      if (list.length < 100) break;
    }
    return { ok: true, value: out };
  }

  async listRepoComments(since: string): Promise<ForgeResult<{ comments: ForgeComment[]; notModified: boolean }>> {
    const out: ForgeComment[] = [];
    let notModified = true;
    for (let page = 1; page <= MAX_PAGES; page++) {
      const path = `${this.#repoPath}/issues/comments?since=${encodeURIComponent(since)}&sort=created&direction=asc&per_page=100&page=${page}`;
      const a = await this.#request("GET", path, { conditional: true });
      if ("ok" in a) return a;
      if (a.status !== 200 && a.status !== 304) return this.#fail("GET", path, a);
      notModified &&= a.notModified;
      const list = Array.isArray(a.body) ? a.body : [];
      out.push(...list.map((c: Json) => comment(c, issueNumberOf(c.issue_url))));
      if (list.length < 100) break;
    }
    return { ok: true, value: { comments: out, notModified } };
  }

  async createComment(issue: number, body: string): Promise<ForgeResult<{ id: number; url: string }>> {
    const path = `${this.#repoPath}/issues/${issue}/comments`;
    const a = await this.#request("POST", path, { body: { body } });
    if ("ok" in a) return a;
    if (a.status !== 201) return this.#fail("POST", path, a);
    return { ok: true, value: { id: a.body.id, url: String(a.body.html_url ?? "") } };
  }

  async permission(login: string): Promise<ForgeResult<string>> {
    const path = `${this.#repoPath}/collaborators/${encodeURIComponent(login)}/permission`;
    const a = await this.#request("GET", path);
    if ("ok" in a) return a;
    // Not a collaborator: no permission, an answer rather than a failure.
    if (a.status === 404) return { ok: true, value: "none" };
    if (a.status !== 200) return this.#fail("GET", path, a);
    return { ok: true, value: String(a.body?.role_name ?? a.body?.permission ?? "none") };
  }

  async findPull(branch: string): Promise<ForgeResult<ForgePull | null>> {
    const owner = this.settings.repo.split("/")[0]!;
    const path = `${this.#repoPath}/pulls?state=all&head=${encodeURIComponent(`${owner}:${branch}`)}&per_page=100`;
    const a = await this.#request("GET", path);
    if ("ok" in a) return a;
    if (a.status !== 200) return this.#fail("GET", path, a);
    const list = (Array.isArray(a.body) ? a.body : []).filter((p: Json) => p?.head?.ref === branch);
    // An open one first; else the newest (a merged PR of this branch is the item's landing).
    list.sort((x: Json, y: Json) => Number(y.state === "open") - Number(x.state === "open") || y.number - x.number);
    return { ok: true, value: list.length ? pull(list[0]) : null };
  }

  async createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<ForgePull>> {
    const path = `${this.#repoPath}/pulls`;
    const a = await this.#request("POST", path, { body: o });
    if ("ok" in a) return a;
    if (a.status !== 201) return this.#fail("POST", path, a);
    return { ok: true, value: pull(a.body) };
  }

  async getPull(number: number): Promise<ForgeResult<ForgePull>> {
    const path = `${this.#repoPath}/pulls/${number}`;
    const a = await this.#request("GET", path, { conditional: true });
    if ("ok" in a) return a;
    if (a.status !== 200 && a.status !== 304) return this.#fail("GET", path, a);
    return { ok: true, value: pull(a.body) };
  }

  async checks(sha: string): Promise<ForgeResult<ForgeCheck[]>> {
    const runsPath = `${this.#repoPath}/commits/${encodeURIComponent(sha)}/check-runs?per_page=100`;
    const runs = await this.#request("GET", runsPath, { conditional: true });
    if ("ok" in runs) return runs;
    if (runs.status !== 200 && runs.status !== 304) return this.#fail("GET", runsPath, runs);
    const statusPath = `${this.#repoPath}/commits/${encodeURIComponent(sha)}/status`;
    const statuses = await this.#request("GET", statusPath, { conditional: true });
    if ("ok" in statuses) return statuses;
    if (statuses.status !== 200 && statuses.status !== 304) return this.#fail("GET", statusPath, statuses);
    const out: ForgeCheck[] = [];
    for (const r of runs.body?.check_runs ?? []) {
      const name = sanitizeLine(String(r.name ?? "check"), 100);
      if (r.status !== "completed") out.push({ name, state: "pending", detail: `check run ${name} is ${sanitizeLine(String(r.status), 40)}` });
      // neutral and skipped are GitHub's "not red"; loop asks for green, so only success counts.
      else if (r.conclusion === "success") out.push({ name, state: "success", detail: `check run ${name} succeeded` });
      else out.push({ name, state: "failure", detail: `check run ${name} concluded ${sanitizeLine(String(r.conclusion), 40)}` });
    }
    for (const s of statuses.body?.statuses ?? []) {
      const name = sanitizeLine(String(s.context ?? "status"), 100);
      if (s.state === "pending") out.push({ name, state: "pending", detail: `status ${name} is pending` });
      else if (s.state === "success") out.push({ name, state: "success", detail: `status ${name} succeeded` });
      else out.push({ name, state: "failure", detail: `status ${name} is ${sanitizeLine(String(s.state), 40)}` });
    }
    return { ok: true, value: out };
  }

  async merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>> {
    const path = `${this.#repoPath}/pulls/${o.number}/merge`;
    const a = await this.#request("PUT", path, { body: { sha: o.sha, merge_method: "merge", commit_title: o.title } });
    if ("ok" in a) return a;
    const message = typeof a.body?.message === "string" ? sanitizeLine(a.body.message, 300) : "no message";
    if (a.status === 200 && a.body?.merged) return { ok: true, value: { kind: "merged", sha: String(a.body.sha) } };
    if (a.status === 409) return { ok: true, value: { kind: "head_moved", message } };
    if (a.status === 405) return { ok: true, value: { kind: "not_mergeable", message } };
    return this.#fail("PUT", path, a);
  }

  async searchOpenIssues(search: string): Promise<ForgeResult<ForgeIssueFound[]>> {
    // The search API (at most 1000 results, MAX_PAGES pages of 100), narrowed to this repository's
    // open issues whatever the search says; pull requests, which it also finds, are dropped.
    const q = `${search} repo:${this.settings.repo} is:issue is:open`;
    const out: ForgeIssueFound[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const path = `/search/issues?q=${encodeURIComponent(q)}&per_page=100&page=${page}`;
      const a = await this.#request("GET", path);
      if ("ok" in a) return a;
      if (a.status !== 200) return this.#fail("GET", "/search/issues", a);
      const list = Array.isArray(a.body?.items) ? a.body.items : [];
      for (const i of list) {
        if (i?.pull_request || i?.state === "closed") continue;
        const labels = (Array.isArray(i.labels) ? i.labels : []).map((l: Json) => String(typeof l === "string" ? l : (l?.name ?? ""))).filter((l: string) => l !== "");
        out.push({ number: Number(i.number), title: String(i.title ?? ""), body: String(i.body ?? ""), labels, url: String(i.html_url ?? "") });
      }
      if (list.length < 100) break;
    }
    return { ok: true, value: out };
  }

  async openPulls(): Promise<ForgeResult<ForgePullSummary[]>> {
    const out: ForgePullSummary[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const path = `${this.#repoPath}/pulls?state=open&per_page=100&page=${page}`;
      const a = await this.#request("GET", path);
      if ("ok" in a) return a;
      if (a.status !== 200) return this.#fail("GET", path, a);
      const list = Array.isArray(a.body) ? a.body : [];
      for (const p of list) out.push({ number: Number(p.number), title: String(p.title ?? ""), body: String(p.body ?? ""), url: String(p.html_url ?? "") });
      if (list.length < 100) break;
    }
    return { ok: true, value: out };
  }
}

function comment(c: Json, issue: number): ForgeComment {
  return {
    id: Number(c.id),
    issue,
    login: String(c.user?.login ?? ""),
    body: String(c.body ?? ""),
    createdAt: String(c.created_at ?? ""),
    updatedAt: String(c.updated_at ?? c.created_at ?? ""),
  };
}

/** ".../issues/42" → 42 (a repository listing names each comment's issue by URL); 0 when unreadable. */
function issueNumberOf(url: unknown): number {
  const m = typeof url === "string" ? /\/issues\/(\d+)$/.exec(url) : null;
  return m ? Number(m[1]) : 0;
}

function pull(b: Json): ForgePull {
  return {
    number: Number(b.number),
    url: String(b.html_url ?? ""),
    state: b.state === "closed" ? "closed" : "open",
    merged: Boolean(b.merged || b.merged_at),
    draft: Boolean(b.draft),
    mergeable: typeof b.mergeable === "boolean" ? b.mergeable : null,
    mergeableState: String(b.mergeable_state ?? "unknown"),
    headSha: String(b.head?.sha ?? ""),
    headRef: String(b.head?.ref ?? ""),
    baseRef: String(b.base?.ref ?? ""),
    mergeCommitSha: typeof b.merge_commit_sha === "string" ? b.merge_commit_sha : null,
  };
}
