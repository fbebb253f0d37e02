// What keeps outside text and outside clients in their place: escaping for the page's contexts,
// links from outside, the listen address, the token rules and the per-request access check.
import { describe, expect, test } from "bun:test";
import { clip, escapeLine, escapeText, html, line, safeHref, trusted } from "../../lib/serve/html.ts";
import { baseUrl, checkAccess, cookieValue, hostProblem, isLoopback, parseListen, tokenCookie, tokenFor } from "../../lib/serve/access.ts";
import { UsageError } from "../../lib/shared/errors.ts";

describe("escaping", () => {
  const cases: [string, string][] = [
    [`<script>alert(1)</script>`, `&lt;script&gt;alert(1)&lt;/script&gt;`],
    [`<img src=x onerror="alert(1)">`, `&lt;img src=x onerror=&quot;alert(1)&quot;&gt;`],
    [`a' onmouseover='x`, `a&#39; onmouseover=&#39;x`],
    [`&lt; stays text`, `&amp;lt; stays text`],
    [`\u001b[31mred\u001b[0m`, `\\u001b[31mred\\u001b[0m`],
    [`abc\u202edcba`, `abc\\u202edcba`], // a bidi override shown, not obeyed
    [`two\nlines\tand a tab`, `two\nlines\tand a tab`],
  ];
  for (const [input, want] of cases) test(`escapeText(${JSON.stringify(input)})`, () => expect(escapeText(input)).toBe(want));

  test("escapeLine shows a line break instead of keeping it", () => {
    expect(escapeLine("a\nb<")).toBe("a\\nb&lt;");
  });

  test("html escapes every interpolation but Markup; arrays are joined; null, undefined and false are nothing", () => {
    const evil = `"><script>x</script>`;
    expect(html`<p title="${evil}">${evil}${[evil, 1]}${null}${undefined}${false}${trusted("<b>ours</b>")}${line("q\n")}</p>`.text).toBe(
      `<p title="&quot;&gt;&lt;script&gt;x&lt;/script&gt;">&quot;&gt;&lt;script&gt;x&lt;/script&gt;&quot;&gt;&lt;script&gt;x&lt;/script&gt;1<b>ours</b>q\\n</p>`,
    );
  });

  const hrefs: [unknown, string | null][] = [
    ["https://github.com/acme/api/pull/7", "https://github.com/acme/api/pull/7"],
    ["http://127.0.0.1:8080/pr/1", "http://127.0.0.1:8080/pr/1"],
    ["javascript:alert(1)", null],
    [" JaVaScRiPt:alert(1)", null],
    ["data:text/html,<script>x</script>", null],
    ["//evil.example/x", null],
    ["not a url", null],
    [42, null],
  ];
  for (const [input, want] of hrefs) test(`safeHref(${JSON.stringify(input)}) → ${want}`, () => expect(safeHref(input)).toBe(want));

  test("clip never cuts a surrogate pair", () => {
    expect(clip("abcdef", 4)).toBe("abc…");
    expect(clip("ab😀cd", 4)).toBe("ab…");
    expect(clip("abc", 4)).toBe("abc");
  });
});

describe("--listen", () => {
  const ok: [string, { host: string; port: number }][] = [
    ["127.0.0.1:7777", { host: "127.0.0.1", port: 7777 }],
    ["localhost:0", { host: "localhost", port: 0 }],
    ["[::1]:8080", { host: "::1", port: 8080 }],
    [":9000", { host: "127.0.0.1", port: 9000 }],
    ["0.0.0.0:80", { host: "0.0.0.0", port: 80 }],
  ];
  for (const [text, want] of ok) test(`${text}`, () => expect(parseListen(text)).toEqual(want));
  for (const bad of ["7777", "127.0.0.1", "127.0.0.1:99999", "host:port", "::1:80", "a b:80", "[::1]"])
    test(`${JSON.stringify(bad)} is a usage error naming it`, () => {
      expect(() => parseListen(bad)).toThrow(UsageError);
      expect(() => parseListen(bad)).toThrow(JSON.stringify(bad));
    });

  const loop: [string, boolean][] = [
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["localhost", true],
    ["::1", true],
    ["[::1]", true],
    ["0.0.0.0", false],
    ["::", false],
    ["192.168.1.4", false],
    ["localhost.evil.example", false],
    ["127.0.0.1.evil.example", false],
  ];
  for (const [host, want] of loop) test(`isLoopback(${host}) = ${want}`, () => expect(isLoopback(host)).toBe(want));

  test("the URL shown for an unspecified address is loopback's; a v6 host is bracketed", () => {
    expect([baseUrl("0.0.0.0", 80), baseUrl("::", 81), baseUrl("::1", 82), baseUrl("localhost", 83)]).toEqual([
      "http://127.0.0.1:80/",
      "http://[::1]:81/",
      "http://[::1]:82/",
      "http://localhost:83/",
    ]);
  });
});

describe("the token", () => {
  const good = "0123456789abcdef0123";
  test("loopback needs none; --token wins over the environment", () => {
    expect(tokenFor({ host: "127.0.0.1", port: 0 }, undefined, {})).toBeNull();
    expect(tokenFor({ host: "127.0.0.1", port: 0 }, good, { LOOP_SERVE_TOKEN: "x".repeat(20) })).toBe(good);
    expect(tokenFor({ host: "127.0.0.1", port: 0 }, undefined, { LOOP_SERVE_TOKEN: good })).toBe(good);
  });
  test("beyond loopback without a token: refused, saying why", () => {
    expect(() => tokenFor({ host: "0.0.0.0", port: 80 }, undefined, {})).toThrow(/not loopback, without a token/);
    expect(() => tokenFor({ host: "0.0.0.0", port: 80 }, undefined, { LOOP_SERVE_TOKEN: "" })).toThrow(UsageError);
    expect(tokenFor({ host: "0.0.0.0", port: 80 }, undefined, { LOOP_SERVE_TOKEN: good })).toBe(good);
  });
  test("a short token, or one that would not survive a cookie, is refused", () => {
    expect(() => tokenFor({ host: "0.0.0.0", port: 80 }, "short", {})).toThrow(/at least 16/);
    expect(() => tokenFor({ host: "127.0.0.1", port: 80 }, undefined, { LOOP_SERVE_TOKEN: "abc;def0123456789" })).toThrow(/\$LOOP_SERVE_TOKEN holds/);
  });
});

describe("checkAccess", () => {
  const req = (url: string, headers: Record<string, string> = {}) => ({ url: new URL(url), headers: new Headers({ host: new URL(url).host, ...headers }) });
  const token = "s3cret-s3cret-s3cret";
  const port = 7777;

  test("without a token: any request addressed to a loopback name", () => {
    expect(checkAccess(req("http://127.0.0.1:7777/"), null, port)).toEqual({ ok: true, setCookie: false });
    expect(checkAccess(req("http://localhost:7777/"), null, port).ok).toBe(true);
    expect(checkAccess(req("http://[::1]:7777/"), null, port).ok).toBe(true);
  });
  test("without a token: a Host that is not loopback (a rebound name) is refused with 421", () => {
    const r = checkAccess({ url: new URL("http://127.0.0.1:7777/"), headers: new Headers({ host: "evil.example:7777" }) }, null, port);
    expect(r).toMatchObject({ ok: false, status: 421 });
  });
  test("with a token: header, this port's cookie or query (the query sets the cookie); nothing else", () => {
    const cookie = tokenCookie(token, port);
    expect(checkAccess(req("http://h/", { authorization: `Bearer ${token}` }), token, port)).toEqual({ ok: true, setCookie: false });
    expect(checkAccess(req("http://h/", { cookie: `a=b; ${cookie.name}=${cookie.value}` }), token, port)).toEqual({ ok: true, setCookie: false });
    expect(checkAccess(req(`http://h/x?token=${token}`), token, port)).toEqual({ ok: true, setCookie: true });
    const other = tokenCookie(token, 8888);
    for (const bad of [
      req("http://h/"),
      req("http://h/", { authorization: `Bearer ${token}x` }),
      req("http://h/", { authorization: token }),
      req("http://h/?token=nope"),
      req("http://h/", { cookie: `${cookie.name}=nope` }),
      // The token itself is not the cookie, nor is another port's cookie.
      req("http://h/", { cookie: `${cookie.name}=${token}` }),
      req("http://h/", { cookie: `${other.name}=${other.value}; ${cookie.name}=${other.value}` }),
    ])
      expect(checkAccess(bad, token, port)).toMatchObject({ ok: false, status: 401 });
  });
  test("the cookie is named for its port, and its value reveals nothing of the token", () => {
    const a = tokenCookie(token, 7777);
    const b = tokenCookie(token, 8888);
    expect([a.name, b.name]).toEqual(["loop_serve_token_7777", "loop_serve_token_8888"]);
    expect(a.value).toMatch(/^[0-9a-f]{64}$/);
    expect(a.value).not.toBe(b.value);
    expect(a.value).not.toContain(token);
    expect(tokenCookie(token, 7777)).toEqual(a);
  });
  test("cookieValue", () => {
    expect(cookieValue("a=1; b = 2 ;c=3", "b")).toBe("2");
    expect(cookieValue("ab=1", "a")).toBeNull();
    expect(cookieValue(null, "a")).toBeNull();
  });
});

describe("the Host header's form", () => {
  for (const good of ["127.0.0.1", "127.0.0.1:7777", "localhost:80", "[::1]:7777", "[::ffff:127.0.0.1]", "evil.example", "a-b.c_d:65535"])
    test(`${JSON.stringify(good)} is well formed`, () => expect(hostProblem(good)).toBeNull());
  test("no Host header (HTTP/1.0) is left to the access check", () => expect(hostProblem(null)).toBeNull());
  for (const bad of ["127.0.0.1 evil", "::ffff:127.0.0.1", "::1", "127.0.0.1:80@x", "127.0.0.1:99999", "a/b", "x\ty", "", "[::1", "127.0.0.1:", "h:80:80"])
    test(`${JSON.stringify(bad)} is refused, named`, () =>
      expect(hostProblem(bad)).toBe(`the Host header ${JSON.stringify(bad)} is not a host name or address with an optional port`));
});
