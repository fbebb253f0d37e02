// The GitLab client against the fake GitLab (a real HTTP server on 127.0.0.1 over a real bare
// repository, every exchange checked against GitLab's documented REST API: tests/helpers/gitlab-rest.ts),
// switched into each real-world case: a project in nested groups, moved, deleted and missing issues,
// notes read incrementally (system notes left out, quick actions as GitLab treats them), write
// access by role, merge requests and their detailed_merge_status, pipelines and statuses on every
// page, the merge with its sha, rate limits, refusals explained, deadlines.
import { type ConditionalCache, describeFailure, type ForgeChecks, type ProviderOptions } from "../../lib/forge/provider.ts";
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GitLabProvider } from "../../lib/forge/gitlab.ts";
import { parseSearch } from "../../lib/forge/gitlab-answers.ts";
import { identityGate, mergeGate } from "../../lib/forge/merge-gate.ts";
import { commentIntent } from "../../lib/forge/comments.ts";
import { type FakeGitLab, startFakeGitLab } from "../helpers/fake-gitlab.ts";
import { fakeWithFeature } from "../helpers/repo.ts";

const TOKEN = "glpat-secretTokenThatMustNotLeak";
const open: FakeGitLab[] = [];
afterEach(() => {
  for (const gl of open.splice(0)) gl.stop();
});

/** A fake over a bare repository whose main has one commit, and a branch `feature` one ahead. */
function fake(project = "acme/platform/api"): { gl: FakeGitLab; head: string; work: string } {
  const dir = mkdtempSync(join(tmpdir(), "loop-gl-client-"));
  const { fake: gl, head, work } = fakeWithFeature(dir, (copyOf) => startFakeGitLab({ project, copyOf, dir }));
  open.push(gl);
  return { gl, head, work };
}

function client(gl: FakeGitLab, o: Partial<ProviderOptions> = {}) {
  return new GitLabProvider({
    settings: {
      provider: "gitlab",
      repo: gl.project,
      apiUrl: gl.apiUrl,
      remote: "origin",
      tokenEnv: "GITLAB_TOKEN",
      authorizedUsers: [],
      authorizeWriters: false,
      pollInterval: 1000,
    },
    token: TOKEN,
    ...o,
  });
}

function memoryCache(): ConditionalCache {
  const map = new Map<string, any>();
  return { get: (k) => map.get(k), set: (k, e) => void map.set(k, e) };
}

async function checksOf(c: GitLabProvider, sha: string, pull?: number): Promise<ForgeChecks> {
  const r = await c.checks(sha, pull === undefined ? {} : { pull });
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.value;
}

describe("issues of a project in nested groups", () => {
  test("the project is named by its URL-encoded full path; an issue's title and description; a 304 answers from the cache; the token only in PRIVATE-TOKEN", async () => {
    const { gl } = fake();
    gl.switches.token = TOKEN;
    gl.addIssue({ iid: 7, title: "Fix it", description: "body" });
    const seen: Headers[] = [];
    const c = client(gl, {
      cache: memoryCache(),
      fetch: (async (url: string, init: RequestInit) => (seen.push(new Headers(init.headers)), fetch(url, init))) as never,
    });
    const i = await c.getIssue(7);
    expect(i).toEqual({
      ok: true,
      value: {
        kind: "issue",
        issue: { number: 7, title: "Fix it", body: "body", state: "open", url: expect.stringContaining("/acme/platform/api/-/issues/7") },
      },
    });
    expect(gl.requests[0]).toBe("GET /projects/acme%2Fplatform%2Fapi/issues/7");
    expect(await c.getIssue(7)).toEqual(i);
    expect(gl.notModified).toBe(1);
    expect(seen.map((h) => [h.get("private-token"), h.get("authorization")])).toEqual([
      [TOKEN, null],
      [TOKEN, null],
    ]);
  });

  test("a moved issue is gone (transferred), a deleted or missing one is missing, a closed one is closed; a project the token cannot see is a failure that says so", async () => {
    const { gl } = fake();
    for (const iid of [1, 2, 3]) gl.addIssue({ iid });
    gl.moveIssue(1, 4242);
    gl.switches.deleted.add(2);
    gl.issues.get(3)!.state = "closed";
    const c = client(gl);
    expect(await c.getIssue(1)).toEqual({
      ok: true,
      value: { kind: "gone", why: "transferred", message: expect.stringContaining("issue #1 was moved to another project (issue id 4242") },
    });
    expect(await c.getIssue(2)).toEqual({
      ok: true,
      value: { kind: "gone", why: "missing", message: "issue #2 does not exist in acme/platform/api (deleted, or never was)" },
    });
    expect(await c.getIssue(9)).toEqual({
      ok: true,
      value: { kind: "gone", why: "missing", message: "issue #9 does not exist in acme/platform/api (deleted, or never was)" },
    });
    const closed = await c.getIssue(3);
    expect(closed.ok && closed.value.kind === "issue" && closed.value.issue.state).toBe("closed");
    gl.switches.hidden = true;
    const hidden = await c.getIssue(1);
    expect(hidden).toEqual({
      ok: false,
      kind: "http",
      status: 404,
      message: expect.stringContaining("GitLab shows no project acme/platform/api to this token (it does not exist, or the token cannot see it)"),
    });
  });
});

describe("refusals explained; rate limits; deadlines", () => {
  test("401: the token is not accepted; 403 insufficient_scope: it lacks `api`; the token is never in a message", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    gl.switches.token = "another";
    const r = await client(gl).getIssue(1);
    expect(r).toEqual({
      ok: false,
      kind: "http",
      status: 401,
      message: expect.stringContaining("GitLab does not accept the token in $GITLAB_TOKEN (invalid, expired or revoked)"),
    });
    gl.switches.token = null;
    gl.switches.scope = "read_api";
    const w = await client(gl).createComment({ kind: "issue", number: 1 }, "hi");
    expect(w).toEqual({
      ok: false,
      kind: "http",
      status: 403,
      message: expect.stringContaining("lacks the scope this needs (loop needs `api`; `read_api` only reads)"),
    });
    expect(JSON.stringify([r, w])).not.toContain(TOKEN);
  });

  test("429 with Retry-After, and with RateLimit-Reset only, are rate limits carrying when to go on; a 5xx is a failure", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    const c = client(gl, { now: () => 1_000_000 });
    gl.switches.rateLimit = { count: 1, retryAfter: 30 };
    expect(await c.getIssue(1)).toEqual({ ok: false, kind: "rate_limited", retryAt: 1_030_000, message: "retry-after 30s" });
    gl.switches.rateLimit = { count: 1, retryAfter: null, resetIn: 100 };
    const reset = await client(gl).getIssue(1);
    expect(reset.ok === false && reset.kind).toBe("rate_limited");
    expect(reset.ok === false && reset.kind === "rate_limited" && reset.retryAt).toBeGreaterThan(Date.now());
    gl.switches.fail = { match: () => true, status: 502, count: 1 };
    expect(await c.getIssue(1)).toEqual({ ok: false, kind: "http", status: 502, message: expect.stringContaining("502") });
  });

  test("a Retry-After or a RateLimit-Reset past what a date can hold waits an hour at most, saying what was asked; describing it never throws", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    const now = Date.now();
    const c = client(gl, { now: () => now });
    gl.switches.rateLimit = { count: 1, retryAfter: 99_999_999_999_999 };
    const a = await c.getIssue(1);
    expect(a).toEqual({ ok: false, kind: "rate_limited", retryAt: now + 3_600_000, message: expect.stringContaining("loop asks again after an hour") });
    gl.switches.rateLimit = { count: 1, retryAfter: null, resetIn: 8_700_000_000_000 }; // past the year 275760
    const b = await c.getIssue(1);
    expect(b.ok === false && b.kind === "rate_limited" && b.retryAt).toBe(now + 3_600_000);
    for (const f of [a, b]) expect(f.ok === false && describeFailure(f)).toStartWith(`rate limited until ${new Date(now + 3_600_000).toISOString()}: `);
    // A far but valid reset (the year 5138) is capped the same way.
    gl.switches.rateLimit = { count: 1, retryAfter: null, resetIn: 99_999_999_999 };
    const far = await c.getIssue(1);
    expect(far.ok === false && far.kind === "rate_limited" && far.retryAt).toBe(now + 3_600_000);
    expect(far.ok === false && far.message).toMatch(/asked to wait until \d{4}-\d\d-\d\dT/);
  });

  test("a request that never answers is a `network` failure at the deadline", async () => {
    const { gl } = fake();
    gl.switches.hang = (r) => r.method === "PUT";
    const r = await client(gl, { timeoutMs: 300 }).merge({ number: 1, sha: "a".repeat(40), title: "m" });
    expect(r).toEqual({ ok: false, kind: "network", message: "PUT /projects/acme%2Fplatform%2Fapi/merge_requests/1/merge: no answer within 0.3s" });
  });
});

describe("notes", () => {
  test("a thread's notes: system notes left out, every page read; a thread longer than loop reads keeps its newest notes", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    gl.addNote({ issue: 1, login: "ghost", body: "changed the description", system: true });
    const all = Array.from({ length: 57 }, (_, i) => gl.addNote({ issue: 1, login: "alice", body: `n${i}` })!);
    gl.switches.maxPerPage = 5;
    const r = await client(gl).listThreadComments({ kind: "issue", number: 1 });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.cut).toBe(true);
    expect(r.value.items.some((n) => n.login === "ghost")).toBe(false);
    expect(Math.max(...r.value.items.map((n) => Number(n.id)))).toBe(all.at(-1)!.id);
    gl.switches.maxPerPage = 100;
    const whole = await client(gl).listThreadComments({ kind: "issue", number: 1 });
    expect(whole.ok && whole.value.items.map((n) => n.body)).toEqual(all.map((n) => n.body));
  });

  for (const total of ["Infinity", "1e300", "-1", "0"])
    test(`X-Total-Pages: ${total} ends the search in a bounded number of requests; the newest notes since the cursor are read, cut`, async () => {
      const { gl } = fake();
      gl.addIssue({ iid: 1 });
      const old = gl.addNote({ issue: 1, login: "alice", body: "before the cursor" })!;
      // The fake's clock moves a second per note: every later note is past the cursor, with no wait.
      const cursor = new Date(Date.parse(old.updated_at) + 500).toISOString();
      const spam = Array.from({ length: 1_200 }, (_, i) => gl.addNote({ issue: 1, login: "mallory", body: `spam ${i}` })!);
      gl.switches.paging.totalPages = total;
      const before = gl.requests.length;
      const r = await client(gl).listComments({ since: cursor, threads: [{ kind: "issue", number: 1 }] });
      if (!r.ok) throw new Error(JSON.stringify(r));
      expect(gl.requests.length - before).toBeLessThan(20);
      expect(r.value.cut).toBe(true);
      expect(r.value.items.at(-1)!.id).toBe(String(spam.at(-1)!.id));
    });

  test("more than 10,000 notes (GitLab counts no further: no X-Total-Pages, no rel=last): an authorised /loop stop posted last is read, and the read says cut", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    const old = gl.addNote({ issue: 1, login: "alice", body: "before the cursor" })!;
    // The fake's clock moves a second per note: every later note is past the cursor, with no wait.
    const cursor = new Date(Date.parse(old.updated_at) + 500).toISOString();
    for (let i = 0; i < 12_000; i++) gl.addNote({ issue: 1, login: "mallory", body: `spam ${i}` });
    const stop = gl.addNote({ issue: 1, login: "alice", body: "/loop stop" })!;
    const r = await client(gl).listComments({ since: cursor, threads: [{ kind: "issue", number: 1 }] });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.cut).toBe(true);
    expect(r.value.items.map((n) => n.id)).toContain(String(stop.id));
  });

  test("incremental: only threads changed since the cursor are read (issues and merge requests have separate iids); an edit comes back; nothing changed costs conditional listings only", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    gl.addIssue({ iid: 2 });
    await client(gl).createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    const old = gl.addNote({ issue: 1, login: "alice", body: "old" })!;
    const cursor = new Date(Date.parse(old.updated_at) + 500).toISOString();
    const onMr = gl.addNote({ mr: 1, login: "bob", body: "on the merge request" })!;
    const c = client(gl, { cache: memoryCache() });
    const threads = [
      { kind: "issue" as const, number: 1 },
      { kind: "issue" as const, number: 2 },
      { kind: "pull" as const, number: 1 },
    ];
    const before = gl.requests.length;
    const r = await c.listComments({ since: cursor, threads });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.items.map((n) => [n.thread, n.body])).toEqual([[{ kind: "pull", number: 1 }, "on the merge request"]]);
    const asked = gl.requests.slice(before);
    expect(asked.filter((q) => q.includes("/notes"))).toEqual([
      `GET /projects/acme%2Fplatform%2Fapi/merge_requests/1/notes?order_by=updated_at&sort=desc&per_page=100`,
    ]);
    expect(asked.some((q) => q.startsWith("GET /projects/acme%2Fplatform%2Fapi/issues?iids[]=1&iids[]=2&updated_after="))).toBe(true);
    // An old note edited: its issue is touched, and it comes back (the caller's high-water mark keeps it from being acted on twice).
    gl.editNote(old.id, "old, edited");
    const again = await c.listComments({ since: onMr.updated_at, threads });
    expect(again.ok && again.value.items.map((n) => n.body)).toEqual(["on the merge request", "old, edited"]);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const quiet = await c.listComments({ since: later, threads });
    expect(quiet.ok && [quiet.value.items, quiet.value.notModified]).toEqual([[], false]);
    const quieter = await c.listComments({ since: later, threads });
    expect(quieter.ok && quieter.value.notModified).toBe(true);
  });

  test("quick actions: GitLab carries out and strips the ones it knows; `/loop <verb>` is none of them, so the note keeps it and loop reads it as a command", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    const kept = gl.addNote({ issue: 1, login: "alice", body: "/loop pause" });
    expect(kept?.body).toBe("/loop pause");
    expect(commentIntent(kept!.body)).toEqual({ kind: "command", verb: "pause" });
    // A known quick action on the first line is removed (and done): what follows is the first line loop sees.
    const mixed = gl.addNote({ issue: 1, login: "alice", body: "/label ~bug\n/loop skip" });
    expect(mixed?.body).toBe("/loop skip");
    expect(gl.addNote({ issue: 1, login: "alice", body: "/close" })).toBeNull();
    expect(gl.issues.get(1)!.state).toBe("closed");
    // A note loop posts through the API goes through the same extractor: loop's own never start a line with '/'.
    const posted = await client(gl).createComment({ kind: "issue", number: 1 }, "<!-- loop:bot -->\n> /close\n@alice: /loop stop refused");
    expect(posted.ok).toBe(true);
    expect(gl.notes.at(-1)!.body).toBe("<!-- loop:bot -->\n> /close\n@alice: /loop stop refused");
  });

  test("write access: members with at least Developer (inherited included); Reporter, strangers and a name that only contains the login are not", async () => {
    const { gl } = fake();
    gl.members.set("dev", 30);
    gl.members.set("Maint", 40);
    gl.members.set("rep", 20);
    gl.members.set("devious", 10);
    const c = client(gl);
    expect(await c.canWrite("dev")).toEqual({ ok: true, value: true });
    expect(await c.canWrite("maint")).toEqual({ ok: true, value: true });
    expect(await c.canWrite("rep")).toEqual({ ok: true, value: false });
    expect(await c.canWrite("stranger")).toEqual({ ok: true, value: false });
    expect(await c.canWrite("devi")).toEqual({ ok: true, value: false });
    // Usernames compare in ASCII case only: KELVIN SIGN + "ate" folds to "kate" in Unicode, not here.
    gl.members.set("kate", 30);
    expect(await c.canWrite("Kate")).toEqual({ ok: true, value: true });
    expect(await c.canWrite("\u212Aate")).toEqual({ ok: true, value: false });
  });
});

describe("merge requests", () => {
  test("a draft is opened with GitLab's Draft: title; found again by its branch (never duplicated: a second one is refused, 409)", async () => {
    const { gl } = fake();
    const c = client(gl);
    const created = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: true });
    if (!created.ok || created.value.kind !== "created") throw new Error(JSON.stringify(created));
    expect([created.value.pull.label, created.value.pull.draft, gl.mrs.get(1)!.title]).toEqual(["merge request !1", true, "Draft: t"]);
    expect(c.threadLabel({ kind: "pull", number: 1 })).toBe("!1");
    const found = await c.findPull("feature");
    expect(found.ok && found.value?.number).toBe(1);
    expect(await c.findPull("nope")).toEqual({ ok: true, value: null });
    const again = await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    expect(again).toEqual({
      ok: true,
      value: { kind: "refused", code: "exists", message: "Another open merge request already exists for this source branch: !1" },
    });
  });

  test.each([
    ["mergeable", null, { kind: "ready" }],
    ["checking", "checking", { kind: "wait", code: "mergeable_unknown" }],
    ["pipeline running", "ci_still_running", { kind: "wait", code: "not_mergeable_yet" }],
    ["conflict", "conflict", { kind: "block", code: "conflict" }],
    ["discussions unresolved", "discussions_not_resolved", { kind: "block", code: "discussions" }],
    ["not approved", "not_approved", { kind: "block", code: "approvals" }],
    ["changes requested", "requested_changes", { kind: "block", code: "changes_requested" }],
    ["needs a rebase", "need_rebase", { kind: "block", code: "rebase" }],
    ["blocked by another", "merge_request_blocked", { kind: "block", code: "blocked" }],
  ] as const)("detailed_merge_status: %s", async (_, status, want) => {
    const { gl } = fake();
    const c = client(gl);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    gl.switches.mergeStatus = status;
    const pr = await c.getPull(1);
    expect(pr.ok && pr.value.mergeability).toMatchObject(want);
  });

  test("an unknown detailed_merge_status fails closed: blocked, named", async () => {
    const settings = {
      provider: "gitlab" as const,
      repo: "acme/api",
      apiUrl: "https://gitlab.invalid/api/v4",
      remote: "origin",
      tokenEnv: "GITLAB_TOKEN",
      authorizedUsers: [],
      authorizeWriters: false,
      pollInterval: 1000,
    };
    const unknown = new GitLabProvider({
      settings,
      token: null,
      fetch: (async () =>
        new Response(
          JSON.stringify({
            iid: 1,
            state: "opened",
            detailed_merge_status: "new_fancy_status",
            sha: "a",
            source_branch: "x",
            target_branch: "main",
            web_url: "w",
          }),
          { status: 200 },
        )) as never,
    });
    const r = await unknown.getPull(1);
    expect(r.ok && r.value.mergeability).toEqual({
      kind: "block",
      code: "refused",
      reason: "merge request !1 cannot be merged (detailed_merge_status new_fancy_status, not one loop knows)",
    });
  });

  test("checks: pipelines and job/external statuses on the exact sha, every page; a job allowed to fail is not red; a manual pipeline is", async () => {
    const { gl, head } = fake();
    const c = client(gl);
    gl.switches.maxPerPage = 2;
    gl.switches.checks = {
      pipelines: [{ status: "success" }],
      statuses: [
        ...Array.from({ length: 5 }, (_, i) => ({ name: `ok-${i}`, status: "success" })),
        { name: "flaky", status: "failed", allow_failure: true },
        { name: "security", status: "failed" },
      ],
    };
    const red = await checksOf(c, head);
    expect(red.checks.filter((x) => x.verdict === "failing").map((x) => x.name)).toEqual(["security"]);
    expect(red.checks.find((x) => x.name === "flaky")).toMatchObject({ verdict: "passing", detail: "flaky is failed (allowed to fail)" });
    gl.switches.checks = { pipelines: [{ status: "manual" }], statuses: [{ name: "deploy", status: "manual", allow_failure: true }] };
    const manual = await checksOf(c, head);
    expect(manual.checks.map((x) => [x.source, x.verdict])).toEqual([
      ["pipeline", "failing"],
      ["commit status", "passing"],
    ]);
    gl.switches.checks = "pending";
    expect((await checksOf(c, head)).checks.map((x) => x.verdict)).toEqual(["pending", "pending", "passing"]);
  });

  test("more statuses than loop reads: not every check could be read, so the gate blocks", async () => {
    const { gl, head } = fake();
    gl.switches.maxPerPage = 2;
    gl.switches.checks = { pipelines: [{ status: "success" }], statuses: Array.from({ length: 21 }, (_, i) => ({ name: `ok-${i}`, status: "success" })) };
    const c = client(gl);
    const read = await checksOf(c, head);
    expect(read.unread).toBe(`21 statuses on ${head.slice(0, 12)}, 20 read`);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    const pr = await c.getPull(1);
    expect(pr.ok && mergeGate(pr.value, read)).toEqual({ kind: "block", code: "checks_unread", reason: expect.stringContaining("could be read") });
  });

  test("merge: with the sha seen green; a moved head is a 409; a refusal reads detailed_merge_status to tell a wait from a block; merged is merged", async () => {
    const { gl, head } = fake();
    const c = client(gl);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    expect(await c.merge({ number: 1, sha: "f".repeat(40), title: "m" })).toEqual({
      ok: true,
      value: { kind: "head_moved", message: `SHA does not match HEAD of source branch: ${head}` },
    });
    gl.switches.mergeStatus = "not_approved";
    expect(await c.merge({ number: 1, sha: head, title: "m" })).toEqual({
      ok: true,
      value: { kind: "not_mergeable", wait: false, message: "405 Method Not Allowed: merge request !1 is not approved (detailed_merge_status not_approved)" },
    });
    gl.switches.mergeStatus = "ci_still_running";
    const waiting = await c.merge({ number: 1, sha: head, title: "m" });
    expect(waiting.ok && waiting.value.kind === "not_mergeable" && waiting.value.wait).toBe(true);
    gl.switches.mergeStatus = null;
    const merged = await c.merge({ number: 1, sha: head, title: "m" });
    expect(merged.ok && merged.value.kind).toBe("merged");
    expect(gl.merges).toEqual([{ iid: 1, sha: head }]);
    const after = await c.getPull(1);
    // Merged with the head loop pushed, into the base: recorded merged (the identity rules of docs/forge.md#landing-on-gitlab).
    expect(after.ok && identityGate(after.value, { head, base: "main", headIsAncestor: false })).toEqual({
      kind: "merged",
      sha: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    expect(after.ok && identityGate(after.value, { head, base: "release", headIsAncestor: false })).toMatchObject({
      kind: "block",
      code: "merged_elsewhere",
      reason: expect.stringContaining("merge request !1 was merged into main, not release"),
    });
  });
});

describe("search", () => {
  test("open issues of the project, narrowed by GitLab's filters; open merge requests", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1, title: "Fix the crash", labels: ["bug"] });
    gl.addIssue({ iid: 2, title: "Add dark mode", labels: ["feature"] });
    gl.addIssue({ iid: 3, title: "Fix the old crash", labels: ["bug"], state: "closed" });
    const c = client(gl);
    const r = await c.searchOpenIssues("~bug crash");
    expect(r.ok && r.value.issues.map((i) => [i.number, i.labels])).toEqual([[1, ["bug"]]]);
    expect(gl.requests.at(-1)).toBe(
      "GET /projects/acme%2Fplatform%2Fapi/issues?state=opened&order_by=created_at&sort=desc&per_page=100&labels=bug&search=crash",
    );
    await c.createPull({ title: "t", body: "Closes #1", head: "feature", base: "main", draft: false });
    expect(await c.openPulls()).toEqual({
      ok: true,
      value: { items: [{ number: 1, title: "t", body: "Closes #1", url: expect.stringContaining("/-/merge_requests/1") }], cut: false },
    });
  });

  test("the search syntax: label:, ~, milestone:, %, author:, assignee:, @; an unknown filter is searched as words and said", () => {
    expect(parseSearch('label:bug ~"needs work" %v2 author:@ann @bob crash repo:x')).toEqual({
      labels: ["bug", "needs work"],
      milestone: "v2",
      author: "ann",
      assignee: "bob",
      words: ["crash", "repo:x"],
      notes: ["GitLab has no filter repo:, so repo:x was searched as words"],
    });
  });
});

describe("what reactions read (docs/forge.md#reactions)", () => {
  test("a failed pipeline's failed jobs: name, failure_reason and the tail of the log, bounded; a commit status that is no job says nothing", async () => {
    const { gl, head } = fake();
    const log = `${"x".repeat(5000)}\nERROR: test_login failed\n`;
    gl.switches.checks = {
      pipelines: [{ status: "failed" }],
      statuses: [
        { name: "unit", status: "failed", reason: "script_failure", log },
        { name: "lint", status: "success" },
      ],
    };
    const c = client(gl);
    const read = await checksOf(c, head);
    const pipeline = read.checks.find((x) => x.source === "pipeline")!;
    const failures = await c.checkFailures(pipeline, { tailBytes: 40 });
    expect(failures).toEqual({
      ok: true,
      value: [
        { name: "unit", reason: "script_failure", title: "", summary: "", annotations: [], logTail: log.slice(-40), url: expect.stringContaining("/-/jobs/") },
      ],
    });
    const job = read.checks.find((x) => x.name === "unit")!;
    const one = await c.checkFailures(job, { tailBytes: 10 });
    expect(one.ok && one.value.map((x) => [x.name, x.logTail])).toEqual([["unit", log.slice(-10)]]);
    expect(await c.checkFailures({ ...job, handle: undefined }, { tailBytes: 10 })).toEqual({ ok: true, value: [] });
  });

  test("unresolved discussions on the diff, with their authors, files and lines (resolved ones left out)", async () => {
    const { gl } = fake();
    const c = client(gl, { cache: memoryCache() });
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    gl.discussions.push(
      { mr: 1, login: "rita", body: "please rename this", path: "b.txt", line: 3, resolved: false },
      { mr: 1, login: "sam", body: "nit", path: "b.txt", resolved: true },
    );
    const got = await c.reviewFeedback(1);
    expect(got).toEqual({
      ok: true,
      value: {
        items: [
          {
            id: expect.stringMatching(/^note:\d+$/),
            kind: "diff_comment",
            login: "rita",
            body: "please rename this",
            path: "b.txt",
            line: 3,
            createdAt: "2024-01-01T00:00:00.000Z",
          },
        ],
        cut: false,
      },
    });
    // Read again: a conditional request, answered from the cache.
    const before = gl.notModified;
    expect(await c.reviewFeedback(1)).toEqual(got);
    expect(gl.notModified).toBe(before + 1);
  });
});

describe("a hostile or unusual GitLab (docs/forge.md#listings, #bounds)", () => {
  const OFF_HOST = "https://gitlab.external.invalid";
  const hundredGreenOneRed = () => ({
    pipelines: [{ status: "success" }],
    statuses: [...Array.from({ length: 100 }, (_, i) => ({ name: `ok-${i}`, status: "success" })), { name: "job-101", status: "failed" }],
  });

  test("a Link header naming another host (external_url is not the API's): X-Next-Page is followed, so job 101 is read and red; the other host is never asked", async () => {
    const { gl, head } = fake();
    gl.switches.checks = hundredGreenOneRed();
    gl.switches.paging.linkOrigin = OFF_HOST;
    const seen: string[] = [];
    const c = client(gl, { fetch: (async (url: string, init: RequestInit) => (seen.push(String(url)), fetch(url, init))) as never });
    const read = await checksOf(c, head);
    expect(read.unread).toBeNull();
    expect(read.checks.filter((x) => x.verdict === "failing").map((x) => x.name)).toEqual(["job-101"]);
    expect(seen.every((u) => u.startsWith(gl.url))).toBe(true);
  });

  test("neither an on-host Link nor X-Next-Page: the unread page is `cut`, so the gate blocks checks_unread, never merges", async () => {
    const { gl, head } = fake();
    gl.switches.checks = hundredGreenOneRed();
    gl.switches.paging.linkOrigin = OFF_HOST;
    gl.switches.paging.nextPageHeader = false;
    const c = client(gl);
    const read = await checksOf(c, head);
    expect(read.checks.filter((x) => x.verdict === "failing")).toEqual([]);
    expect(read.unread).toBe(`101 statuses on ${head.slice(0, 12)}, 100 read`);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    const pr = await c.getPull(1);
    expect(pr.ok && mergeGate(pr.value, read)).toMatchObject({ kind: "block", code: "checks_unread" });
  });

  test("no paging headers but X-Total: fewer read than X-Total said is `cut`", async () => {
    const { gl, head } = fake();
    gl.switches.checks = hundredGreenOneRed();
    gl.switches.paging.linkHeader = false;
    gl.switches.paging.nextPageHeader = false;
    const read = await checksOf(client(gl), head);
    expect(read.unread).toBe(`101 statuses on ${head.slice(0, 12)}, 100 read`);
  });

  test("more than 10,000 notes (no X-Total, X-Total-Pages or rel=last) and a storm since the cursor: the newest are read, `/loop stop` after the storm is seen, and the read says `cut`", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    gl.switches.paging.over10k = true;
    for (let i = 0; i < 1_100; i++) gl.addNote({ issue: 1, login: "old", body: `before ${i}` });
    const cursor = new Date(Date.parse(gl.notes.at(-1)!.updated_at) + 500).toISOString();
    for (let i = 0; i < 1_100; i++) gl.addNote({ issue: 1, login: "spam", body: `storm ${i}` });
    const stop = gl.addNote({ issue: 1, login: "kate", body: "/loop stop" })!;
    const before = gl.requests.length;
    const r = await client(gl).listComments({ since: cursor, threads: [{ kind: "issue", number: 1 }] });
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.cut).toBe(true);
    expect(r.value.items.at(-1)).toMatchObject({ id: String(stop.id), login: "kate", body: "/loop stop" });
    expect(r.value.items.every((n) => n.updatedAt >= cursor)).toBe(true);
    expect(gl.requests.length - before).toBeLessThanOrEqual(11);
  });

  test("X-Total-Pages: Infinity or 1e300 costs nothing: no page count is searched over", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    for (let i = 0; i < 1_050; i++) gl.addNote({ issue: 1, login: "spam", body: `storm ${i}` });
    const since = gl.notes[0]!.updated_at;
    for (const pages of ["Infinity", "1e300"]) {
      gl.switches.paging.totalPages = pages;
      const before = gl.requests.length;
      const r = await client(gl).listComments({ since, threads: [{ kind: "issue", number: 1 }] });
      expect(r.ok && [r.value.cut, r.value.items.length]).toEqual([true, 1_000]);
      expect(gl.requests.length - before).toBeLessThanOrEqual(11);
    }
  });

  test("merged-results pipelines on the merge ref (MR-only workflow rules): seen through the MR's head_pipeline, never checks_missing; red is red", async () => {
    const { gl, head } = fake();
    const c = client(gl);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    gl.switches.mergeRefPipeline = { status: "running", alsoBranch: false };
    expect((await checksOf(c, head)).checks).toEqual([]);
    const running = await checksOf(c, head, 1);
    expect(running.checks.map((x) => [x.name, x.verdict])).toEqual([["pipeline #5000001 (merge_request_event)", "pending"]]);
    gl.switches.mergeRefPipeline.status = "failed";
    const pr = await c.getPull(1);
    expect(pr.ok && mergeGate(pr.value, await checksOf(c, head, 1))).toMatchObject({ kind: "block", code: "checks_failed" });
    gl.switches.mergeRefPipeline.status = "success";
    expect(pr.ok && mergeGate(pr.value, await checksOf(c, head, 1))).toMatchObject({ kind: "merge", sha: head });
  });

  test("a green branch pipeline and a red merge request pipeline: both are judged, so the gate blocks", async () => {
    const { gl, head } = fake();
    const c = client(gl);
    await c.createPull({ title: "t", body: "b", head: "feature", base: "main", draft: false });
    gl.switches.mergeRefPipeline = { status: "failed", alsoBranch: true };
    const read = await checksOf(c, head, 1);
    expect(
      read.checks
        .filter((x) => x.source === "pipeline")
        .map((x) => x.verdict)
        .sort(),
    ).toEqual(["failing", "passing"]);
    const pr = await c.getPull(1);
    expect(pr.ok && mergeGate(pr.value, read)).toMatchObject({ kind: "block", code: "checks_failed", reason: expect.stringContaining("merge_request_event") });
  });

  test("huge pages for ever: `[{},{},…]` is refused before parsing; long strings stop at the step's total", async () => {
    const { gl } = fake();
    gl.addIssue({ iid: 1 });
    gl.switches.paging.hugePages = { bytes: 30 * 1024 * 1024, shape: "empties" };
    expect(await client(gl).listThreadComments({ kind: "issue", number: 1 })).toMatchObject({
      ok: false,
      kind: "network",
      message: expect.stringContaining("JSON values; not parsed"),
    });
    gl.switches.paging.hugePages = { bytes: 30 * 1024 * 1024, shape: "strings" };
    const before = gl.requests.length;
    expect(await client(gl).listThreadComments({ kind: "issue", number: 1 })).toMatchObject({
      ok: false,
      kind: "network",
      message: expect.stringContaining("its most; asked again next step"),
    });
    expect(gl.requests.length - before).toBeLessThanOrEqual(6);
  });
});
