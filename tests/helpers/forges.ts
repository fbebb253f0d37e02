// The fake GitHub and the fake GitLab behind one face, so an end-to-end scenario whose behaviour is
// the same on both forges is written once and run against each (tests/step/forge/*.test.ts:
// `describe.each(FORGES)`). Each adapter says the scenario's world in its forge's terms: an issue,
// a comment (a GitLab note), checks (check runs and statuses; pipelines and job statuses), a
// pull request (a merge request), a writer (a base role of write; the Developer role).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { type FakeGitLab, startFakeGitLab } from "./fake-gitlab.ts";

export type Checks = "passing" | "pending" | "failing";

export interface FakeForge {
  provider: "github" | "gitlab";
  /** loop.json's forge.repo: owner/repo, or a GitLab project in nested groups. */
  repo: string;
  apiUrl: string;
  bare: string;
  /** The ref of issue `n`. */
  ref(n: number): string;
  /** How the forge names pull request `n` in loop's reasons ("pull request #2", "merge request !2"). */
  pullLabel(n: number): string;
  addIssue(n: number, o?: { title?: string; body?: string }): void;
  closeIssue(n: number): void;
  /** A comment on issue `issue` or pull request `pull`, as a person writes it; its id and creation time. */
  addComment(o: { issue?: number; pull?: number; login: string; body: string }): { id: number; createdAt: string };
  editComment(id: number, body: string): void;
  /** Comments loop posted. */
  loopComments(): string[];
  setChecks(c: Checks): void;
  setWriter(login: string, writer: boolean): void;
  pulls(): { number: number; head: string; base: string; draft: boolean; state: "open" | "closed" | "merged" }[];
  merges(): { number: number; sha: string }[];
  /** Someone pushes to the pull request's branch at the moment loop merges (the forge answers 409). */
  moveHeadOnMerge(): void;
  /** The next merge call answers 409 though the head is still the one asked for (a transient conflict). */
  conflictOnMergeOnce(): void;
  /** The next request is refused with a rate limit that ends in `seconds`. */
  rateLimit(seconds: number): void;
  /** Every merge is refused in a way waiting cannot fix. */
  refuseMerges(): void;
  /** The forge is still computing mergeability for the next `n` reads. */
  computing(n: number): void;
  /** Requests whose path ends with `suffix` never answer. */
  hang(suffix: string | null, method?: string): void;
  /** Requests for issue `n` answer 502. */
  failIssue(n: number): void;
  headOf(branch: string): string | null;
  /** Someone changes pull request `n`'s base branch. */
  changeBase(n: number, base: string): void;
  /** Every merge call answers this status (a server error, a validation failure). */
  failMerges(status: 500 | 422): void;
  /**
   * CI that fails once (docs/forge.md#reactions): the first head checks are asked for fails a `build` check whose
   * output names what failed (GitHub: the check run's title, summary and an annotation; GitLab: the
   * job's failure reason and log); every later head (a fix pushed to the PR) passes.
   */
  failCiOnce(): void;
  /** A reviewer asks for changes on pull request `pull` (GitHub: a CHANGES_REQUESTED review and a comment on the diff; GitLab: an unresolved diff discussion). */
  requestChanges(o: { pull: number; login: string; body: string; path: string; line: number }): void;
  /** Someone pushes a commit with these files to the base branch `main` of the remote; its sha. */
  pushToBase(files: Record<string, string>): string;
  /** The fake itself (FakeGitHub, FakeGitLab), for a scenario only one forge has. */
  raw: unknown;
  /** Every request the fake answered, as "METHOD path?query". */
  requests(): string[];
  /** How the forge's listing of comments since the cursor is asked (a request starting with this). */
  commentListing: string;
  stop(): void;
}

/** `clockLagMs`: the forge's clock runs that far behind this machine's (every comment reads as posted that long ago). */
export interface FakeForgeOptions {
  clockLagMs?: number;
}

/** The text CI's failure says in both fakes, for the handoff to name. */
export const CI_FAILURE = { check: "build", summary: "test_login: expected 200, got 500", path: "src/login.ts", line: 12 };

/** A commit of `files` on `branch` of the bare repository `bare`, pushed from a clone of its own. */
function pushCommit(bare: string, branch: string, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "loop-fake-push-"));
  const run = (cwd: string, ...args: string[]) => {
    const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
    return r.stdout.toString().trim();
  };
  try {
    run(tmpdir(), "clone", "-q", "-b", branch, bare, dir);
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    run(dir, "add", "-A");
    run(dir, "-c", "user.name=someone", "-c", "user.email=someone@example.invalid", "commit", "-qm", `someone changes ${Object.keys(files).join(", ")}`);
    run(dir, "push", "-q", "origin", branch);
    return run(dir, "rev-parse", "HEAD");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function github(dir: string, o: FakeForgeOptions = {}): FakeForge {
  const gh: FakeGitHub = startFakeGitHub({ dir, ...o });
  return {
    provider: "github",
    repo: `${gh.owner}/${gh.repo}`,
    apiUrl: gh.apiUrl,
    bare: gh.bare,
    ref: (n) => `github:${gh.owner}/${gh.repo}#${n}`,
    pullLabel: (n) => `pull request #${n}`,
    addIssue: (n, o = {}) => void gh.addIssue({ number: n, title: o.title, body: o.body }),
    closeIssue: (n) => void (gh.issues.get(n)!.state = "closed"),
    addComment: (o) => {
      const c = gh.addComment({ issue: (o.issue ?? o.pull)!, login: o.login, body: o.body });
      return { id: c.id, createdAt: c.created_at };
    },
    editComment: (id, body) => gh.editComment(id, body),
    loopComments: () => gh.comments.filter((c) => c.login === "loop-bot").map((c) => c.body),
    setChecks: (c) => void (gh.switches.checks = c),
    setWriter: (login, w) => void gh.permissions.set(login, w ? "write" : "read"),
    pulls: () => [...gh.pulls.values()].map((p) => ({ number: p.number, head: p.head, base: p.base, draft: p.draft, state: p.merged ? "merged" : p.state })),
    merges: () => gh.merges.map((m) => ({ number: m.number, sha: m.sha })),
    moveHeadOnMerge: () => void (gh.switches.moveHeadOnMerge = true),
    conflictOnMergeOnce: () => void (gh.switches.conflictOnMergeOnce = true),
    rateLimit: (s) => void (gh.switches.rateLimit = { count: 1, status: 429, retryAfter: s }),
    refuseMerges: () => void (gh.switches.mergeRefusal = { status: 405, message: "Merge commits are not allowed on this repository." }),
    computing: (n) => void (gh.switches.mergeableNullFor = n),
    hang: (suffix, method) => void (gh.switches.hang = suffix === null ? null : (r) => r.path.endsWith(suffix) && (!method || r.method === method)),
    failIssue: (n) => void (gh.switches.fail = { match: (r) => r.path === `/repos/${gh.owner}/${gh.repo}/issues/${n}`, status: 502, count: 1_000 }),
    headOf: (b) => gh.headOf(b),
    changeBase: (n, base) => gh.changeBase(n, base),
    failMerges: (status) => void (gh.switches.mergeRefusal = { status, message: status === 500 ? "Server Error" : "Validation Failed" }),
    failCiOnce: () =>
      void (gh.switches.ciFailsOnce = {
        name: CI_FAILURE.check,
        status: "completed",
        conclusion: "failure",
        output: { title: "1 test failed", summary: CI_FAILURE.summary, text: "FAIL src/login.test.ts\n  test_login\n" },
        annotations: [{ path: CI_FAILURE.path, line: CI_FAILURE.line, level: "failure", title: "test_login", message: "expected 200, got 500" }],
      }),
    requestChanges: (o) => {
      gh.addReview({ pull: o.pull, login: o.login, state: "CHANGES_REQUESTED", body: o.body });
      gh.addReviewComment({ pull: o.pull, login: o.login, body: `${o.body} (here)`, path: o.path, line: o.line });
    },
    pushToBase: (files) => pushCommit(gh.bare, "main", files),
    raw: gh,
    requests: () => gh.requests,
    commentListing: `GET /repos/${gh.owner}/${gh.repo}/issues/comments?`,
    stop: () => gh.stop(),
  };
}

export function gitlab(dir: string, o: FakeForgeOptions = {}): FakeForge {
  const gl: FakeGitLab = startFakeGitLab({ dir, project: "acme/platform/api", ...o });
  const enc = encodeURIComponent(gl.project);
  const modes = { passing: "succeeded", pending: "pending", failing: "failed" } as const;
  return {
    provider: "gitlab",
    repo: gl.project,
    apiUrl: gl.apiUrl,
    bare: gl.bare,
    ref: (n) => `gitlab:${gl.project}#${n}`,
    pullLabel: (n) => `merge request !${n}`,
    addIssue: (n, o = {}) => void gl.addIssue({ iid: n, title: o.title, description: o.body }),
    closeIssue: (n) => void (gl.issues.get(n)!.state = "closed"),
    addComment: (o) => {
      const note = gl.addNote({ ...(o.pull !== undefined ? { mr: o.pull } : { issue: o.issue! }), login: o.login, body: o.body });
      if (!note) throw new Error(`GitLab would not save ${JSON.stringify(o.body)}: quick actions only`);
      return { id: note.id, createdAt: note.created_at };
    },
    editComment: (id, body) => gl.editNote(id, body),
    loopComments: () => gl.notes.filter((n) => n.login === "loop-bot").map((n) => n.body),
    setChecks: (c) => void (gl.switches.checks = modes[c]),
    setWriter: (login, w) => void gl.members.set(login, w ? 30 : 20),
    pulls: () =>
      [...gl.mrs.values()].map((m) => ({
        number: m.iid,
        head: m.source_branch,
        base: m.target_branch,
        draft: /^draft:/i.test(m.title),
        state: m.state === "opened" ? "open" : m.state === "merged" ? "merged" : "closed",
      })),
    merges: () => gl.merges.map((m) => ({ number: m.iid, sha: m.sha })),
    moveHeadOnMerge: () => void (gl.switches.moveHeadOnMerge = true),
    conflictOnMergeOnce: () => void (gl.switches.conflictOnMergeOnce = true),
    rateLimit: (s) => void (gl.switches.rateLimit = { count: 1, retryAfter: s }),
    refuseMerges: () => void (gl.switches.mergeStatus = "not_approved"),
    computing: (n) => void (gl.switches.checkingFor = n),
    hang: (suffix, method) => void (gl.switches.hang = suffix === null ? null : (r) => r.path.endsWith(suffix) && (!method || r.method === method)),
    failIssue: (n) => void (gl.switches.fail = { match: (r) => r.path === `/projects/${enc}/issues/${n}`, status: 502, count: 1_000 }),
    headOf: (b) => gl.headOf(b),
    changeBase: (n, base) => gl.changeBase(n, base),
    failMerges: (status) => void (gl.switches.mergeRefusal = { status, message: status === 500 ? "500 Internal Server Error" : "Branch cannot be merged" }),
    failCiOnce: () =>
      void (gl.switches.ciFailsOnce = { name: CI_FAILURE.check, log: `$ npm test\nFAIL ${CI_FAILURE.path}:${CI_FAILURE.line}\n${CI_FAILURE.summary}\n` }),
    requestChanges: (o) => void gl.discussions.push({ mr: o.pull, login: o.login, body: o.body, path: o.path, line: o.line, resolved: false }),
    pushToBase: (files) => pushCommit(gl.bare, "main", files),
    raw: gl,
    requests: () => gl.requests,
    commentListing: `GET /projects/${enc}/issues?iids[]=`,
    stop: () => gl.stop(),
  };
}

/** Both forges, for `describe.each`. */
export const FORGES: [string, (dir: string, o?: FakeForgeOptions) => FakeForge][] = [
  ["GitHub", github],
  ["GitLab", gitlab],
];
