// The GitHub provider (github.com and GitHub Enterprise Server, whose apiUrl is
// https://HOST/api/v3): a small typed client over `fetch`, about a dozen endpoints, checked against
// GitHub's official OpenAPI description by the test suite (tests/helpers/github-openapi.ts). It
// never retries by itself (a 405 or 409 is an answer the landing phase reads, not a glitch), never
// throws on a 304 (a conditional request's cached body is returned), turns a rate limit into a
// `rate_limited` result carrying when to try again, gives every request a deadline, follows a
// redirect only to the same host (a renamed repository, said through `notice`), and reads
// listings page by page through GitHub's Link header, saying when it stopped early; the HTTP itself
// is http.ts's, which this client composes. The token goes into one header and nowhere else: every
// message has it scrubbed. GitHub's vocabulary (check conclusions, status states, 422 messages,
// roles) stops here: callers get the provider-neutral results of provider.ts.
import type { CommentId } from "../log/projection.ts";
import {
  type CheckAnnotation,
  type CheckFailure,
  type CheckVerdict,
  type CreatePullOutcome,
  type ForgeCheck,
  type ForgeChecks,
  type ForgeComment,
  type ForgeFailure,
  type ForgeIssueFound,
  type ForgeListing,
  type ForgeProvider,
  numericCommentId,
  type ForgePull,
  type ForgePullSummary,
  type ForgeResult,
  type ForgeSettings,
  type ForgeThread,
  type Mergeability,
  type IssueLookup,
  type IssueSearch,
  type MergeOutcome,
  type ProviderOptions,
  type PullRefusal,
  pullTerms,
  commitIdOf,
  type ReviewFeedback,
  rateLimited,
} from "./provider.ts";
import { type Answer, ForgeHttp, type Json, linkTarget } from "./http.ts";
import { MAX_PAGES } from "./bounds.ts";
import { sanitizeLine, tailOf } from "./untrusted.ts";

/** The REST API version this client is written against (sent as X-GitHub-Api-Version). */
const API_VERSION = "2022-11-28";

/**
 * What a check run's conclusion means for a merge (docs/forge.md#checks). GitHub itself counts
 * success, neutral and skipped as passing for required checks: a job skipped by its `if:` is not red.
 */
const CONCLUSIONS: Record<string, CheckVerdict> = {
  success: "passing",
  neutral: "passing",
  skipped: "passing",
  failure: "failing",
  cancelled: "failing",
  timed_out: "failing",
  action_required: "failing",
  startup_failure: "failing",
  stale: "failing",
};
/** Base permissions that count as writing (authorizeWriters); `maintain` answers as `write` on the older field. */
const WRITERS = new Set(["admin", "maintain", "write"]);
/** A commit status's state. */
const STATUS_STATES: Record<string, CheckVerdict> = { success: "passing", pending: "pending", failure: "failing", error: "failing" };

export class GitHubProvider implements ForgeProvider {
  readonly settings: ForgeSettings;
  readonly pullNoun = pullTerms("github").noun;
  readonly #http: ForgeHttp;

  constructor(o: ProviderOptions) {
    this.settings = o.settings;
    this.#http = new ForgeHttp(o, {
      headers: { accept: "application/vnd.github+json", "x-github-api-version": API_VERSION, ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) },
      rateLimit,
      // The Link header as it came: its `next` is the next page, its `last` the newest of a cut listing.
      link: (headers) => headers.get("link"),
      explain: (a) => messageOf(a.body),
      redirected: ({ method, status, from, to }) => ({
        key: `${status} ${from} → ${to}`,
        notice: `${method} ${from} answered ${status}, moved to ${to} (a renamed repository: set forge.repo to its new name); followed`,
      }),
    });
  }

  threadKey(t: ForgeThread): string {
    // A pull request is an issue to GitHub: one number space, one thread per number.
    return `#${t.number}`;
  }

  threadLabel(t: ForgeThread): string {
    return `#${t.number}`;
  }

  get #repoPath(): string {
    const [owner, repo] = this.settings.repo.split("/");
    return `/repos/${encodeURIComponent(owner!)}/${encodeURIComponent(repo!)}`;
  }

  /** The API URL of the repository, as GitHub writes it in `repository_url`. */
  get #repoUrl(): string {
    return `${this.#http.base}${this.#repoPath}`;
  }

  /**
   * Every page of a listing, following the Link header's `next` (on the same host) up to MAX_PAGES.
   * `cut`: a next page remained; `last`: the Link header's last page then, so the newest can be read.
   */
  async #pages(
    path: string,
    o: { conditional?: boolean } = {},
  ): Promise<ForgeFailure | { bodies: Json[]; cut: boolean; last: string | null; notModified: boolean }> {
    // The next page as the Link header names it, on any host: http.ts reads none off the API's host, and calls the listing cut.
    const r = await this.#http.pages(path, { conditional: o.conditional, next: (a) => linkTarget(a.link, "next")?.href ?? null });
    if ("ok" in r) return r;
    return { bodies: r.answers.map((a) => a.body), cut: r.cut, last: r.cut ? this.#link(r.answers.at(-1)!.link, "last") : null, notModified: r.notModified };
  }

  /** A Link header's URL for `rel`, only on the API's own host. */
  #link(link: string | null, rel: string): string | null {
    const u = linkTarget(link, rel);
    return u && this.#http.onHost(u) ? u.href : null;
  }

  /** The repository itself: answers whenever GitHub does and lets the token see it, whatever the issues. */
  async reachable(): Promise<ForgeResult<void>> {
    const a = await this.#http.request("GET", this.#repoPath);
    if ("ok" in a) return a;
    return a.status === 200 ? { ok: true, value: undefined } : this.#http.fail("GET", this.#repoPath, a);
  }

  async getIssue(number: number): Promise<ForgeResult<IssueLookup>> {
    const path = `${this.#repoPath}/issues/${number}`;
    const a = await this.#http.request("GET", path, { conditional: true, follow: false });
    if ("ok" in a) return a;
    const gone = (why: "transferred" | "deleted" | "missing" | "pull_request", message: string): ForgeResult<IssueLookup> => ({
      ok: true,
      value: { kind: "gone", why, message },
    });
    if ([301, 302, 307, 308].includes(a.status)) {
      // A renamed repository redirects every request to the repository's id, the issue's number
      // unchanged; a transferred issue redirects to another repository's issue.
      const location = a.headers.get("location") ?? "";
      const repo = await this.#http.request("GET", this.#repoPath, { follow: false });
      if ("ok" in repo) return repo;
      const repoTo = repo.headers.get("location") ?? "";
      const target = /\/repositories\/(\d+)\/issues\/(\d+)$/.exec(location);
      const renamed = /\/repositories\/(\d+)$/.exec(repoTo);
      if (target && renamed && target[1] === renamed[1] && Number(target[2]) === number) return this.#issueAt(number, path);
      // Where it went, read only on the API's own host (the token never leaves it).
      const to = location && URL.canParse(location, `${this.#http.base}${path}`) ? new URL(location, `${this.#http.base}${path}`) : null;
      const moved = to && this.#http.onHost(to) ? await this.#http.request("GET", to.href) : null;
      const where =
        moved && !("ok" in moved) && moved.status === 200 && typeof moved.body?.html_url === "string" ? ` (now ${sanitizeLine(moved.body.html_url, 200)})` : "";
      return gone("transferred", `issue #${number} was transferred to another repository${where}`);
    }
    if (a.status === 410) return gone("deleted", `issue #${number} was deleted`);
    if (a.status === 404) {
      // Missing, or the repository itself cannot be seen (a token without access): only the first is the issue's.
      const repo = await this.#http.request("GET", this.#repoPath);
      if ("ok" in repo) return repo;
      if (repo.status === 200) return gone("missing", `issue #${number} does not exist in ${this.settings.repo}`);
      return this.#http.fail("GET", path, a);
    }
    return this.#issueFrom(number, path, a);
  }

  async #issueAt(number: number, path: string): Promise<ForgeResult<IssueLookup>> {
    const a = await this.#http.request("GET", path, { conditional: true });
    if ("ok" in a) return a;
    return this.#issueFrom(number, path, a);
  }

  #issueFrom(number: number, path: string, a: Answer): ForgeResult<IssueLookup> {
    if (a.status !== 200 && a.status !== 304) return this.#http.fail("GET", path, a);
    const b = a.body;
    // The issues endpoint answers for pull requests too: a PR's number is not an issue.
    if (b?.pull_request) return { ok: true, value: { kind: "gone", why: "pull_request", message: `#${number} is a pull request, not an issue` } };
    return {
      ok: true,
      value: {
        kind: "issue",
        issue: {
          number: Number(b.number),
          title: String(b.title ?? ""),
          body: String(b.body ?? ""),
          state: b.state === "closed" ? "closed" : "open",
          url: String(b.html_url ?? ""),
        },
      },
    };
  }

  async listThreadComments(thread: ForgeThread): Promise<ForgeResult<ForgeListing<ForgeComment>>> {
    const number = thread.number;
    const r = await this.#pages(`${this.#repoPath}/issues/${number}/comments?per_page=100`, { conditional: true });
    if ("ok" in r) return r;
    const items = r.bodies.flatMap((b) => (Array.isArray(b) ? b : [])).map((c: Json) => comment(c, number));
    if (r.cut && r.last) {
      // The thread is longer than what is read at once: read its last page too, so the newest
      // comments (the handoff's, and the high-water mark's) are never the ones left out.
      const last = await this.#http.request("GET", r.last, { conditional: true });
      if ("ok" in last) return last;
      if (last.status !== 200 && last.status !== 304) return this.#http.fail("GET", r.last, last);
      const seen = new Set(items.map((c) => c.id));
      for (const c of (Array.isArray(last.body) ? last.body : []).map((x: Json) => comment(x, number))) if (!seen.has(c.id)) items.push(c);
    }
    return { ok: true, value: { items, cut: r.cut } };
  }

  async listComments(o: { since: string; threads: ForgeThread[] }): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>> {
    // One listing for the whole repository (issues and pull requests alike), whatever `threads` says.
    const since = o.since;
    // Ordered by last edit, read from `since` on, one keyset page at a time: a page starts where the
    // last one ended (its last comment's updated_at), so an edit made while reading never shifts a
    // comment out of sight; a page that holds only one instant (ties) goes on by page number.
    const byId = new Map<string, ForgeComment>();
    let from = since;
    let page = 1;
    let notModified = true;
    for (let request = 0; request < MAX_PAGES; request++) {
      const path = `${this.#repoPath}/issues/comments?since=${encodeURIComponent(from)}&sort=updated&direction=asc&per_page=100${page > 1 ? `&page=${page}` : ""}`;
      const a = await this.#http.request("GET", path, { conditional: true });
      if ("ok" in a) return a;
      if (a.status !== 200 && a.status !== 304) return this.#http.fail("GET", path, a);
      notModified &&= a.notModified;
      const list: ForgeComment[] = (Array.isArray(a.body) ? a.body : []).map((c: Json) => comment(c, issueNumberOf(c.issue_url)));
      for (const c of list) byId.set(c.id, c);
      if (list.length < 100) return { ok: true, value: { items: [...byId.values()], cut: false, notModified } };
      const last = list.at(-1)!.updatedAt;
      if (last === from) page++;
      else {
        from = last;
        page = 1;
      }
    }
    return { ok: true, value: { items: [...byId.values()], cut: true, notModified } };
  }

  async createComment(thread: ForgeThread, body: string): Promise<ForgeResult<{ id: CommentId; url: string }>> {
    const path = `${this.#repoPath}/issues/${thread.number}/comments`;
    const a = await this.#http.request("POST", path, { body: { body } });
    if ("ok" in a) return a;
    if (a.status !== 201) return this.#http.fail("POST", path, a);
    return { ok: true, value: { id: numericCommentId(a.body?.id), url: String(a.body.html_url ?? "") } };
  }

  async canWrite(login: string): Promise<ForgeResult<boolean>> {
    const path = `${this.#repoPath}/collaborators/${encodeURIComponent(login)}/permission`;
    const a = await this.#http.request("GET", path);
    if ("ok" in a) return a;
    // Not a collaborator: no permission, an answer rather than a failure.
    if (a.status === 404) return { ok: true, value: false };
    if (a.status !== 200) return this.#http.fail("GET", path, a);
    // `permission` is the base role (admin, write, read, none); `role_name` may name a custom role
    // ("ci-maintainer") that says nothing about writing by its name.
    return { ok: true, value: WRITERS.has(String(a.body?.permission ?? "none")) };
  }

  async findPull(branch: string): Promise<ForgeResult<ForgePull | null>> {
    const owner = this.settings.repo.split("/")[0]!;
    const path = `${this.#repoPath}/pulls?state=all&head=${encodeURIComponent(`${owner}:${branch}`)}&per_page=100`;
    const a = await this.#http.request("GET", path);
    if ("ok" in a) return a;
    if (a.status !== 200) return this.#http.fail("GET", path, a);
    const list = (Array.isArray(a.body) ? a.body : []).filter((p: Json) => p?.head?.ref === branch);
    // An open one first; else the newest (a merged PR of this branch is the item's landing).
    list.sort((x: Json, y: Json) => Number(y.state === "open") - Number(x.state === "open") || y.number - x.number);
    return { ok: true, value: list.length ? pull(list[0]) : null };
  }

  async createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<CreatePullOutcome>> {
    const path = `${this.#repoPath}/pulls`;
    const a = await this.#http.request("POST", path, { body: o });
    if ("ok" in a) return a;
    if (a.status === 422) return { ok: true, value: { kind: "refused", code: pullRefusal(a.body), message: validationMessage(a.body) } };
    if (a.status !== 201) return this.#http.fail("POST", path, a);
    return { ok: true, value: { kind: "created", pull: pull(a.body) } };
  }

  async getPull(number: number): Promise<ForgeResult<ForgePull>> {
    const path = `${this.#repoPath}/pulls/${number}`;
    const a = await this.#http.request("GET", path, { conditional: true });
    if ("ok" in a) return a;
    if (a.status !== 200 && a.status !== 304) return this.#http.fail("GET", path, a);
    return { ok: true, value: pull(a.body) };
  }

  async checks(sha: string, _o: { pull?: number } = {}): Promise<ForgeResult<ForgeChecks>> {
    const at = `${this.#repoPath}/commits/${encodeURIComponent(sha)}`;
    const runs = await this.#pages(`${at}/check-runs?per_page=100`, { conditional: true });
    if ("ok" in runs) return runs;
    const statuses = await this.#pages(`${at}/status?per_page=100`, { conditional: true });
    if ("ok" in statuses) return statuses;
    const out: ForgeCheck[] = [];
    const unread: string[] = [];
    const runList = runs.bodies.flatMap((b) => (Array.isArray(b?.check_runs) ? b.check_runs : []));
    const runTotal = Number(runs.bodies[0]?.total_count ?? runList.length);
    for (const r of runList) {
      const name = sanitizeLine(String(r.name ?? "check"), 100);
      const status = sanitizeLine(String(r.status ?? "unknown"), 40);
      const handle = Number.isSafeInteger(r.id) ? `check-run:${r.id}` : undefined;
      if (status !== "completed") {
        out.push({ name, source: "check run", conclusion: status, verdict: "pending", detail: `check run ${name} is ${status}`, handle });
        continue;
      }
      const conclusion = sanitizeLine(String(r.conclusion ?? "none"), 40);
      // A conclusion GitHub may add later is not known to be green: it fails closed.
      const verdict = CONCLUSIONS[conclusion] ?? "failing";
      out.push({
        name,
        source: "check run",
        conclusion,
        verdict,
        detail: `check run ${name} concluded ${conclusion}${verdict === "failing" && !(conclusion in CONCLUSIONS) ? " (not a conclusion loop knows)" : ""}`,
        handle,
      });
    }
    const statusList = statuses.bodies.flatMap((b) => (Array.isArray(b?.statuses) ? b.statuses : []));
    const statusTotal = Number(statuses.bodies[0]?.total_count ?? statusList.length);
    for (const s of statusList) {
      const name = sanitizeLine(String(s.context ?? "status"), 100);
      const state = sanitizeLine(String(s.state ?? "unknown"), 40);
      const verdict = STATUS_STATES[state] ?? "failing";
      out.push({ name, source: "status", conclusion: state, verdict, detail: `status ${name} is ${state}`, handle: `status:${sha}` });
    }
    // The combined state covers every status, read or not: a red one beyond what was read still blocks.
    const combined = sanitizeLine(String(statuses.bodies[0]?.state ?? ""), 40);
    if (statusTotal > 0 && (combined === "failure" || combined === "error") && !out.some((c) => c.source === "status" && c.verdict === "failing"))
      out.push({ name: "combined status", source: "combined status", conclusion: combined, verdict: "failing", detail: `the combined status is ${combined}` });
    if (statusTotal > 0 && combined === "pending" && !out.some((c) => c.source === "status" && c.verdict !== "passing"))
      out.push({ name: "combined status", source: "combined status", conclusion: combined, verdict: "pending", detail: "the combined status is pending" });
    if (runList.length < runTotal) unread.push(`${runTotal} check runs on ${sha.slice(0, 12)}, ${runList.length} read`);
    if (statusList.length < statusTotal) unread.push(`${statusTotal} statuses on ${sha.slice(0, 12)}, ${statusList.length} read`);
    return { ok: true, value: { checks: out, unread: unread.length ? unread.join("; ") : null } };
  }

  async merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>> {
    const path = `${this.#repoPath}/pulls/${o.number}/merge`;
    const a = await this.#http.request("PUT", path, { body: { sha: o.sha, merge_method: "merge", commit_title: o.title } });
    if ("ok" in a) return a;
    const message = messageOf(a.body);
    if (a.status === 200 && a.body?.merged) return { ok: true, value: { kind: "merged", sha: commitIdOf(a.body.sha) } };
    if (a.status === 409) return { ok: true, value: { kind: "head_moved", message } };
    if (a.status === 405) return { ok: true, value: { kind: "not_mergeable", wait: notMergeableIsWait(message), message } };
    return this.#http.fail("PUT", path, a);
  }

  async checkFailures(check: ForgeCheck, o: { tailBytes: number }): Promise<ForgeResult<CheckFailure[]>> {
    const m = /^(check-run|status):(.+)$/.exec(check.handle ?? "");
    if (!m) return { ok: true, value: [] };
    if (m[1] === "status") {
      // A commit status says one line (its description) and where to look (its target URL).
      const path = `${this.#repoPath}/commits/${encodeURIComponent(m[2]!)}/status?per_page=100`;
      const r = await this.#pages(path, { conditional: true });
      if ("ok" in r) return r;
      const st = r.bodies.flatMap((b) => (Array.isArray(b?.statuses) ? b.statuses : [])).find((x: Json) => String(x?.context ?? "") === check.name);
      if (!st) return { ok: true, value: [] };
      return {
        ok: true,
        value: [
          {
            name: check.name,
            reason: sanitizeLine(String(st.state ?? "unknown"), 40),
            title: "",
            summary: typeof st.description === "string" ? st.description : "",
            annotations: [],
            logTail: "",
            url: typeof st.target_url === "string" ? st.target_url : "",
          },
        ],
      };
    }
    // A check run: its output (title, summary, text) as its app wrote it, and the first page of its annotations.
    const id = encodeURIComponent(m[2]!);
    const run = await this.#http.request("GET", `${this.#repoPath}/check-runs/${id}`, { conditional: true });
    if ("ok" in run) return run;
    if (run.status === 404) return { ok: true, value: [] };
    if (run.status !== 200 && run.status !== 304) return this.#http.fail("GET", `${this.#repoPath}/check-runs/${id}`, run);
    const out = run.body?.output ?? {};
    const annotations: CheckAnnotation[] = [];
    if (Number(out.annotations_count ?? 0) > 0) {
      const path = `${this.#repoPath}/check-runs/${id}/annotations?per_page=50`;
      const a = await this.#http.request("GET", path, { conditional: true });
      if ("ok" in a) return a;
      if (a.status !== 200 && a.status !== 304) return this.#http.fail("GET", path, a);
      for (const x of Array.isArray(a.body) ? a.body : [])
        annotations.push({
          path: String(x?.path ?? ""),
          line: Number.isSafeInteger(x?.start_line) ? Number(x.start_line) : null,
          level: sanitizeLine(String(x?.annotation_level ?? "failure"), 20),
          message: [x?.title, x?.message].filter((t) => typeof t === "string" && t !== "").join(": "),
        });
    }
    const logTail = tailOf(typeof out.text === "string" ? out.text : "", o.tailBytes);
    return {
      ok: true,
      value: [
        {
          name: check.name,
          reason: sanitizeLine(String(run.body?.conclusion ?? check.conclusion), 40),
          title: typeof out.title === "string" ? out.title : "",
          summary: typeof out.summary === "string" ? out.summary : "",
          annotations,
          logTail,
          url: String(run.body?.html_url ?? ""),
        },
      ],
    };
  }

  async reviewFeedback(number: number): Promise<ForgeResult<ForgeListing<ReviewFeedback>>> {
    // Reviews requesting changes (their bodies), then every comment on the diff (file and line).
    const reviews = await this.#pages(`${this.#repoPath}/pulls/${number}/reviews?per_page=100`, { conditional: true });
    if ("ok" in reviews) return reviews;
    const comments = await this.#pages(`${this.#repoPath}/pulls/${number}/comments?per_page=100`, { conditional: true });
    if ("ok" in comments) return comments;
    const items: ReviewFeedback[] = [];
    for (const r of reviews.bodies.flatMap((b) => (Array.isArray(b) ? b : [])))
      if (r?.state === "CHANGES_REQUESTED" && Number.isSafeInteger(r.id))
        items.push({
          id: `review:${r.id}`,
          kind: "changes_requested",
          login: String(r.user?.login ?? ""),
          body: String(r.body ?? ""),
          path: null,
          line: null,
          createdAt: String(r.submitted_at ?? ""),
        });
    for (const c of comments.bodies.flatMap((b) => (Array.isArray(b) ? b : [])))
      if (Number.isSafeInteger(c?.id)) {
        const line = Number.isSafeInteger(c.line) ? Number(c.line) : Number.isSafeInteger(c.original_line) ? Number(c.original_line) : null;
        items.push({
          id: `comment:${c.id}`,
          kind: "diff_comment",
          login: String(c.user?.login ?? ""),
          body: String(c.body ?? ""),
          path: typeof c.path === "string" ? c.path : null,
          line,
          createdAt: String(c.created_at ?? ""),
        });
      }
    return { ok: true, value: { items, cut: reviews.cut || comments.cut } };
  }

  async searchOpenIssues(search: string): Promise<ForgeResult<IssueSearch>> {
    // The search API (at most 1000 results, MAX_PAGES pages of 100), narrowed to this repository's
    // open issues whatever the search says. GitHub ORs repo: qualifiers, so a search naming another
    // repository finds its issues too: only items whose repository_url is this repository's are
    // kept. Pull requests, which it also finds, are dropped.
    const q = `${search} repo:${this.settings.repo} is:issue is:open`;
    const r = await this.#pages(`/search/issues?q=${encodeURIComponent(q)}&per_page=100`);
    if ("ok" in r) return r;
    const issues: ForgeIssueFound[] = [];
    const notes: string[] = [];
    let foreign = 0;
    for (const body of r.bodies)
      for (const i of Array.isArray(body?.items) ? body.items : []) {
        if (String(i?.repository_url ?? "").toLowerCase() !== this.#repoUrl.toLowerCase()) {
          foreign++;
          continue;
        }
        if (i?.pull_request || i?.state === "closed") continue;
        const labels = (Array.isArray(i.labels) ? i.labels : [])
          .map((l: Json) => String(typeof l === "string" ? l : (l?.name ?? "")))
          .filter((l: string) => l !== "");
        issues.push({ number: Number(i.number), title: String(i.title ?? ""), body: String(i.body ?? ""), labels, url: String(i.html_url ?? "") });
      }
    if (foreign) notes.push(`left out ${foreign} of the results, from other repositories (on GitHub a repo: qualifier in the search widens it)`);
    if (r.bodies.some((b) => b?.incomplete_results === true)) notes.push("GitHub says the search timed out and its results are incomplete");
    const total = Number(r.bodies[0]?.total_count ?? 0);
    if (r.cut || total > r.bodies.reduce((n, b) => n + (Array.isArray(b?.items) ? b.items.length : 0), 0))
      notes.push(`the search matched ${total} items; ${issues.length} were read (GitHub gives at most 1000 per search: narrow it)`);
    return { ok: true, value: { issues, notes } };
  }

  async openPulls(): Promise<ForgeResult<ForgeListing<ForgePullSummary>>> {
    const r = await this.#pages(`${this.#repoPath}/pulls?state=open&per_page=100`);
    if ("ok" in r) return r;
    const items = r.bodies
      .flatMap((b) => (Array.isArray(b) ? b : []))
      .map((p: Json) => ({ number: Number(p.number), title: String(p.title ?? ""), body: String(p.body ?? ""), url: String(p.html_url ?? "") }));
    return { ok: true, value: { items, cut: r.cut } };
  }
}

/** A 403 or 429 that is a rate limit, primary or secondary; null for any other answer. */
function rateLimit(res: Response, body: Json, now: () => number): ForgeFailure | null {
  if (res.status !== 403 && res.status !== 429) return null;
  const message = typeof body?.message === "string" ? body.message : "";
  const retryAfter = res.headers.get("retry-after");
  const remaining = res.headers.get("x-ratelimit-remaining");
  const reset = res.headers.get("x-ratelimit-reset");
  const secondary = /secondary rate limit|abuse/i.test(message);
  if (retryAfter !== null && /^\d+$/.test(retryAfter)) return rateLimited(now(), now() + Number(retryAfter) * 1000, `retry-after ${retryAfter}s`);
  if (remaining === "0" && reset !== null && /^\d+$/.test(reset)) return rateLimited(now(), Number(reset) * 1000, "primary rate limit exhausted");
  // A secondary limit without retry-after: GitHub asks for at least a minute.
  if (secondary || res.status === 429) return { ok: false, kind: "rate_limited", retryAt: now() + 60_000, message: "secondary rate limit" };
  return null;
}

function messageOf(body: Json): string {
  return typeof body?.message === "string" ? sanitizeLine(body.message, 300) : "no message";
}

/** A 422's message with its errors' (GitHub puts the reason there: "No commits between main and x"). */
function validationMessage(body: Json): string {
  const details = (Array.isArray(body?.errors) ? body.errors : [])
    .map((e: Json) => (typeof e?.message === "string" ? e.message : typeof e?.code === "string" ? `${e.field ?? e.resource ?? "field"} ${e.code}` : ""))
    .filter(Boolean);
  return sanitizeLine([messageOf(body), ...details].join(": "), 300);
}

function pullRefusal(body: Json): PullRefusal {
  const text = validationMessage(body);
  if (/draft/i.test(text)) return "draft_unsupported";
  if (/no commits between/i.test(text)) return "no_commits";
  if (/already exists/i.test(text)) return "exists";
  return "invalid";
}

function comment(c: Json, issue: number): ForgeComment {
  return {
    id: numericCommentId(c.id),
    thread: { kind: "issue", number: issue },
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

/**
 * A 405 on merge: some are waits ("Base branch was modified", required reviews or checks still
 * running), the rest refusals waiting cannot fix (merge method not allowed, linear history, a head
 * not up to date with its base where protection requires it: loop does not update branches; required
 * checks the head never reported).
 */
export function notMergeableIsWait(message: string): boolean {
  // "Head branch is out of date. Review and try the merge again." and "N of N required status checks
  // are expected." (checks loop read all green, that the base requires under other names) are
  // refusals, whatever else their words say.
  if (
    /merge commits are not allowed|linear history|method .*not allowed|not allowed on this repository|not authorized|permission|not up to date|out of date|status checks? (is|are) expected/i.test(
      message,
    )
  )
    return false;
  return /base branch was modified|required status check|expected|review|pending|try again|not mergeable/i.test(message);
}

/**
 * What GitHub's mergeable and mergeable_state say in loop's words. `mergeable` is null while GitHub
 * computes it (and a listing never has it): a wait. A conflict (mergeable false, `dirty`) blocks.
 * `behind`, `blocked` and `unstable` are not waited for here: loop reads the checks itself, and asks
 * for the merge with the verified head; where protection refuses (405), the answer says why.
 */
function mergeability(b: Json): Mergeability {
  const n = Number(b.number);
  const state = String(b.mergeable_state ?? "unknown");
  if (typeof b.mergeable !== "boolean") return { kind: "wait", code: "mergeable_unknown", reason: `the forge is still computing whether #${n} is mergeable` };
  if (!b.mergeable || state === "dirty")
    return { kind: "block", code: "conflict", reason: `pull request #${n} conflicts with its base (mergeable_state ${sanitizeLine(state, 40)})` };
  return { kind: "ready" };
}

/** A pull request as the single endpoint or a listing gives it (a listing has no merged/mergeable: unknown). */
function pull(b: Json): ForgePull {
  return {
    number: Number(b.number),
    label: `pull request #${Number(b.number)}`,
    url: String(b.html_url ?? ""),
    state: b.state === "closed" ? "closed" : "open",
    merged: Boolean(b.merged || b.merged_at),
    draft: Boolean(b.draft),
    mergeability: mergeability(b),
    headSha: String(b.head?.sha ?? ""),
    headRef: String(b.head?.ref ?? ""),
    baseRef: String(b.base?.ref ?? ""),
    mergeCommitSha: commitIdOf(b.merge_commit_sha),
  };
}
