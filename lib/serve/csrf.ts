// The defence of the page's actions against a page of another origin (docs/cli/loop-serve.md#actions):
// a browser sends the credential of this server (its cookie; or nothing, on loopback without a token)
// with a form or fetch from any site, so a write the browser's credential carries must also come from
// this origin (`Origin`, else `Sec-Fetch-Site`) and carry the page's CSRF token, which only a page of
// this origin can read. A script's `Authorization: Bearer` is no ambient credential (another origin
// cannot send it without a CORS preflight this server never grants): the token is its proof. Pure,
// apart from hashing.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { cookieValue, tokenCookie } from "./access.ts";

/** The secret this server run derives its CSRF tokens from: new at each start, so a token dies with the server. */
export function newCsrfSecret(): string {
  return randomBytes(32).toString("hex");
}

/**
 * The session a browser holds with this server: its cookie's value with a token, else "loopback".
 * The CSRF token is derived from it (an HMAC, like the cookie from the token), so it is per session
 * and per server run, and the server keeps no table of them.
 */
function sessionOf(headers: Headers, token: string | null, port: number): string | null {
  if (token === null) return "loopback";
  return cookieValue(headers.get("cookie"), tokenCookie(token, port).name);
}

function csrfToken(secret: string, session: string): string {
  return createHmac("sha256", secret).update(`loop serve actions for ${session}`).digest("hex");
}

/** The CSRF token a page served for this request carries (null: a script's request, by Bearer, which needs none). */
export function csrfFor(headers: Headers, token: string | null, port: number, secret: string): string | null {
  const s = sessionOf(headers, token, port);
  return s === null ? null : csrfToken(secret, s);
}

/** Who acted, for the events (docs/cli/loop-serve.md#actions): `page:` and the token's id, never the token. */
export function actorOf(headers: Headers, token: string | null): string {
  if (token === null) return "page:loopback";
  const id = new Bun.CryptoHasher("sha256").update(token).digest("hex").slice(0, 8);
  return bearerOf(headers, token) ? `api:token-${id}` : `page:token-${id}`;
}

/** Whether the request carries the token itself, as `Authorization: Bearer` (a script's proof; the scheme in any case). */
function bearerOf(headers: Headers, token: string | null): boolean {
  const m = /^bearer +(\S+) *$/i.exec(headers.get("authorization") ?? "");
  return token !== null && m !== null && same(m[1]!, token);
}

/** Why a write is refused (403) for where it comes from, or null: a browser says its page's origin, and it must be this server's. */
export function originProblem(headers: Headers): string | null {
  const host = headers.get("host");
  const origin = headers.get("origin");
  const site = headers.get("sec-fetch-site");
  if (origin !== null && (host === null || origin.toLowerCase() !== `http://${host.toLowerCase()}`))
    return `a write from ${JSON.stringify(origin)} is refused: actions are taken from this server's own pages only`;
  if (site !== null && site !== "same-origin")
    return `a write from another site (Sec-Fetch-Site: ${site}) is refused: actions are taken from this server's own pages only`;
  return null;
}

/**
 * Why a write is refused (403) for its proof, or null: a script's Bearer token is one; a browser's
 * credential (its cookie, or loopback) needs the page's CSRF token of its session. `sent`: the body's `csrf`.
 */
export function csrfProblem(headers: Headers, o: { token: string | null; port: number; secret: string; sent: unknown }): string | null {
  if (bearerOf(headers, o.token)) return null;
  if (headers.get("origin") === null && headers.get("sec-fetch-site") === null)
    return "a write needs the Origin header of a browser, or `Authorization: Bearer <token>` from a script";
  const want = csrfFor(headers, o.token, o.port, o.secret);
  if (want === null || typeof o.sent !== "string" || !same(o.sent, want))
    return "the page's CSRF token is missing or not this session's: reload the page and try again";
  return null;
}

function same(a: string, b: string): boolean {
  const ha = new Bun.CryptoHasher("sha256").update(a).digest();
  const hb = new Bun.CryptoHasher("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}
