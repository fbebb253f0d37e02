// The fake GitHub is held to GitHub's official API description (npm @octokit/openapi): the checker
// accepts answers GitHub really gave (recorded interactions from npm @octokit/fixtures, where they
// cover an operation loop uses and the description has not moved on since they were recorded),
// refuses an undocumented field, status, shape, operation or query parameter, and every operation
// the client uses is served by the fake, under every switch, without a violation.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { GitHubProvider } from "../../lib/forge/github.ts";
import { type FakeGitHub, startFakeGitHub } from "./fake-github.ts";
import { githubOpenApi } from "./github-openapi.ts";
import * as shape from "./github-shapes.ts";
import { fakeWithFeature } from "./repo.ts";

const checker = githubOpenApi();
const require = createRequire(import.meta.url);
const scenarios = join(dirname(require.resolve("@octokit/fixtures/package.json")), "scenarios", "api.github.com");

interface Recorded {
  method: string;
  path: string;
  status: number;
  body?: unknown;
  response?: unknown;
  headers?: Record<string, string>;
}
function recorded(scenario: string, match: (x: Recorded) => boolean): Recorded {
  const all = JSON.parse(readFileSync(join(scenarios, scenario, "normalized-fixture.json"), "utf8")) as Recorded[];
  const x = all.find(match);
  if (!x) throw new Error(`no such recording in ${scenario}`);
  return x;
}
const exchange = (x: Recorded) => ({
  method: x.method.toUpperCase(),
  url: x.path,
  requestBody: x.body === "" || x.body === undefined ? null : x.body,
  status: x.status,
  body: x.response === "" || x.response === undefined ? null : x.response,
});

describe("the checker against recorded real answers (@octokit/fixtures)", () => {
  test.each([
    ["create-status", "the combined status of a commit", (x: Recorded) => x.path.endsWith("/status")],
    ["add-labels-to-issue", "an issue (as created)", (x: Recorded) => x.method === "post" && x.path.endsWith("/issues")],
    ["errors", "a 422 validation error", (x: Recorded) => x.status === 422],
    ["rename-repository", "the 301 of a renamed repository", (x: Recorded) => x.status === 301],
    ["paginate-issues", "a page of a listing, by the repository's id", (x: Recorded) => x.path.startsWith("/repositories/")],
  ])("%s: %s is valid", (scenario, _what, match) => {
    expect(checker.check(exchange(recorded(scenario, match)))).toEqual([]);
  });

  test("the client reads a recorded combined status and follows a recorded rename (301 to /repositories/{id})", async () => {
    const status = recorded("create-status", (x) => x.path.endsWith("/status"));
    const moved = recorded("rename-repository", (x) => x.status === 301);
    const repo = recorded("rename-repository", (x) => x.method === "get" && x.path === "/repositories/1000");
    const base = "http://127.0.0.1:9";
    const c = new GitHubProvider({
      settings: {
        provider: "github",
        repo: "octokit-fixture-org/create-status",
        apiUrl: base,
        remote: "origin",
        tokenEnv: "T",
        authorizedUsers: [],
        authorizeWriters: false,
        pollInterval: 1,
      },
      token: null,
      fetch: (async (url: string) => {
        const path = url.slice(base.length);
        if (path.includes("/check-runs")) return new Response(JSON.stringify({ total_count: 0, check_runs: [] }), { status: 200 });
        if (path.includes("/status")) return new Response(JSON.stringify(status.response), { status: 200 });
        if (path === "/repos/octokit-fixture-org/create-status/pulls/1")
          return new Response(JSON.stringify(moved.response), { status: 301, headers: { location: `${base}/repositories/1000` } });
        return new Response(JSON.stringify({ ...(repo.response as object), number: 1 }), { status: 200 });
      }) as never,
    });
    const checks = await c.checks("0000000000000000000000000000000000000001");
    if (!checks.ok) throw new Error(JSON.stringify(checks));
    const states = (status.response as { statuses: { context: string; state: string }[] }).statuses.map((s) => [
      s.context,
      s.state === "success" ? "passing" : s.state === "pending" ? "pending" : "failing",
    ]);
    expect(checks.value.checks.filter((x) => x.source === "status").map((x) => [x.name, x.verdict])).toEqual(states);
    const followed = await c.getPull(1);
    expect(followed.ok).toBe(true);
  });
});

describe("the checker refuses what GitHub does not answer", () => {
  const ctx = { api: "http://127.0.0.1:1", owner: "acme", repo: "api", repoId: 1 };
  const fields: shape.PullFields = {
    number: 3,
    title: "t",
    body: "",
    head: "h",
    headSha: "a".repeat(40),
    base: "main",
    baseSha: "b".repeat(40),
    draft: false,
    state: "open",
    merged: false,
    merge_commit_sha: null,
  };
  test("an undocumented field: mergeability in a pull-request listing (only the single endpoint has it)", () => {
    const listing = [{ ...shape.pullSimple(ctx, fields), mergeable: true, mergeable_state: "clean" }];
    const v = checker.check({ method: "GET", url: "/repos/acme/api/pulls?state=all", requestBody: null, status: 200, body: listing });
    expect(v.join("\n")).toContain("must NOT have additional properties");
    expect(
      checker.check({ method: "GET", url: "/repos/acme/api/pulls?state=all", requestBody: null, status: 200, body: [shape.pullSimple(ctx, fields)] }),
    ).toEqual([]);
  });
  test("an undocumented status", () => {
    expect(
      checker.check({ method: "GET", url: "/repos/acme/api/commits/abc/check-runs", requestBody: null, status: 404, body: shape.error("Not Found") }),
    ).toEqual(["GET /repos/acme/api/commits/abc/check-runs → 404: status 404 is not documented for checks/list-for-ref"]);
  });
  test("a wrong shape: a conclusion outside the enum, a missing required field, a wrong type", () => {
    const run = shape.checkRun(ctx, "a".repeat(40), { name: "x", status: "completed", conclusion: "success" }, 1);
    const body = (r: object) => ({ total_count: 1, check_runs: [r] });
    const url = "/repos/acme/api/commits/abc/check-runs";
    expect(checker.check({ method: "GET", url, requestBody: null, status: 200, body: body(run) })).toEqual([]);
    expect(checker.check({ method: "GET", url, requestBody: null, status: 200, body: body({ ...run, conclusion: "stale" }) }).join()).toContain(
      "must be equal to one of the allowed values",
    );
    const { head_sha: _, ...noSha } = run;
    expect(checker.check({ method: "GET", url, requestBody: null, status: 200, body: body(noSha) }).join()).toContain("must have required property 'head_sha'");
    expect(checker.check({ method: "GET", url, requestBody: null, status: 200, body: body({ ...run, id: "7" }) }).join()).toContain("must be integer");
  });
  test("an operation GitHub does not have, a query parameter it does not take, a request body it does not accept", () => {
    expect(checker.check({ method: "GET", url: "/repos/acme/api/pulls/1/checks", requestBody: null, status: 200, body: [] })).toEqual([
      "GET /repos/acme/api/pulls/1/checks → 200: no such operation in GitHub's description",
    ]);
    expect(checker.check({ method: "GET", url: "/repos/acme/api/issues/comments?since=x&order=asc", requestBody: null, status: 200, body: [] })).toEqual([
      "GET /repos/acme/api/issues/comments?since=x&order=asc → 200: undocumented query parameter order for issues/list-comments-for-repo",
    ]);
    expect(
      checker
        .check({
          method: "PUT",
          url: "/repos/acme/api/pulls/1/merge",
          requestBody: { sha: "a", merge_method: "fast-forward" },
          status: 405,
          body: { message: "no" },
        })
        .join(),
    ).toContain("request body is not pulls/merge's");
  });
});

describe("the fake under every switch: every operation the client uses, nothing outside the description", () => {
  const open: FakeGitHub[] = [];
  afterEach(() => {
    for (const gh of open.splice(0)) gh.stop();
  });

  test("a sweep", async () => {
    const dir = mkdtempSync(join(tmpdir(), "loop-openapi-"));
    const { fake: gh, head } = fakeWithFeature(dir, (copyOf) => startFakeGitHub({ copyOf, dir }), ["feature:feature", "feature:feature2"]);
    open.push(gh);
    const c = new GitHubProvider({
      settings: {
        provider: "github",
        repo: "acme/api",
        apiUrl: gh.apiUrl,
        remote: "origin",
        tokenEnv: "T",
        authorizedUsers: [],
        authorizeWriters: false,
        pollInterval: 1,
      },
      token: "t",
      timeoutMs: 200,
      cache: (() => {
        const m = new Map<string, never>();
        return { get: (k: string) => m.get(k), set: (k: string, e: never) => void m.set(k, e) };
      })(),
    });
    for (const n of [1, 2, 3, 4]) gh.addIssue({ number: n, labels: ["bug"] });
    for (let i = 0; i < 7; i++) gh.addComment({ issue: 1, login: i % 2 ? "alice" : "bob", body: `c${i}` });
    gh.permissions.set("alice", "write");
    gh.permissions.set("carol", { permission: "write", roleName: "ci-maintainer" });
    gh.foreign.set("other/x", [{ number: 9, title: "theirs", body: "", state: "open", labels: ["bug"] }]);
    const conclusions = ["success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"] as const;

    const everything = async () => {
      await c.getIssue(1);
      await c.getIssue(2);
      await c.getIssue(99);
      await c.listThreadComments({ kind: "issue", number: 1 });
      await c.listComments({ since: "2000-01-01T00:00:00Z", threads: [] });
      await c.canWrite("alice");
      await c.canWrite("carol");
      await c.canWrite("nobody");
      await c.searchOpenIssues("label:bug repo:other/x");
      await c.openPulls();
      const found = await c.findPull("feature");
      const created = found.ok && found.value ? null : await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
      const number = found.ok && found.value ? found.value.number : created?.ok && created.value.kind === "created" ? created.value.pull.number : 0;
      await c.getPull(number);
      await c.checks(head);
      await c.createComment({ kind: "issue", number: 1 }, "hello");
    };
    await everything();
    gh.switches.maxPerPage = 2;
    gh.switches.checks = {
      runs: conclusions.map((conclusion) => ({ name: conclusion, status: "completed", conclusion })),
      statuses: [
        { context: "a", state: "error" },
        { context: "b", state: "pending" },
        { context: "c", state: "success" },
      ],
    };
    gh.switches.transferred.set(2, { repo: "other/x", repoId: 99, number: 9 });
    gh.switches.deleted.add(3);
    gh.switches.searchIncomplete = true;
    gh.switches.draftsRefused = true;
    gh.switches.mergeableNullFor = 1;
    await everything();
    await c.getIssue(3);
    await c.createPull({ title: "t", body: "b", head: "main", base: "main", draft: false });
    await c.createPull({ title: "t", body: "b", head: "feature2", base: "main", draft: true });
    gh.switches.renamedTo = "api2";
    await everything();
    gh.switches.renamedTo = null;
    for (const sw of [
      { behind: true },
      { conflicting: true },
      { mergeRefusal: { status: 405, message: "Merge commits are not allowed on this repository." } },
      { requiredChecks: ["failure"] },
      { moveHeadOnMerge: true },
    ] as const) {
      Object.assign(gh.switches, { behind: false, conflicting: false, mergeRefusal: null, requiredChecks: [], moveHeadOnMerge: false }, sw);
      const pr = await c.findPull("feature");
      if (pr.ok && pr.value) await c.getPull(pr.value.number);
      if (pr.ok && pr.value) await c.merge({ number: pr.value.number, sha: gh.headOf("feature")!, title: "m" });
    }
    gh.switches.rateLimit = { count: 2, status: 403, retryAfter: 5 };
    await c.getIssue(1);
    gh.switches.rateLimit = { count: 1, status: 429, retryAfter: null, primaryResetIn: 10 };
    await c.getIssue(1);
    gh.switches.fail = { match: () => true, status: 502, count: 1 };
    await c.getPull(1);
    gh.switches.hang = (r) => r.path.endsWith("/status");
    await c.checks(head);
    gh.switches.hang = null;
    Object.assign(gh.switches, { mergeRefusal: null, requiredChecks: [], checks: "passing" });
    const pr = await c.findPull("feature");
    if (pr.ok && pr.value) await c.merge({ number: pr.value.number, sha: gh.headOf("feature")!, title: "m" });

    expect(gh.violations).toEqual([]);
    const used = new Set(gh.requests.map((r) => checker.operationOf(r.split(" ")[0]!, r.split(" ")[1]!)));
    expect([...used].sort()).toEqual(
      [
        "checks/list-for-ref",
        "issues/create-comment",
        "issues/get",
        "issues/list-comments",
        "issues/list-comments-for-repo",
        "pulls/create",
        "pulls/get",
        "pulls/list",
        "pulls/merge",
        "repos/get",
        "repos/get-collaborator-permission-level",
        "repos/get-combined-status-for-ref",
        "search/issues-and-pull-requests",
      ].sort(),
    );
    // The answers under the switches really were the cases: one 410, 301s, 422s, 405s, a 409, a merge.
    expect(gh.merges).toHaveLength(1);
  });
});
