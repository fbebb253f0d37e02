// What GitLab's answers mean in provider.ts's neutral words (lib/forge/gitlab.ts asks, this reads):
// a merge request's detailed_merge_status as a wait or a block, a merge request as a ForgePull, a
// thread's notes without GitLab's system notes, its times in UTC, and a search in GitLab's filters.
// Pure: table-tested through the client's tests against the fake held to GitLab's documentation.
import { commitIdOf, type ForgeComment, type ForgePull, type ForgeThread, type Mergeability, type MergeBlock, numericCommentId } from "./provider.ts";
import type { Json } from "./http.ts";
import { sanitizeLine } from "./untrusted.ts";

/** detailed_merge_status values that waiting may change: GitLab still checking, its pipeline running, a merge time not reached. */
const MERGE_WAITS: Record<string, string> = {
  unchecked: "GitLab has not yet checked whether it can merge",
  checking: "GitLab is checking whether it can merge",
  preparing: "GitLab is preparing its diff",
  approvals_syncing: "its approvals are syncing",
  ci_still_running: "its pipeline is still running",
  ci_must_pass: "its pipeline must succeed first",
  status_checks_must_pass: "its external status checks must pass first",
  security_policy_pipeline_check: "the pipelines of its latest commit must succeed first (security policy)",
  merge_time: "it may not be merged before its merge time",
};

/** detailed_merge_status values waiting cannot fix: a person (or the reactions of docs/forge.md#reactions) must act. */
const MERGE_BLOCKS: Record<string, [MergeBlock, string]> = {
  conflict: ["conflict", "conflicts with its target branch"],
  broken_status: ["conflict", "cannot be merged into its target branch (a conflict)"],
  discussions_not_resolved: ["discussions", "has unresolved discussions"],
  not_approved: ["approvals", "is not approved"],
  requested_changes: ["changes_requested", "has reviewers who requested changes"],
  need_rebase: ["rebase", "must be rebased onto its target branch (loop does not rebase what it verified)"],
  merge_request_blocked: ["blocked", "is blocked by another merge request"],
  blocked_status: ["blocked", "is blocked by another merge request"],
  draft_status: ["draft", "is a draft"],
  not_open: ["blocked", "is not open"],
  commits_status: ["refused", "has a source branch that is missing or holds no commits"],
  jira_association_missing: ["refused", "must reference a Jira issue"],
  security_policy_violations: ["refused", "violates a security policy"],
  policies_denied: ["refused", "holds denied policies"],
  external_status_checks: ["refused", "has external status checks that did not pass"],
  locked_paths: ["refused", "changes locked paths"],
  locked_lfs_files: ["refused", "changes locked LFS files"],
  title_regex: ["refused", "has a title the project does not allow"],
};

/** People's notes of a thread: GitLab's own (system notes: "changed the title", "added a commit") are left out. */
export function notes(list: Json[], thread: ForgeThread): ForgeComment[] {
  return list
    .filter((n) => n && n.system !== true)
    .map((n) => ({
      id: numericCommentId(n.id),
      thread,
      login: String(n.author?.username ?? ""),
      body: String(n.body ?? ""),
      createdAt: normalTime(n.created_at) ?? "",
      updatedAt: normalTime(n.updated_at ?? n.created_at) ?? "",
    }));
}

/** A time as UTC ISO 8601 with milliseconds (GitLab answers in the instance's time zone), so times compare as strings. */
export function normalTime(t: unknown): string | null {
  if (typeof t !== "string") return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? t : new Date(ms).toISOString();
}

function mergeability(b: Json): Mergeability {
  const iid = Number(b.iid);
  const status = typeof b.detailed_merge_status === "string" ? b.detailed_merge_status : null;
  if (status === null) return { kind: "wait", code: "mergeable_unknown", reason: `GitLab has not said whether !${iid} can be merged` };
  if (status === "mergeable") return { kind: "ready" };
  const shown = sanitizeLine(status, 60);
  if (status in MERGE_WAITS)
    return {
      kind: "wait",
      code: status === "unchecked" || status === "checking" || status === "preparing" ? "mergeable_unknown" : "not_mergeable_yet",
      reason: `merge request !${iid}: ${MERGE_WAITS[status]} (detailed_merge_status ${shown})`,
    };
  const [code, why] = MERGE_BLOCKS[status] ?? ["refused", `cannot be merged (detailed_merge_status ${shown}, not one loop knows)`];
  return { kind: "block", code, reason: `merge request !${iid} ${why}${status in MERGE_BLOCKS ? ` (detailed_merge_status ${shown})` : ""}` };
}

/** A merge request as the single endpoint, a listing or a creation gives it. */
export function mergeRequest(b: Json): ForgePull {
  const iid = Number(b.iid);
  return {
    number: iid,
    label: `merge request !${iid}`,
    url: String(b.web_url ?? ""),
    state: b.state === "opened" ? "open" : "closed",
    merged: b.state === "merged",
    draft: Boolean(b.draft ?? b.work_in_progress),
    mergeability: mergeability(b),
    headSha: String(b.sha ?? ""),
    headRef: String(b.source_branch ?? ""),
    baseRef: String(b.target_branch ?? ""),
    mergeCommitSha: commitIdOf(b.merge_commit_sha) ?? commitIdOf(b.squash_commit_sha),
  };
}

/** A search in GitLab's words: its filters (label:, ~, milestone:, %, author:, assignee:, @) and free words. */
export function parseSearch(search: string): {
  labels: string[];
  milestone: string | null;
  author: string | null;
  assignee: string | null;
  words: string[];
  notes: string[];
} {
  const out = {
    labels: [] as string[],
    milestone: null as string | null,
    author: null as string | null,
    assignee: null as string | null,
    words: [] as string[],
    notes: [] as string[],
  };
  for (const raw of search.match(/(?:[^\s"]+|"[^"]*")+/g) ?? []) {
    const t = raw.replace(/"/g, "");
    const m = /^([a-z_]+):(.+)$/.exec(t);
    if (m?.[1] === "label") out.labels.push(m[2]!);
    else if (m?.[1] === "milestone") out.milestone = m[2]!;
    else if (m?.[1] === "author") out.author = m[2]!.replace(/^@/, "");
    else if (m?.[1] === "assignee") out.assignee = m[2]!.replace(/^@/, "");
    else if (t.startsWith("~") && t.length > 1) out.labels.push(t.slice(1));
    else if (t.startsWith("%") && t.length > 1) out.milestone = t.slice(1);
    else if (t.startsWith("@") && t.length > 1) out.assignee = t.slice(1);
    else if (m && m[1] !== "is" && m[1] !== "state") {
      out.notes.push(`GitLab has no filter ${sanitizeLine(m[1]!, 30)}:, so ${sanitizeLine(t, 60)} was searched as words`);
      out.words.push(t);
    } else if (!m) out.words.push(t);
  }
  return out;
}
