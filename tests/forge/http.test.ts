// The HTTP both forge clients compose (lib/forge/http.ts), alone, over a scripted fetch and a
// dialect of the test's own: the deadline, the conditional cache, redirects, paging, and the token
// kept out of every message. The providers' own readings (rate limits, refusals, pages) are tested
// in github-client.test.ts and gitlab-client.test.ts against the fakes.
import { describe, expect, test } from "bun:test";
import { type Answer, type Dialect, ForgeHttp, linkTarget, scrubToken } from "../../lib/forge/http.ts";
import { MAX_ANSWER_BYTES, MAX_PAGES } from "../../lib/forge/bounds.ts";
import { type CachedAnswer, commitIdOf, type ConditionalCache, type ProviderOptions } from "../../lib/forge/provider.ts";

const API = "https://forge.invalid/api";
const TOKEN = "s3cret-t0ken";

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** A fetch that records each request and answers with `answer` (which may never settle). */
function scripted(answer: (s: Seen, n: number, init: RequestInit) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const fetch = async (url: string, init: RequestInit = {}) => {
    const s = { method: String(init.method), url, headers: { ...(init.headers as Record<string, string>) } };
    seen.push(s);
    return answer(s, seen.length, init);
  };
  return { seen, fetch };
}

function memoryCache(): ConditionalCache & { entries: Map<string, CachedAnswer> } {
  const entries = new Map<string, CachedAnswer>();
  return { entries, get: (k) => entries.get(k), set: (k, v) => void entries.set(k, v) };
}

const dialect: Dialect = {
  headers: { accept: "application/test", "x-token": TOKEN },
  rateLimit: (res, _body, now) => (res.status === 429 ? { ok: false, kind: "rate_limited", retryAt: now() + 1000, message: "slow down" } : null),
  link: (headers) => headers.get("x-next"),
  explain: (a: Answer) => `the forge said ${String(a.body?.message ?? "nothing")}`,
  redirected: ({ method, status, from, to }) => ({ key: `${from} → ${to}`, notice: `${method} ${from} answered ${status}, now ${to}` }),
};

function http(o: Partial<ProviderOptions> = {}, d: Partial<Dialect> = {}): ForgeHttp {
  return new ForgeHttp(
    {
      settings: {
        provider: "github",
        repo: "acme/api",
        apiUrl: `${API}/`,
        remote: "origin",
        tokenEnv: "T",
        authorizedUsers: [],
        authorizeWriters: false,
        pollInterval: 1000,
      },
      token: TOKEN,
      ...o,
    },
    { ...dialect, ...d },
  );
}

const json = (body: unknown, init: ResponseInit = {}) => new Response(JSON.stringify(body), { status: 200, ...init });

describe("one request", () => {
  test("a request that never answers is a `network` failure at the deadline, not a hang", async () => {
    const { fetch } = scripted(
      (_s, _n, init) => new Promise<Response>((_, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason))),
    );
    const r = await http({ fetch: fetch as never, timeoutMs: 100 }).request("PUT", "/things/1", { body: { a: 1 } });
    expect(r).toEqual({ ok: false, kind: "network", message: "PUT /things/1: no answer within 0.1s" });
  });

  test("a connection that fails is a `network` failure naming why", async () => {
    const { fetch } = scripted(() => Promise.reject(new TypeError("connection refused")));
    expect(await http({ fetch: fetch as never }).request("GET", "/things")).toEqual({ ok: false, kind: "network", message: "GET /things: connection refused" });
  });

  test("the dialect's headers, loop's user agent, JSON for a body; a successful answer that is not JSON is a failure, unless text was asked for", async () => {
    const { seen, fetch } = scripted(() => new Response("a log line\n", { status: 200 }));
    const h = http({ fetch: fetch as never });
    expect(await h.request("POST", "/things", { body: { a: 1 } })).toEqual({ ok: false, kind: "network", message: "POST /things: answer is not JSON" });
    expect(seen[0]).toEqual({
      method: "POST",
      url: `${API}/things`,
      headers: { accept: "application/test", "x-token": TOKEN, "user-agent": "loop", "content-type": "application/json" },
    });
    const t = await h.request("GET", "/jobs/1/trace", { textTail: 100 });
    expect(!("ok" in t) && t.body).toBe("a log line\n");
  });

  test("a log is read to its end but only its tail is kept, in whole characters; a JSON answer over MAX_ANSWER_BYTES is a failure, not held", async () => {
    // 5 MiB of log in 64 KiB chunks, ending in a multi-byte character cut by the tail's start.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024 - 1) + "\n");
    const end = new TextEncoder().encode("é the end\n");
    const stream = (n: number, last: Uint8Array) =>
      new ReadableStream<Uint8Array>({
        pull(c) {
          if (n-- > 0) c.enqueue(chunk);
          else {
            c.enqueue(last);
            c.close();
          }
        },
      });
    const { fetch } = scripted(
      (s) =>
        new Response(s.url.endsWith("/trace") ? stream(80, end) : stream(MAX_ANSWER_BYTES / chunk.byteLength, new TextEncoder().encode("[]")), { status: 200 }),
    );
    const h = http({ fetch: fetch as never });
    const t = await h.request("GET", "/jobs/1/trace", { textTail: 10 });
    // "é" is two bytes: the last 10 bytes start in its middle, so it is dropped whole.
    expect(!("ok" in t) && t.body).toBe(" the end\n");
    const whole = await h.request("GET", "/jobs/1/trace", { textTail: 11 });
    expect(!("ok" in whole) && whole.body).toBe("é the end\n");
    expect(await h.request("GET", "/things")).toEqual({
      ok: false,
      kind: "network",
      message: `GET /things: answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; not read`,
    });
  });

  test("a success without its document, or a 304 to a question that kept no answer, is a failure (never a null the provider reads fields of)", async () => {
    const answers = [
      new Response("", { status: 200 }),
      new Response("null", { status: 201 }),
      new Response("42", { status: 200 }),
      new Response(null, { status: 304 }),
      new Response(null, { status: 204 }),
    ];
    const { fetch } = scripted((_s, n) => answers[n - 1]!);
    const h = http({ fetch: fetch as never });
    expect(await h.request("GET", "/pulls/1")).toEqual({ ok: false, kind: "network", message: "GET /pulls/1: answered 200 without a JSON object or list" });
    expect(await h.request("POST", "/comments", { body: {} })).toEqual({
      ok: false,
      kind: "network",
      message: "POST /comments: answered 201 without a JSON object or list",
    });
    expect(await h.request("GET", "/pulls/1")).toEqual({ ok: false, kind: "network", message: "GET /pulls/1: answered 200 without a JSON object or list" });
    expect(await h.request("GET", "/pulls/1")).toEqual({
      ok: false,
      kind: "network",
      message: "GET /pulls/1: answered 304 Not Modified, but no answer was kept to reuse",
    });
    expect(await h.request("DELETE", "/things/1")).toMatchObject({ status: 204, body: null });
  });

  test("a rate limit is the dialect's result, on the injected clock", async () => {
    const { fetch } = scripted(() => json({ message: "no" }, { status: 429 }));
    expect(await http({ fetch: fetch as never, now: () => 5000 }).request("GET", "/things")).toEqual({
      ok: false,
      kind: "rate_limited",
      retryAt: 6000,
      message: "slow down",
    });
  });

  test("an answer the caller did not expect fails with the dialect's explanation, the path shown under the API URL", async () => {
    const { fetch } = scripted(() => json({ message: "gone fishing" }, { status: 500 }));
    const h = http({ fetch: fetch as never });
    const a = await h.request("GET", "/things?x=1");
    if ("ok" in a) throw new Error(JSON.stringify(a));
    expect(h.fail("GET", "/things?x=1", a)).toEqual({ ok: false, kind: "http", status: 500, message: "GET /things?x=1: the forge said gone fishing" });
    expect(h.fail("GET", `${API}/other`, a).message).toBe("GET /other: the forge said gone fishing");
  });
});

describe("the conditional cache", () => {
  test("a 304 is answered from the cache: its body and link, notModified; only a conditional request asks", async () => {
    const cache = memoryCache();
    const { seen, fetch } = scripted((s) =>
      s.headers["if-none-match"] === '"e1"'
        ? new Response(null, { status: 304 })
        : json([1, 2], { headers: { etag: '"e1"', "x-next": `${API}/things?page=2` } }),
    );
    const h = http({ fetch: fetch as never, cache });
    const first = await h.request("GET", "/things", { conditional: true });
    expect(first).toMatchObject({ status: 200, body: [1, 2], link: `${API}/things?page=2`, notModified: false });
    expect(cache.entries.get(`${API}/things`)).toEqual({ etag: '"e1"', body: [1, 2], link: `${API}/things?page=2` });
    const second = await h.request("GET", "/things", { conditional: true });
    expect(second).toMatchObject({ status: 304, body: [1, 2], link: `${API}/things?page=2`, notModified: true });
    expect(seen[1]!.headers["if-none-match"]).toBe('"e1"');
    await h.request("GET", "/things");
    expect(seen[2]!.headers["if-none-match"]).toBeUndefined();
  });

  test("an entry kept without its link (older than paging by it) is not used, and a failed answer is not kept", async () => {
    const cache = memoryCache();
    cache.entries.set(`${API}/old`, { etag: '"old"', body: ["stale"] });
    const { seen, fetch } = scripted((s) => (s.url.endsWith("/old") ? json(["fresh"]) : json({ message: "no" }, { status: 404, headers: { etag: '"x"' } })));
    const h = http({ fetch: fetch as never, cache });
    expect(await h.request("GET", "/old", { conditional: true })).toMatchObject({ status: 200, body: ["fresh"], notModified: false });
    expect(seen[0]!.headers["if-none-match"]).toBeUndefined();
    await h.request("GET", "/missing", { conditional: true });
    expect(cache.entries.has(`${API}/missing`)).toBe(false);
  });
});

describe("redirects", () => {
  test("a redirect to another host is refused: the token is never sent there", async () => {
    const { seen, fetch } = scripted(() => new Response(null, { status: 302, headers: { location: "https://elsewhere.invalid/steal" } }));
    const r = await http({ fetch: fetch as never }).request("GET", "/things/1");
    expect(r).toEqual({ ok: false, kind: "http", status: 302, message: "GET /things/1: redirected to another host (https://elsewhere.invalid); not followed" });
    expect(seen.map((s) => s.url)).toEqual([`${API}/things/1`]);
  });

  test("a redirect on the API's host is followed and said once per move; the cached ETag is not sent on", async () => {
    const cache = memoryCache();
    cache.entries.set(`${API}/old/1`, { etag: '"e"', body: {}, link: null });
    const { seen, fetch } = scripted((s) =>
      s.url.includes("/old/") ? new Response(null, { status: 301, headers: { location: "/api/new/1?x=1" } }) : json({ here: true }),
    );
    const notices: string[] = [];
    const h = http({ fetch: fetch as never, cache, notice: (m) => notices.push(m) });
    expect(await h.request("GET", "/old/1", { conditional: true })).toMatchObject({ status: 200, body: { here: true }, url: `${API}/new/1?x=1` });
    expect(await h.request("GET", "/old/1")).toMatchObject({ status: 200 });
    expect(notices).toEqual(["GET /old/1 answered 301, now /new/1"]);
    expect(seen.map((s) => [s.url, s.headers["if-none-match"]])).toEqual([
      [`${API}/old/1`, '"e"'],
      [`${API}/new/1?x=1`, undefined],
      [`${API}/old/1`, undefined],
      [`${API}/new/1?x=1`, undefined],
    ]);
  });

  test("more than three redirects is a failure; follow: false answers with the redirect itself", async () => {
    const { seen, fetch } = scripted((_s, n) => new Response(null, { status: 307, headers: { location: `/api/hop/${n}` } }));
    const h = http({ fetch: fetch as never });
    expect(await h.request("GET", "/hop/0")).toEqual({ ok: false, kind: "http", status: 307, message: "GET /hop/0: more than 3 redirects" });
    expect(seen).toHaveLength(4);
    const a = await h.request("GET", "/hop/0", { follow: false });
    expect(!("ok" in a) && [a.status, a.headers.get("location")]).toEqual([307, "/api/hop/5"]);
  });
});

describe("the token never in a message", () => {
  test("not in a refusal's explanation, a network failure, a redirect's host or a deadline", async () => {
    const echo = scripted(() => json({ message: `bad token ${TOKEN}` }, { status: 401 }));
    const h = http({ fetch: echo.fetch as never });
    const a = await h.request("GET", "/me");
    if ("ok" in a) throw new Error(JSON.stringify(a));
    expect(h.fail("GET", "/me", a).message).toBe("GET /me: the forge said bad token [token]");
    const failing = scripted(() => Promise.reject(new Error(`refused with header x-token: ${TOKEN}`)));
    expect(await http({ fetch: failing.fetch as never }).request("GET", "/me")).toEqual({
      ok: false,
      kind: "network",
      message: "GET /me: refused with header x-token: [token]",
    });
    const away = scripted(() => new Response(null, { status: 302, headers: { location: `https://${TOKEN}.elsewhere.invalid/` } }));
    expect(await http({ fetch: away.fetch as never }).request("GET", "/me")).toEqual({
      ok: false,
      kind: "http",
      status: 302,
      message: "GET /me: redirected to another host (https://[token].elsewhere.invalid); not followed",
    });
    const hang = scripted((_s, _n, init) => new Promise<Response>((_, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason))));
    const late = await http({ fetch: hang.fetch as never, timeoutMs: 100 }).request("GET", `${API}/q?key=${TOKEN}`);
    expect(late).toEqual({ ok: false, kind: "network", message: "GET /q?key=[token]: no answer within 0.1s" });
  });
});

describe("pages", () => {
  test("follows `next` up to MAX_PAGES and says it was cut; notModified only when every page was", async () => {
    const { seen, fetch } = scripted((s) => {
      const n = Number(new URL(s.url).searchParams.get("page") ?? "1");
      return json([n], { headers: { "x-next": `${API}/list?page=${n + 1}` } });
    });
    const r = await http({ fetch: fetch as never }).pages("/list", { next: (a) => a.link });
    if ("ok" in r) throw new Error(JSON.stringify(r));
    expect([r.answers.map((a) => a.body[0]), r.cut, r.notModified]).toEqual([Array.from({ length: MAX_PAGES }, (_, i) => i + 1), true, false]);
    expect(seen).toHaveLength(MAX_PAGES);
  });

  test("stops where `next` says null, uncut; a page that fails fails the listing, explained", async () => {
    const short = scripted(() => json(["only"], { headers: { "x-next": `${API}/list?page=2` } }));
    const r = await http({ fetch: short.fetch as never }).pages("/list", { next: () => null });
    expect(!("ok" in r) && [r.answers.length, r.cut]).toEqual([1, false]);
    const broken = scripted((_s, n) => (n === 1 ? json([1], { headers: { "x-next": `${API}/list?page=2` } }) : json({ message: "boom" }, { status: 502 })));
    expect(await http({ fetch: broken.fetch as never }).pages("/list", { next: (a) => a.link })).toEqual({
      ok: false,
      kind: "http",
      status: 502,
      message: "GET /list?page=2: the forge said boom",
    });
  });
});

describe("linkTarget", () => {
  const cases: [string | null, string, string | null][] = [
    [null, "next", null],
    [`<${API}/l?page=2>; rel="next", <${API}/l?page=9>; rel="last"`, "next", `${API}/l?page=2`],
    [`<${API}/l?page=2>; rel="next", <${API}/l?page=9>; rel="last"`, "last", `${API}/l?page=9`],
    [`<${API}/l?page=1>; rel="prev first"`, "first", `${API}/l?page=1`],
    [`<${API}/l?page=9>; rel="last"`, "next", null],
    [`</relative?page=2>; rel="next"`, "next", null],
  ];
  for (const [header, rel, want] of cases)
    test(`${rel} of ${header}`, () => {
      expect(linkTarget(header, rel)?.href ?? null).toBe(want);
    });
});

describe("commitIdOf", () => {
  test('a forge\'s commit id is 40 or 64 hex digits; anything else is none, never the text "undefined"', () => {
    expect(commitIdOf("a".repeat(40))).toBe("a".repeat(40));
    expect(commitIdOf("b".repeat(64))).toBe("b".repeat(64));
    for (const bad of [undefined, null, "", "undefined", "A".repeat(40), "a".repeat(41), 42]) expect(commitIdOf(bad)).toBeNull();
  });
});

describe("scrubToken", () => {
  const token = "ghp_s3cr3tTOKENvalue1234567890";
  const b64 = (t: string) => Buffer.from(t).toString("base64");
  test("the token as it is, and in each base64 form it travels in (Basic authorization on GitHub and GitLab), never leaves in a message", () => {
    for (const shown of [token, b64(token), b64(`x-access-token:${token}`), b64(`oauth2:${token}`)]) {
      const said = scrubToken(`git said: Authorization: Basic ${shown} was refused`, token);
      expect(said).not.toContain(shown);
      expect(said).toContain("[token]");
    }
  });
  test("no token: the message as it is", () => {
    expect(scrubToken("nothing secret", null)).toBe("nothing secret");
  });
});
