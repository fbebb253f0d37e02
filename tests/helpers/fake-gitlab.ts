// A stateful fake GitLab on 127.0.0.1 (Bun.serve; REST API v4 under /api/v4), for tests and
// `npm run demo -- --forge gitlab`. Like fake-github.ts it is backed by a REAL bare git repository
// as the remote: the project pushes to it with `git push`, a merge request's head is whatever the
// bare repository's branch holds, and a merge is a real merge commit written there.
//
// It answers as GitLab's REST API documents (shapes from docs.gitlab.com/api, checked on every
// exchange by gitlab-rest.ts: an undocumented field, parameter or status is recorded in
// `violations` and makes `stop()` throw). The project may sit in nested groups
// (`acme/platform/api`), addressed by its URL-encoded full path or its id. It pages (`per_page`,
// `page`, `Link`, `X-Next-Page`, `X-Total`), sends a weak ETag with every 200 GET and answers 304 to
// a matching If-None-Match, and sends `RateLimit-*` headers. Notes go through a small copy of
// GitLab's quick-action extractor: a line starting with a quick action GitLab knows (`/close`,
// `/label …`) is carried out and removed, a note of nothing else is not saved (202); anything else,
// `/loop pause` included, is kept as written.
//
// Its state is plain data a test changes directly (issues, notes, merge requests, members), and
// `switches` steer it: pipelines and statuses pending/failed/succeeded per sha, GitLab's
// detailed_merge_status (conflict, unresolved discussions, not approved, need_rebase, checking),
// moved heads, refusals, rate limits, a hidden project, a token without the `api` scope, moved and
// deleted issues, pagination, requests that never answer or fail.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitlabRest } from "./gitlab-rest.ts";
import { bareRemote, run, tryRun } from "./fake-git.ts";

export interface FakeGlIssue {
  iid: number;
  title: string;
  description: string;
  state: "opened" | "closed";
  labels: string[];
  /** A moved issue: closed here, and the global id of its new place. */
  movedToId: number | null;
  created_at: string;
  updated_at: string;
}
export interface FakeGlNote {
  id: number;
  /** The issue (`issue`) or merge request (`pull`) the note is on, by iid. */
  on: { kind: "issue" | "pull"; iid: number };
  login: string;
  body: string;
  system: boolean;
  created_at: string;
  updated_at: string;
}
export interface FakeMr {
  iid: number;
  title: string;
  description: string;
  source_branch: string;
  target_branch: string;
  state: "opened" | "closed" | "merged";
  merge_commit_sha: string | null;
  created_at: string;
  updated_at: string;
}
export type PipelineMode = "succeeded" | "pending" | "failed" | "none";
export interface GlChecks {
  pipelines: { status: string; source?: string; ref?: string }[];
  /** Jobs and external statuses; `log` is a job's log (its trace), `reason` its failure_reason. */
  statuses: { name: string; status: string; allow_failure?: boolean; log?: string; reason?: string }[];
}
export interface FakeGlRequest {
  method: string;
  /** Path under /api/v4, as sent (the project still URL-encoded). */
  path: string;
  query: URLSearchParams;
  body: any;
}
export interface FakeGlAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Sent as text/plain instead of JSON (a job's log). */
  text?: boolean;
}
/** A discussion on a merge request's diff: a reviewer's note on a line, resolved or not. */
export interface FakeDiscussion {
  mr: number;
  login: string;
  body: string;
  path: string;
  /** The line of the new file it is on (1 when not given). */
  line?: number;
  resolved: boolean;
}

export interface FakeGlSwitches {
  /** The pipelines and commit statuses of any sha (a per-sha entry in `checksBySha` wins). */
  checks: PipelineMode | GlChecks;
  checksBySha: Map<string, PipelineMode | GlChecks>;
  /** Most items a listing answers per page (GitLab: per_page, at most 100). */
  maxPerPage: number;
  /** The merge request conflicts with its target (detailed_merge_status conflict), whatever git says; without it, it conflicts when its source and target do not merge in the bare repository. */
  conflicting: boolean;
  /**
   * CI that fails once: the first head checks are asked for gets a failed pipeline whose job `name`
   * failed (its failure_reason and log as given) beside a passing `lint`; every later head succeeds
   * (a fix pushed to the merge request goes green). Null: `checks` decides.
   */
  ciFailsOnce: { name: string; reason?: string; log: string } | null;
  /** A detailed_merge_status GitLab reports whatever else holds (discussions_not_resolved, not_approved, need_rebase, …); null: computed. */
  mergeStatus: string | null;
  /** GET of a merge request answers `checking` this many times first. */
  checkingFor: number;
  /** The project requires a succeeded pipeline: detailed_merge_status ci_still_running / ci_must_pass, and a merge refused (405) meanwhile. */
  pipelinesMustSucceed: boolean;
  /** On the next merge call: push a new commit to the source branch and answer 409. */
  moveHeadOnMerge: boolean;
  /**
   * Merge requests whose pipelines run on the merge ref (merged results, merge trains): the MR's
   * pipeline on refs/merge-requests/:iid/merge, with its own sha, is its head_pipeline and is not
   * listed by `pipelines?sha=<head>`. `alsoBranch` false: MR-only workflow rules, no branch pipeline
   * and no statuses on the head.
   */
  mergeRefPipeline: { status: string; alsoBranch: boolean } | null;
  /** On the next merge call: answer 409 with the head unchanged (a transient conflict). */
  conflictOnMergeOnce: boolean;
  /** The next merge calls answer this; null: merge. */
  mergeRefusal: { status: number; message: string } | null;
  /** The next `count` requests answer 429 (Retry-After and/or RateLimit-Reset). */
  rateLimit: { count: number; retryAfter: number | null; resetIn?: number } | null;
  /** The token must be this (PRIVATE-TOKEN); null: any or none is accepted. */
  token: string | null;
  /** The token's scope: `read_api` is refused every write (403 insufficient_scope). */
  scope: "api" | "read_api";
  /** The project is not visible to the token: 404 Project Not Found for everything under it. */
  hidden: boolean;
  /** Issues deleted: 404, as GitLab answers. */
  deleted: Set<number>;
  /** Requests this matches never answer (until stop). */
  hang: ((r: FakeGlRequest) => boolean) | null;
  /** Requests this matches answer `status`, `count` times. */
  fail: { match: (r: FakeGlRequest) => boolean; status: 500 | 502 | 503; count: number } | null;
  /** Hostile and real-world paging. */
  paging: FakeGlPaging;
}

/**
 * How listings page beyond the plain case. `linkOrigin`: the Link header names this origin (a
 * self-managed GitLab whose external_url is not the API's host). `nextPageHeader` false: no
 * X-Next-Page (a proxy that drops it). `totalPages`: X-Total-Pages says this (`"Infinity"`, `"1e300"`).
 * `over10k`: more than 10,000 records, as GitLab answers then: no X-Total, X-Total-Pages or
 * rel="last" (docs.gitlab.com/api/rest/#pagination-response-headers).
 */
export interface FakeGlPaging {
  /**
   * A hostile server: every GET answers 200 with a body of about `bytes` bytes and X-Next-Page for
   * ever (`empties`: `[{},{},…]`; `strings`: long strings). Not checked against the REST docs.
   */
  hugePages?: { bytes: number; shape: "empties" | "strings" } | null;
  linkOrigin: string | null;
  /** false: no Link header at all. */
  linkHeader: boolean;
  nextPageHeader: boolean;
  totalPages: string | null;
  over10k: boolean;
}

export interface FakeGitLab {
  url: string;
  /** The API root: `${url}/api/v4`. */
  apiUrl: string;
  /** The project's full path, nested groups included. */
  project: string;
  projectId: number;
  bare: string;
  issues: Map<number, FakeGlIssue>;
  notes: FakeGlNote[];
  mrs: Map<number, FakeMr>;
  /** Username → access level (10 guest, 20 reporter, 30 developer, 40 maintainer, 50 owner). */
  members: Map<string, number>;
  discussions: FakeDiscussion[];
  switches: FakeGlSwitches;
  intercept: ((r: FakeGlRequest) => FakeGlAnswer | null)[];
  /** Every request, as "METHOD path?query" (path under /api/v4); and how many were answered 304. */
  requests: string[];
  notModified: number;
  merges: { iid: number; sha: string }[];
  violations: string[];
  /** Private tokens seen in requests (a test checks none but the configured one is ever sent). */
  tokensSeen: Set<string>;
  addIssue(o: { iid: number; title?: string; description?: string; state?: "opened" | "closed"; labels?: string[] }): FakeGlIssue;
  /** A note as a person writes it: GitLab's quick actions in it are carried out and removed; null when nothing is left to save. */
  addNote(o: { issue?: number; mr?: number; login: string; body: string; system?: boolean }): FakeGlNote | null;
  editNote(id: number, body: string): void;
  /** The issue is moved to another project: closed here, `moved_to_id` set. */
  moveIssue(iid: number, toId: number): void;
  headOf(branch: string): string | null;
  /** Someone changes the merge request's target branch. */
  changeBase(iid: number, base: string): void;
  stop(): void;
}

const IDENT = {
  GIT_AUTHOR_NAME: "fake gitlab",
  GIT_AUTHOR_EMAIL: "fake@gitlab.invalid",
  GIT_COMMITTER_NAME: "fake gitlab",
  GIT_COMMITTER_EMAIL: "fake@gitlab.invalid",
};
const WEB = "https://gitlab.invalid";

/** Quick actions of GitLab's (a few of them; docs.gitlab.com/user/project/quick_actions): loop's `/loop` is not one. */
const QUICK_ACTIONS = [
  "close",
  "reopen",
  "label",
  "unlabel",
  "relabel",
  "assign",
  "unassign",
  "approve",
  "unapprove",
  "merge",
  "draft",
  "ready",
  "title",
  "lock",
  "unlock",
  "rebase",
  "shrug",
  "tableflip",
  "cc",
  "todo",
  "done",
  "due",
  "estimate",
  "spend",
];

export function presetGlChecks(mode: PipelineMode): GlChecks {
  if (mode === "none") return { pipelines: [], statuses: [] };
  const build = mode === "succeeded" ? "success" : mode === "pending" ? "running" : "failed";
  return {
    pipelines: [{ status: build, source: "push" }],
    statuses: [
      { name: "build", status: build },
      { name: "lint", status: "success" },
    ],
  };
}

function hashId(s: string): number {
  let h = 7;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) % 900_000;
  return 1000 + h;
}

export function startFakeGitLab(
  o: { project?: string; seedFrom?: string; copyOf?: string; dir?: string; validate?: boolean; clockLagMs?: number } = {},
): FakeGitLab {
  const projectPath = o.project ?? "acme/api";
  const bare = join(o.dir ?? mkdtempSync(join(tmpdir(), "loop-fake-gl-")), "remote.git");
  bareRemote(bare, o);
  const checker = o.validate === false ? null : gitlabRest();
  let clock = 0;
  const now = () => {
    // clockLagMs: the forge's clock behind this machine's (or a comment read that long after it was posted).
    clock = Math.max(Date.now() - (o.clockLagMs ?? 0), clock + 1000);
    return new Date(clock).toISOString();
  };
  let nextNote = 5000;
  let nextMr = 1;
  const nextPipeline = 300;
  const hanging = new Set<() => void>();
  const projectId = 77;
  const f: FakeGitLab = {
    url: "",
    apiUrl: "",
    project: projectPath,
    projectId,
    bare,
    issues: new Map(),
    notes: [],
    mrs: new Map(),
    members: new Map(),
    discussions: [],
    switches: {
      checks: "succeeded",
      checksBySha: new Map(),
      maxPerPage: 100,
      conflicting: false,
      ciFailsOnce: null,
      mergeStatus: null,
      checkingFor: 0,
      pipelinesMustSucceed: false,
      moveHeadOnMerge: false,
      conflictOnMergeOnce: false,
      mergeRefPipeline: null,
      mergeRefusal: null,
      rateLimit: null,
      token: null,
      scope: "api",
      hidden: false,
      deleted: new Set(),
      hang: null,
      fail: null,
      paging: { linkOrigin: null, linkHeader: true, nextPageHeader: true, totalPages: null, over10k: false },
    },
    intercept: [],
    requests: [],
    notModified: 0,
    merges: [],
    violations: [],
    tokensSeen: new Set(),
    addIssue(i) {
      const t = now();
      const issue: FakeGlIssue = {
        iid: i.iid,
        title: i.title ?? `issue ${i.iid}`,
        description: i.description ?? "",
        state: i.state ?? "opened",
        labels: i.labels ?? [],
        movedToId: null,
        created_at: t,
        updated_at: t,
      };
      f.issues.set(i.iid, issue);
      return issue;
    },
    addNote(n) {
      const on = n.mr !== undefined ? { kind: "pull" as const, iid: n.mr } : { kind: "issue" as const, iid: n.issue! };
      const body = n.system ? n.body : quickActions(on, n.body);
      if (body.trim() === "") return null;
      const t = now();
      const note: FakeGlNote = { id: nextNote++, on, login: n.login, body, system: n.system ?? false, created_at: t, updated_at: t };
      f.notes.push(note);
      touch(on, t);
      return note;
    },
    editNote(id, body) {
      const n = f.notes.find((x) => x.id === id)!;
      n.body = body;
      n.updated_at = now();
      touch(n.on, n.updated_at);
    },
    moveIssue(iid, toId) {
      const i = f.issues.get(iid)!;
      i.state = "closed";
      i.movedToId = toId;
      i.updated_at = now();
    },
    headOf(branch) {
      return tryRun(bare, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`]);
    },
    changeBase(iid, base) {
      const m = f.mrs.get(iid);
      if (!m) throw new Error(`fake GitLab: no merge request !${iid}`);
      if (!f.headOf(base)) throw new Error(`fake GitLab: no branch ${base} to be the target of !${iid}`);
      m.target_branch = base;
    },
    stop() {
      for (const release of hanging) release();
      server.stop(true);
      if (f.violations.length) throw new Error(`the fake GitLab answered outside GitLab's documented REST API:\n${f.violations.join("\n")}`);
    },
  };

  /** Saving a note touches its issue or merge request (GitLab: Note after_save :touch_noteable). */
  function touch(on: { kind: "issue" | "pull"; iid: number }, t: string) {
    const x = on.kind === "issue" ? f.issues.get(on.iid) : f.mrs.get(on.iid);
    if (x) x.updated_at = t;
  }

  /** GitLab's extractor: a line `/<known command> [args]` at a line's start is carried out and removed; code blocks aside. */
  function quickActions(on: { kind: "issue" | "pull"; iid: number }, body: string): string {
    const names = QUICK_ACTIONS.join("|");
    const re = new RegExp(`^\\/(${names})(?: ([^\\n]*))?(?:\\s*\\n|$)`, "gim");
    return body
      .replace(/\r/g, "")
      .replace(re, (_m, cmd: string) => {
        const c = cmd.toLowerCase();
        if (on.kind === "issue" && (c === "close" || c === "reopen")) {
          const i = f.issues.get(on.iid);
          if (i) i.state = c === "close" ? "closed" : "opened";
        }
        return "";
      })
      .trimEnd();
  }

  const user = (login: string) => ({
    id: hashId(login),
    username: login,
    name: login,
    state: "active",
    locked: false,
    avatar_url: null,
    web_url: `${WEB}/${login}`,
  });
  const projectWeb = `${WEB}/${projectPath}`;
  let failedOnce: string | null = null;
  /** A merged-results pipeline's sha: the merge ref's commit, never the head's. */
  const mergeRefSha = (sha: string) => new Bun.CryptoHasher("sha1").update(`merge-ref:${sha}`).digest("hex");
  const checksFor = (sha: string): GlChecks => {
    if (f.switches.mergeRefPipeline && !f.switches.mergeRefPipeline.alsoBranch) return { pipelines: [], statuses: [] };
    const once = f.switches.ciFailsOnce;
    if (once && !f.switches.checksBySha.has(sha) && sha !== "") {
      failedOnce ??= sha;
      if (sha !== failedOnce) return presetGlChecks("succeeded");
      return {
        pipelines: [{ status: "failed", source: "push" }],
        statuses: [
          { name: once.name, status: "failed", reason: once.reason ?? "script_failure", log: once.log },
          { name: "lint", status: "success" },
        ],
      };
    }
    const spec = f.switches.checksBySha.get(sha) ?? f.switches.checks;
    return typeof spec === "string" ? presetGlChecks(spec) : spec;
  };
  /** Whether the merge request's source and target do not merge (git merge-tree in the bare repository). */
  const conflictsInBare = (m: FakeMr): boolean => {
    const base = f.headOf(m.target_branch);
    const head = f.headOf(m.source_branch);
    if (!base || !head) return false;
    return tryRun(bare, ["merge-tree", "--write-tree", "--no-messages", base, head]) === null;
  };
  const issueJson = (i: FakeGlIssue) => ({
    id: 90_000 + i.iid,
    iid: i.iid,
    project_id: projectId,
    title: i.title,
    description: i.description,
    state: i.state,
    created_at: i.created_at,
    updated_at: i.updated_at,
    closed_at: i.state === "closed" ? i.updated_at : null,
    closed_by: null,
    labels: i.labels,
    milestone: null,
    assignees: [],
    assignee: null,
    author: user("reporter"),
    type: "ISSUE",
    issue_type: "issue",
    user_notes_count: f.notes.filter((n) => n.on.kind === "issue" && n.on.iid === i.iid && !n.system).length,
    merge_requests_count: 0,
    upvotes: 0,
    downvotes: 0,
    due_date: null,
    confidential: false,
    discussion_locked: null,
    web_url: `${projectWeb}/-/issues/${i.iid}`,
    time_stats: { time_estimate: 0, total_time_spent: 0, human_time_estimate: null, human_total_time_spent: null },
    task_completion_status: { count: 0, completed_count: 0 },
    references: { short: `#${i.iid}`, relative: `#${i.iid}`, full: `${projectPath}#${i.iid}` },
    moved_to_id: i.movedToId,
    service_desk_reply_to: null,
  });
  const noteJson = (n: FakeGlNote) => ({
    id: n.id,
    type: null,
    body: n.body,
    attachment: null,
    author: user(n.login),
    created_at: n.created_at,
    updated_at: n.updated_at,
    system: n.system,
    noteable_id: (n.on.kind === "issue" ? 90_000 : 80_000) + n.on.iid,
    noteable_type: n.on.kind === "issue" ? "Issue" : "MergeRequest",
    project_id: projectId,
    noteable_iid: n.on.iid,
    resolvable: false,
    confidential: false,
    internal: false,
    imported: false,
    imported_from: "none",
  });
  // Ids of pipelines and jobs are made from their sha, so each is found again by its id alone.
  const shaId = (sha: string) => parseInt(sha.slice(0, 6) || "0", 16) % 100_000;
  const shas = new Map<number, string>();
  const pipelinesOf = (sha: string) =>
    checksFor(sha).pipelines.map(
      (p, i) => (
        shas.set(shaId(sha), sha),
        {
          id: nextPipeline + shaId(sha) * 10 + i,
          iid: 1 + i,
          project_id: projectId,
          sha,
          ref: p.ref ?? "main",
          status: p.status,
          source: p.source ?? "push",
          created_at: "2024-01-01T00:00:00.000Z",
          updated_at: "2024-01-01T00:00:00.000Z",
          web_url: `${projectWeb}/-/pipelines/${nextPipeline + shaId(sha) * 10 + i}`,
        }
      ),
    );
  const jobsOf = (sha: string) => {
    shas.set(shaId(sha), sha);
    return checksFor(sha).statuses.map((s, i) => ({ s, id: 1_000_000 + shaId(sha) * 100 + i }));
  };
  const jobJson = (sha: string, j: { s: GlChecks["statuses"][number]; id: number }) => ({
    id: j.id,
    name: j.s.name,
    stage: "test",
    status: j.s.status,
    ref: "main",
    allow_failure: j.s.allow_failure ?? false,
    ...(j.s.status === "failed" ? { failure_reason: j.s.reason ?? "script_failure" } : {}),
    created_at: "2024-01-01T00:00:00.000Z",
    started_at: null,
    finished_at: null,
    web_url: `${projectWeb}/-/jobs/${j.id}`,
    pipeline: { id: nextPipeline + shaId(sha) * 10, project_id: projectId, ref: "main", sha, status: "failed" },
    user: user("ci"),
  });
  const jobById = (id: number) => {
    const sha = shas.get(Math.floor((id - 1_000_000) / 100));
    const j = sha ? jobsOf(sha).find((x) => x.id === id) : undefined;
    return sha && j ? { sha, j } : null;
  };
  const detailedStatus = (m: FakeMr, computing: boolean): string => {
    if (m.state !== "opened") return "not_open";
    if (computing) return "checking";
    if (f.switches.conflicting || conflictsInBare(m)) return "conflict";
    if (/^(draft:|\[draft\]|\(draft\))/i.test(m.title)) return "draft_status";
    if (f.switches.mergeStatus) return f.switches.mergeStatus;
    if (f.switches.pipelinesMustSucceed) {
      const ps = checksFor(f.headOf(m.source_branch) ?? "").pipelines;
      if (ps.some((p) => !["success", "failed", "canceled", "skipped", "manual"].includes(p.status))) return "ci_still_running";
      if (!ps.length || ps.some((p) => p.status !== "success")) return "ci_must_pass";
    }
    return "mergeable";
  };
  const mrJson = (m: FakeMr, single: boolean, computing = false) => {
    const sha =
      m.state === "merged"
        ? (f.merges.find((x) => x.iid === m.iid)?.sha ?? f.headOf(m.source_branch) ?? "0".repeat(40))
        : (f.headOf(m.source_branch) ?? "0".repeat(40));
    const status = detailedStatus(m, computing);
    const draft = status === "draft_status" || /^draft:/i.test(m.title);
    const basic = {
      id: 80_000 + m.iid,
      iid: m.iid,
      project_id: projectId,
      title: m.title,
      description: m.description,
      state: m.state,
      created_at: m.created_at,
      updated_at: m.updated_at,
      merged_by: m.state === "merged" ? user("loop-bot") : null,
      merge_user: m.state === "merged" ? user("loop-bot") : null,
      merged_at: m.state === "merged" ? m.updated_at : null,
      closed_by: null,
      closed_at: m.state === "closed" ? m.updated_at : null,
      target_branch: m.target_branch,
      source_branch: m.source_branch,
      user_notes_count: 0,
      upvotes: 0,
      downvotes: 0,
      author: user("loop-bot"),
      assignees: [],
      assignee: null,
      reviewers: [],
      source_project_id: projectId,
      target_project_id: projectId,
      labels: [],
      draft,
      work_in_progress: draft,
      milestone: null,
      merge_when_pipeline_succeeds: false,
      merge_status:
        status === "mergeable" ? "can_be_merged" : status === "conflict" ? "cannot_be_merged" : status === "checking" ? "checking" : "can_be_merged",
      detailed_merge_status: status,
      sha,
      merge_commit_sha: m.merge_commit_sha,
      squash_commit_sha: null,
      discussion_locked: null,
      should_remove_source_branch: null,
      force_remove_source_branch: false,
      reference: `!${m.iid}`,
      references: { short: `!${m.iid}`, relative: `!${m.iid}`, full: `${projectPath}!${m.iid}` },
      web_url: `${projectWeb}/-/merge_requests/${m.iid}`,
      time_stats: { time_estimate: 0, total_time_spent: 0, human_time_estimate: null, human_total_time_spent: null },
      squash: false,
      squash_on_merge: false,
      task_completion_status: { count: 0, completed_count: 0 },
      has_conflicts: status === "conflict",
      blocking_discussions_resolved: status !== "discussions_not_resolved",
      prepared_at: m.created_at,
    };
    if (!single) return basic;
    const mrp = f.switches.mergeRefPipeline;
    const head = mrp
      ? {
          id: 5_000_000 + m.iid,
          iid: 900 + m.iid,
          project_id: projectId,
          sha: mergeRefSha(sha),
          ref: `refs/merge-requests/${m.iid}/merge`,
          status: mrp.status,
          source: "merge_request_event",
          created_at: "2024-01-01T00:00:00.000Z",
          updated_at: "2024-01-01T00:00:00.000Z",
          web_url: `${projectWeb}/-/pipelines/${5_000_000 + m.iid}`,
        }
      : (pipelinesOf(sha).at(-1) ?? null);
    return {
      ...basic,
      subscribed: false,
      changes_count: "1",
      latest_build_started_at: null,
      latest_build_finished_at: null,
      first_deployed_to_production_at: null,
      pipeline: head,
      head_pipeline: head,
      diff_refs: null,
      merge_error: null,
      user: { can_merge: true },
      first_contribution: false,
    };
  };

  const mergeInBare = (m: FakeMr): string | null => {
    const baseSha = f.headOf(m.target_branch)!;
    const headSha = f.headOf(m.source_branch)!;
    const tree = tryRun(bare, ["merge-tree", "--write-tree", baseSha, headSha]);
    if (tree === null) return null;
    const commit = run(
      bare,
      ["commit-tree", tree.split("\n")[0]!, "-p", baseSha, "-p", headSha, "-m", `Merge branch '${m.source_branch}' into '${m.target_branch}'`],
      IDENT,
    );
    run(bare, ["update-ref", `refs/heads/${m.target_branch}`, commit, baseSha]);
    return commit;
  };
  const moveHead = (m: FakeMr) => {
    const headSha = f.headOf(m.source_branch)!;
    const tree = run(bare, ["rev-parse", `${headSha}^{tree}`]);
    const commit = run(bare, ["commit-tree", tree, "-p", headSha, "-m", "a commit pushed by someone else"], IDENT);
    run(bare, ["update-ref", `refs/heads/${m.source_branch}`, commit, headSha]);
    return commit;
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const path = u.pathname.startsWith("/api/v4") ? u.pathname.slice("/api/v4".length) : u.pathname;
      f.requests.push(`${req.method} ${path}${u.search}`);
      const token = req.headers.get("private-token");
      if (token) f.tokensSeen.add(token);
      const text = req.method === "GET" ? "" : await req.text();
      let body: any = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      const r: FakeGlRequest = { method: req.method, path, query: u.searchParams, body };
      if (f.switches.hang?.(r)) {
        await new Promise<void>((resolve) => hanging.add(resolve));
        return new Response(null, { status: 503 });
      }
      const huge = f.switches.paging.hugePages;
      if (huge && req.method === "GET") {
        const page = Number(u.searchParams.get("page") ?? "1");
        const body =
          huge.shape === "empties"
            ? `[${"{},".repeat(Math.floor(huge.bytes / 3))}{}]`
            : `[${`"${"x".repeat(1024 * 1024 - 3)}",`.repeat(Math.max(1, Math.floor(huge.bytes / (1024 * 1024))))}""]`;
        return new Response(body, { status: 200, headers: { "content-type": "application/json", "x-next-page": String(page + 1) } });
      }
      const answer = u.pathname.startsWith("/api/v4/") ? answerOf(r, token) : { status: 404, body: { message: "404 Not Found" } };
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "ratelimit-limit": "2000",
        "ratelimit-remaining": "1999",
        "ratelimit-reset": String(Math.ceil(Date.now() / 1000) + 60),
        ...(answer.headers ?? {}),
      };
      const out = answer.body === null ? "" : answer.text ? String(answer.body) : JSON.stringify(answer.body);
      if (answer.text) headers["content-type"] = "text/plain";
      if (req.method === "GET" && answer.status === 200) {
        const etag = `W/"${new Bun.CryptoHasher("sha1").update(out).digest("hex")}"`;
        headers.etag = etag;
        if (req.headers.get("if-none-match") === etag) {
          f.notModified++;
          checked(r, u, 304, null);
          return new Response(null, { status: 304, headers: { etag } });
        }
      }
      checked(r, u, answer.status, answer.body);
      return new Response(out || null, { status: answer.status, headers });
    },
  });
  f.url = `http://127.0.0.1:${server.port}`;
  f.apiUrl = `${f.url}/api/v4`;

  function checked(r: FakeGlRequest, u: URL, status: number, answer: unknown): void {
    if (!checker) return;
    f.violations.push(...checker.check({ method: r.method, url: `${r.path}${u.search}`, requestBody: r.body, status, body: answer }));
  }

  function answerOf(r: FakeGlRequest, token: string | null): FakeGlAnswer {
    const rl = f.switches.rateLimit;
    if (rl && rl.count > 0) {
      rl.count--;
      const headers: Record<string, string> = { "ratelimit-remaining": "0" };
      if (rl.retryAfter !== null) headers["retry-after"] = String(rl.retryAfter);
      if (rl.resetIn !== undefined) headers["ratelimit-reset"] = String(Math.ceil(Date.now() / 1000) + rl.resetIn);
      return { status: 429, headers, body: { message: "Retry later" } };
    }
    if (f.switches.token !== null && token !== f.switches.token) return { status: 401, body: { message: "401 Unauthorized" } };
    const fail = f.switches.fail;
    if (fail && fail.count > 0 && fail.match(r)) {
      fail.count--;
      return { status: fail.status, body: { message: `${fail.status} Internal Server Error` } };
    }
    for (const h of f.intercept) {
      const a = h(r);
      if (a) return a;
    }
    return route(r);
  }

  function paged<T>(r: FakeGlRequest, all: T[]): FakeGlAnswer & { items: T[] } {
    const per = Math.min(Number(r.query.get("per_page") ?? "20"), f.switches.maxPerPage, 100);
    const page = Math.max(1, Number(r.query.get("page") ?? "1"));
    const items = all.slice((page - 1) * per, page * per);
    const last = Math.max(1, Math.ceil(all.length / per));
    const paging = f.switches.paging;
    const big = paging.over10k || all.length > 10_000;
    const origin = paging.linkOrigin ?? f.url;
    const link = (n: number, rel: string) => {
      const q = new URLSearchParams(r.query);
      q.set("page", String(n));
      return `<${origin}/api/v4${r.path}?${q}>; rel="${rel}"`;
    };
    const links = [
      ...(page > 1 ? [link(page - 1, "prev")] : []),
      ...(page < last ? [link(page + 1, "next")] : []),
      link(1, "first"),
      ...(big ? [] : [link(last, "last")]),
    ];
    const headers: Record<string, string> = {
      ...(paging.linkHeader ? { link: links.join(", ") } : {}),
      "x-page": String(page),
      "x-per-page": String(per),
      "x-prev-page": page > 1 ? String(page - 1) : "",
    };
    if (paging.nextPageHeader) headers["x-next-page"] = page < last ? String(page + 1) : "";
    if (!big) {
      headers["x-total"] = String(all.length);
      headers["x-total-pages"] = paging.totalPages ?? String(last);
    }
    return { status: 200, body: items, items, headers };
  }

  const notFound = (what = "404 Not found"): FakeGlAnswer => ({ status: 404, body: { message: what } });
  const sorted = <T extends { created_at: string; updated_at: string; id?: number; iid?: number }>(list: T[], q: URLSearchParams, def = "created_at"): T[] => {
    const key = q.get("order_by") === "updated_at" ? "updated_at" : def === "updated_at" ? "updated_at" : "created_at";
    const sign = q.get("sort") === "asc" ? 1 : -1;
    return [...list].sort((a, b) => sign * (a[key].localeCompare(b[key]) || (a.id ?? a.iid ?? 0) - (b.id ?? b.iid ?? 0)));
  };

  function route(r: FakeGlRequest): FakeGlAnswer {
    const { method, query: q, body } = r;
    const m0 = /^\/projects\/([^/]+)(\/.*)?$/.exec(r.path);
    if (!m0) return notFound();
    const id = decodeURIComponent(m0[1]!);
    if ((id.toLowerCase() !== projectPath.toLowerCase() && id !== String(projectId)) || f.switches.hidden) return notFound("404 Project Not Found");
    const path = m0[2] ?? "";
    const write = method !== "GET";
    if (write && f.switches.scope === "read_api")
      return {
        status: 403,
        body: { error: "insufficient_scope", error_description: "The request requires higher privileges than provided by the access token.", scope: "api" },
      };
    let m: RegExpExecArray | null;
    if (method === "GET" && path === "") {
      const parts = projectPath.split("/");
      return {
        status: 200,
        body: {
          id: projectId,
          description: null,
          name: parts.at(-1)!,
          name_with_namespace: parts.join(" / "),
          path: parts.at(-1)!,
          path_with_namespace: projectPath,
          created_at: "2024-01-01T00:00:00.000Z",
          default_branch: "main",
          visibility: "private",
          web_url: projectWeb,
          http_url_to_repo: `${projectWeb}.git`,
          ssh_url_to_repo: `git@gitlab.invalid:${projectPath}.git`,
          namespace: {
            id: 12,
            name: parts.at(-2)!,
            path: parts.at(-2)!,
            kind: "group",
            full_path: parts.slice(0, -1).join("/"),
            parent_id: parts.length > 2 ? 11 : null,
            web_url: `${WEB}/groups/${parts.slice(0, -1).join("/")}`,
          },
        },
      };
    }
    const iidsOf = () => q.getAll("iids[]").map(Number);
    if (method === "GET" && path === "/issues") {
      const iids = iidsOf();
      const labels = (q.get("labels") ?? "").split(",").filter(Boolean);
      const words = (q.get("search") ?? "").toLowerCase().split(/\s+/).filter(Boolean);
      const after = q.get("updated_after");
      const state = q.get("state") ?? "all";
      const list = [...f.issues.values()]
        .filter((i) => !f.switches.deleted.has(i.iid))
        .filter((i) => !iids.length || iids.includes(i.iid))
        .filter((i) => state === "all" || i.state === state)
        .filter((i) => !after || Date.parse(i.updated_at) >= Date.parse(after))
        .filter((i) => labels.every((l) => i.labels.includes(l)))
        .filter((i) => words.every((w) => `${i.title}\n${i.description}`.toLowerCase().includes(w)));
      const page = paged(r, sorted(list, q));
      return { ...page, body: page.items.map(issueJson) };
    }
    if (method === "GET" && (m = /^\/issues\/(\d+)$/.exec(path))) {
      const i = f.issues.get(Number(m[1]));
      return i && !f.switches.deleted.has(i.iid) ? { status: 200, body: issueJson(i) } : notFound("404 Issue Not Found");
    }
    if ((m = /^\/(issues|merge_requests)\/(\d+)\/notes$/.exec(path))) {
      const on = { kind: m[1] === "issues" ? ("issue" as const) : ("pull" as const), iid: Number(m[2]) };
      const exists = on.kind === "issue" ? f.issues.has(on.iid) && !f.switches.deleted.has(on.iid) : f.mrs.has(on.iid);
      if (!exists) return notFound(on.kind === "issue" ? "404 Issue Not Found" : "404 Merge Request Not Found");
      if (method === "GET") {
        const page = paged(
          r,
          sorted(
            f.notes.filter((n) => n.on.kind === on.kind && n.on.iid === on.iid),
            q,
          ),
        );
        return { ...page, body: page.items.map(noteJson) };
      }
      if (method === "POST") {
        const n = f.addNote({ ...(on.kind === "issue" ? { issue: on.iid } : { mr: on.iid }), login: "loop-bot", body: String(body?.body ?? "") });
        if (!n) return { status: 202, body: { commands_changes: {}, summary: ["Commands applied"] } };
        return { status: 201, body: noteJson(n) };
      }
    }
    if (method === "GET" && path === "/members/all") {
      const query = (q.get("query") ?? "").toLowerCase();
      const list = [...f.members.entries()]
        .filter(([login]) => login.toLowerCase().includes(query))
        .map(([login, level]) => ({
          ...user(login),
          access_level: level,
          created_at: "2024-01-01T00:00:00.000Z",
          expires_at: null,
          membership_state: "active",
        }));
      const page = paged(r, list);
      return { ...page, body: page.items };
    }
    if (method === "GET" && path === "/merge_requests") {
      const iids = iidsOf();
      const after = q.get("updated_after");
      const state = q.get("state") ?? "all";
      const source = q.get("source_branch");
      const list = [...f.mrs.values()]
        .filter((x) => !iids.length || iids.includes(x.iid))
        .filter((x) => state === "all" || x.state === state)
        .filter((x) => !source || x.source_branch === source)
        .filter((x) => !after || Date.parse(x.updated_at) >= Date.parse(after));
      const page = paged(r, sorted(list, q));
      return { ...page, body: page.items.map((x) => mrJson(x, false)) };
    }
    if (method === "POST" && path === "/merge_requests") {
      if (!f.headOf(body?.source_branch)) return { status: 422, body: { message: ["Source branch does not exist"] } };
      const open = [...f.mrs.values()].find((x) => x.source_branch === body.source_branch && x.target_branch === body.target_branch && x.state === "opened");
      if (open) return { status: 409, body: { message: [`Another open merge request already exists for this source branch: !${open.iid}`] } };
      const t = now();
      const mr: FakeMr = {
        iid: nextMr++,
        title: String(body.title),
        description: String(body.description ?? ""),
        source_branch: body.source_branch,
        target_branch: body.target_branch,
        state: "opened",
        merge_commit_sha: null,
        created_at: t,
        updated_at: t,
      };
      f.mrs.set(mr.iid, mr);
      return { status: 201, body: mrJson(mr, true) };
    }
    if (method === "GET" && (m = /^\/merge_requests\/(\d+)$/.exec(path))) {
      const mr = f.mrs.get(Number(m[1]));
      if (!mr) return notFound("404 Merge Request Not Found");
      const computing = f.switches.checkingFor > 0;
      if (computing) f.switches.checkingFor--;
      return { status: 200, body: mrJson(mr, true, computing) };
    }
    if (method === "PUT" && (m = /^\/merge_requests\/(\d+)\/merge$/.exec(path))) {
      const mr = f.mrs.get(Number(m[1]));
      if (!mr) return notFound("404 Merge Request Not Found");
      if (f.switches.mergeRefusal) return { status: f.switches.mergeRefusal.status, body: { message: f.switches.mergeRefusal.message } };
      if (mr.state !== "opened") return { status: 405, body: { message: "405 Method Not Allowed" } };
      if (f.switches.moveHeadOnMerge) {
        f.switches.moveHeadOnMerge = false;
        const moved = moveHead(mr);
        return { status: 409, body: { message: `SHA does not match HEAD of source branch: ${moved}` } };
      }
      const head = f.headOf(mr.source_branch)!;
      if (f.switches.conflictOnMergeOnce) {
        f.switches.conflictOnMergeOnce = false;
        return { status: 409, body: { message: `SHA does not match HEAD of source branch: ${head}` } };
      }
      if (body?.sha && body.sha !== head) return { status: 409, body: { message: `SHA does not match HEAD of source branch: ${head}` } };
      const status = detailedStatus(mr, false);
      if (status !== "mergeable") return { status: 405, body: { message: "405 Method Not Allowed" } };
      const sha = mergeInBare(mr);
      if (!sha) return { status: 422, body: { message: "Branch cannot be merged" } };
      mr.state = "merged";
      mr.merge_commit_sha = sha;
      mr.updated_at = now();
      f.merges.push({ iid: mr.iid, sha: head });
      return { status: 200, body: mrJson(mr, true) };
    }
    if (method === "GET" && path === "/pipelines") {
      const sha = q.get("sha");
      if (!sha) return { status: 200, body: [] };
      const page = paged(r, pipelinesOf(sha).reverse());
      return page;
    }
    if (method === "GET" && (m = /^\/pipelines\/(\d+)\/jobs$/.exec(path))) {
      if (f.switches.mergeRefPipeline && Number(m[1]) > 5_000_000) return paged(r, []);
      const sha = shas.get(Math.floor((Number(m[1]) - nextPipeline) / 10));
      if (!sha) return notFound("404 Pipeline Not Found");
      const failedOnly = q.getAll("scope[]").includes("failed");
      const page = paged(
        r,
        jobsOf(sha).filter((j) => !failedOnly || j.s.status === "failed"),
      );
      return { ...page, body: page.items.map((j) => jobJson(sha, j)) };
    }
    if (method === "GET" && (m = /^\/jobs\/(\d+)(\/trace)?$/.exec(path))) {
      const found = jobById(Number(m[1]));
      if (!found) return notFound("404 Job Not Found");
      if (m[2]) return { status: 200, body: found.j.s.log ?? "", text: true };
      return { status: 200, body: jobJson(found.sha, found.j) };
    }
    if (method === "GET" && (m = /^\/merge_requests\/(\d+)\/discussions$/.exec(path))) {
      const iid = Number(m[1]);
      if (!f.mrs.has(iid)) return notFound("404 Merge Request Not Found");
      const list = f.discussions
        .filter((d) => d.mr === iid)
        .map((d, i) => {
          const n = {
            ...noteJson({
              id: 9000 + i,
              on: { kind: "pull" as const, iid },
              login: d.login,
              body: d.body,
              system: false,
              created_at: "2024-01-01T00:00:00.000Z",
              updated_at: "2024-01-01T00:00:00.000Z",
            }),
            type: "DiffNote",
            resolvable: true,
            resolved: d.resolved,
            resolved_by: null,
            resolved_at: null,
          };
          return {
            id: `d${i}`,
            individual_note: false,
            notes: [
              {
                ...n,
                position: {
                  base_sha: "a",
                  start_sha: "a",
                  head_sha: "b",
                  old_path: d.path,
                  new_path: d.path,
                  position_type: "text",
                  old_line: null,
                  new_line: d.line ?? 1,
                },
              },
            ],
          };
        });
      const page = paged(r, list);
      return { ...page, body: page.items };
    }
    if (method === "GET" && (m = /^\/repository\/commits\/([0-9a-f]+)\/statuses$/.exec(path))) {
      const sha = m[1]!;
      const list = jobsOf(sha).map(({ s, id }) => ({
        id,
        sha,
        ref: "main",
        status: s.status,
        name: s.name,
        target_url: null,
        description: null,
        created_at: "2024-01-01T00:00:00.000Z",
        started_at: null,
        finished_at: null,
        allow_failure: s.allow_failure ?? false,
        coverage: null,
        pipeline_id: nextPipeline + shaId(sha) * 10,
        author: user("ci"),
      }));
      return paged(r, list);
    }
    return notFound();
  }
  return f;
}
