// The JSON bodies the fake GitHub answers, shaped as api.github.com answers them: every field the
// official description requires of that operation's answer, and none it does not list (the fake's
// answers are checked against it: github-openapi.ts). Only the fields loop reads carry meaning; the
// rest are plausible constants. Built per fake (its URL, owner, repository and id).

export interface ShapeContext {
  /** The fake's base URL, standing in for https://api.github.com. */
  api: string;
  owner: string;
  repo: string;
  repoId: number;
}

const WEB = "https://github.invalid";
const EPOCH = "2024-01-01T00:00:00Z";
let ids = 1_000_000;

export function user(api: string, login: string, id = hashId(login)) {
  const u = `${api}/users/${encodeURIComponent(login)}`;
  return {
    login,
    id,
    node_id: `U_${id}`,
    avatar_url: `${WEB}/avatars/${id}`,
    gravatar_id: "",
    url: u,
    html_url: `${WEB}/${encodeURIComponent(login)}`,
    followers_url: `${u}/followers`,
    following_url: `${u}/following{/other_user}`,
    gists_url: `${u}/gists{/gist_id}`,
    starred_url: `${u}/starred{/owner}{/repo}`,
    subscriptions_url: `${u}/subscriptions`,
    organizations_url: `${u}/orgs`,
    repos_url: `${u}/repos`,
    events_url: `${u}/events{/privacy}`,
    received_events_url: `${u}/received_events`,
    type: login.endsWith("[bot]") ? "Bot" : "User",
    site_admin: false,
  };
}

/** The `minimal-repository` fields (also the start of a full `repository`). */
export function minimalRepository(c: ShapeContext, o: { owner?: string; repo?: string; id?: number } = {}) {
  const owner = o.owner ?? c.owner;
  const repo = o.repo ?? c.repo;
  const id = o.id ?? c.repoId;
  const r = `${c.api}/repos/${owner}/${repo}`;
  return {
    id,
    node_id: `R_${id}`,
    name: repo,
    full_name: `${owner}/${repo}`,
    owner: user(c.api, owner),
    private: false,
    html_url: `${WEB}/${owner}/${repo}`,
    description: null,
    fork: false,
    url: r,
    archive_url: `${r}/{archive_format}{/ref}`,
    assignees_url: `${r}/assignees{/user}`,
    blobs_url: `${r}/git/blobs{/sha}`,
    branches_url: `${r}/branches{/branch}`,
    collaborators_url: `${r}/collaborators{/collaborator}`,
    comments_url: `${r}/comments{/number}`,
    commits_url: `${r}/commits{/sha}`,
    compare_url: `${r}/compare/{base}...{head}`,
    contents_url: `${r}/contents/{+path}`,
    contributors_url: `${r}/contributors`,
    deployments_url: `${r}/deployments`,
    downloads_url: `${r}/downloads`,
    events_url: `${r}/events`,
    forks_url: `${r}/forks`,
    git_commits_url: `${r}/git/commits{/sha}`,
    git_refs_url: `${r}/git/refs{/sha}`,
    git_tags_url: `${r}/git/tags{/sha}`,
    hooks_url: `${r}/hooks`,
    issue_comment_url: `${r}/issues/comments{/number}`,
    issue_events_url: `${r}/issues/events{/number}`,
    issues_url: `${r}/issues{/number}`,
    keys_url: `${r}/keys{/key_id}`,
    labels_url: `${r}/labels{/name}`,
    languages_url: `${r}/languages`,
    merges_url: `${r}/merges`,
    milestones_url: `${r}/milestones{/number}`,
    notifications_url: `${r}/notifications{?since,all,participating}`,
    pulls_url: `${r}/pulls{/number}`,
    releases_url: `${r}/releases{/id}`,
    stargazers_url: `${r}/stargazers`,
    statuses_url: `${r}/statuses/{sha}`,
    subscribers_url: `${r}/subscribers`,
    subscription_url: `${r}/subscription`,
    tags_url: `${r}/tags`,
    teams_url: `${r}/teams`,
    trees_url: `${r}/git/trees{/sha}`,
  };
}

/** A full `repository` (the head and base of a pull request carry one). */
export function repository(c: ShapeContext) {
  const m = minimalRepository(c);
  return {
    ...m,
    clone_url: `${WEB}/${c.owner}/${c.repo}.git`,
    git_url: `git://github.invalid/${c.owner}/${c.repo}.git`,
    ssh_url: `git@github.invalid:${c.owner}/${c.repo}.git`,
    svn_url: `${WEB}/${c.owner}/${c.repo}`,
    mirror_url: null,
    homepage: null,
    language: null,
    forks: 0,
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    size: 1,
    default_branch: "main",
    open_issues: 0,
    open_issues_count: 0,
    has_issues: true,
    has_projects: false,
    has_wiki: false,
    has_pages: false,
    has_downloads: false,
    has_discussions: false,
    archived: false,
    disabled: false,
    license: null,
    pushed_at: EPOCH,
    created_at: EPOCH,
    updated_at: EPOCH,
  };
}

/** `full-repository`: GET /repos/{owner}/{repo}. */
export function fullRepository(c: ShapeContext) {
  return { ...repository(c), network_count: 0, subscribers_count: 0 };
}

export interface IssueFields {
  number: number;
  title: string;
  body: string;
  state: "open" | "closed";
  labels: string[];
  login?: string;
  /** Set when the issue is a pull request (GitHub's issue endpoints answer for both). */
  pull?: boolean;
}

function label(c: ShapeContext, name: string) {
  const id = hashId(`label:${name}`);
  return {
    id,
    node_id: `LA_${id}`,
    url: `${c.api}/repos/${c.owner}/${c.repo}/labels/${encodeURIComponent(name)}`,
    name,
    description: null,
    color: "ededed",
    default: false,
  };
}

/** The fields `issue` and `issue-search-result-item` share. */
function issueCommon(c: ShapeContext, i: IssueFields) {
  const r = `${c.api}/repos/${c.owner}/${c.repo}`;
  const u = `${r}/issues/${i.number}`;
  return {
    id: hashId(`issue:${c.repoId}:${i.number}`),
    node_id: `I_${i.number}`,
    url: u,
    repository_url: r,
    labels_url: `${u}/labels{/name}`,
    comments_url: `${u}/comments`,
    events_url: `${u}/events`,
    html_url: `${WEB}/${c.owner}/${c.repo}/${i.pull ? "pull" : "issues"}/${i.number}`,
    number: i.number,
    state: i.state,
    title: i.title,
    body: i.body,
    user: user(c.api, i.login ?? "octocat"),
    labels: i.labels.map((l) => label(c, l)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: false,
    comments: 0,
    closed_at: i.state === "closed" ? EPOCH : null,
    created_at: EPOCH,
    updated_at: EPOCH,
    author_association: "NONE",
    ...(i.pull
      ? {
          pull_request: {
            url: `${r}/pulls/${i.number}`,
            html_url: `${WEB}/${c.owner}/${c.repo}/pull/${i.number}`,
            diff_url: `${WEB}/${c.owner}/${c.repo}/pull/${i.number}.diff`,
            patch_url: `${WEB}/${c.owner}/${c.repo}/pull/${i.number}.patch`,
            merged_at: null,
          },
        }
      : {}),
  };
}

export function issue(c: ShapeContext, i: IssueFields) {
  return issueCommon(c, i);
}

export function searchItem(c: ShapeContext, i: IssueFields) {
  return { ...issueCommon(c, i), score: 1 };
}

export interface CommentFields {
  id: number;
  issue: number;
  login: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export function comment(c: ShapeContext, x: CommentFields) {
  const r = `${c.api}/repos/${c.owner}/${c.repo}`;
  return {
    id: x.id,
    node_id: `IC_${x.id}`,
    url: `${r}/issues/comments/${x.id}`,
    html_url: `${WEB}/${c.owner}/${c.repo}/issues/${x.issue}#issuecomment-${x.id}`,
    body: x.body,
    user: user(c.api, x.login),
    created_at: x.created_at,
    updated_at: x.updated_at,
    issue_url: `${r}/issues/${x.issue}`,
    author_association: "OWNER", // never trusted by loop: here to prove it
  };
}

export interface PullFields {
  number: number;
  title: string;
  body: string;
  head: string;
  headSha: string;
  base: string;
  baseSha: string;
  draft: boolean;
  state: "open" | "closed";
  merged: boolean;
  merge_commit_sha: string | null;
}

/** `pull-request-simple`: what a pull-request *listing* gives (no merged/mergeable/mergeable_state). */
export function pullSimple(c: ShapeContext, p: PullFields) {
  const r = `${c.api}/repos/${c.owner}/${c.repo}`;
  const u = `${r}/pulls/${p.number}`;
  const link = (href: string) => ({ href });
  const ref = (name: string, sha: string) => ({ label: `${c.owner}:${name}`, ref: name, sha, user: user(c.api, c.owner), repo: repository(c) });
  return {
    url: u,
    id: hashId(`pull:${c.repoId}:${p.number}`),
    node_id: `PR_${p.number}`,
    html_url: `${WEB}/${c.owner}/${c.repo}/pull/${p.number}`,
    diff_url: `${WEB}/${c.owner}/${c.repo}/pull/${p.number}.diff`,
    patch_url: `${WEB}/${c.owner}/${c.repo}/pull/${p.number}.patch`,
    issue_url: `${r}/issues/${p.number}`,
    commits_url: `${u}/commits`,
    review_comments_url: `${u}/comments`,
    review_comment_url: `${r}/pulls/comments{/number}`,
    comments_url: `${r}/issues/${p.number}/comments`,
    statuses_url: `${r}/statuses/${p.headSha}`,
    number: p.number,
    state: p.state,
    locked: false,
    title: p.title,
    user: user(c.api, "loop-bot"),
    body: p.body,
    labels: [],
    milestone: null,
    assignee: null,
    created_at: EPOCH,
    updated_at: EPOCH,
    closed_at: p.state === "closed" ? EPOCH : null,
    merged_at: p.merged ? EPOCH : null,
    merge_commit_sha: p.merge_commit_sha,
    head: ref(p.head, p.headSha),
    base: ref(p.base, p.baseSha),
    _links: {
      self: link(u),
      html: link(`${WEB}/${c.owner}/${c.repo}/pull/${p.number}`),
      issue: link(`${r}/issues/${p.number}`),
      comments: link(`${r}/issues/${p.number}/comments`),
      review_comments: link(`${u}/comments`),
      review_comment: link(`${r}/pulls/comments{/number}`),
      commits: link(`${u}/commits`),
      statuses: link(`${r}/statuses/${p.headSha}`),
    },
    author_association: "MEMBER",
    auto_merge: null,
    draft: p.draft,
  };
}

/** `pull-request`: one pull request (GET, POST), with what only the single endpoint has. */
export function pull(c: ShapeContext, p: PullFields, m: { mergeable: boolean | null; mergeableState: string }) {
  return {
    ...pullSimple(c, p),
    merged: p.merged,
    mergeable: m.mergeable,
    mergeable_state: m.mergeableState,
    merged_by: p.merged ? user(c.api, "loop-bot") : null,
    maintainer_can_modify: false,
    comments: 0,
    review_comments: 0,
    commits: 1,
    additions: 1,
    deletions: 0,
    changed_files: 1,
  };
}

export type CheckConclusion = "success" | "failure" | "neutral" | "cancelled" | "skipped" | "timed_out" | "action_required";
export interface CheckRunFields {
  name: string;
  status: "queued" | "in_progress" | "completed" | "waiting" | "requested" | "pending";
  conclusion: CheckConclusion | null;
  /** What its app wrote (title, summary, text), and annotations on lines of files. */
  output?: { title?: string | null; summary?: string | null; text?: string | null };
  annotations?: AnnotationFields[];
}
export interface AnnotationFields {
  path: string;
  line: number;
  level: "notice" | "warning" | "failure";
  title?: string | null;
  message: string;
}

export function checkRun(c: ShapeContext, sha: string, r: CheckRunFields, id: number) {
  const done = r.status === "completed";
  return {
    id,
    node_id: `CR_${id}`,
    head_sha: sha,
    external_id: null,
    url: `${c.api}/repos/${c.owner}/${c.repo}/check-runs/${id}`,
    html_url: `${WEB}/${c.owner}/${c.repo}/runs/${id}`,
    details_url: null,
    status: r.status,
    conclusion: done ? r.conclusion : null,
    started_at: EPOCH,
    completed_at: done ? EPOCH : null,
    output: {
      title: r.output?.title ?? null,
      summary: r.output?.summary ?? null,
      text: r.output?.text ?? null,
      annotations_count: r.annotations?.length ?? 0,
      annotations_url: `${c.api}/repos/${c.owner}/${c.repo}/check-runs/${id}/annotations`,
    },
    name: r.name,
    check_suite: { id: 1 },
    app: null,
    pull_requests: [],
  };
}

/** `check-annotation`: GET /check-runs/{id}/annotations. */
export function annotation(c: ShapeContext, sha: string, a: AnnotationFields) {
  return {
    path: a.path,
    blob_href: `${WEB}/${c.owner}/${c.repo}/blob/${sha}/${a.path}`,
    start_line: a.line,
    end_line: a.line,
    start_column: null,
    end_column: null,
    annotation_level: a.level,
    title: a.title ?? null,
    message: a.message,
    raw_details: null,
  };
}

export interface ReviewFields {
  id: number;
  pull: number;
  login: string;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED";
  body: string;
  commit: string;
}

/** `pull-request-review`: GET /pulls/{n}/reviews. */
export function review(c: ShapeContext, r: ReviewFields) {
  const pr = `${c.api}/repos/${c.owner}/${c.repo}/pulls/${r.pull}`;
  const html = `${WEB}/${c.owner}/${c.repo}/pull/${r.pull}#pullrequestreview-${r.id}`;
  return {
    id: r.id,
    node_id: `PRR_${r.id}`,
    user: user(c.api, r.login),
    body: r.body,
    state: r.state,
    html_url: html,
    pull_request_url: pr,
    _links: { html: { href: html }, pull_request: { href: pr } },
    submitted_at: EPOCH,
    commit_id: r.commit,
    author_association: "COLLABORATOR", // never trusted by loop
  };
}

export interface ReviewCommentFields {
  id: number;
  pull: number;
  review: number;
  login: string;
  body: string;
  path: string;
  line: number;
  commit: string;
}

/** `pull-request-review-comment`: GET /pulls/{n}/comments. */
export function reviewComment(c: ShapeContext, x: ReviewCommentFields) {
  const r = `${c.api}/repos/${c.owner}/${c.repo}`;
  const html = `${WEB}/${c.owner}/${c.repo}/pull/${x.pull}#discussion_r${x.id}`;
  return {
    url: `${r}/pulls/comments/${x.id}`,
    pull_request_review_id: x.review,
    id: x.id,
    node_id: `PRRC_${x.id}`,
    diff_hunk: "@@ -1 +1 @@",
    path: x.path,
    position: 1,
    original_position: 1,
    commit_id: x.commit,
    original_commit_id: x.commit,
    user: user(c.api, x.login),
    body: x.body,
    created_at: EPOCH,
    updated_at: EPOCH,
    html_url: html,
    pull_request_url: `${r}/pulls/${x.pull}`,
    author_association: "COLLABORATOR",
    _links: { self: { href: `${r}/pulls/comments/${x.id}` }, html: { href: html }, pull_request: { href: `${r}/pulls/${x.pull}` } },
    line: x.line,
    original_line: x.line,
    side: "RIGHT",
  };
}

export type StatusState = "success" | "failure" | "error" | "pending";
export interface StatusFields {
  context: string;
  state: StatusState;
  description?: string | null;
  targetUrl?: string | null;
}

export function status(c: ShapeContext, s: StatusFields, id: number) {
  return {
    id,
    node_id: `SC_${id}`,
    url: `${c.api}/repos/${c.owner}/${c.repo}/statuses/${id}`,
    avatar_url: null,
    state: s.state,
    description: s.description ?? null,
    target_url: s.targetUrl ?? null,
    context: s.context,
    created_at: EPOCH,
    updated_at: EPOCH,
  };
}

/** The combined status: failure if any is failure or error, pending if any is pending or there are none, else success. */
export function combinedState(all: StatusFields[]): StatusState {
  if (all.some((s) => s.state === "failure" || s.state === "error")) return "failure";
  if (all.length === 0 || all.some((s) => s.state === "pending")) return "pending";
  return "success";
}

export function combined(c: ShapeContext, sha: string, all: StatusFields[], page: unknown[]) {
  return {
    state: combinedState(all),
    sha,
    total_count: all.length,
    statuses: page,
    repository: minimalRepository(c),
    commit_url: `${c.api}/repos/${c.owner}/${c.repo}/commits/${sha}`,
    url: `${c.api}/repos/${c.owner}/${c.repo}/commits/${sha}/status`,
  };
}

/** GET /collaborators/{login}/permission: `permission` is the base role, `role_name` may be a custom role's name. */
export function permission(c: ShapeContext, login: string, p: { permission: string; roleName: string }) {
  return { permission: p.permission, role_name: p.roleName, user: { ...user(c.api, login), role_name: p.roleName } };
}

export function error(message: string, status?: number) {
  return { message, documentation_url: "https://docs.github.com/rest", ...(status ? { status: String(status) } : {}) };
}

export function validationError(message: string, code = "custom") {
  return {
    message: "Validation Failed",
    errors: [{ resource: "PullRequest", code, message }],
    documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
  };
}

export function nextId(): number {
  return ids++;
}

/** A stable positive id for a name (logins, labels), like GitHub's numeric ids. */
function hashId(s: string): number {
  let h = 7;
  for (const ch of s) h = (h * 31 + ch.charCodeAt(0)) % 2_000_000_000;
  return h + 1;
}
