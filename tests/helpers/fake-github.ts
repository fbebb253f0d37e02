// A stateful fake GitHub on 127.0.0.1 (Bun.serve), for tests and `npm run demo -- --forge`. It is
// backed by a REAL bare git repository as the remote: the project pushes to it with `git push`, a
// pull request's head is whatever the bare repository's branch holds, and a merge is a real merge
// commit written in the bare repository (git merge-tree).
//
// It answers as api.github.com does, and is held to it: every exchange it serves (request path,
// method, query parameter names and body; answer status and body) is checked against GitHub's
// official OpenAPI description (github-openapi.ts), and a violation (an undocumented field, status
// or shape) is recorded in `violations` and makes `stop()` throw, failing the test that caused it.
// Bodies come from github-shapes.ts.
//
// Its state is plain data a test changes directly (issues, comments, pulls, permissions), and its
// behaviour is steered by `switches` (see FakeSwitches: one field per real-world case: check
// conclusions and statuses, pagination, redirects, 404/410, refused drafts, foreign search results,
// custom roles, rate limits, a request that never answers, ...). A case no switch covers can be
// answered by `intercept` (its answers are checked like all others).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { githubOpenApi } from "./github-openapi.ts";
import * as shape from "./github-shapes.ts";
import { bareRemote, run, tryRun } from "./fake-git.ts";

export type { AnnotationFields, CheckConclusion, CheckRunFields, StatusFields } from "./github-shapes.ts";

export interface FakeIssue {
  number: number;
  title: string;
  body: string;
  state: "open" | "closed";
  labels: string[];
}
export interface FakeComment {
  id: number;
  issue: number;
  login: string;
  body: string;
  created_at: string;
  updated_at: string;
}
export interface FakePull {
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  draft: boolean;
  state: "open" | "closed";
  merged: boolean;
  merge_commit_sha: string | null;
}
/** Presets of the checks on a sha: `passing` is runs build and lint and status ci/legacy, all green. */
export type ChecksMode = "passing" | "pending" | "failing" | "none";
/** Explicit check runs and commit statuses. */
export interface ChecksList {
  runs: shape.CheckRunFields[];
  statuses: shape.StatusFields[];
}
export type ChecksSpec = ChecksMode | ChecksList;

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: any;
}
export interface FakeAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface FakeSwitches {
  /** The checks on any sha (a per-sha entry in `checksBySha` wins). */
  checks: ChecksSpec;
  checksBySha: Map<string, ChecksSpec>;
  /** Checks branch protection requires: a merge is refused (405) while one of them is not green. GitHub enforces only these. */
  requiredChecks: string[];
  /** Most items a listing answers per page (GitHub: per_page, at most 100). Lower it to make listings paginate. */
  maxPerPage: number;
  /** GET pull answers mergeable: null this many times (then computes it). */
  mergeableNullFor: number;
  /** The PR conflicts with its base (mergeable false, dirty), whatever git says; without it, a PR conflicts when its head and base do not merge in the bare repository. */
  conflicting: boolean;
  /**
   * CI that fails once: the first head checks are asked for gets this failing check run (with its
   * output and annotations) beside the passing `lint` and `ci/legacy`; every later head passes (a
   * fix pushed to the PR goes green). Null: `checks` decides.
   */
  ciFailsOnce: shape.CheckRunFields | null;
  /** The PR's head is behind its base and protection requires it up to date: mergeable_state behind, and a merge is refused (405). */
  behind: boolean;
  /** On the next merge call: push a new commit to the head branch and answer 409. */
  moveHeadOnMerge: boolean;
  /** On the next merge call: answer 409 with the head unchanged (a transient conflict: GitHub lost a race of its own). */
  conflictOnMergeOnce: boolean;
  /** The next merge calls answer this (405 or 403 with a message); null: merge. */
  mergeRefusal: { status: number; message: string } | null;
  /** Creating a draft PR is refused (422), as on plans without draft pull requests. */
  draftsRefused: boolean;
  /** The next `count` requests answer a rate limit. */
  rateLimit: { count: number; status: 403 | 429; retryAfter: number | null; primaryResetIn?: number } | null;
  /** The repository was renamed to this name: requests to the old name answer 301 (GET) or 307 to /repositories/{id}/... */
  renamedTo: string | null;
  /** Issues transferred to another repository: GET answers 301 to the issue's new place. */
  transferred: Map<number, { repo: string; repoId: number; number: number }>;
  /** Issues deleted: GET answers 410 Gone. */
  deleted: Set<number>;
  /** The issue search answers `incomplete_results: true` (it timed out on GitHub's side). */
  searchIncomplete: boolean;
  /** Requests this matches never answer (until stop). */
  hang: ((r: FakeRequest) => boolean) | null;
  /** Requests this matches answer `status` (a server error), `count` times. */
  fail: { match: (r: FakeRequest) => boolean; status: 500 | 502 | 503; count: number } | null;
  /** The Link header names this origin instead of the API's (a proxy or a hostile server); null: the API's. */
  linkOrigin: string | null;
  /**
   * A hostile server: every GET answers 200 with a body of about `bytes` bytes and a Link to the
   * next page, for ever: `empties` is `[{},{},…]` (parsed, some 50 times its bytes), `strings` a
   * list of long strings. Outside the API description on purpose: not checked against it.
   */
  hugePages: { bytes: number; shape: "empties" | "strings" } | null;
}

/** A permission entry: a base role ("admin", "maintain", "write", "triage", "read"), or a custom role over a base one. */
export type FakePermission = string | { permission: "admin" | "write" | "read"; roleName: string };

export interface FakeGitHub {
  url: string;
  apiUrl: string;
  owner: string;
  repo: string;
  repoId: number;
  /** The bare repository standing in for the GitHub remote. */
  bare: string;
  issues: Map<number, FakeIssue>;
  comments: FakeComment[];
  pulls: Map<number, FakePull>;
  permissions: Map<string, FakePermission>;
  /** Reviews and review comments (comments on the diff) of pull requests. */
  reviews: shape.ReviewFields[];
  reviewComments: shape.ReviewCommentFields[];
  /** A reviewer submits a review of pull request `pull` on its current head. */
  addReview(o: { pull: number; login: string; state: shape.ReviewFields["state"]; body: string }): shape.ReviewFields;
  /** A reviewer comments on a line of pull request `pull`'s diff (in a review of its own, state COMMENTED). */
  addReviewComment(o: { pull: number; login: string; body: string; path: string; line: number }): shape.ReviewCommentFields;
  /** Issues of other repositories ("owner/repo" → issues) the search finds when asked for them (repo: qualifiers are ORed, as on GitHub). */
  foreign: Map<string, FakeIssue[]>;
  switches: FakeSwitches;
  /** Handlers asked first, in order; the first answer that is not null is sent (and checked against the description). */
  intercept: ((r: FakeRequest) => FakeAnswer | null)[];
  /** Every request, as "METHOD path?query"; and how many were answered 304. */
  requests: string[];
  notModified: number;
  merges: { number: number; sha: string }[];
  /** Where the fake's answers broke GitHub's description (checked exchanges only). */
  violations: string[];
  addIssue(o: { number: number; title?: string; body?: string; state?: "open" | "closed"; labels?: string[] }): FakeIssue;
  addComment(o: { issue: number; login: string; body: string }): FakeComment;
  editComment(id: number, body: string): void;
  headOf(branch: string): string | null;
  /** Someone changes the base branch of pull request `number` (what PATCH /pulls/{n} with `base` does on GitHub); the branch must exist. */
  changeBase(number: number, base: string): void;
  /** Stop the server; throws when an answer broke GitHub's description. */
  stop(): void;
}

const IDENT = {
  GIT_AUTHOR_NAME: "fake github",
  GIT_AUTHOR_EMAIL: "fake@github.invalid",
  GIT_COMMITTER_NAME: "fake github",
  GIT_COMMITTER_EMAIL: "fake@github.invalid",
};

export function presetChecks(mode: ChecksMode): ChecksList {
  if (mode === "none") return { runs: [], statuses: [] };
  const done = mode !== "pending";
  return {
    runs: [
      { name: "build", status: done ? "completed" : "in_progress", conclusion: mode === "passing" ? "success" : mode === "failing" ? "failure" : null },
      { name: "lint", status: "completed", conclusion: "success" },
    ],
    statuses: [{ context: "ci/legacy", state: mode === "passing" ? "success" : mode === "pending" ? "pending" : "failure" }],
  };
}

/**
 * Start the fake. `seedFrom`: a repository whose `main` is pushed to the bare remote first;
 * `copyOf`: a bare repository copied as the remote instead (tests/helpers/repo.ts fakeWithFeature).
 * `validate` (default true): check every exchange against GitHub's description (the demo turns it off).
 */
export function startFakeGitHub(
  o: { owner?: string; repo?: string; seedFrom?: string; copyOf?: string; dir?: string; validate?: boolean; clockLagMs?: number } = {},
): FakeGitHub {
  const owner = o.owner ?? "acme";
  const bare = join(o.dir ?? mkdtempSync(join(tmpdir(), "loop-fake-gh-")), "remote.git");
  bareRemote(bare, o);
  const checker = o.validate === false ? null : githubOpenApi();
  // A clock that never repeats a second: every comment created or edited has its own updated_at,
  // as the order of `since` listings depends on it.
  let clock = 0;
  const now = () => {
    // clockLagMs: the forge's clock behind this machine's (or a comment read that long after it was posted).
    clock = Math.max(Date.now() - (o.clockLagMs ?? 0), clock + 1000);
    return new Date(clock).toISOString().replace(/\.\d+Z$/, "Z");
  };
  let nextComment = 1000;
  let nextReview = 60_000;
  /** The head CI failed on, once (switches.ciFailsOnce). */
  let failedOnce: string | null = null;
  let nextNumber = 500;
  const hanging = new Set<() => void>();
  const f: FakeGitHub = {
    url: "",
    apiUrl: "",
    owner,
    repo: o.repo ?? "api",
    repoId: 4242,
    bare,
    issues: new Map(),
    comments: [],
    pulls: new Map(),
    permissions: new Map(),
    reviews: [],
    reviewComments: [],
    foreign: new Map(),
    switches: {
      checks: "passing",
      checksBySha: new Map(),
      requiredChecks: [],
      maxPerPage: 100,
      mergeableNullFor: 0,
      conflicting: false,
      ciFailsOnce: null,
      behind: false,
      moveHeadOnMerge: false,
      conflictOnMergeOnce: false,
      mergeRefusal: null,
      draftsRefused: false,
      rateLimit: null,
      renamedTo: null,
      transferred: new Map(),
      deleted: new Set(),
      searchIncomplete: false,
      hang: null,
      fail: null,
      linkOrigin: null,
      hugePages: null,
    },
    intercept: [],
    requests: [],
    notModified: 0,
    merges: [],
    violations: [],
    addIssue(i) {
      const issue: FakeIssue = {
        number: i.number,
        title: i.title ?? `issue ${i.number}`,
        body: i.body ?? "",
        state: i.state ?? "open",
        labels: i.labels ?? [],
      };
      f.issues.set(i.number, issue);
      nextNumber = Math.max(nextNumber, i.number + 1);
      return issue;
    },
    addComment(c) {
      const t = now();
      const comment = { id: nextComment++, issue: c.issue, login: c.login, body: c.body, created_at: t, updated_at: t };
      f.comments.push(comment);
      return comment;
    },
    editComment(id, body) {
      const c = f.comments.find((x) => x.id === id)!;
      c.body = body;
      c.updated_at = now();
    },
    addReview(o) {
      const p = f.pulls.get(o.pull)!;
      const r: shape.ReviewFields = {
        id: nextReview++,
        pull: o.pull,
        login: o.login,
        state: o.state,
        body: o.body,
        commit: f.headOf(p.head) ?? "0".repeat(40),
      };
      f.reviews.push(r);
      return r;
    },
    addReviewComment(o) {
      const review = f.addReview({ pull: o.pull, login: o.login, state: "COMMENTED", body: "" });
      const c: shape.ReviewCommentFields = {
        id: nextReview++,
        pull: o.pull,
        review: review.id,
        login: o.login,
        body: o.body,
        path: o.path,
        line: o.line,
        commit: review.commit,
      };
      f.reviewComments.push(c);
      return c;
    },
    headOf(branch) {
      return tryRun(bare, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`]);
    },
    changeBase(number, base) {
      const p = f.pulls.get(number);
      if (!p) throw new Error(`fake GitHub: no pull request #${number}`);
      if (!f.headOf(base)) throw new Error(`fake GitHub: no branch ${base} to be the base of #${number}`);
      p.base = base;
    },
    stop() {
      for (const release of hanging) release();
      server.stop(true);
      if (f.violations.length) throw new Error(`the fake GitHub answered outside GitHub's API description:\n${f.violations.join("\n")}`);
    },
  };

  const ctx = (): shape.ShapeContext => ({ api: f.url, owner, repo: f.switches.renamedTo ?? f.repo, repoId: f.repoId });
  const checksFor = (sha: string): ChecksList => {
    const once = f.switches.ciFailsOnce;
    if (once && !f.switches.checksBySha.has(sha)) {
      failedOnce ??= sha;
      const passing = presetChecks("passing");
      return sha === failedOnce ? { runs: [once, ...passing.runs.filter((r) => r.name !== once.name)], statuses: passing.statuses } : passing;
    }
    const spec = f.switches.checksBySha.get(sha) ?? f.switches.checks;
    return typeof spec === "string" ? presetChecks(spec) : spec;
  };
  /** A check run's id, found again from the id alone: made from its head and its place in the list. */
  const runIds = new Map<number, { sha: string; i: number }>();
  const runId = (sha: string, i: number) => {
    const id = (parseInt(sha.slice(0, 7) || "0", 16) % 1_000_000) * 100 + i + 1;
    runIds.set(id, { sha, i });
    return id;
  };
  /** Whether the PR's head and base do not merge (git merge-tree in the bare repository). */
  const conflictsInBare = (p: FakePull): boolean => {
    const base = f.headOf(p.base);
    const head = f.headOf(p.head);
    if (!base || !head) return false;
    return tryRun(bare, ["merge-tree", "--write-tree", "--no-messages", base, head]) === null;
  };
  const green = (sha: string, name: string): boolean => {
    const c = checksFor(sha);
    const run = c.runs.find((r) => r.name === name);
    if (run) return run.status === "completed" && (run.conclusion === "success" || run.conclusion === "neutral" || run.conclusion === "skipped");
    return c.statuses.find((s) => s.context === name)?.state === "success";
  };
  const pullFields = (p: FakePull, headOf: (branch: string) => string | null = f.headOf): shape.PullFields => ({
    ...p,
    headSha: headOf(p.head) ?? "0".repeat(40),
    baseSha: headOf(p.base) ?? "0".repeat(40),
  });
  const pullJson = (p: FakePull, computeMergeable: boolean) => {
    const fields = pullFields(p);
    const conflicting = f.switches.conflicting || (!p.merged && p.state === "open" && conflictsInBare(p));
    let mergeable: boolean | null = !conflicting;
    if (computeMergeable && f.switches.mergeableNullFor > 0) {
      f.switches.mergeableNullFor--;
      mergeable = null;
    }
    // GitHub's mergeable_state: dirty (conflict), behind, blocked (a required check or review
    // missing), unstable (a check not green, none required), draft, clean; unknown while computing.
    const required = f.switches.requiredChecks;
    const all = checksFor(fields.headSha);
    const allGreen = all.runs.every((r) => green(fields.headSha, r.name)) && all.statuses.every((s) => s.state === "success");
    const state = p.merged
      ? "unknown"
      : mergeable === null
        ? "unknown"
        : conflicting
          ? "dirty"
          : p.draft
            ? "draft"
            : f.switches.behind
              ? "behind"
              : required.some((n) => !green(fields.headSha, n))
                ? "blocked"
                : allGreen
                  ? "clean"
                  : "unstable";
    return shape.pull(ctx(), fields, { mergeable: p.merged ? null : mergeable, mergeableState: state });
  };

  /** A real merge commit of `head` into `base` in the bare repository; null on a conflict. */
  const mergeInBare = (p: FakePull): string | null => {
    const baseSha = f.headOf(p.base)!;
    const headSha = f.headOf(p.head)!;
    const tree = tryRun(bare, ["merge-tree", "--write-tree", baseSha, headSha]);
    if (tree === null) return null;
    const commit = run(
      bare,
      ["commit-tree", tree.split("\n")[0]!, "-p", baseSha, "-p", headSha, "-m", `Merge pull request #${p.number} from ${p.head}`],
      IDENT,
    );
    run(bare, ["update-ref", `refs/heads/${p.base}`, commit, baseSha]);
    return commit;
  };

  /** Someone pushes to the PR's branch: a new real commit on top of its head. */
  const moveHead = (p: FakePull) => {
    const headSha = f.headOf(p.head)!;
    const tree = run(bare, ["rev-parse", `${headSha}^{tree}`]);
    const commit = run(bare, ["commit-tree", tree, "-p", headSha, "-m", "a commit pushed by someone else"], IDENT);
    run(bare, ["update-ref", `refs/heads/${p.head}`, commit, headSha]);
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const u = new URL(req.url);
      f.requests.push(`${req.method} ${u.pathname}${u.search}`);
      const text = req.method === "GET" ? "" : await req.text();
      let body: any = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      const r: FakeRequest = { method: req.method, path: u.pathname, query: u.searchParams, body };
      if (f.switches.hang?.(r)) {
        await new Promise<void>((resolve) => hanging.add(resolve));
        return new Response(null, { status: 503 });
      }
      const huge = f.switches.hugePages;
      if (huge && req.method === "GET") {
        const page = Number(u.searchParams.get("page") ?? "1");
        const next = new URL(req.url);
        next.searchParams.set("page", String(page + 1));
        const body =
          huge.shape === "empties"
            ? `[${"{},".repeat(Math.floor(huge.bytes / 3))}{}]`
            : `[${`"${"x".repeat(1024 * 1024 - 3)}",`.repeat(Math.max(1, Math.floor(huge.bytes / (1024 * 1024))))}""]`;
        return new Response(body, { status: 200, headers: { "content-type": "application/json; charset=utf-8", link: `<${next.href}>; rel="next"` } });
      }
      const answer = answerOf(r);
      const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8", ...(answer.headers ?? {}) };
      const out = answer.body === null ? "" : JSON.stringify(answer.body);
      if (req.method === "GET" && answer.status === 200) {
        const etag = `"${new Bun.CryptoHasher("sha1").update(out).digest("hex")}"`;
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
  f.apiUrl = f.url;

  function checked(r: FakeRequest, u: URL, status: number, answer: unknown): void {
    if (!checker) return;
    f.violations.push(...checker.check({ method: r.method, url: `${u.pathname}${u.search}`, requestBody: r.body, status, body: answer }));
  }

  function answerOf(r: FakeRequest): FakeAnswer {
    const rl = f.switches.rateLimit;
    if (rl && rl.count > 0) {
      rl.count--;
      const headers: Record<string, string> = {};
      if (rl.retryAfter !== null) headers["retry-after"] = String(rl.retryAfter);
      if (rl.primaryResetIn !== undefined) {
        headers["x-ratelimit-remaining"] = "0";
        headers["x-ratelimit-reset"] = String(Math.ceil(Date.now() / 1000) + rl.primaryResetIn);
      }
      return {
        status: rl.status,
        headers,
        body: shape.error(rl.primaryResetIn !== undefined ? "API rate limit exceeded" : "You have exceeded a secondary rate limit"),
      };
    }
    const fail = f.switches.fail;
    if (fail && fail.count > 0 && fail.match(r)) {
      fail.count--;
      return { status: fail.status, body: shape.error("Server Error") };
    }
    for (const h of f.intercept) {
      const a = h(r);
      if (a) return a;
    }
    return route(r);
  }

  /** A listing's page (per_page up to maxPerPage) with GitHub's Link header. */
  function paged<T>(r: FakeRequest, all: T[]): FakeAnswer & { items: T[] } {
    const per = Math.min(Number(r.query.get("per_page") ?? "30"), f.switches.maxPerPage, 100);
    const page = Math.max(1, Number(r.query.get("page") ?? "1"));
    const items = all.slice((page - 1) * per, page * per);
    const last = Math.max(1, Math.ceil(all.length / per));
    const link = (n: number, rel: string) => {
      const q = new URLSearchParams(r.query);
      q.set("page", String(n));
      return `<${f.switches.linkOrigin ?? f.url}${r.path}?${q}>; rel="${rel}"`;
    };
    const links = [...(page < last ? [link(page + 1, "next"), link(last, "last")] : []), ...(page > 1 ? [link(1, "first"), link(page - 1, "prev")] : [])];
    return { status: 200, body: items, items, headers: links.length ? { link: links.join(", ") } : {} };
  }

  const notFound: FakeAnswer = { status: 404, body: shape.error("Not Found") };

  /** GET /search/issues: repo: (several are ORed, as on GitHub), is:, state:, label: and plain words (all in the title or body). */
  function search(r: FakeRequest): FakeAnswer {
    const q = r.query.get("q") ?? "";
    const want = { repos: [] as string[], isIssue: false, isPr: false, state: null as string | null, labels: [] as string[], words: [] as string[] };
    for (const t of q.split(/\s+/).filter(Boolean)) {
      const [k, ...rest] = t.split(":");
      const v = rest.join(":").replace(/^"|"$/g, "");
      if (rest.length && k === "repo") want.repos.push(v.toLowerCase());
      else if (rest.length && k === "is" && (v === "open" || v === "closed")) want.state = v;
      else if (rest.length && k === "is" && v === "issue") want.isIssue = true;
      else if (rest.length && k === "is" && (v === "pr" || v === "pull-request")) want.isPr = true;
      else if (rest.length && k === "state") want.state = v;
      else if (rest.length && k === "label") want.labels.push(v);
      else if (rest.length)
        return {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [{ resource: "Search", field: "q", code: "invalid", message: `the fake does not know the qualifier ${k}:` }],
            documentation_url: "https://docs.github.com/v3/search/",
          },
        };
      else want.words.push(t.toLowerCase());
    }
    const mine = `${owner}/${f.switches.renamedTo ?? f.repo}`.toLowerCase();
    type Found = { c: shape.ShapeContext; kind: "issue" | "pr"; i: FakeIssue };
    const pool: Found[] = [];
    if (want.repos.length === 0 || want.repos.includes(mine)) {
      for (const i of f.issues.values()) pool.push({ c: ctx(), kind: "issue", i });
      for (const p of f.pulls.values()) pool.push({ c: ctx(), kind: "pr", i: { number: p.number, title: p.title, body: p.body, state: p.state, labels: [] } });
    }
    for (const [name, list] of f.foreign)
      if (want.repos.length === 0 || want.repos.includes(name.toLowerCase())) {
        const [fo, fr] = name.split("/") as [string, string];
        for (const i of list) pool.push({ c: { api: f.url, owner: fo, repo: fr, repoId: 9000 + fr.length }, kind: "issue", i });
      }
    const found = pool
      .filter((x) => (!want.isIssue || x.kind === "issue") && (!want.isPr || x.kind === "pr"))
      .filter((x) => want.state === null || x.i.state === want.state)
      .filter((x) => want.labels.every((l) => x.i.labels.includes(l)))
      .filter((x) => want.words.every((w) => `${x.i.title}\n${x.i.body}`.toLowerCase().includes(w)))
      .sort((a, b) => b.i.number - a.i.number);
    const page = paged(r, found);
    const items = page.items.map((x) => shape.searchItem(x.c, { ...x.i, pull: x.kind === "pr" }));
    return { ...page, body: { total_count: found.length, incomplete_results: f.switches.searchIncomplete, items, search_type: "lexical" } };
  }

  function route(r: FakeRequest): FakeAnswer {
    const { method, query: q, body } = r;
    if (method === "GET" && r.path === "/search/issues") return search(r);
    let m: RegExpExecArray | null;
    // Another repository's issue (a transferred issue's new place).
    if (method === "GET" && (m = /^\/repositories\/(\d+)\/issues\/(\d+)$/.exec(r.path)) && Number(m[1]) !== f.repoId) {
      const [name, t] =
        [...f.switches.transferred.values()].map((t) => [t.repo, t] as const).find(([, t]) => t.repoId === Number(m![1]) && t.number === Number(m![2])) ?? [];
      if (!name || !t) return notFound;
      const [fo, fr] = name.split("/") as [string, string];
      return {
        status: 200,
        body: shape.issue({ api: f.url, owner: fo, repo: fr, repoId: t.repoId }, { number: t.number, title: "moved", body: "", state: "open", labels: [] }),
      };
    }
    const current = `/repos/${owner}/${f.switches.renamedTo ?? f.repo}`;
    const old = `/repos/${owner}/${f.repo}`;
    const byId = `/repositories/${f.repoId}`;
    let path: string;
    if (f.switches.renamedTo && f.switches.renamedTo !== f.repo && (r.path === old || r.path.startsWith(`${old}/`))) {
      // A renamed repository: GitHub redirects to the repository's id (301 for GET, 307 otherwise).
      const q = r.query.toString();
      return {
        status: method === "GET" ? 301 : 307,
        headers: { location: `${f.url}${byId}${r.path.slice(old.length)}${q ? `?${q}` : ""}` },
        body: { message: "Moved Permanently", url: `${f.url}${byId}${r.path.slice(old.length)}`, documentation_url: "https://docs.github.com/rest" },
      };
    }
    if (r.path === current || r.path.startsWith(`${current}/`)) path = r.path.slice(current.length);
    else if (r.path === byId || r.path.startsWith(`${byId}/`)) path = r.path.slice(byId.length);
    else return notFound;

    if (method === "GET" && (m = /^\/issues\/(\d+)$/.exec(path))) {
      const n = Number(m[1]);
      const moved = f.switches.transferred.get(n);
      if (moved)
        return {
          status: 301,
          headers: { location: `${f.url}/repositories/${moved.repoId}/issues/${moved.number}` },
          body: {
            message: "Moved Permanently",
            url: `${f.url}/repositories/${moved.repoId}/issues/${moved.number}`,
            documentation_url: "https://docs.github.com/rest/issues/issues#get-an-issue",
          },
        };
      if (f.switches.deleted.has(n)) return { status: 410, body: shape.error("This issue was deleted", 410) };
      const i = f.issues.get(n);
      if (i) return { status: 200, body: shape.issue(ctx(), i) };
      const p = f.pulls.get(n);
      if (p) return { status: 200, body: shape.issue(ctx(), { number: p.number, title: p.title, body: p.body, state: p.state, labels: [], pull: true }) };
      return notFound;
    }
    if (method === "GET" && (m = /^\/issues\/(\d+)\/comments$/.exec(path))) {
      const n = Number(m[1]);
      if (f.switches.deleted.has(n)) return { status: 410, body: shape.error("This issue was deleted", 410) };
      const page = paged(
        r,
        f.comments.filter((c) => c.issue === n).sort((a, b) => a.id - b.id),
      );
      return { ...page, body: page.items.map((c) => shape.comment(ctx(), c)) };
    }
    if (method === "GET" && path === "/issues/comments") {
      const since = q.get("since");
      const key = q.get("sort") === "updated" ? "updated_at" : "created_at";
      const sign = q.get("direction") === "desc" ? -1 : 1;
      const list = f.comments
        .filter((c) => !since || c.updated_at >= since.replace(/\.\d+Z$/, "Z"))
        .sort((a, b) => sign * (a[key].localeCompare(b[key]) || a.id - b.id));
      const page = paged(r, list);
      return { ...page, body: page.items.map((c) => shape.comment(ctx(), c)) };
    }
    if (method === "POST" && (m = /^\/issues\/(\d+)\/comments$/.exec(path))) {
      const c = f.addComment({ issue: Number(m[1]), login: "loop-bot", body: String(body?.body ?? "") });
      return { status: 201, body: shape.comment(ctx(), c) };
    }
    if (method === "GET" && (m = /^\/collaborators\/([^/]+)\/permission$/.exec(path))) {
      const login = decodeURIComponent(m[1]!);
      const entry = f.permissions.get(login);
      if (!entry) return notFound;
      // `permission` is the base role in GitHub's older vocabulary (maintain → write, triage → read).
      const p = typeof entry === "string" ? { permission: entry === "maintain" ? "write" : entry === "triage" ? "read" : entry, roleName: entry } : entry;
      return { status: 200, body: shape.permission(ctx(), login, p) };
    }
    if (method === "GET" && path === "/pulls") {
      const head = q.get("head") ?? "";
      const [o, ref] = head.split(":");
      const state = q.get("state") ?? "open";
      const list = [...f.pulls.values()]
        .filter((p) => (!head || (o === owner && p.head === ref)) && (state === "all" || p.state === state))
        .sort((a, b) => b.number - a.number);
      const page = paged(r, list);
      // Every branch's head from one git process: a page of 100 pulls is not 200 of them.
      const shas = new Map(
        (tryRun(bare, ["for-each-ref", "--format=%(refname:lstrip=2) %(objectname)", "refs/heads/"]) ?? "")
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split(" ") as [string, string]),
      );
      const headOf = (b: string) => shas.get(b) ?? null;
      return { ...page, body: page.items.map((p) => shape.pullSimple(ctx(), pullFields(p, headOf))) };
    }
    if (method === "POST" && path === "/pulls") {
      const refused = (message: string, code = "custom"): FakeAnswer => ({ status: 422, body: shape.validationError(message, code) });
      if (!f.headOf(body.head)) return refused(`head ${body.head} does not exist`, "invalid");
      if ([...f.pulls.values()].some((p) => p.head === body.head && p.state === "open"))
        return refused(`A pull request already exists for ${owner}:${body.head}.`);
      if (f.headOf(body.head) === f.headOf(body.base) || tryRun(bare, ["merge-base", "--is-ancestor", body.head, body.base]) !== null)
        return refused(`No commits between ${body.base} and ${body.head}`);
      if (body.draft && f.switches.draftsRefused) return refused("Draft pull requests are not supported in this repository.");
      const p: FakePull = {
        number: nextNumber++,
        title: body.title,
        body: body.body,
        head: body.head,
        base: body.base,
        draft: Boolean(body.draft),
        state: "open",
        merged: false,
        merge_commit_sha: null,
      };
      f.pulls.set(p.number, p);
      return { status: 201, body: pullJson(p, false) };
    }
    if (method === "GET" && (m = /^\/pulls\/(\d+)$/.exec(path))) {
      const p = f.pulls.get(Number(m[1]));
      return p ? { status: 200, body: pullJson(p, true) } : notFound;
    }
    if (method === "PUT" && (m = /^\/pulls\/(\d+)\/merge$/.exec(path))) {
      const p = f.pulls.get(Number(m[1]));
      if (!p) return notFound;
      const refuse = (status: number, message: string): FakeAnswer => ({
        status,
        body: { message, documentation_url: "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request" },
      });
      if (p.merged) return refuse(405, "Pull Request is not mergeable");
      if (f.switches.mergeRefusal) return refuse(f.switches.mergeRefusal.status, f.switches.mergeRefusal.message);
      if (f.switches.moveHeadOnMerge) {
        f.switches.moveHeadOnMerge = false;
        moveHead(p);
        return refuse(409, "Head branch was modified. Review and try the merge again.");
      }
      if (f.switches.conflictOnMergeOnce) {
        f.switches.conflictOnMergeOnce = false;
        return refuse(409, "Head branch was modified. Review and try the merge again.");
      }
      const head = f.headOf(p.head)!;
      if (body?.sha && body.sha !== head) return refuse(409, "Head branch was modified. Review and try the merge again.");
      if (p.draft) return refuse(405, "Pull Request is still a draft");
      if (f.switches.behind) return refuse(405, "Head branch is not up to date with the base branch");
      const missing = f.switches.requiredChecks.find((n) => !green(head, n));
      if (missing) return refuse(405, `Required status check "${missing}" is expected.`);
      const sha = mergeInBare(p);
      if (!sha) return refuse(405, "Pull Request is not mergeable");
      p.merged = true;
      p.state = "closed";
      p.merge_commit_sha = sha;
      f.merges.push({ number: p.number, sha: head });
      return { status: 200, body: { sha, merged: true, message: "Pull Request successfully merged" } };
    }
    if (method === "GET" && (m = /^\/commits\/([0-9a-f]+)\/check-runs$/.exec(path))) {
      const sha = m[1]!;
      const runs = checksFor(sha).runs.map((x, i) => shape.checkRun(ctx(), sha, x, runId(sha, i)));
      const page = paged(r, runs);
      return { ...page, body: { total_count: runs.length, check_runs: page.items } };
    }
    if (method === "GET" && (m = /^\/commits\/([0-9a-f]+)\/status$/.exec(path))) {
      const sha = m[1]!;
      const all = checksFor(sha).statuses;
      const page = paged(
        r,
        all.map((s, i) => shape.status(ctx(), s, 8000 + i)),
      );
      return { ...page, body: shape.combined(ctx(), sha, all, page.items) };
    }
    if (method === "GET" && (m = /^\/check-runs\/(\d+)(\/annotations)?$/.exec(path))) {
      const at = runIds.get(Number(m[1]));
      const run = at ? checksFor(at.sha).runs[at.i] : undefined;
      if (!at || !run) return notFound;
      if (!m[2]) return { status: 200, body: shape.checkRun(ctx(), at.sha, run, Number(m[1])) };
      const page = paged(
        r,
        (run.annotations ?? []).map((a) => shape.annotation(ctx(), at.sha, a)),
      );
      return page;
    }
    if (method === "GET" && (m = /^\/pulls\/(\d+)\/reviews$/.exec(path))) {
      const n = Number(m[1]);
      if (!f.pulls.has(n)) return notFound;
      const page = paged(
        r,
        f.reviews.filter((x) => x.pull === n).sort((a, b) => a.id - b.id),
      );
      return { ...page, body: page.items.map((x) => shape.review(ctx(), x)) };
    }
    if (method === "GET" && (m = /^\/pulls\/(\d+)\/comments$/.exec(path))) {
      const n = Number(m[1]);
      if (!f.pulls.has(n)) return notFound;
      const page = paged(
        r,
        f.reviewComments.filter((x) => x.pull === n).sort((a, b) => a.id - b.id),
      );
      return { ...page, body: page.items.map((x) => shape.reviewComment(ctx(), x)) };
    }
    if (method === "GET" && path === "") return { status: 200, body: shape.fullRepository(ctx()) };
    return notFound;
  }
  return f;
}
