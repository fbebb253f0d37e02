// The GitHub client against answers shaped as GitHub gives them (docs/forge.md#landing,
// docs/forge.md#what-each-code-means): the fake GitHub, whose every answer is checked against
// GitHub's official description (a violation fails the test at stop), switched into each
// real-world case; and, for what the description does not list but GitHub's documentation does (the
// `stale` and `startup_failure` conclusions, a redirect to another host), a scripted fetch.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GitHubProvider, notMergeableIsWait } from "../../lib/forge/github.ts";
import { mergeGate } from "../../lib/forge/merge-gate.ts";
import { MAX_ANSWER_VALUES, MAX_STEP_ANSWER_BYTES } from "../../lib/forge/bounds.ts";
import type { ForgeChecks, ProviderOptions } from "../../lib/forge/provider.ts";
import { type CheckConclusion, type FakeGitHub, startFakeGitHub } from "../helpers/fake-github.ts";
import { fakeWithFeature } from "../helpers/repo.ts";

const open: FakeGitHub[] = [];
afterEach(() => {
  for (const gh of open.splice(0)) gh.stop();
});

/** A fake over a bare repository whose main has one commit, and a branch `feature` one ahead. */
function fake(): { gh: FakeGitHub; head: string } {
  const dir = mkdtempSync(join(tmpdir(), "loop-gh-client-"));
  const { fake: gh, head } = fakeWithFeature(dir, (copyOf) => startFakeGitHub({ copyOf, dir }));
  open.push(gh);
  return { gh, head };
}

function client(gh: { apiUrl: string; owner: string; repo: string }, o: Partial<ProviderOptions> = {}) {
  return new GitHubProvider({
    settings: {
      provider: "github",
      repo: `${gh.owner}/${gh.repo}`,
      apiUrl: gh.apiUrl,
      remote: "origin",
      tokenEnv: "T",
      authorizedUsers: [],
      authorizeWriters: false,
      pollInterval: 1000,
    },
    token: "t0ken",
    ...o,
  });
}

async function checksOf(c: GitHubProvider, sha: string): Promise<ForgeChecks> {
  const r = await c.checks(sha);
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.value;
}

const ALL_CONCLUSIONS: [CheckConclusion, "passing" | "failing"][] = [
  ["success", "passing"],
  ["neutral", "passing"],
  ["skipped", "passing"],
  ["failure", "failing"],
  ["cancelled", "failing"],
  ["timed_out", "failing"],
  ["action_required", "failing"],
];

describe("what reactions read (docs/forge.md#reactions)", () => {
  test("a failed check run's output (title, summary, text's tail) and annotations; a failed status's description; a check without a handle says nothing", async () => {
    const { gh, head } = fake();
    gh.switches.checks = {
      runs: [
        {
          name: "build",
          status: "completed",
          conclusion: "failure",
          output: { title: "1 test failed", summary: "test_login: expected 200", text: `${"x".repeat(100)}\nlast line` },
          annotations: [{ path: "src/a.ts", line: 7, level: "failure", title: "test_login", message: "expected 200" }],
        },
      ],
      statuses: [{ context: "ci/legacy", state: "error", description: "the runner died", targetUrl: "https://ci.invalid/1" }],
    };
    const c = client(gh);
    const read = await checksOf(c, head);
    const run = read.checks.find((x) => x.name === "build")!;
    expect(await c.checkFailures(run, { tailBytes: 9 })).toEqual({
      ok: true,
      value: [
        {
          name: "build",
          reason: "failure",
          title: "1 test failed",
          summary: "test_login: expected 200",
          annotations: [{ path: "src/a.ts", line: 7, level: "failure", message: "test_login: expected 200" }],
          logTail: "last line",
          url: expect.stringContaining("/runs/"),
        },
      ],
    });
    const st = read.checks.find((x) => x.name === "ci/legacy")!;
    expect(await c.checkFailures(st, { tailBytes: 10 })).toEqual({
      ok: true,
      value: [{ name: "ci/legacy", reason: "error", title: "", summary: "the runner died", annotations: [], logTail: "", url: "https://ci.invalid/1" }],
    });
    expect(await c.checkFailures({ ...run, handle: undefined }, { tailBytes: 10 })).toEqual({ ok: true, value: [] });
  });

  test("review feedback: reviews requesting changes and comments on the diff, with file and line; approvals and plain comments left out; conditional", async () => {
    const { gh } = fake();
    gh.pulls.set(9, { number: 9, title: "t", body: "", head: "feature", base: "main", draft: false, state: "open", merged: false, merge_commit_sha: null });
    gh.addReview({ pull: 9, login: "ann", state: "APPROVED", body: "fine" });
    gh.addReview({ pull: 9, login: "rita", state: "CHANGES_REQUESTED", body: "rename it" });
    gh.addReviewComment({ pull: 9, login: "sam", body: "this line", path: "b.txt", line: 4 });
    const map = new Map<string, any>();
    const c = client(gh, { cache: { get: (k) => map.get(k), set: (k, e) => void map.set(k, e) } });
    const got = await c.reviewFeedback(9);
    expect(got.ok && got.value.items.map((x) => [x.kind, x.login, x.body, x.path, x.line])).toEqual([
      ["changes_requested", "rita", "rename it", null, null],
      ["diff_comment", "sam", "this line", "b.txt", 4],
    ]);
    const before = gh.notModified;
    await c.reviewFeedback(9);
    expect(gh.notModified).toBe(before + 2);
  });
});

describe("checks (docs/forge.md#checks)", () => {
  test.each(ALL_CONCLUSIONS)("a check run concluded %s is %s", async (conclusion, verdict) => {
    const { gh, head } = fake();
    gh.switches.checks = { runs: [{ name: "job", status: "completed", conclusion }], statuses: [] };
    const read = await checksOf(client(gh), head);
    expect(read).toEqual({
      checks: [
        {
          name: "job",
          source: "check run",
          conclusion,
          verdict,
          detail: `check run job concluded ${conclusion}`,
          handle: expect.stringMatching(/^check-run:\d+$/),
        },
      ],
      unread: null,
    });
  });

  test("a run not completed is pending, whatever its status; statuses: success passes, pending waits, failure and error fail", async () => {
    const { gh, head } = fake();
    const statuses = ["queued", "in_progress", "waiting", "requested", "pending"] as const;
    gh.switches.checks = {
      runs: statuses.map((s) => ({ name: s, status: s, conclusion: null })),
      statuses: [
        { context: "s-ok", state: "success" },
        { context: "s-wait", state: "pending" },
        { context: "s-red", state: "failure" },
        { context: "s-err", state: "error" },
      ],
    };
    const read = await checksOf(client(gh), head);
    expect(read.checks.map((c) => [c.name, c.verdict])).toEqual([
      ...statuses.map((s) => [s, "pending"]),
      ["s-ok", "passing"],
      ["s-wait", "pending"],
      ["s-red", "failing"],
      ["s-err", "failing"],
    ]);
  });

  test("skipped and neutral runs with green statuses: the gate merges", async () => {
    const { gh, head } = fake();
    gh.switches.checks = {
      runs: [
        { name: "deploy", status: "completed", conclusion: "skipped" },
        { name: "lint", status: "completed", conclusion: "neutral" },
        { name: "build", status: "completed", conclusion: "success" },
      ],
      statuses: [],
    };
    const c = client(gh);
    const created = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    if (!created.ok || created.value.kind !== "created") throw new Error(JSON.stringify(created));
    const pr = await c.getPull(created.value.pull.number);
    if (!pr.ok) throw new Error(JSON.stringify(pr));
    expect(mergeGate(pr.value, await checksOf(c, head))).toEqual({ kind: "merge", sha: head });
  });

  test("conclusions outside the description (stale, startup_failure) and unknown ones fail closed", async () => {
    const runs = ["stale", "startup_failure", "brand_new"].map((conclusion, i) => ({ id: i, name: conclusion, status: "completed", conclusion }));
    const c = client(
      { apiUrl: "http://127.0.0.1:9", owner: "acme", repo: "api" },
      {
        fetch: (async (url: string) =>
          new Response(
            JSON.stringify(url.includes("/check-runs") ? { total_count: 3, check_runs: runs } : { state: "pending", total_count: 0, statuses: [] }),
            { status: 200 },
          )) as never,
      },
    );
    const read = await checksOf(c, "a".repeat(40));
    expect(read.checks.map((x) => [x.name, x.verdict])).toEqual([
      ["stale", "failing"],
      ["startup_failure", "failing"],
      ["brand_new", "failing"],
    ]);
    expect(read.checks[2]!.detail).toContain("not a conclusion loop knows");
    // No status at all: the combined state says "pending", which must not hold a merge.
    expect(read.checks.some((x) => x.source === "combined status")).toBe(false);
  });

  test("a failing 31st status is read (100 a page), and every page of statuses is read", async () => {
    const { gh, head } = fake();
    const statuses = Array.from({ length: 31 }, (_, i) => ({ context: `ci/${i + 1}`, state: i === 30 ? ("failure" as const) : ("success" as const) }));
    gh.switches.checks = { runs: [], statuses };
    const c = client(gh);
    let read = await checksOf(c, head);
    expect(read.checks.filter((x) => x.verdict === "failing").map((x) => x.name)).toEqual(["ci/31"]);
    expect(gh.requests.filter((r) => r.includes("/status?"))).toEqual([`GET /repos/acme/api/commits/${head}/status?per_page=100`]);
    gh.switches.maxPerPage = 10;
    read = await checksOf(c, head);
    expect(read.checks.filter((x) => x.source === "status")).toHaveLength(31);
    expect(read.unread).toBeNull();
  });

  test("the combined state covers a red status beyond what was read", async () => {
    const c = client(
      { apiUrl: "http://127.0.0.1:9", owner: "acme", repo: "api" },
      {
        fetch: (async (url: string) =>
          new Response(JSON.stringify(url.includes("/check-runs") ? { total_count: 0, check_runs: [] } : { state: "failure", total_count: 1, statuses: [] }), {
            status: 200,
          })) as never,
      },
    );
    const read = await checksOf(c, "b".repeat(40));
    expect(read.checks).toEqual([
      { name: "combined status", source: "combined status", conclusion: "failure", verdict: "failing", detail: "the combined status is failure" },
    ]);
  });

  test("100 passing check runs and a failing one on page 2: read; more pages than loop reads: said, and the gate blocks", async () => {
    const { gh, head } = fake();
    gh.switches.checks = {
      runs: [
        ...Array.from({ length: 100 }, (_, i) => ({ name: `ok-${i}`, status: "completed" as const, conclusion: "success" as const })),
        { name: "security-scan", status: "completed", conclusion: "failure" },
      ],
      statuses: [],
    };
    const c = client(gh);
    const read = await checksOf(c, head);
    expect(read.checks).toHaveLength(101);
    expect(read.checks.filter((x) => x.verdict === "failing").map((x) => x.name)).toEqual(["security-scan"]);
    gh.switches.maxPerPage = 10; // 101 runs → 11 pages; loop reads 10
    const cut = await checksOf(c, head);
    expect(cut.unread).toBe(`101 check runs on ${head.slice(0, 12)}, 100 read`);
  });
});

describe("issues that moved, went or never were (docs/forge.md#items-from-issues, #redirects)", () => {
  test("transferred: 301 to another repository's issue → gone, saying where", async () => {
    const { gh } = fake();
    gh.addIssue({ number: 5 });
    gh.switches.transferred.set(5, { repo: "other/place", repoId: 777, number: 12 });
    expect(await client(gh).getIssue(5)).toEqual({
      ok: true,
      value: { kind: "gone", why: "transferred", message: "issue #5 was transferred to another repository (now https://github.invalid/other/place/issues/12)" },
    });
  });

  test("deleted (410), missing (404 while the repository answers), a pull request's number: gone, each named", async () => {
    const { gh } = fake();
    gh.addIssue({ number: 6 });
    gh.switches.deleted.add(6);
    gh.pulls.set(40, {
      number: 40,
      title: "a PR",
      body: "",
      head: "feature",
      base: "main",
      draft: false,
      state: "open",
      merged: false,
      merge_commit_sha: null,
    });
    const c = client(gh);
    expect(await c.getIssue(6)).toEqual({ ok: true, value: { kind: "gone", why: "deleted", message: "issue #6 was deleted" } });
    expect(await c.getIssue(77)).toEqual({ ok: true, value: { kind: "gone", why: "missing", message: "issue #77 does not exist in acme/api" } });
    expect(await c.getIssue(40)).toEqual({ ok: true, value: { kind: "gone", why: "pull_request", message: "#40 is a pull request, not an issue" } });
  });

  test("a repository that cannot be seen at all is a failure, not a missing issue", async () => {
    const { gh } = fake();
    const r = await client({ ...gh, repo: "nope" }).getIssue(1);
    expect(r.ok === false && r.kind === "http" && r.status).toBe(404);
  });

  test("a renamed repository: same-host redirects are followed and said once; the issue is read", async () => {
    const { gh, head } = fake();
    gh.addIssue({ number: 3, title: "still here" });
    gh.switches.renamedTo = "api-v2";
    const notices: string[] = [];
    const c = client(gh, { notice: (m) => notices.push(m) });
    const r = await c.getIssue(3);
    expect(r.ok && r.value.kind === "issue" && r.value.issue.title).toBe("still here");
    expect((await c.checks(head)).ok).toBe(true);
    expect(notices.length).toBeGreaterThan(0);
    expect(notices[0]).toContain("answered 301, moved to /repositories/4242/issues/3 (a renamed repository: set forge.repo to its new name); followed");
    expect(gh.requests).toContain("GET /repositories/4242/issues/3");
  });

  test("a redirect to another host is never followed (the token stays home)", async () => {
    const seen: string[] = [];
    const c = client(
      { apiUrl: "http://127.0.0.1:9", owner: "acme", repo: "api" },
      {
        fetch: (async (url: string) => {
          seen.push(url);
          return new Response(null, { status: 302, headers: { location: "https://elsewhere.invalid/steal" } });
        }) as never,
      },
    );
    const r = await c.getPull(1);
    expect(r).toEqual({
      ok: false,
      kind: "http",
      status: 302,
      message: "GET /repos/acme/api/pulls/1: redirected to another host (https://elsewhere.invalid); not followed",
    });
    expect(seen).toEqual(["http://127.0.0.1:9/repos/acme/api/pulls/1"]);
  });
});

describe("pull requests (docs/forge.md#pull-requests-github-refuses-to-open, #what-each-code-means)", () => {
  test("a refused draft and a branch with nothing to merge are refusals, each with its own code", async () => {
    const { gh } = fake();
    gh.switches.draftsRefused = true;
    const c = client(gh);
    expect(await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: true })).toEqual({
      ok: true,
      value: { kind: "refused", code: "draft_unsupported", message: "Validation Failed: Draft pull requests are not supported in this repository." },
    });
    expect(await c.createPull({ title: "t", body: "b", head: "main", base: "main", draft: false })).toEqual({
      ok: true,
      value: { kind: "refused", code: "no_commits", message: "Validation Failed: No commits between main and main" },
    });
    const regular = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    expect(regular.ok && regular.value.kind).toBe("created");
  });

  test("a listing has no mergeability (only the single pull request does): found pulls say unknown", async () => {
    const { gh } = fake();
    const c = client(gh);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    const found = await c.findPull("feature");
    expect(found.ok && found.value?.mergeability.kind).toBe("wait");
  });

  test("behind: the gate asks for the merge; a base that must be up to date refuses it, and that is not a wait", async () => {
    const { gh, head } = fake();
    gh.switches.behind = true;
    const c = client(gh);
    const created = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    if (!created.ok || created.value.kind !== "created") throw new Error(JSON.stringify(created));
    const pr = await c.getPull(created.value.pull.number);
    if (!pr.ok) throw new Error(JSON.stringify(pr));
    expect(pr.value.mergeability).toEqual({ kind: "ready" });
    expect(mergeGate(pr.value, await checksOf(c, head)).kind).toBe("merge");
    const m = await c.merge({ number: pr.value.number, sha: head, title: "m" });
    expect(m).toEqual({ ok: true, value: { kind: "not_mergeable", wait: false, message: "Head branch is not up to date with the base branch" } });
    expect(notMergeableIsWait("Head branch is not up to date with the base branch")).toBe(false);
  });

  for (const message of [
    "Head branch is out of date. Review and try the merge again.",
    "3 of 3 required status checks are expected.",
    "1 of 1 required status check is expected.",
  ])
    test(`a 405 "${message}" is a refusal waiting cannot fix (its words "review", "try again", "expected" notwithstanding)`, async () => {
      const { gh, head } = fake();
      gh.switches.mergeRefusal = { status: 405, message };
      const c = client(gh);
      const created = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
      if (!created.ok || created.value.kind !== "created") throw new Error(JSON.stringify(created));
      const m = await c.merge({ number: created.value.pull.number, sha: head, title: "m" });
      expect(m).toEqual({ ok: true, value: { kind: "not_mergeable", wait: false, message } });
    });

  test("405s that waiting can fix stay waits", () => {
    for (const message of [
      "Base branch was modified. Review and try the merge again.",
      "At least 1 approving review is required by reviewers with write access.",
      'Required status check "ci" is in progress.',
    ])
      expect(notMergeableIsWait(message)).toBe(true);
  });

  test("GitHub enforces required checks only: with none required it merges a red PR (loop's own gate is what refuses)", async () => {
    const { gh, head } = fake();
    gh.switches.checks = "failing";
    const c = client(gh);
    const created = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    if (!created.ok || created.value.kind !== "created") throw new Error(JSON.stringify(created));
    const pr = await c.getPull(created.value.pull.number);
    expect(pr.ok && pr.value.mergeability).toEqual({ kind: "ready" });
    expect(pr.ok && mergeGate(pr.value, await checksOf(c, head)).kind).toBe("block");
    gh.switches.requiredChecks = ["build"];
    const refused = await c.merge({ number: created.value.pull.number, sha: head, title: "m" });
    expect(refused).toEqual({ ok: true, value: { kind: "not_mergeable", wait: true, message: 'Required status check "build" is expected.' } });
  });
});

describe("search and permissions (docs/forge.md#issues-for-the-planner, #comments)", () => {
  test("another repository's results (repo: qualifiers are ORed) are dropped and said; an incomplete search is said", async () => {
    const { gh } = fake();
    gh.addIssue({ number: 1, title: "ours", labels: ["bug"] });
    gh.foreign.set("other/x", [
      { number: 1, title: "theirs", body: "", state: "open", labels: ["bug"] },
      { number: 2, title: "theirs too", body: "", state: "open", labels: ["bug"] },
    ]);
    const c = client(gh);
    const r = await c.searchOpenIssues("label:bug repo:other/x");
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.issues.map((i) => [i.number, i.title])).toEqual([[1, "ours"]]);
    expect(r.value.notes).toEqual(["left out 2 of the results, from other repositories (on GitHub a repo: qualifier in the search widens it)"]);
    gh.switches.searchIncomplete = true;
    const partial = await c.searchOpenIssues("label:bug");
    expect(partial.ok && partial.value.notes).toEqual(["GitHub says the search timed out and its results are incomplete"]);
  });

  test("a custom role is read by its base role: write under a custom name is write; a role named like admin over read is read", async () => {
    const { gh } = fake();
    gh.permissions.set("carol", { permission: "write", roleName: "ci-maintainer" });
    gh.permissions.set("dave", { permission: "read", roleName: "admin-lite" });
    gh.permissions.set("erin", "maintain");
    const c = client(gh);
    expect(await c.canWrite("carol")).toEqual({ ok: true, value: true });
    expect(await c.canWrite("dave")).toEqual({ ok: true, value: false });
    expect(await c.canWrite("erin")).toEqual({ ok: true, value: true });
  });
});

describe("deadlines (docs/forge.md#deadlines)", () => {
  test("a request that never answers is a `network` failure at the deadline, not a hang", async () => {
    const { gh } = fake();
    gh.switches.hang = (r) => r.method === "PUT";
    const c = client(gh, { timeoutMs: 300 });
    const r = await c.merge({ number: 1, sha: "a".repeat(40), title: "m" });
    expect(r).toEqual({ ok: false, kind: "network", message: "PUT /repos/acme/api/pulls/1/merge: no answer within 0.3s" });
  });
});

describe("comment listings (docs/forge.md#listings)", () => {
  test("read in the order of edits from the cursor; a listing longer than loop reads is cut and says so; the next listing from the last edit read holds the rest", async () => {
    const { gh } = fake();
    const spam = Array.from({ length: 1001 }, (_, i) => gh.addComment({ issue: 1, login: "spammer", body: `spam ${i}` }));
    const pause = gh.addComment({ issue: 1, login: "alice", body: "/loop pause" });
    gh.editComment(spam[0]!.id, "edited spam");
    const c = client(gh);
    const first = await c.listComments({ since: "2000-01-01T00:00:00Z", threads: [] });
    if (!first.ok) throw new Error(JSON.stringify(first));
    expect(first.value.cut).toBe(true);
    // Ten keyset pages of 100, each starting at the last one's final edit (read again, counted once).
    expect(first.value.items).toHaveLength(991);
    expect(first.value.items.map((x) => x.id)).not.toContain(pause.id);
    const cursor = first.value.items
      .map((x) => x.updatedAt)
      .sort()
      .at(-1)!;
    const next = await c.listComments({ since: cursor, threads: [] });
    if (!next.ok) throw new Error(JSON.stringify(next));
    expect(next.value.cut).toBe(false);
    // The last one read is read again (`since` is inclusive); ids keep it from being acted on twice.
    expect(next.value.items.map((x) => x.body)).toEqual([...Array.from({ length: 10 }, (_, i) => `spam ${991 + i}`), "/loop pause", "edited spam"]);
  });

  test("a thread longer than loop reads: the first pages and the newest are read, and the listing says it was cut", async () => {
    const { gh } = fake();
    gh.switches.maxPerPage = 5; // 10 pages = 50 comments
    const all = Array.from({ length: 57 }, (_, i) => gh.addComment({ issue: 9, login: "alice", body: `c${i}` }));
    const r = await client(gh).listThreadComments({ kind: "issue", number: 9 });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.cut).toBe(true);
    expect(Math.max(...r.value.items.map((x) => Number(x.id)))).toBe(all.at(-1)!.id);
  });
});

describe("a hostile GitHub (docs/forge.md#bounds, #redirects)", () => {
  test("review feedback whose next page is on another host: not read (no request, no token there) and `cut`", async () => {
    const { gh } = fake();
    gh.pulls.set(9, { number: 9, title: "t", body: "", head: "feature", base: "main", draft: false, state: "open", merged: false, merge_commit_sha: null });
    gh.addReview({ pull: 9, login: "ann", state: "APPROVED", body: "fine" });
    gh.addReview({ pull: 9, login: "rita", state: "CHANGES_REQUESTED", body: "rename it" });
    gh.switches.maxPerPage = 1;
    gh.switches.linkOrigin = "https://api.elsewhere.invalid";
    const seen: string[] = [];
    const c = client(gh, { fetch: (async (url: string, init: RequestInit) => (seen.push(String(url)), fetch(url, init))) as never });
    const got = await c.reviewFeedback(9);
    expect(got).toEqual({ ok: true, value: { items: [], cut: true } });
    expect(seen.every((u) => u.startsWith(gh.url))).toBe(true);
  });

  test("huge pages of `[{},{},…]`: counted before parsing and refused, never parsed (parsed JSON costs some 50 times its bytes)", async () => {
    const { gh } = fake();
    gh.switches.hugePages = { bytes: 30 * 1024 * 1024, shape: "empties" };
    const got = await client(gh).listThreadComments({ kind: "issue", number: 1 });
    expect(got).toMatchObject({
      ok: false,
      kind: "network",
      message: expect.stringContaining(`more than ${MAX_ANSWER_VALUES.toLocaleString("en-US")} JSON values; not parsed`),
    });
    expect(gh.requests).toHaveLength(1);
  });

  test("pages of 30 MiB each: one step reads at most MAX_STEP_ANSWER_BYTES in total, then its requests fail (asked again next step)", async () => {
    const { gh } = fake();
    gh.switches.hugePages = { bytes: 30 * 1024 * 1024, shape: "strings" };
    const c = client(gh);
    const got = await c.listThreadComments({ kind: "issue", number: 1 });
    expect(got).toMatchObject({ ok: false, kind: "network", message: expect.stringContaining("its most; asked again next step") });
    expect(gh.requests.length).toBeLessThanOrEqual(Math.ceil(MAX_STEP_ANSWER_BYTES / (30 * 1024 * 1024)) + 1);
    const again = await c.getIssue(1);
    expect(again).toMatchObject({ ok: false, message: expect.stringContaining("its most") });
  });
});
