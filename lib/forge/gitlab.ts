// The GitLab provider (gitlab.com and self-managed GitLab, whose apiUrl is https://HOST/api/v4): a
// small typed client over `fetch` for the REST API v4, the project named by its full path (nested
// groups included), URL-encoded as one path segment. Like github.ts, over the same http.ts, it
// never retries by itself, answers a 304 from its cache, turns a rate limit (429, `Retry-After` /
// `RateLimit-Reset`) into a `rate_limited` result, gives every request a deadline, follows a
// redirect only on its own host, reads listings page by page through the `Link` header (or
// `X-Next-Page`), and puts the token in one header (PRIVATE-TOKEN) and nowhere else. GitLab's
// vocabulary stops here: `detailed_merge_status`, pipeline and job statuses, access levels, system
// notes, `opened`/`merged` states and its error bodies are translated into provider.ts's neutral
// results.
//
// Two things GitLab does differently shape this client: issues and merge requests have separate
// `iid` spaces (a thread is named with its kind: `#3` is an issue, `!3` a merge request), and there
// is no listing of a project's notes: loop asks which of its threads changed since the cursor (an
// issues and a merge requests listing with `updated_after`; saving a note touches its issue or merge
// request) and reads those threads' notes, newest edit first, down to the cursor.
import { type CommentId, compareCommentIds } from "../log/projection.ts";
import {
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
  type IssueLookup,
  type IssueSearch,
  type MergeOutcome,
  type ProviderOptions,
  pullTerms,
  commitIdOf,
  type ReviewFeedback,
  rateLimited,
} from "./provider.ts";
import { type Answer, ForgeHttp, type Json, linkTarget } from "./http.ts";
import { sanitizeLine } from "./untrusted.ts";
import { mergeRequest, normalTime, notes, parseSearch } from "./gitlab-answers.ts";

/** Iids named in one listing request (`iids[]`), so a URL stays short. */
const IIDS_PER_REQUEST = 50;
/** GitLab's Developer role: the least access level that may push, the meaning of authorizeWriters. */
const DEVELOPER = 30;

/**
 * What a pipeline's or a job's status means for a merge (docs/forge.md#checks). A skipped or manual
 * *job* is not red (a rule left it out; a manual job that may fail is optional); a skipped or
 * manual *pipeline* is: GitLab does not count it as succeeded, and nobody would run it for loop.
 */
const RUNNING = new Set(["created", "waiting_for_resource", "preparing", "pending", "running", "scheduled", "waiting_for_callback"]);
const PIPELINE: Record<string, CheckVerdict> = {
  success: "passing",
  failed: "failing",
  canceled: "failing",
  canceling: "failing",
  skipped: "failing",
  manual: "failing",
};
const JOB: Record<string, CheckVerdict> = {
  success: "passing",
  skipped: "passing",
  failed: "failing",
  canceled: "failing",
  canceling: "failing",
  manual: "failing",
};

export class GitLabProvider implements ForgeProvider {
  readonly settings: ForgeSettings;
  readonly pullNoun = pullTerms("gitlab").noun;
  readonly #http: ForgeHttp;

  constructor(o: ProviderOptions) {
    this.settings = o.settings;
    this.#http = new ForgeHttp(o, {
      headers: { accept: "application/json", ...(o.token ? { "private-token": o.token } : {}) },
      rateLimit,
      link: (headers, url) => this.#nextOf(headers, url),
      explain: (a) => this.#explain(a),
      redirected: ({ method, from, to }) => ({
        key: `${from} → ${to}`,
        notice: `${method} ${from} → ${to}: GitLab redirected the request on its own host; followed`,
      }),
    });
  }

  threadKey(t: ForgeThread): string {
    return this.threadLabel(t);
  }

  threadLabel(t: ForgeThread): string {
    return `${t.kind === "pull" ? pullTerms("gitlab").sign : "#"}${t.number}`;
  }

  /** The project as GitLab's API names it: its full path, URL-encoded as one segment (group%2Fsub%2Fproject). */
  get #project(): string {
    return `/projects/${encodeURIComponent(this.settings.repo)}`;
  }

  #thread(t: ForgeThread): string {
    return `${this.#project}/${t.kind === "pull" ? "merge_requests" : "issues"}/${t.number}`;
  }

  /**
   * The next page's URL: the Link header's `next` on the API's own host, else `X-Next-Page` on this
   * URL (a self-managed GitLab whose external_url is not the API URL names another host in Link),
   * else Link's off-host `next` as it is, which http.ts does not read and calls the listing cut.
   */
  #nextOf(headers: Headers, url: string): string | null {
    const next = linkTarget(headers.get("link"), "next");
    if (next && this.#http.onHost(next)) return next.href;
    const page = headers.get("x-next-page");
    if (page && /^[1-9]\d{0,8}$/.test(page)) {
      const u = new URL(url);
      u.searchParams.set("page", page);
      return u.href;
    }
    return next ? next.href : null;
  }

  /**
   * `until`: stop after a page it holds true for. `total`: the first page's X-Total, when it says.
   * A listing read to its end with fewer items than X-Total said is cut too: what was not read is never the end.
   */
  async #pages(
    path: string,
    o: { conditional?: boolean; until?: (page: Json[]) => boolean } = {},
  ): Promise<ForgeFailure | { items: Json[]; cut: boolean; notModified: boolean; total: number | null }> {
    let stopped = false;
    const r = await this.#http.pages(path, {
      conditional: o.conditional,
      next: (a) => {
        if (o.until?.(listOf(a.body))) {
          stopped = true;
          return null;
        }
        return a.link;
      },
    });
    if ("ok" in r) return r;
    const t = r.answers[0]?.headers.get("x-total");
    const total = t && /^\d{1,15}$/.test(t) ? Number(t) : null;
    const items = r.answers.flatMap((a) => listOf(a.body));
    return { items, cut: r.cut || (!stopped && total !== null && items.length < total), notModified: r.notModified, total };
  }

  /** A refusal explained: a token GitLab does not accept, one without the `api` scope, a project it cannot see. */
  #explain(a: Answer): string {
    const said = messageOf(a.body);
    if (a.status === 401) return `GitLab does not accept the token in $${this.settings.tokenEnv} (invalid, expired or revoked): ${said}`;
    if (a.status === 403 && a.body?.error === "insufficient_scope")
      return `the token in $${this.settings.tokenEnv} lacks the scope this needs (loop needs \`api\`; \`read_api\` only reads): ${said}`;
    if (a.status === 403) return `GitLab refused (the token's user lacks the role for this): ${said}`;
    if (a.status === 404 && /project not found/i.test(said))
      return `GitLab shows no project ${this.settings.repo} to this token (it does not exist, or the token cannot see it): ${said}`;
    return said;
  }

  /** The project itself: answers whenever GitLab does and lets the token see it, whatever the issues. */
  async reachable(): Promise<ForgeResult<void>> {
    const a = await this.#http.request("GET", this.#project);
    if ("ok" in a) return a;
    return a.status === 200 ? { ok: true, value: undefined } : this.#http.fail("GET", this.#project, a);
  }

  async getIssue(number: number): Promise<ForgeResult<IssueLookup>> {
    const path = `${this.#project}/issues/${number}`;
    const a = await this.#http.request("GET", path, { conditional: true });
    if ("ok" in a) return a;
    if (a.status === 404) {
      // Missing (or deleted: GitLab says 404 for both), or the project itself cannot be seen: only the first is the issue's.
      const project = await this.#http.request("GET", this.#project);
      if ("ok" in project) return project;
      if (project.status === 200)
        return {
          ok: true,
          value: { kind: "gone", why: "missing", message: `issue #${number} does not exist in ${this.settings.repo} (deleted, or never was)` },
        };
      return this.#http.fail("GET", this.#project, project);
    }
    if (a.status !== 200 && a.status !== 304) return this.#http.fail("GET", path, a);
    const b = a.body;
    const url = String(b?.web_url ?? "");
    // A moved issue is closed where it was, pointing at its new place by global id.
    if (b?.state === "closed" && b?.moved_to_id != null)
      return {
        ok: true,
        value: {
          kind: "gone",
          why: "transferred",
          message: `issue #${number} was moved to another project (issue id ${Number(b.moved_to_id)}; ${sanitizeLine(url, 200)})`,
        },
      };
    return {
      ok: true,
      value: {
        kind: "issue",
        issue: { number: Number(b.iid), title: String(b.title ?? ""), body: String(b.description ?? ""), state: b.state === "closed" ? "closed" : "open", url },
      },
    };
  }

  async listThreadComments(thread: ForgeThread): Promise<ForgeResult<ForgeListing<ForgeComment>>> {
    const base = `${this.#thread(thread)}/notes?order_by=created_at&sort=asc&per_page=100`;
    const r = await this.#pages(base, { conditional: true });
    if ("ok" in r) return r;
    const items = notes(r.items, thread);
    if (r.cut) {
      // Longer than what is read at once: the newest page too, so the newest notes are never the ones left out.
      const last = await this.#pages(`${this.#thread(thread)}/notes?order_by=created_at&sort=desc&per_page=100`, { until: () => true });
      if ("ok" in last) return last;
      const seen = new Set(items.map((c) => c.id));
      for (const c of notes(last.items, thread).reverse()) if (!seen.has(c.id)) items.push(c);
    }
    return { ok: true, value: { items, cut: r.cut } };
  }

  async listComments(o: { since: string; threads: ForgeThread[] }): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>> {
    // 1. Which of these threads changed since the cursor (a saved note touches its issue or merge request).
    const changed: ForgeThread[] = [];
    let notModified = true;
    for (const kind of ["issue", "pull"] as const) {
      const iids = [...new Set(o.threads.filter((t) => t.kind === kind).map((t) => t.number))].sort((x, y) => x - y);
      for (let i = 0; i < iids.length; i += IIDS_PER_REQUEST) {
        const chunk = iids.slice(i, i + IIDS_PER_REQUEST);
        const path = `${this.#project}/${kind === "pull" ? "merge_requests" : "issues"}?${chunk.map((n) => `iids[]=${n}`).join("&")}&updated_after=${encodeURIComponent(o.since)}&order_by=updated_at&sort=asc&per_page=100`;
        const r = await this.#pages(path, { conditional: true });
        if ("ok" in r) return r;
        notModified &&= r.notModified;
        for (const x of r.items) changed.push({ kind, number: Number(x.iid) });
      }
    }
    // 2. Their notes edited at or after the cursor, newest first: a storm of notes hides the oldest, never the newest.
    const out: ForgeComment[] = [];
    let cut = false;
    for (const thread of changed) {
      const r = await this.#notesSince(thread, o.since);
      if ("ok" in r) return r;
      out.push(...r.items);
      cut ||= r.cut;
    }
    const items = out.sort((x, y) => x.updatedAt.localeCompare(y.updatedAt) || compareCommentIds(x.id, y.id));
    return { ok: true, value: { items, cut, notModified: notModified && changed.length === 0 } };
  }

  /**
   * One thread's notes edited at or after `since`, oldest edit first. GitLab's notes have no `since`
   * filter and past 10,000 records no page count (docs/forge.md#notes-on-gitlab): the newest edits
   * are read first, down to `since` (one page, almost always). A thread with more edits since than
   * loop reads at once gives its newest (a `/loop stop` after a storm of notes is seen) and says
   * `cut`: the ones between the cursor and those were not read.
   */
  async #notesSince(thread: ForgeThread, since: string): Promise<ForgeFailure | { items: ForgeComment[]; cut: boolean }> {
    const r = await this.#pages(`${this.#thread(thread)}/notes?order_by=updated_at&sort=desc&per_page=100`, {
      until: (page) => page.some((n) => (normalTime(n?.updated_at) ?? "") < since),
    });
    if ("ok" in r) return r;
    return {
      items: notes(r.items, thread)
        .filter((c) => c.updatedAt >= since)
        .reverse(),
      cut: r.cut,
    };
  }

  async createComment(thread: ForgeThread, body: string): Promise<ForgeResult<{ id: CommentId; url: string }>> {
    const path = `${this.#thread(thread)}/notes`;
    const a = await this.#http.request("POST", path, { body: { body } });
    if ("ok" in a) return a;
    if (a.status !== 201) return this.#http.fail("POST", path, a);
    return { ok: true, value: { id: numericCommentId(a.body?.id), url: "" } };
  }

  async canWrite(login: string): Promise<ForgeResult<boolean>> {
    // Members of the project and of its groups (inherited), searched by name, then matched exactly.
    const path = `${this.#project}/members/all?query=${encodeURIComponent(login)}&per_page=100`;
    const r = await this.#pages(path);
    if ("ok" in r) return r;
    // ASCII case only: Unicode's folding makes "\u212Aate" (KELVIN SIGN) kate.
    const me = asciiLower(login);
    const levels = r.items
      .filter((m: Json) => asciiLower(String(m?.username ?? "")) === me && (m?.state ?? "active") === "active")
      .map((m: Json) => Number(m.access_level ?? 0));
    return { ok: true, value: levels.some((l: number) => l >= DEVELOPER) };
  }

  async findPull(branch: string): Promise<ForgeResult<ForgePull | null>> {
    const path = `${this.#project}/merge_requests?source_branch=${encodeURIComponent(branch)}&state=all&per_page=100`;
    const r = await this.#pages(path);
    if ("ok" in r) return r;
    // From this project's own branch (never a fork's); an open one first, else the newest.
    const list = r.items.filter((m: Json) => m?.source_branch === branch && (m.source_project_id === undefined || m.source_project_id === m.project_id));
    list.sort((x: Json, y: Json) => Number(y.state === "opened") - Number(x.state === "opened") || y.iid - x.iid);
    return { ok: true, value: list.length ? mergeRequest(list[0]) : null };
  }

  async createPull(o: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<ForgeResult<CreatePullOutcome>> {
    const path = `${this.#project}/merge_requests`;
    // A draft is a title starting with "Draft:" (GitLab's own marker).
    const a = await this.#http.request("POST", path, {
      body: { source_branch: o.head, target_branch: o.base, title: o.draft ? `Draft: ${o.title}` : o.title, description: o.body, remove_source_branch: false },
    });
    if ("ok" in a) return a;
    if (a.status === 409) return { ok: true, value: { kind: "refused", code: "exists", message: messageOf(a.body) } };
    if (a.status === 400 || a.status === 422) return { ok: true, value: { kind: "refused", code: "invalid", message: messageOf(a.body) } };
    if (a.status !== 201) return this.#http.fail("POST", path, a);
    return { ok: true, value: { kind: "created", pull: mergeRequest(a.body) } };
  }

  async getPull(number: number): Promise<ForgeResult<ForgePull>> {
    const path = `${this.#project}/merge_requests/${number}`;
    const a = await this.#http.request("GET", path);
    if ("ok" in a) return a;
    if (a.status !== 200) return this.#http.fail("GET", path, a);
    return { ok: true, value: mergeRequest(a.body) };
  }

  async checks(sha: string, o: { pull?: number } = {}): Promise<ForgeResult<ForgeChecks>> {
    const at = encodeURIComponent(sha);
    const pipelines = await this.#pages(`${this.#project}/pipelines?sha=${at}&per_page=100`, { conditional: true });
    if ("ok" in pipelines) return pipelines;
    if (o.pull !== undefined) {
      // A merge request's merged-results and merge-train pipelines run on its merge ref (another
      // sha, not listed on `sha`): its head_pipeline is the newest pipeline of its head, theirs
      // included (docs/forge.md#landing-on-gitlab). Counted only while `sha` is still its head.
      const path = `${this.#project}/merge_requests/${o.pull}`;
      const mr = await this.#http.request("GET", path, { conditional: true });
      if ("ok" in mr) return mr;
      if (mr.status !== 200 && mr.status !== 304) return this.#http.fail("GET", path, mr);
      const hp = mr.body?.head_pipeline;
      if (mr.body?.sha === sha && hp && typeof hp === "object" && Number.isSafeInteger(hp.id) && !pipelines.items.some((p) => Number(p?.id) === hp.id))
        pipelines.items.push(hp);
    }
    const statuses = await this.#pages(`${this.#project}/repository/commits/${at}/statuses?per_page=100`, { conditional: true });
    if ("ok" in statuses) return statuses;
    const out: ForgeCheck[] = [];
    // A pipeline run again on the same ref supersedes the older one: the newest per ref counts.
    const newest = new Map<string, Json>();
    for (const p of pipelines.items) {
      const ref = String(p?.ref ?? "");
      if (!newest.has(ref) || Number(p.id) > Number(newest.get(ref).id)) newest.set(ref, p);
    }
    for (const p of newest.values()) {
      const status = sanitizeLine(String(p.status ?? "unknown"), 40);
      const name = `pipeline #${Number(p.id)} (${sanitizeLine(String(p.source ?? p.ref ?? ""), 60)})`;
      const verdict: CheckVerdict = RUNNING.has(status) ? "pending" : (PIPELINE[status] ?? "failing");
      out.push({
        name,
        source: "pipeline",
        conclusion: status,
        verdict,
        detail: `${name} is ${status}${verdict === "failing" && !(status in PIPELINE) ? " (not a status loop knows)" : ""}`,
        handle: `pipeline:${Number(p.id)}`,
      });
    }
    // Jobs and external statuses, the latest of each name (GitLab's default): a job allowed to fail is not red.
    for (const s of statuses.items) {
      const status = sanitizeLine(String(s?.status ?? "unknown"), 40);
      const name = sanitizeLine(String(s?.name ?? "status"), 100);
      let verdict: CheckVerdict = RUNNING.has(status) ? "pending" : (JOB[status] ?? "failing");
      if (verdict === "failing" && s?.allow_failure === true && status in JOB) verdict = "passing";
      out.push({
        name,
        source: "commit status",
        conclusion: status,
        verdict,
        detail: `${name} is ${status}${s?.allow_failure === true && status !== "success" ? " (allowed to fail)" : ""}`,
        handle: `job:${Number(s?.id)}`,
      });
    }
    const unread: string[] = [];
    const short = sha.slice(0, 12);
    if (pipelines.cut) unread.push(`more than ${pipelines.items.length} pipelines on ${short}, ${pipelines.items.length} read`);
    if (statuses.cut) unread.push(`${statuses.total ?? `more than ${statuses.items.length}`} statuses on ${short}, ${statuses.items.length} read`);
    return { ok: true, value: { checks: out, unread: unread.length ? unread.join("; ") : null } };
  }

  async merge(o: { number: number; sha: string; title: string }): Promise<ForgeResult<MergeOutcome>> {
    const path = `${this.#project}/merge_requests/${o.number}/merge`;
    // `sha`: GitLab refuses (409) when the source branch's head is not the one loop saw green.
    const a = await this.#http.request("PUT", path, { body: { sha: o.sha, merge_commit_message: o.title, should_remove_source_branch: false } });
    if ("ok" in a) return a;
    const message = messageOf(a.body);
    if (a.status === 200) {
      if (a.body?.state === "merged")
        return { ok: true, value: { kind: "merged", sha: commitIdOf(a.body.merge_commit_sha) ?? commitIdOf(a.body.squash_commit_sha) } };
      return { ok: true, value: { kind: "merging", message: `state ${sanitizeLine(String(a.body?.state ?? "unknown"), 40)}` } };
    }
    if (a.status === 409) return { ok: true, value: { kind: "head_moved", message } };
    if (a.status === 405 || a.status === 406 || a.status === 422) {
      // GitLab's refusal says little ("405 Method Not Allowed"): its detailed_merge_status says why.
      const now = await this.getPull(o.number);
      const m = now.ok ? now.value.mergeability : null;
      if (m?.kind === "block") return { ok: true, value: { kind: "not_mergeable", wait: false, message: `${message}: ${m.reason}` } };
      if (m?.kind === "wait") return { ok: true, value: { kind: "not_mergeable", wait: true, message: `${message}: ${m.reason}` } };
      return { ok: true, value: { kind: "not_mergeable", wait: a.status === 405, message } };
    }
    return this.#http.fail("PUT", path, a);
  }

  async checkFailures(check: ForgeCheck, o: { tailBytes: number }): Promise<ForgeResult<CheckFailure[]>> {
    // A pipeline's failed jobs (the first 100), or the one job a commit status is; each with its log's tail.
    const m = /^(pipeline|job):(\d+)$/.exec(check.handle ?? "");
    if (!m) return { ok: true, value: [] };
    let jobs: Json[];
    if (m[1] === "pipeline") {
      const path = `${this.#project}/pipelines/${m[2]}/jobs?scope[]=failed&per_page=100`;
      const a = await this.#http.request("GET", path);
      if ("ok" in a) return a;
      if (a.status !== 200) return this.#http.fail("GET", path, a);
      jobs = Array.isArray(a.body) ? a.body : [];
    } else {
      const path = `${this.#project}/jobs/${m[2]}`;
      const a = await this.#http.request("GET", path);
      if ("ok" in a) return a;
      // An external status is no job: nothing more to say about it.
      if (a.status === 404) return { ok: true, value: [] };
      if (a.status !== 200) return this.#http.fail("GET", path, a);
      jobs = [a.body];
    }
    const out: CheckFailure[] = [];
    for (const j of jobs) {
      const path = `${this.#project}/jobs/${Number(j?.id)}/trace`;
      // Only the end is kept, as it arrives: a job's log may be larger than loop should hold.
      const t = await this.#http.request("GET", path, { textTail: o.tailBytes });
      if ("ok" in t) return t;
      const logTail = t.status === 200 && typeof t.body === "string" ? t.body : "";
      out.push({
        name: sanitizeLine(String(j?.name ?? "job"), 100),
        reason: sanitizeLine(String(j?.failure_reason ?? j?.status ?? "unknown"), 60),
        title: "",
        summary: "",
        annotations: [],
        logTail,
        url: String(j?.web_url ?? ""),
      });
    }
    return { ok: true, value: out };
  }

  async reviewFeedback(number: number): Promise<ForgeResult<ForgeListing<ReviewFeedback>>> {
    // Unresolved discussions on the diff: every note of each (the first one and the replies), GitLab's own left out.
    const r = await this.#pages(`${this.#project}/merge_requests/${number}/discussions?per_page=100`, { conditional: true });
    if ("ok" in r) return r;
    const out: ReviewFeedback[] = [];
    for (const d of r.items) {
      const ns: Json[] = Array.isArray(d?.notes) ? d.notes : [];
      const first = ns[0];
      if (first?.type !== "DiffNote" || first.system === true) continue;
      if (!ns.some((n) => n.resolvable === true && n.resolved !== true)) continue;
      const path =
        typeof first.position?.new_path === "string" ? first.position.new_path : typeof first.position?.old_path === "string" ? first.position.old_path : null;
      const line = Number.isSafeInteger(first.position?.new_line)
        ? Number(first.position.new_line)
        : Number.isSafeInteger(first.position?.old_line)
          ? Number(first.position.old_line)
          : null;
      for (const n of ns) {
        if (n?.system === true) continue;
        out.push({
          id: `note:${Number(n.id)}`,
          kind: "diff_comment",
          login: String(n.author?.username ?? ""),
          body: String(n.body ?? ""),
          path,
          line,
          createdAt: normalTime(n.created_at) ?? "",
        });
      }
    }
    return { ok: true, value: { items: out, cut: r.cut } };
  }

  async searchOpenIssues(search: string): Promise<ForgeResult<IssueSearch>> {
    // The project's open issues (its own listing, so nothing of another project can come back),
    // narrowed by GitLab's own filters: label:NAME or ~NAME, milestone:NAME or %NAME, author:USER,
    // assignee:USER or @USER; every other word is searched in titles and descriptions.
    const q = parseSearch(search);
    const params = [`state=opened`, `order_by=created_at`, `sort=desc`, `per_page=100`];
    if (q.labels.length) params.push(`labels=${encodeURIComponent(q.labels.join(","))}`);
    if (q.milestone) params.push(`milestone=${encodeURIComponent(q.milestone)}`);
    if (q.author) params.push(`author_username=${encodeURIComponent(q.author)}`);
    if (q.assignee) params.push(`assignee_username=${encodeURIComponent(q.assignee)}`);
    if (q.words.length) params.push(`search=${encodeURIComponent(q.words.join(" "))}`);
    const r = await this.#pages(`${this.#project}/issues?${params.join("&")}`);
    if ("ok" in r) return r;
    const issues: ForgeIssueFound[] = r.items
      .filter((i: Json) => i?.state === "opened")
      .map((i: Json) => ({
        number: Number(i.iid),
        title: String(i.title ?? ""),
        body: String(i.description ?? ""),
        labels: (Array.isArray(i.labels) ? i.labels : []).map((l: Json) => String(typeof l === "string" ? l : (l?.name ?? ""))).filter(Boolean),
        url: String(i.web_url ?? ""),
      }));
    const notes = [...q.notes];
    if (r.cut) notes.push(`the search matched ${r.total ?? "more than 1000"} issues; ${issues.length} were read (loop reads at most 1000: narrow it)`);
    return { ok: true, value: { issues, notes } };
  }

  async openPulls(): Promise<ForgeResult<ForgeListing<ForgePullSummary>>> {
    const r = await this.#pages(`${this.#project}/merge_requests?state=opened&per_page=100`);
    if ("ok" in r) return r;
    const items = r.items.map((m: Json) => ({
      number: Number(m.iid),
      title: String(m.title ?? ""),
      body: String(m.description ?? ""),
      url: String(m.web_url ?? ""),
    }));
    return { ok: true, value: { items, cut: r.cut } };
  }
}

/** A 429 (GitLab's only rate-limit answer): `Retry-After` seconds, else `RateLimit-Reset` (epoch seconds), else a minute. */
function rateLimit(res: Response, _body: Json, now: () => number): ForgeFailure | null {
  if (res.status !== 429) return null;
  const retryAfter = res.headers.get("retry-after");
  const reset = res.headers.get("ratelimit-reset");
  if (retryAfter !== null && /^\d+$/.test(retryAfter)) return rateLimited(now(), now() + Number(retryAfter) * 1000, `retry-after ${retryAfter}s`);
  if (reset !== null && /^\d+$/.test(reset)) return rateLimited(now(), Number(reset) * 1000, "rate limit exhausted (RateLimit-Reset)");
  return { ok: false, kind: "rate_limited", retryAt: now() + 60_000, message: "rate limited (no Retry-After)" };
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** A listing page's items (an answer that is not a list holds none). */
function listOf(body: Json): Json[] {
  return Array.isArray(body) ? body : [];
}

/** GitLab's error bodies: `{message: "..."}`, `{message: {field: ["..."]}}`, or OAuth's `{error, error_description}`. */
function messageOf(body: Json): string {
  const m = body?.message;
  if (typeof m === "string") return sanitizeLine(m, 300);
  if (Array.isArray(m)) return sanitizeLine(m.map(String).join("; "), 300);
  if (m && typeof m === "object")
    return sanitizeLine(
      Object.entries(m)
        .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(", ") : String(v)}`)
        .join("; "),
      300,
    );
  if (typeof body?.error === "string")
    return sanitizeLine(`${body.error}${typeof body.error_description === "string" ? `: ${body.error_description}` : ""}`, 300);
  return "no message";
}
