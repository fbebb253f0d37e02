// The Jira tracker (lib/forge/jira.ts) against the fake Jira, which checks every request and every
// answer against Jira Cloud's published OpenAPI description (tests/helpers/fake-jira.ts): a bounded
// JQL search read by nextPageToken to its end (or cut, said), ADF descriptions and comments as
// text, comments posted as ADF, transitions by the target status's name (a missing one named),
// Jira's error bodies named, 429 with Retry-After honoured, Basic email:token, a deadline.
import { afterEach, describe, expect, test } from "bun:test";
import { JiraTracker } from "../../lib/forge/jira.ts";
import type { NormTracker } from "../../lib/definition/normalized.ts";
import { compareCommentIds } from "../../lib/log/projection.ts";
import { adf, FakeJira } from "../helpers/fake-jira.ts";

let fakes: FakeJira[] = [];
afterEach(() => {
  for (const f of fakes) f.stop();
  fakes = [];
});

function fake(): FakeJira {
  const f = new FakeJira().start();
  fakes.push(f);
  return f;
}

function settings(f: FakeJira, more: Partial<NormTracker> = {}): NormTracker {
  return {
    provider: "jira",
    apiUrl: f.url,
    tokenEnv: "JIRA_API_TOKEN",
    tokenKind: "basic",
    email: f.email,
    key: "PROJ",
    states: [],
    labels: [],
    moveTo: {},
    authorizedUsers: [],
    pollInterval: 60_000,
    ...more,
  };
}

function client(f: FakeJira, more: Partial<NormTracker> = {}, o: { token?: string | null; timeoutMs?: number; now?: () => number } = {}): JiraTracker {
  return new JiraTracker({
    settings: settings(f, more),
    token: o.token === undefined ? f.token : o.token,
    ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.now ? { now: o.now } : {}),
  });
}

describe("Jira", () => {
  test("the JQL selects the project's issues not done, with the states and every label; summary and ADF description as text", async () => {
    const f = fake();
    f.addIssue({
      number: 1,
      summary: "Fix login",
      description: {
        type: "doc",
        version: 1,
        content: [
          { type: "paragraph", content: [{ type: "text", text: "Steps:" }] },
          { type: "codeBlock", content: [{ type: "text", text: "rm -rf /" }] },
        ],
      },
      labels: ["agent", "backend"],
    });
    f.addIssue({ number: 2, labels: ["backend"] });
    f.addIssue({ number: 3, labels: ["agent"], status: "Done" });
    f.addIssue({ number: 4, labels: ["agent"], status: "In Progress" });
    const r = await client(f, { labels: ["agent"] }).searchOpenIssues("");
    if (!r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.issues.map((i) => i.number)).toEqual([1, 4]);
    expect(r.value.issues[0]).toEqual({
      number: 1,
      title: "Fix login",
      body: "Steps:\n```\nrm -rf /\n```",
      labels: ["agent", "backend"],
      url: `${f.url}/browse/PROJ-1`,
    });
    expect(f.requests.at(-1)!.body).toEqual({
      jql: 'project = "PROJ" AND statusCategory != Done AND labels = "agent" ORDER BY key ASC',
      fields: ["summary", "description", "status", "labels"],
      maxResults: 100,
    });
    const todo = await client(f, { states: ["To Do"], labels: ["agent", "backend"] }).searchOpenIssues("");
    expect(todo.ok && todo.value.issues.map((i) => i.number)).toEqual([1]);
  });

  test("loop.json's jql and the search (JQL) are ANDed; names with quotes are escaped; a field Jira lacks is its 400, named with the JQL", async () => {
    const f = fake();
    f.addIssue({ number: 1, labels: ['a"b'] });
    f.addIssue({ number: 2, labels: ["x"] });
    const r = await client(f, { jql: "labels != x" }).searchOpenIssues('key in (PROJ-1, PROJ-2) OR labels = "a\\"b"');
    expect(r.ok && r.value.issues.map((i) => i.number)).toEqual([1]);
    const quoted = await client(f, { labels: ['a"b'] }).searchOpenIssues("");
    expect(quoted.ok && quoted.value.issues.map((i) => i.number)).toEqual([1]);
    const bad = await client(f).searchOpenIssues("priority = High");
    expect(bad).toMatchObject({ ok: false, kind: "http", status: 400 });
    expect(!bad.ok && bad.message).toContain("Jira: Field 'priority' does not exist");
    expect(!bad.ok && bad.message).toContain("tracker.jql");
  });

  test("an unknown project is a failure naming tracker.project", async () => {
    const f = fake();
    const r = await client(f, { key: "OPS" }).searchOpenIssues("");
    expect(r).toMatchObject({ ok: false, kind: "http", status: 404 });
    expect(!r.ok && r.message).toContain("tracker.project");
  });

  test("pages are read by nextPageToken to the end; a token that never ends is cut and said, in a bounded number of requests", async () => {
    const f = fake();
    for (let n = 1; n <= 250; n++) f.addIssue({ number: n });
    f.switches.maxPerPage = 40;
    const r = await client(f).searchOpenIssues("");
    expect(r.ok && r.value.issues.length).toBe(250);
    expect(r.ok && r.value.notes).toEqual([]);
    f.switches.endlessToken = true;
    const before = f.requests.length;
    const endless = await client(f).searchOpenIssues("");
    expect(f.requests.length - before).toBeLessThan(15);
    expect(endless.ok && endless.value.notes.join()).toContain("more than loop reads at once");
  });

  test("an ADF bomb is read as far as the bounds go, and said", async () => {
    const f = fake();
    let deep: unknown = { type: "text", text: "bottom" };
    for (let d = 0; d < 200; d++) deep = { type: "blockquote", content: [deep] };
    f.addIssue({ number: 1, description: { type: "doc", version: 1, content: [{ type: "paragraph", content: [{ type: "text", text: "top" }] }, deep] } });
    const r = await client(f).searchOpenIssues("");
    expect(r.ok && r.value.issues[0]!.body).toContain("not read");
    expect(r.ok && r.value.notes.join()).toContain("PROJ-1 is larger or deeper than loop reads");
  });

  test("an issue read by its key: open, closed (the Done category), missing, or moved to another project", async () => {
    const f = fake();
    f.addIssue({ number: 7, summary: "t" });
    f.addIssue({ number: 8, status: "Done" });
    f.addIssue({ number: 9, movedTo: "OTHER-1" });
    expect(await client(f).getIssue(7)).toEqual({
      ok: true,
      value: { kind: "issue", issue: { number: 7, title: "t", body: "", state: "open", url: `${f.url}/browse/PROJ-7` } },
    });
    expect(await client(f).getIssue(8)).toMatchObject({ ok: true, value: { kind: "issue", issue: { state: "closed" } } });
    expect(await client(f).getIssue(10)).toMatchObject({ ok: true, value: { kind: "gone", why: "missing" } });
    expect(await client(f).getIssue(9)).toMatchObject({ ok: true, value: { kind: "gone", why: "transferred" } });
  });

  test("comments: ADF as text, ids that order, read by pages and since a time; posted as ADF; authors allowed by account id", async () => {
    const f = fake();
    f.addIssue({ number: 1 });
    const ada = "5b10a2844c20165700ede21g";
    const mallory = "712020:mallory";
    f.addComment({ issue: 1, body: "first", author: ada });
    const second = f.addComment({ issue: 1, body: "/loop pause", author: mallory });
    for (let n = 0; n < 5; n++) f.addComment({ issue: 1, body: `more ${n}`, author: ada });
    f.switches.maxPerPage = 2;
    const c = client(f, { authorizedUsers: [ada] });
    const all = await c.listThreadComments({ kind: "issue", number: 1 });
    if (!all.ok) throw new Error(JSON.stringify(all));
    expect(all.value.items.map((x) => x.body)).toEqual(["first", "/loop pause", "more 0", "more 1", "more 2", "more 3", "more 4"]);
    expect(all.value.cut).toBe(false);
    const ids = all.value.items.map((x) => x.id);
    expect([...ids].sort(compareCommentIds)).toEqual(ids);
    expect(all.value.items[1]).toMatchObject({ id: second.id, login: mallory, createdAt: "2026-03-01T10:00:02.000Z" });
    expect(await c.canWrite(ada)).toEqual({ ok: true, value: true });
    expect(await c.canWrite(mallory)).toEqual({ ok: true, value: false });
    expect(await c.canWrite("")).toEqual({ ok: true, value: false });
    const since = await c.listComments({
      since: "2026-03-01T10:00:06.000Z",
      threads: [
        { kind: "issue", number: 1 },
        { kind: "pull", number: 4 },
      ],
    });
    expect(since.ok && since.value.items.map((x) => x.body)).toEqual(["more 4", "more 3"].reverse());
    const posted = await c.createComment({ kind: "issue", number: 1 }, "loop: done\n\nPR: https://example.com/pr/1");
    if (!posted.ok) throw new Error(JSON.stringify(posted));
    expect(compareCommentIds(posted.value.id, ids.at(-1)!)).toBeGreaterThan(0);
    expect(posted.value.url).toBe(`${f.url}/browse/PROJ-1?focusedCommentId=${posted.value.id}`);
    expect(f.comments.at(-1)).toMatchObject({ author: f.me, body: adf("loop: done\n\nPR: https://example.com/pr/1") });
    expect(c.threadLabel({ kind: "issue", number: 1 })).toBe("PROJ-1");
  });

  test("transitions: moved by the target status's name through a legal transition; already there is nothing; none legal is named, nothing changed", async () => {
    const f = fake();
    f.addIssue({ number: 3 });
    const done = await client(f).moveIssue(3, "Done");
    expect(done.ok && done.value.kind === "unknown_state" && done.value.message).toBe(
      'PROJ-3 has no transition from "To Do" to a status named "Done" (tracker.moveTo); it can move to "In Progress"',
    );
    expect(f.issue(3).status).toBe("To Do");
    expect(await client(f).moveIssue(3, "In Progress")).toEqual({ ok: true, value: { kind: "moved" } });
    expect(f.issue(3).status).toBe("In Progress");
    expect(f.requests.at(-1)).toMatchObject({ method: "POST", url: "/rest/api/3/issue/PROJ-3/transitions", body: { transition: { id: "11" } } });
    const posts = f.requests.filter((r) => r.method === "POST").length;
    expect(await client(f).moveIssue(3, "In Progress")).toEqual({ ok: true, value: { kind: "moved" } });
    expect(f.requests.filter((r) => r.method === "POST").length).toBe(posts);
    expect(await client(f).moveIssue(3, "Done")).toEqual({ ok: true, value: { kind: "moved" } });
    expect(f.issue(3).status).toBe("Done");
    expect(await client(f).moveIssue(99, "Done")).toMatchObject({ ok: false, kind: "http", status: 404 });
  });

  test("429: Retry-After seconds, else X-RateLimit-Reset, else a minute; Jira's limit named; a 503 waits only when it says Retry-After", async () => {
    const f = fake();
    const now = Date.parse("2026-03-01T10:00:00Z");
    f.switches.rateLimited = 3;
    const a = await client(f, {}, { now: () => now }).getIssue(1);
    expect(a).toMatchObject({ ok: false, kind: "rate_limited", retryAt: now + 30_000 });
    expect(!a.ok && a.message).toContain("jira-burst-based");
    f.switches.retryAfter = null;
    f.switches.rateLimitReset = "2026-03-01T10:05:00.000Z";
    expect(await client(f, {}, { now: () => now }).getIssue(1)).toMatchObject({ ok: false, kind: "rate_limited", retryAt: now + 300_000 });
    f.switches.rateLimitReset = null;
    expect(await client(f, {}, { now: () => now }).getIssue(1)).toMatchObject({ ok: false, kind: "rate_limited", retryAt: now + 60_000 });
    f.switches.rateLimitStatus = 503;
    f.switches.retryAfter = "5";
    f.switches.rateLimited = 1;
    expect(await client(f, {}, { now: () => now }).getIssue(1)).toMatchObject({ ok: false, kind: "rate_limited", retryAt: now + 5_000 });
    f.switches.rateLimited = 1;
    f.switches.retryAfter = null;
    const shed = await client(f, {}, { now: () => now }).getIssue(1);
    expect(shed).toMatchObject({ ok: false, kind: "http", status: 503 });
    expect(!shed.ok && shed.message).toContain("Jira: Rate limit exceeded.");
  });

  test("Basic email:token; a wrong or missing token fails, named, and never said", async () => {
    const f = fake();
    f.addIssue({ number: 1 });
    expect((await client(f).getIssue(1)).ok).toBe(true);
    expect(f.requests.at(-1)!.authorization).toBe(`Basic ${Buffer.from(`${f.email}:${f.token}`).toString("base64")}`);
    const wrong = await client(f, {}, { token: "wrong-token-value" }).getIssue(1);
    expect(wrong).toMatchObject({ ok: false, kind: "http", status: 401 });
    expect(!wrong.ok && wrong.message).toContain("Client must be authenticated");
    expect(!wrong.ok && wrong.message).toContain("tracker.email");
    expect(!wrong.ok && wrong.message).not.toContain("wrong-token-value");
    const none = await client(f, {}, { token: null }).searchOpenIssues("");
    expect(!none.ok && none.message).toContain("JIRA_API_TOKEN");
  });

  test("every request has a deadline: one that never answers is a network failure", async () => {
    const f = fake();
    f.switches.hang = true;
    const r = await client(f, {}, { timeoutMs: 300 }).getIssue(1);
    expect(r).toMatchObject({ ok: false, kind: "network" });
    expect(!r.ok && r.message).toContain("no answer within");
  });

  test("the fake holds requests to Jira's description: an undocumented body field or query parameter, or an old endpoint, is a violation", async () => {
    const f = fake();
    const auth = { authorization: `Basic ${Buffer.from(`${f.email}:${f.token}`).toString("base64")}`, "content-type": "application/json" };
    expect(
      (await fetch(`${f.url}/rest/api/3/search/jql`, { method: "POST", headers: auth, body: JSON.stringify({ jql: "project = PROJ", startAt: 50 }) })).status,
    ).toBe(400);
    expect((await fetch(`${f.url}/rest/api/3/issue/PROJ-1/comment?since=1`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${f.url}/rest/api/3/search`, { method: "POST", headers: auth, body: "{}" })).status).toBe(404);
    expect(f.violations).toHaveLength(3);
    expect(f.violations[0]).toContain("must NOT have additional properties");
    expect(f.violations[1]).toContain("undocumented query parameter since");
    expect(f.violations[2]).toContain("no such operation");
    f.violations.length = 0;
  });
});
