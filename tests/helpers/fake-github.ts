// A stateful fake GitHub on 127.0.0.1 (Bun.serve), for tests and `npm run demo -- --forge`. It is
// backed by a REAL bare git repository as the remote: the project pushes to it with `git push`, a
// pull request's head is whatever the bare repository's branch holds, and a merge is a real merge
// commit written in the bare repository (git merge-tree). It serves the endpoints lib/forge/github.ts
// uses, with ETags (a matching If-None-Match is a 304) and switches for every path the landing and
// comment code must handle: checks pending/failing/passing, mergeable null, a head that moves on
// merge (409), refusals (405 variants, 403), rate limits (403/429 with retry-after), and comments
// from anyone (on an issue or a PR: they share one number space, and GET /issues/comments lists
// both, as GitHub does); and the issue search (GET /search/issues: repo:, is:, state:, label: qualifiers and
// plain words, which must all appear in the title or body). Everything is in memory except the git
// repository.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
export type ChecksMode = "passing" | "pending" | "failing" | "none";

export interface FakeSwitches {
  /** What check runs on any sha report (a per-sha entry in `checksBySha` wins). */
  checks: ChecksMode;
  checksBySha: Map<string, ChecksMode>;
  /** GET pull answers mergeable: null this many times (then computes it). */
  mergeableNullFor: number;
  /** The PR conflicts with its base (mergeable false, dirty). */
  conflicting: boolean;
  /** On the next merge call: push a new commit to the head branch and answer 409. */
  moveHeadOnMerge: boolean;
  /** The next merge calls answer this (405 or 403 with a message); null: merge. */
  mergeRefusal: { status: number; message: string } | null;
  /** The next `count` requests answer a rate limit. */
  rateLimit: { count: number; status: 403 | 429; retryAfter: number | null; primaryResetIn?: number } | null;
}

export interface FakeGitHub {
  url: string;
  apiUrl: string;
  owner: string;
  repo: string;
  /** The bare repository standing in for the GitHub remote. */
  bare: string;
  issues: Map<number, FakeIssue>;
  comments: FakeComment[];
  pulls: Map<number, FakePull>;
  permissions: Map<string, string>;
  switches: FakeSwitches;
  /** Every request, as "METHOD path?query"; and how many were answered 304. */
  requests: string[];
  notModified: number;
  merges: { number: number; sha: string }[];
  addIssue(o: { number: number; title?: string; body?: string; state?: "open" | "closed"; labels?: string[] }): FakeIssue;
  addComment(o: { issue: number; login: string; body: string }): FakeComment;
  editComment(id: number, body: string): void;
  headOf(branch: string): string | null;
  /** Someone changes the base branch of pull request `number` (what PATCH /pulls/{n} with `base` does on GitHub); the branch must exist. */
  changeBase(number: number, base: string): void;
  stop(): void;
}

function run(cwd: string, args: string[], env: Record<string, string> = {}): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}
function tryRun(cwd: string, args: string[]): string | null {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : null;
}

const IDENT = { GIT_AUTHOR_NAME: "fake github", GIT_AUTHOR_EMAIL: "fake@github.invalid", GIT_COMMITTER_NAME: "fake github", GIT_COMMITTER_EMAIL: "fake@github.invalid" };

/** Start the fake. `seedFrom`: a repository whose `main` is pushed to the bare remote first. */
export function startFakeGitHub(o: { owner?: string; repo?: string; seedFrom?: string; dir?: string; token?: string } = {}): FakeGitHub {
  const owner = o.owner ?? "acme";
  const repo = o.repo ?? "api";
  const bare = join(o.dir ?? mkdtempSync(join(tmpdir(), "loop-fake-gh-")), "remote.git");
  run(tmpdir(), ["init", "-q", "--bare", "-b", "main", bare]);
  if (o.seedFrom) run(o.seedFrom, ["push", "-q", bare, "main:main"]);
  const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");
  let nextComment = 1000;
  let nextNumber = 500;
  const f: FakeGitHub = {
    url: "",
    apiUrl: "",
    owner,
    repo,
    bare,
    issues: new Map(),
    comments: [],
    pulls: new Map(),
    permissions: new Map(),
    switches: { checks: "passing", checksBySha: new Map(), mergeableNullFor: 0, conflicting: false, moveHeadOnMerge: false, mergeRefusal: null, rateLimit: null },
    requests: [],
    notModified: 0,
    merges: [],
    addIssue(i) {
      const issue: FakeIssue = { number: i.number, title: i.title ?? `issue ${i.number}`, body: i.body ?? "", state: i.state ?? "open", labels: i.labels ?? [] };
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
      server.stop(true);
    },
  };

  const base = () => `${f.url}/repos/${owner}/${repo}`;
  const commentJson = (c: FakeComment) => ({
    id: c.id,
    body: c.body,
    user: { login: c.login },
    created_at: c.created_at,
    updated_at: c.updated_at,
    issue_url: `${base()}/issues/${c.issue}`,
    html_url: `https://github.invalid/${owner}/${repo}/issues/${c.issue}#issuecomment-${c.id}`,
    author_association: "OWNER", // never trusted by loop: here to prove it
  });
  const pullJson = (p: FakePull, computeMergeable: boolean) => {
    const sha = f.headOf(p.head) ?? "0".repeat(40);
    let mergeable: boolean | null = !f.switches.conflicting;
    if (computeMergeable && f.switches.mergeableNullFor > 0) {
      f.switches.mergeableNullFor--;
      mergeable = null;
    }
    const checks = checksFor(sha);
    const state = p.merged ? "unknown" : f.switches.conflicting ? "dirty" : p.draft ? "draft" : checks === "passing" ? "clean" : checks === "failing" ? "unstable" : "blocked";
    return {
      number: p.number,
      title: p.title,
      body: p.body,
      html_url: `https://github.invalid/${owner}/${repo}/pull/${p.number}`,
      state: p.state,
      merged: p.merged,
      merged_at: p.merged ? now() : null,
      draft: p.draft,
      mergeable: p.merged ? null : mergeable,
      mergeable_state: state,
      head: { ref: p.head, sha, label: `${owner}:${p.head}` },
      base: { ref: p.base },
      merge_commit_sha: p.merge_commit_sha,
    };
  };
  const checksFor = (sha: string): ChecksMode => f.switches.checksBySha.get(sha) ?? f.switches.checks;

  /** A real merge commit of `head` into `base` in the bare repository; null on a conflict. */
  const mergeInBare = (p: FakePull): string | null => {
    const baseSha = f.headOf(p.base)!;
    const headSha = f.headOf(p.head)!;
    const tree = tryRun(bare, ["merge-tree", "--write-tree", baseSha, headSha]);
    if (tree === null) return null;
    const commit = run(bare, ["commit-tree", tree.split("\n")[0]!, "-p", baseSha, "-p", headSha, "-m", `Merge pull request #${p.number} from ${p.head}`], IDENT);
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
    async fetch(req) {
      const u = new URL(req.url);
      f.requests.push(`${req.method} ${u.pathname}${u.search}`);
      const rl = f.switches.rateLimit;
      if (rl && rl.count > 0) {
        rl.count--;
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (rl.retryAfter !== null) headers["retry-after"] = String(rl.retryAfter);
        if (rl.primaryResetIn !== undefined) {
          headers["x-ratelimit-remaining"] = "0";
          headers["x-ratelimit-reset"] = String(Math.ceil(Date.now() / 1000) + rl.primaryResetIn);
        }
        return new Response(JSON.stringify({ message: rl.primaryResetIn !== undefined ? "API rate limit exceeded" : "You have exceeded a secondary rate limit" }), { status: rl.status, headers });
      }
      const body = req.method === "GET" ? null : await req.json().catch(() => null);
      const answer = route(req.method, u, body);
      const text = JSON.stringify(answer.body);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (req.method === "GET" && answer.status === 200) {
        const etag = `"${new Bun.CryptoHasher("sha1").update(text).digest("hex")}"`;
        headers.etag = etag;
        if (req.headers.get("if-none-match") === etag) {
          f.notModified++;
          return new Response(null, { status: 304, headers: { etag } });
        }
      }
      return new Response(text, { status: answer.status, headers });
    },
  });
  f.url = `http://127.0.0.1:${server.port}`;
  f.apiUrl = f.url;

  const notFound = { status: 404, body: { message: "Not Found" } };
  /** GET /search/issues: the qualifiers loop sends and plain words (all must appear in the title or body). Pull requests are found too, as on GitHub. */
  function search(q: string, page: number, per: number): { status: number; body: unknown } {
    const want = { repo: null as string | null, isIssue: false, isPr: false, state: null as string | null, labels: [] as string[], words: [] as string[] };
    for (const t of q.split(/\s+/).filter(Boolean)) {
      const [k, ...rest] = t.split(":");
      const v = rest.join(":").replace(/^"|"$/g, "");
      if (rest.length && k === "repo") want.repo = v;
      else if (rest.length && k === "is" && (v === "open" || v === "closed")) want.state = v;
      else if (rest.length && k === "is" && v === "issue") want.isIssue = true;
      else if (rest.length && k === "is" && (v === "pr" || v === "pull-request")) want.isPr = true;
      else if (rest.length && k === "state") want.state = v;
      else if (rest.length && k === "label") want.labels.push(v);
      else if (rest.length) return { status: 422, body: { message: `Validation Failed: the fake does not know the qualifier ${k}:` } };
      else want.words.push(t.toLowerCase());
    }
    if (want.repo !== null && want.repo !== `${owner}/${repo}`) return { status: 200, body: { total_count: 0, incomplete_results: false, items: [] } };
    const issues = [...f.issues.values()].map((i) => ({ kind: "issue" as const, number: i.number, title: i.title, body: i.body, state: i.state, labels: i.labels }));
    const pulls = [...f.pulls.values()].map((p) => ({ kind: "pr" as const, number: p.number, title: p.title, body: p.body, state: p.state, labels: [] as string[] }));
    const found = [...issues, ...pulls]
      .filter((x) => (!want.isIssue || x.kind === "issue") && (!want.isPr || x.kind === "pr"))
      .filter((x) => want.state === null || x.state === want.state)
      .filter((x) => want.labels.every((l) => x.labels.includes(l)))
      .filter((x) => want.words.every((w) => `${x.title}\n${x.body}`.toLowerCase().includes(w)))
      .sort((a, b) => b.number - a.number);
    const items = found.slice((page - 1) * per, page * per).map((x) => ({
      number: x.number,
      title: x.title,
      body: x.body,
      state: x.state,
      labels: x.labels.map((name) => ({ name })),
      html_url: `https://github.invalid/${owner}/${repo}/${x.kind === "pr" ? "pull" : "issues"}/${x.number}`,
      ...(x.kind === "pr" ? { pull_request: { url: `${base()}/pulls/${x.number}` } } : {}),
    }));
    return { status: 200, body: { total_count: found.length, incomplete_results: false, items } };
  }

  function route(method: string, u: URL, body: any): { status: number; body: unknown } {
    if (method === "GET" && u.pathname === "/search/issues") return search(u.searchParams.get("q") ?? "", Number(u.searchParams.get("page") ?? "1"), Number(u.searchParams.get("per_page") ?? "30"));
    const prefix = `/repos/${owner}/${repo}`;
    if (!u.pathname.startsWith(prefix)) return notFound;
    const path = u.pathname.slice(prefix.length);
    const q = u.searchParams;
    let m: RegExpExecArray | null;
    if (method === "GET" && (m = /^\/issues\/(\d+)$/.exec(path))) {
      const i = f.issues.get(Number(m[1]));
      if (!i) return notFound;
      return { status: 200, body: { number: i.number, title: i.title, body: i.body, state: i.state, html_url: `https://github.invalid/${owner}/${repo}/issues/${i.number}` } };
    }
    if (method === "GET" && (m = /^\/issues\/(\d+)\/comments$/.exec(path))) {
      const n = Number(m[1]);
      const page = Number(q.get("page") ?? "1");
      const per = Number(q.get("per_page") ?? "30");
      const list = f.comments.filter((c) => c.issue === n).slice((page - 1) * per, page * per);
      return { status: 200, body: list.map(commentJson) };
    }
    if (method === "GET" && path === "/issues/comments") {
      const since = q.get("since");
      const page = Number(q.get("page") ?? "1");
      const per = Number(q.get("per_page") ?? "30");
      const list = f.comments.filter((c) => !since || c.updated_at >= since).sort((a, b) => a.id - b.id).slice((page - 1) * per, page * per);
      return { status: 200, body: list.map(commentJson) };
    }
    if (method === "POST" && (m = /^\/issues\/(\d+)\/comments$/.exec(path))) {
      const c = f.addComment({ issue: Number(m[1]), login: "loop-bot", body: String(body?.body ?? "") });
      return { status: 201, body: commentJson(c) };
    }
    if (method === "GET" && (m = /^\/collaborators\/([^/]+)\/permission$/.exec(path))) {
      const role = f.permissions.get(decodeURIComponent(m[1]!));
      if (!role) return notFound;
      return { status: 200, body: { permission: role, role_name: role } };
    }
    if (method === "GET" && path === "/pulls") {
      const head = q.get("head") ?? "";
      const [o, ref] = head.split(":");
      const page = Number(q.get("page") ?? "1");
      const per = Number(q.get("per_page") ?? "30");
      const list = [...f.pulls.values()].filter((p) => (!head || (o === owner && p.head === ref)) && (q.get("state") === "all" || p.state === (q.get("state") ?? "open")));
      return { status: 200, body: list.slice((page - 1) * per, page * per).map((p) => pullJson(p, false)) };
    }
    if (method === "POST" && path === "/pulls") {
      if (!f.headOf(body.head)) return { status: 422, body: { message: `Validation Failed: head ${body.head} does not exist` } };
      if ([...f.pulls.values()].some((p) => p.head === body.head && p.state === "open"))
        return { status: 422, body: { message: `Validation Failed: A pull request already exists for ${owner}:${body.head}.` } };
      const p: FakePull = { number: nextNumber++, title: body.title, body: body.body, head: body.head, base: body.base, draft: Boolean(body.draft), state: "open", merged: false, merge_commit_sha: null };
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
      if (p.merged) return { status: 405, body: { message: "Pull Request is not mergeable" } };
      if (f.switches.mergeRefusal) return { status: f.switches.mergeRefusal.status, body: { message: f.switches.mergeRefusal.message } };
      if (f.switches.moveHeadOnMerge) {
        f.switches.moveHeadOnMerge = false;
        moveHead(p);
        return { status: 409, body: { message: "Head branch was modified. Review and try the merge again." } };
      }
      const head = f.headOf(p.head);
      if (body?.sha && body.sha !== head) return { status: 409, body: { message: "Head branch was modified. Review and try the merge again." } };
      if (checksFor(head!) !== "passing") return { status: 405, body: { message: "Required status check \"ci\" is expected." } };
      const sha = mergeInBare(p);
      if (!sha) return { status: 405, body: { message: "Pull Request is not mergeable" } };
      p.merged = true;
      p.state = "closed";
      p.merge_commit_sha = sha;
      f.merges.push({ number: p.number, sha: head! });
      return { status: 200, body: { sha, merged: true, message: "Pull Request successfully merged" } };
    }
    if (method === "GET" && (m = /^\/commits\/([0-9a-f]+)\/check-runs$/.exec(path))) {
      const mode = checksFor(m[1]!);
      const runs =
        mode === "none"
          ? []
          : [
              { name: "build", status: mode === "pending" ? "in_progress" : "completed", conclusion: mode === "pending" ? null : mode === "failing" ? "failure" : "success" },
              { name: "lint", status: "completed", conclusion: "success" },
            ];
      return { status: 200, body: { total_count: runs.length, check_runs: runs } };
    }
    if (method === "GET" && (m = /^\/commits\/([0-9a-f]+)\/status$/.exec(path))) {
      const mode = checksFor(m[1]!);
      const statuses = mode === "none" ? [] : [{ context: "ci/legacy", state: mode === "passing" ? "success" : mode === "pending" ? "pending" : "failure" }];
      return { status: 200, body: { state: statuses[0]?.state ?? "pending", statuses } };
    }
    return notFound;
  }
  return f;
}
