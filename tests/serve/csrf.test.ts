// The origin and CSRF checks of the page's actions (lib/serve/csrf.ts, docs/cli/loop-serve.md#actions), as a table.
import { describe, expect, test } from "bun:test";
import { actorOf, csrfFor, csrfProblem, originProblem } from "../../lib/serve/csrf.ts";
import { tokenCookie } from "../../lib/serve/access.ts";

const secret = "s".repeat(64);
const token = "t-0123456789abcdef";
const cookie = tokenCookie(token, 7777);
const h = (o: Record<string, string>) => new Headers({ host: "127.0.0.1:7777", ...o });

describe("where a write comes from", () => {
  test.each([
    [{ origin: "http://127.0.0.1:7777" }, null],
    [{ origin: "HTTP://127.0.0.1:7777" }, null],
    [{ "sec-fetch-site": "same-origin" }, null],
    [{}, null],
    [{ origin: "http://evil.example" }, "actions are taken from this server's own pages only"],
    [{ origin: "http://127.0.0.1:7778" }, "actions are taken from this server's own pages only"],
    [{ origin: "null" }, "actions are taken from this server's own pages only"],
    [{ origin: "http://127.0.0.1:7777", "sec-fetch-site": "same-site" }, "Sec-Fetch-Site: same-site"],
    [{ "sec-fetch-site": "cross-site" }, "Sec-Fetch-Site: cross-site"],
  ] as [Record<string, string>, string | null][])("%j → %p", (headers, want) => {
    const got = originProblem(h(headers));
    if (want === null) expect(got).toBeNull();
    else expect(got).toContain(want);
  });
});

describe("the proof a write carries", () => {
  const loopback = csrfFor(h({}), null, 7777, secret)!;
  const session = csrfFor(h({ cookie: `${cookie.name}=${cookie.value}` }), token, 7777, secret)!;
  test("loopback: the page's token, derived from the server's secret", () => {
    expect(csrfProblem(h({ origin: "http://127.0.0.1:7777" }), { token: null, port: 7777, secret, sent: loopback })).toBeNull();
    expect(csrfProblem(h({ origin: "http://127.0.0.1:7777" }), { token: null, port: 7777, secret: "x".repeat(64), sent: loopback })).toContain("CSRF token");
    expect(csrfProblem(h({ origin: "http://127.0.0.1:7777" }), { token: null, port: 7777, secret, sent: undefined })).toContain("CSRF token");
    // Not a browser (no Origin, no Sec-Fetch-Site) and no Bearer: no page's request.
    expect(csrfProblem(h({}), { token: null, port: 7777, secret, sent: loopback })).toContain("Origin header of a browser");
  });
  test("a token: the session's CSRF token goes with its cookie; Bearer needs none", () => {
    const withCookie = h({ origin: "http://127.0.0.1:7777", cookie: `${cookie.name}=${cookie.value}` });
    expect(session).not.toBe(loopback);
    expect(csrfProblem(withCookie, { token, port: 7777, secret, sent: session })).toBeNull();
    expect(csrfProblem(withCookie, { token, port: 7777, secret, sent: loopback })).toContain("CSRF token");
    expect(csrfProblem(h({ origin: "http://127.0.0.1:7777" }), { token, port: 7777, secret, sent: session })).toContain("CSRF token");
    expect(csrfProblem(h({ authorization: `Bearer ${token}` }), { token, port: 7777, secret, sent: undefined })).toBeNull();
    // A Bearer header that is not the token proves nothing (the cookie let the request in): the CSRF token is still needed.
    expect(
      csrfProblem(h({ origin: "http://127.0.0.1:7777", cookie: `${cookie.name}=${cookie.value}`, authorization: "Bearer wrong-token-0123456789" }), {
        token,
        port: 7777,
        secret,
        sent: undefined,
      }),
    ).toContain("CSRF token");
  });
  test("the actor names the token by an id, never the token", () => {
    expect(actorOf(h({}), null)).toBe("page:loopback");
    const page = actorOf(h({ cookie: "x=y" }), token);
    expect(page).toMatch(/^page:token-[0-9a-f]{8}$/);
    expect(actorOf(h({ authorization: `bearer ${token}` }), token)).toBe(page.replace("page:", "api:"));
    expect(page).not.toContain(token);
    expect(actorOf(h({ authorization: "Bearer not-the-token-0123" }), token)).toBe(page);
  });
});
