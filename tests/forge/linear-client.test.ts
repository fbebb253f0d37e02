// The Linear tracker (lib/forge/linear.ts) against the fake Linear, which checks every request
// against Linear's published GraphQL schema (tests/helpers/fake-linear.ts): the filter selects the
// team's issues, comments are read and posted with ids that order, states are moved by name (an
// unknown one named), errors in a 200's body are failures, RATELIMITED waits until its reset, a
// cursor that never ends is cut, every request has a deadline, and the key goes as Linear wants it.
import { afterEach, describe, expect, test } from "bun:test";
import { LinearTracker } from "../../lib/forge/linear.ts";
import type { NormTracker } from "../../lib/definition/normalized.ts";
import { compareCommentIds } from "../../lib/log/projection.ts";
import { FakeLinear } from "../helpers/fake-linear.ts";

let fakes: FakeLinear[] = [];
afterEach(() => {
  for (const f of fakes) f.stop();
  fakes = [];
});

function fake(o: { authorization?: string } = {}): FakeLinear {
  const f = new FakeLinear(o).start();
  fakes.push(f);
  return f;
}

function settings(f: FakeLinear, more: Partial<NormTracker> = {}): NormTracker {
  return {
    provider: "linear",
    apiUrl: f.url,
    tokenEnv: "LINEAR_API_KEY",
    tokenKind: "personal",
    key: "ENG",
    states: [],
    labels: [],
    moveTo: {},
    authorizedUsers: [],
    pollInterval: 60_000,
    ...more,
  };
}

function client(f: FakeLinear, more: Partial<NormTracker> = {}, o: { token?: string | null; timeoutMs?: number; now?: () => number } = {}): LinearTracker {
  return new LinearTracker({
    settings: settings(f, more),
    token: o.token === undefined ? "lin_api_test_key" : o.token,
    ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.now ? { now: o.now } : {}),
  });
}

describe("Linear", () => {
  test("the filter selects the team's open issues with the states and every label asked for; title and description as given", async () => {
    const f = fake();
    f.addIssue({ number: 1, title: "Fix login", description: "Steps:\n```\nrm -rf /\n```", labels: ["agent", "backend"] });
    f.addIssue({ number: 2, labels: ["backend"] });
    f.addIssue({ number: 3, labels: ["agent"], state: "Done" });
    f.addIssue({ number: 4, labels: ["agent"], state: "Backlog" });
    const r = await client(f, { labels: ["agent"] }).searchOpenIssues("");
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.issues.map((i) => i.number)).toEqual([1, 4]);
    expect(r.value.issues[0]).toEqual({
      number: 1,
      title: "Fix login",
      body: "Steps:\n```\nrm -rf /\n```",
      labels: ["agent", "backend"],
      url: "https://linear.app/acme/issue/ENG-1",
    });
    const todo = await client(f, { states: ["Todo"], labels: ["agent", "backend"] }).searchOpenIssues("");
    expect(todo.ok && todo.value.issues.map((i) => i.number)).toEqual([1]);
  });

  test("an unknown team is a failure naming tracker.team", async () => {
    const f = fake();
    const r = await client(f, { key: "OPS" }).searchOpenIssues("");
    expect(r).toMatchObject({ ok: false, kind: "http", status: 404 });
    expect(!r.ok && r.message).toContain("tracker.team");
  });

  test("pagination is read to the end; a cursor that never moves is cut, in a bounded number of requests", async () => {
    const f = fake();
    for (let n = 1; n <= 250; n++) f.addIssue({ number: n });
    f.switches.maxPerPage = 40;
    const r = await client(f).searchOpenIssues("");
    expect(r.ok && r.value.issues.length).toBe(250);
    expect(r.ok && r.value.notes).toEqual([]);
    f.switches.endlessCursor = true;
    const before = f.requests.length;
    const endless = await client(f).searchOpenIssues("");
    expect(f.requests.length - before).toBeLessThan(15);
    expect(endless.ok && endless.value.notes.join()).toContain("more than loop reads at once");
  });

  test("an issue read by number: open, closed (completed or canceled), or missing", async () => {
    const f = fake();
    f.addIssue({ number: 7, title: "t", description: null });
    f.addIssue({ number: 8, state: "Canceled" });
    expect(await client(f).getIssue(7)).toEqual({
      ok: true,
      value: { kind: "issue", issue: { number: 7, title: "t", body: "", state: "open", url: "https://linear.app/acme/issue/ENG-7" } },
    });
    expect(await client(f).getIssue(8)).toMatchObject({ ok: true, value: { kind: "issue", issue: { state: "closed" } } });
    expect(await client(f).getIssue(9)).toMatchObject({ ok: true, value: { kind: "gone", why: "missing" } });
  });

  test("comments: ids that sort as they were made; read since a time; posted as the key's user; authors allowed by id or email", async () => {
    const f = fake();
    f.addIssue({ number: 1 });
    const ada = "0a000000-0000-4000-8000-00000000000a";
    const mallory = "0b000000-0000-4000-8000-00000000000b";
    f.addComment({ issue: 1, body: "first", user: ada });
    const second = f.addComment({ issue: 1, body: "/loop pause", user: mallory });
    f.addComment({ issue: 1, body: "from an integration", user: null });
    const c = client(f, { authorizedUsers: ["ADA@acme.dev"] });
    const all = await c.listThreadComments({ kind: "issue", number: 1 });
    if (!all.ok) throw new Error(JSON.stringify(all));
    expect(all.value.items.map((x) => x.body)).toEqual(["first", "/loop pause", "from an integration"]);
    const ids = all.value.items.map((x) => x.id);
    expect([...ids].sort(compareCommentIds)).toEqual(ids);
    expect(ids[1]).toBe(`${second.createdAt}~${second.id}`);
    expect(await c.canWrite(ada)).toEqual({ ok: true, value: true });
    expect(await c.canWrite(mallory)).toEqual({ ok: true, value: false });
    expect(await c.canWrite("")).toEqual({ ok: true, value: false });
    const since = await c.listComments({ since: second.updatedAt, threads: [{ kind: "issue", number: 1 }] });
    expect(since.ok && since.value.items.map((x) => x.body)).toEqual(["/loop pause", "from an integration"]);
    const posted = await c.createComment({ kind: "issue", number: 1 }, "loop: done");
    if (!posted.ok) throw new Error(JSON.stringify(posted));
    expect(compareCommentIds(posted.value.id, ids.at(-1)!)).toBeGreaterThan(0);
    expect(f.comments.at(-1)).toMatchObject({ body: "loop: done", user: f.viewer });
    expect(c.threadLabel({ kind: "issue", number: 1 })).toBe("ENG-1");
  });

  test("states: moved by name; a state the team lacks is named, nothing changed", async () => {
    const f = fake();
    f.addIssue({ number: 3 });
    expect(await client(f).moveIssue(3, "In Progress")).toEqual({ ok: true, value: { kind: "moved" } });
    expect(f.issue(3).state).toBe("In Progress");
    const r = await client(f).moveIssue(3, "Shipped");
    expect(r.ok && r.value.kind).toBe("unknown_state");
    expect(r.ok && r.value.kind === "unknown_state" && r.value.message).toContain("tracker.moveTo");
    expect(f.issue(3).state).toBe("In Progress");
  });

  test("errors in the body of an HTTP 200 are a failure, checked before data, and escaped", async () => {
    const f = fake();
    f.switches.errorWith200 = 1;
    const r = await client(f).getIssue(1);
    expect(r).toMatchObject({ ok: false, kind: "http", status: 200 });
    expect(!r.ok && r.message).toContain("INVALID_INPUT: Entity not found");
    expect(!r.ok && r.message).not.toContain("\u001b");
  });

  test("RATELIMITED waits until X-RateLimit-Requests-Reset (epoch ms)", async () => {
    const f = fake();
    const now = Date.parse("2026-03-01T10:00:00Z");
    f.switches.rateLimited = 1;
    f.switches.rateLimitReset = now + 90_000;
    const r = await client(f, {}, { now: () => now }).getIssue(1);
    expect(r).toMatchObject({ ok: false, kind: "rate_limited", retryAt: now + 90_000 });
  });

  test("a personal key goes bare in Authorization, an OAuth token after Bearer; a wrong or missing key fails, named", async () => {
    const f = fake();
    f.addIssue({ number: 1 });
    expect((await client(f).getIssue(1)).ok).toBe(true);
    expect(f.requests.at(-1)!.authorization).toBe("lin_api_test_key");
    f.authorization = "Bearer oauth-token";
    expect((await client(f, { tokenKind: "oauth" }, { token: "oauth-token" }).getIssue(1)).ok).toBe(true);
    const wrong = await client(f, {}, { token: "oauth-token" }).getIssue(1);
    expect(wrong).toMatchObject({ ok: false, kind: "http", status: 401 });
    expect(!wrong.ok && wrong.message).not.toContain("oauth-token");
    const none = await client(f, {}, { token: null }).getIssue(1);
    expect(!none.ok && none.message).toContain("LINEAR_API_KEY");
  });

  test("every request has a deadline: one that never answers is a network failure", async () => {
    const f = fake();
    f.switches.hang = true;
    const r = await client(f, {}, { timeoutMs: 300 }).getIssue(1);
    expect(r).toMatchObject({ ok: false, kind: "network" });
    expect(!r.ok && r.message).toContain("no answer within");
  });

  test("the fake holds the client to Linear's schema: a field Linear does not have is a violation", async () => {
    const f = fake();
    const res = await fetch(f.url, {
      method: "POST",
      headers: { authorization: f.authorization, "content-type": "application/json" },
      body: JSON.stringify({ query: 'query { issues(filter: { team: { slug: { eq: "x" } } }) { nodes { id priorityLabel nope } } }' }),
    });
    expect(res.status).toBe(400);
    expect(f.violations).toEqual(["Query.issues(filter).team.slug: TeamFilter has no field slug", "Query.issues.nodes.nope: Issue has no field nope"]);
    f.violations.length = 0;
  });
});
