// The part of GitLab's REST API v4 that loop uses, as a checker of one HTTP exchange, the way
// github-openapi.ts holds the fake GitHub to GitHub's official description.
//
// GitLab's official OpenAPI description (doc/api/openapi/openapi_v3.yaml in the GitLab repository)
// is not published on npm (no package of GitLab's ships it, and none of the GitLab client packages
// on npm carries a schema), so it cannot be a dev dependency here. What follows is a schema of the
// operations and shapes loop uses, written from GitLab's REST API documentation, each operation
// citing its page (docs.gitlab.com/api/…): the operation's path and method, the query parameters
// and body fields GitLab documents for it, the statuses it documents, and each answer's fields
// (required where GitLab always sends them, enums where GitLab lists its values, nothing else
// allowed: an undocumented field fails). The fake GitLab (fake-gitlab.ts) runs every exchange it
// serves through it, and a violation fails the test that caused it.
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

type Schema = Record<string, any>;

export interface Exchange {
  method: string;
  /** Path under the API root (/api/v4) and query, e.g. `/projects/acme%2Fapi/issues/1?x=y`. */
  url: string;
  requestBody: unknown;
  status: number;
  body: unknown;
}

const str = { type: "string" };
const nstr = { type: ["string", "null"] };
const int = { type: "integer" };
const nint = { type: ["integer", "null"] };
const bool = { type: "boolean" };
const time = { type: "string", format: "date-time" };
const ntime = { anyOf: [time, { type: "null" }] };
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: "object",
  properties,
  required,
  additionalProperties: false,
});
const arr = (items: Schema): Schema => ({ type: "array", items });

/** docs.gitlab.com/api/users: the basic user every author, assignee and member starts from. */
const userBasic = obj({
  id: int,
  username: str,
  name: str,
  state: { enum: ["active", "blocked", "deactivated", "banned", "ldap_blocked", "blocked_pending_approval"] },
  locked: bool,
  avatar_url: nstr,
  web_url: str,
});

/** docs.gitlab.com/api/issues#single-project-issue (fields loop's fake sends; moved_to_id is how a moved issue says where it went). */
const issue = obj(
  {
    id: int,
    iid: int,
    project_id: int,
    title: str,
    description: nstr,
    state: { enum: ["opened", "closed"] },
    created_at: time,
    updated_at: time,
    closed_at: ntime,
    closed_by: { anyOf: [userBasic, { type: "null" }] },
    labels: arr(str),
    milestone: { type: "null" },
    assignees: arr(userBasic),
    assignee: { anyOf: [userBasic, { type: "null" }] },
    author: userBasic,
    type: { enum: ["ISSUE", "INCIDENT", "TEST_CASE", "TASK"] },
    issue_type: { enum: ["issue", "incident", "test_case", "task"] },
    user_notes_count: int,
    merge_requests_count: int,
    upvotes: int,
    downvotes: int,
    due_date: nstr,
    confidential: bool,
    discussion_locked: { type: ["boolean", "null"] },
    web_url: str,
    time_stats: obj({ time_estimate: int, total_time_spent: int, human_time_estimate: nstr, human_total_time_spent: nstr }),
    task_completion_status: obj({ count: int, completed_count: int }),
    has_tasks: bool,
    references: obj({ short: str, relative: str, full: str }),
    moved_to_id: nint,
    service_desk_reply_to: nstr,
    _links: obj({ self: str, notes: str, award_emoji: str, project: str, closed_as_duplicate_of: nstr }),
  },
  ["id", "iid", "project_id", "title", "description", "state", "created_at", "updated_at", "labels", "author", "web_url", "moved_to_id", "issue_type"],
);

/** docs.gitlab.com/api/notes: a note on an issue or a merge request (system: GitLab's own, "changed the description"). */
const note = obj(
  {
    id: int,
    type: { enum: [null, "DiscussionNote", "DiffNote"] },
    body: str,
    attachment: { type: "null" },
    author: userBasic,
    created_at: time,
    updated_at: time,
    system: bool,
    noteable_id: int,
    noteable_type: { enum: ["Issue", "MergeRequest"] },
    project_id: int,
    noteable_iid: int,
    resolvable: bool,
    confidential: bool,
    internal: bool,
    imported: bool,
    imported_from: { enum: ["none", "github", "bitbucket", "bitbucket_server", "gitea", "fogbugz"] },
  },
  ["id", "body", "author", "created_at", "updated_at", "system", "noteable_id", "noteable_type", "noteable_iid"],
);

/** docs.gitlab.com/api/merge_requests#merge-status: every value of detailed_merge_status GitLab documents (older and current names). */
export const DETAILED_MERGE_STATUSES = [
  "approvals_syncing",
  "checking",
  "ci_must_pass",
  "ci_still_running",
  "commits_status",
  "conflict",
  "discussions_not_resolved",
  "draft_status",
  "jira_association_missing",
  "mergeable",
  "merge_request_blocked",
  "merge_time",
  "need_rebase",
  "not_approved",
  "not_open",
  "preparing",
  "requested_changes",
  "security_policy_pipeline_check",
  "security_policy_violations",
  "status_checks_must_pass",
  "unchecked",
  "locked_paths",
  "locked_lfs_files",
  "title_regex",
  "blocked_status",
  "broken_status",
  "external_status_checks",
  "policies_denied",
] as const;
/** docs.gitlab.com/api/pipelines: a pipeline's status. */
const PIPELINE_STATUSES = [
  "created",
  "waiting_for_resource",
  "preparing",
  "pending",
  "running",
  "success",
  "failed",
  "canceled",
  "canceling",
  "skipped",
  "manual",
  "scheduled",
];
const pipelineBasic = obj({
  id: int,
  iid: int,
  project_id: int,
  sha: str,
  ref: str,
  status: { enum: PIPELINE_STATUSES },
  source: str,
  created_at: time,
  updated_at: time,
  web_url: str,
});

/** docs.gitlab.com/api/merge_requests#list-merge-requests: a merge request in a listing. */
const mrBasicProps: Schema = {
  id: int,
  iid: int,
  project_id: int,
  title: str,
  description: nstr,
  state: { enum: ["opened", "closed", "locked", "merged"] },
  created_at: time,
  updated_at: time,
  merged_by: { anyOf: [userBasic, { type: "null" }] },
  merge_user: { anyOf: [userBasic, { type: "null" }] },
  merged_at: ntime,
  closed_by: { anyOf: [userBasic, { type: "null" }] },
  closed_at: ntime,
  target_branch: str,
  source_branch: str,
  user_notes_count: int,
  upvotes: int,
  downvotes: int,
  author: userBasic,
  assignees: arr(userBasic),
  assignee: { anyOf: [userBasic, { type: "null" }] },
  reviewers: arr(userBasic),
  source_project_id: int,
  target_project_id: int,
  labels: arr(str),
  draft: bool,
  work_in_progress: bool,
  milestone: { type: "null" },
  merge_when_pipeline_succeeds: bool,
  merge_status: { enum: ["unchecked", "checking", "can_be_merged", "cannot_be_merged", "cannot_be_merged_recheck", "cannot_be_merged_rechecking"] },
  detailed_merge_status: { enum: [...DETAILED_MERGE_STATUSES] },
  sha: str,
  merge_commit_sha: nstr,
  squash_commit_sha: nstr,
  discussion_locked: { type: ["boolean", "null"] },
  should_remove_source_branch: { type: ["boolean", "null"] },
  force_remove_source_branch: { type: ["boolean", "null"] },
  prepared_at: ntime,
  reference: str,
  references: obj({ short: str, relative: str, full: str }),
  web_url: str,
  time_stats: obj({ time_estimate: int, total_time_spent: int, human_time_estimate: nstr, human_total_time_spent: nstr }),
  squash: bool,
  squash_on_merge: bool,
  task_completion_status: obj({ count: int, completed_count: int }),
  has_conflicts: bool,
  blocking_discussions_resolved: bool,
};
const mrRequired = [
  "id",
  "iid",
  "project_id",
  "title",
  "description",
  "state",
  "created_at",
  "updated_at",
  "target_branch",
  "source_branch",
  "source_project_id",
  "target_project_id",
  "draft",
  "detailed_merge_status",
  "sha",
  "merge_commit_sha",
  "squash_commit_sha",
  "web_url",
  "has_conflicts",
];
const mrBasic = obj(mrBasicProps, mrRequired);
/** docs.gitlab.com/api/merge_requests#get-single-mr: a listing's fields and the single endpoint's own. */
const mr = obj(
  {
    ...mrBasicProps,
    subscribed: bool,
    changes_count: nstr,
    latest_build_started_at: ntime,
    latest_build_finished_at: ntime,
    first_deployed_to_production_at: ntime,
    pipeline: { anyOf: [pipelineBasic, { type: "null" }] },
    head_pipeline: { anyOf: [pipelineBasic, { type: "null" }] },
    diff_refs: { anyOf: [obj({ base_sha: str, head_sha: str, start_sha: str }), { type: "null" }] },
    merge_error: nstr,
    user: obj({ can_merge: bool }),
    first_contribution: bool,
  },
  [...mrRequired, "head_pipeline", "merge_error"],
);

/** docs.gitlab.com/api/commits#list-the-statuses-of-a-commit: a job's or an external status. */
const commitStatus = obj(
  {
    id: int,
    sha: str,
    ref: nstr,
    status: {
      enum: [
        "pending",
        "running",
        "success",
        "failed",
        "canceled",
        "canceling",
        "skipped",
        "manual",
        "created",
        "scheduled",
        "waiting_for_resource",
        "preparing",
      ],
    },
    name: str,
    target_url: nstr,
    description: nstr,
    created_at: time,
    started_at: ntime,
    finished_at: ntime,
    allow_failure: bool,
    coverage: { type: ["number", "null"] },
    pipeline_id: int,
    author: userBasic,
  },
  ["id", "sha", "status", "name", "allow_failure", "created_at"],
);

/** docs.gitlab.com/api/jobs#get-a-single-job (the fields loop's fake sends). */
const job = obj(
  {
    id: int,
    name: str,
    stage: str,
    status: {
      enum: [
        "created",
        "pending",
        "running",
        "failed",
        "success",
        "canceled",
        "canceling",
        "skipped",
        "waiting_for_resource",
        "manual",
        "scheduled",
        "preparing",
      ],
    },
    ref: str,
    allow_failure: bool,
    failure_reason: str,
    created_at: time,
    started_at: ntime,
    finished_at: ntime,
    web_url: str,
    pipeline: obj({ id: int, project_id: int, ref: str, sha: str, status: str }),
    user: userBasic,
  },
  ["id", "name", "stage", "status", "allow_failure", "web_url"],
);

/** docs.gitlab.com/api/discussions#list-project-merge-request-discussion-items: a discussion and its notes (a diff note has a position). */
const diffPosition = obj({
  base_sha: str,
  start_sha: str,
  head_sha: str,
  old_path: str,
  new_path: str,
  position_type: { enum: ["text", "image", "file"] },
  old_line: nint,
  new_line: nint,
});
const discussionNote = obj(
  {
    ...note.properties,
    type: { enum: [null, "DiscussionNote", "DiffNote"] },
    resolvable: bool,
    resolved: bool,
    resolved_by: { anyOf: [userBasic, { type: "null" }] },
    resolved_at: ntime,
    position: diffPosition,
  },
  [...note.required, "resolvable"],
);
const discussion = obj({ id: str, individual_note: bool, notes: arr(discussionNote) });

/** docs.gitlab.com/api/members#list-all-members-of-a-group-or-project-including-inherited-and-invited-members. */
const member = obj(
  {
    ...userBasic.properties,
    access_level: { enum: [0, 5, 10, 15, 20, 30, 40, 50] },
    created_at: time,
    expires_at: nstr,
    membership_state: { enum: ["active", "awaiting"] },
  },
  ["id", "username", "name", "state", "access_level"],
);

/** docs.gitlab.com/api/projects#get-a-single-project (the fields loop's fake sends). */
const project = obj(
  {
    id: int,
    description: nstr,
    name: str,
    name_with_namespace: str,
    path: str,
    path_with_namespace: str,
    created_at: time,
    default_branch: str,
    visibility: { enum: ["private", "internal", "public"] },
    web_url: str,
    http_url_to_repo: str,
    ssh_url_to_repo: str,
    namespace: obj({ id: int, name: str, path: str, kind: { enum: ["group", "user"] }, full_path: str, parent_id: nint, web_url: str }),
  },
  ["id", "name", "path", "path_with_namespace", "web_url", "namespace"],
);

/** docs.gitlab.com/api/rest/troubleshooting#status-codes: `{message}` (a string, or a field → errors object), or OAuth's `{error, error_description}`. */
const error = {
  anyOf: [
    obj({ message: { anyOf: [str, { type: "object", additionalProperties: arr(str) }, arr(str)] } }),
    obj({ error: str, error_description: str, scope: str }, ["error"]),
  ],
};
/** docs.gitlab.com/api/notes: a note made only of quick actions is not saved; GitLab answers 202 with what they did. */
const noteCommands = obj({ commands_changes: { type: "object" }, summary: arr(str) });

const PAGED = ["page", "per_page"];
interface Op {
  id: string;
  method: string;
  /** Path template under /api/v4 with `:param` segments. */
  path: string;
  query: string[];
  body?: Schema;
  responses: Record<number, Schema | null>;
  doc: string;
}
const ISSUE_FILTERS = [
  "iids[]",
  "state",
  "labels",
  "milestone",
  "author_username",
  "assignee_username",
  "search",
  "in",
  "scope",
  "order_by",
  "sort",
  "updated_after",
  "updated_before",
  "created_after",
  "created_before",
  "confidential",
  "issue_type",
  "with_labels_details",
];
const MR_FILTERS = [
  "iids[]",
  "state",
  "source_branch",
  "target_branch",
  "labels",
  "milestone",
  "author_username",
  "search",
  "scope",
  "order_by",
  "sort",
  "updated_after",
  "updated_before",
  "created_after",
  "created_before",
  "view",
  "wip",
  "draft",
];
const OPS: Op[] = [
  {
    id: "projects/get",
    method: "GET",
    path: "/projects/:id",
    query: ["statistics", "license", "with_custom_attributes"],
    responses: { 200: project },
    doc: "https://docs.gitlab.com/api/projects/#get-a-single-project",
  },
  {
    id: "issues/list",
    method: "GET",
    path: "/projects/:id/issues",
    query: [...ISSUE_FILTERS, ...PAGED],
    responses: { 200: arr(issue) },
    doc: "https://docs.gitlab.com/api/issues/#list-project-issues",
  },
  {
    id: "issues/get",
    method: "GET",
    path: "/projects/:id/issues/:issue_iid",
    query: [],
    responses: { 200: issue },
    doc: "https://docs.gitlab.com/api/issues/#single-project-issue",
  },
  {
    id: "notes/issue/list",
    method: "GET",
    path: "/projects/:id/issues/:issue_iid/notes",
    query: ["sort", "order_by", "activity_filter", ...PAGED],
    responses: { 200: arr(note) },
    doc: "https://docs.gitlab.com/api/notes/#list-project-issue-notes",
  },
  {
    id: "notes/issue/create",
    method: "POST",
    path: "/projects/:id/issues/:issue_iid/notes",
    query: [],
    body: obj({ body: { type: "string", minLength: 1, maxLength: 1_000_000 }, internal: bool, created_at: str }, ["body"]),
    responses: { 201: note, 202: noteCommands },
    doc: "https://docs.gitlab.com/api/notes/#create-new-issue-note",
  },
  {
    id: "notes/mr/list",
    method: "GET",
    path: "/projects/:id/merge_requests/:merge_request_iid/notes",
    query: ["sort", "order_by", ...PAGED],
    responses: { 200: arr(note) },
    doc: "https://docs.gitlab.com/api/notes/#list-all-merge-request-notes",
  },
  {
    id: "notes/mr/create",
    method: "POST",
    path: "/projects/:id/merge_requests/:merge_request_iid/notes",
    query: [],
    body: obj({ body: { type: "string", minLength: 1, maxLength: 1_000_000 }, internal: bool, created_at: str, merge_request_diff_head_sha: str }, ["body"]),
    responses: { 201: note, 202: noteCommands },
    doc: "https://docs.gitlab.com/api/notes/#create-new-merge-request-note",
  },
  {
    id: "members/all",
    method: "GET",
    path: "/projects/:id/members/all",
    query: ["query", "user_ids", "show_seat_info", "state", ...PAGED],
    responses: { 200: arr(member) },
    doc: "https://docs.gitlab.com/api/members/#list-all-members-of-a-group-or-project-including-inherited-and-invited-members",
  },
  {
    id: "mrs/list",
    method: "GET",
    path: "/projects/:id/merge_requests",
    query: [...MR_FILTERS, ...PAGED],
    responses: { 200: arr(mrBasic) },
    doc: "https://docs.gitlab.com/api/merge_requests/#list-project-merge-requests",
  },
  {
    id: "mrs/create",
    method: "POST",
    path: "/projects/:id/merge_requests",
    query: [],
    body: obj(
      {
        source_branch: str,
        target_branch: str,
        title: { type: "string", minLength: 1 },
        description: { type: "string", maxLength: 1_048_576 },
        remove_source_branch: bool,
        squash: bool,
        labels: str,
        assignee_ids: arr(int),
        reviewer_ids: arr(int),
        allow_collaboration: bool,
        target_project_id: int,
      },
      ["source_branch", "target_branch", "title"],
    ),
    responses: { 201: mr, 400: error, 409: error, 422: error },
    doc: "https://docs.gitlab.com/api/merge_requests/#create-mr",
  },
  {
    id: "mrs/get",
    method: "GET",
    path: "/projects/:id/merge_requests/:merge_request_iid",
    query: ["render_html", "include_diverged_commits_count", "include_rebase_in_progress"],
    responses: { 200: mr },
    doc: "https://docs.gitlab.com/api/merge_requests/#get-single-mr",
  },
  {
    id: "mrs/merge",
    method: "PUT",
    path: "/projects/:id/merge_requests/:merge_request_iid/merge",
    query: [],
    body: obj(
      {
        sha: { type: "string", pattern: "^[0-9a-f]{40}$" },
        merge_commit_message: str,
        squash_commit_message: str,
        squash: bool,
        should_remove_source_branch: bool,
        auto_merge: bool,
        merge_when_pipeline_succeeds: bool,
      },
      [],
    ),
    responses: { 200: mr, 401: error, 405: error, 406: error, 409: error, 422: error },
    doc: "https://docs.gitlab.com/api/merge_requests/#merge-a-merge-request",
  },
  {
    id: "pipelines/list",
    method: "GET",
    path: "/projects/:id/pipelines",
    query: [
      "scope",
      "status",
      "source",
      "ref",
      "sha",
      "yaml_errors",
      "username",
      "updated_after",
      "updated_before",
      "created_after",
      "created_before",
      "name",
      "order_by",
      "sort",
      ...PAGED,
    ],
    responses: { 200: arr(pipelineBasic) },
    doc: "https://docs.gitlab.com/api/pipelines/#list-project-pipelines",
  },
  {
    id: "jobs/pipeline",
    method: "GET",
    path: "/projects/:id/pipelines/:pipeline_id/jobs",
    query: ["scope[]", "include_retried", ...PAGED],
    responses: { 200: arr(job) },
    doc: "https://docs.gitlab.com/api/jobs/#list-pipeline-jobs",
  },
  {
    id: "jobs/get",
    method: "GET",
    path: "/projects/:id/jobs/:job_id",
    query: [],
    responses: { 200: job },
    doc: "https://docs.gitlab.com/api/jobs/#get-a-single-job",
  },
  {
    id: "jobs/trace",
    method: "GET",
    path: "/projects/:id/jobs/:job_id/trace",
    query: [],
    responses: { 200: str },
    doc: "https://docs.gitlab.com/api/jobs/#get-a-log-file (plain text)",
  },
  {
    id: "discussions/mr",
    method: "GET",
    path: "/projects/:id/merge_requests/:merge_request_iid/discussions",
    query: PAGED,
    responses: { 200: arr(discussion) },
    doc: "https://docs.gitlab.com/api/discussions/#list-project-merge-request-discussion-items",
  },
  {
    id: "commits/statuses",
    method: "GET",
    path: "/projects/:id/repository/commits/:sha/statuses",
    query: ["ref", "stage", "name", "pipeline_id", "order_by", "sort", "all", ...PAGED],
    responses: { 200: arr(commitStatus) },
    doc: "https://docs.gitlab.com/api/commits/#list-the-statuses-of-a-commit",
  },
];

/** Answers any operation may give (docs.gitlab.com/api/rest/troubleshooting#status-codes; /api/rest#rate-limits; conditional requests). */
const UNIVERSAL = new Set([304, 401, 403, 404, 429, 500, 502, 503]);

export interface GitLabRestChecker {
  check(x: Exchange): string[];
  operationOf(method: string, url: string): string | null;
}

let cached: GitLabRestChecker | null = null;

export function gitlabRest(): GitLabRestChecker {
  return (cached ??= build());
}

function build(): GitLabRestChecker {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const validator = (key: string, s: Schema) => {
    let v = compiled.get(key);
    if (!v) compiled.set(key, (v = ajv.compile(s)));
    return v;
  };
  const routes = OPS.map((o) => ({ o, re: new RegExp(`^${o.path.replace(/:[a-z_]+/g, "[^/]+")}$`) }));
  const find = (method: string, url: string) => routes.find((r) => r.o.method === method && r.re.test(url.split("?")[0]!))?.o ?? null;
  return {
    operationOf: (method, url) => find(method, url)?.id ?? null,
    check(x) {
      const where = `${x.method} ${x.url} → ${x.status}`;
      const o = find(x.method, x.url);
      if (!o) return [`${where}: not an operation loop's GitLab schema knows (docs.gitlab.com/api)`];
      const out: string[] = [];
      for (const name of new URL(x.url, "http://x").searchParams.keys())
        if (!o.query.includes(name)) out.push(`${where}: query parameter ${name} is not documented for ${o.id} (${o.doc})`);
      if (o.body && x.requestBody !== null && x.requestBody !== undefined) {
        const v = validator(`${o.id} request`, o.body);
        if (!v(x.requestBody)) out.push(`${where}: request body is not ${o.id}'s: ${ajv.errorsText(v.errors, { dataVar: "body" })}`);
      }
      if (x.status === 304) {
        if (x.method !== "GET" || x.body !== null) out.push(`${where}: a 304 answers a conditional GET, without a body`);
        return out;
      }
      const documented = o.responses[x.status];
      if (documented === undefined && !UNIVERSAL.has(x.status)) return [...out, `${where}: status ${x.status} is not documented for ${o.id} (${o.doc})`];
      const schema = documented ?? error;
      const v = validator(`${o.id} ${x.status}`, schema);
      if (!v(x.body)) out.push(`${where}: answer is not ${o.id}'s ${x.status}: ${ajv.errorsText(v.errors, { dataVar: "body", separator: "; " })}`);
      return out;
    },
  };
}
