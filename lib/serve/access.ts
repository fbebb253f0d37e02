// Who may talk to the server: where it listens (`--listen host:port`), whether that is loopback,
// the token a non-loopback address requires, and the checks every request passes (the token; the
// Host header while serving loopback without a token, so a web page elsewhere that rebinds its own
// name to 127.0.0.1 cannot read the loop), the Host header's form, and the cookie a token becomes in
// a browser. Pure, apart from hashing.
import { createHmac, timingSafeEqual } from "node:crypto";
import { UsageError } from "../shared/errors.ts";

export const DEFAULT_LISTEN = "127.0.0.1:7777";
/** The environment variable a token may come from instead of `--token` (which other users can see in `ps`). */
export const TOKEN_ENV = "LOOP_SERVE_TOKEN";
const MIN_TOKEN_LENGTH = 16;
/** The cookie's name is this and the port (`loop_serve_token_7777`): cookies are not kept apart by port, names are. */
const TOKEN_COOKIE = "loop_serve_token";

export interface Listen {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port` or `:port` (loopback); port 0 picks a free one. */
export function parseListen(text: string): Listen {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]*)):(\d{1,5})$/.exec(text);
  if (!m) throw new UsageError(`--listen ${JSON.stringify(text)}: expected host:port (for example 127.0.0.1:7777, [::1]:7777 or 0.0.0.0:0)`);
  const port = Number(m[3]);
  if (port > 65535) throw new UsageError(`--listen ${JSON.stringify(text)}: port ${port} is out of range (0 to 65535)`);
  const host = m[1] ?? (m[2] || "127.0.0.1");
  if (!/^[A-Za-z0-9.:_-]+$/.test(host)) throw new UsageError(`--listen ${JSON.stringify(text)}: ${JSON.stringify(host)} is not a host name or address`);
  return { host, port };
}

/** A host that only this machine can reach: localhost, 127.0.0.0/8, ::1. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === "::ffff:127.0.0.1";
}

/**
 * The token in force: `--token`, else $LOOP_SERVE_TOKEN, else none. Refuses a short one, and
 * refuses to listen beyond loopback without one (every request there must carry it).
 */
export function tokenFor(listen: Listen, flag: string | undefined, env: Record<string, string | undefined>): string | null {
  const token = flag ?? (env[TOKEN_ENV] || undefined) ?? null;
  const from = flag !== undefined ? "--token" : `$${TOKEN_ENV}`;
  if (token !== null && token.length < MIN_TOKEN_LENGTH)
    throw new UsageError(`${from} is ${token.length} characters long; a token needs at least ${MIN_TOKEN_LENGTH} (for example \`openssl rand -hex 32\`)`);
  if (token !== null && /[\s;,"\\]/.test(token))
    throw new UsageError(`${from} holds a space, comma, semicolon, quote or backslash: it must fit in a cookie and a header unchanged`);
  if (token === null && !isLoopback(listen.host))
    throw new UsageError(
      `refusing to listen on ${listen.host}, which is not loopback, without a token: anyone who can reach it could read every prompt, log and agent output of the loop. Give --token (or set $${TOKEN_ENV}), or listen on 127.0.0.1`,
    );
  return token;
}

/** The URL people open: an unspecified address (0.0.0.0, ::) is shown as loopback, a v6 address in brackets. */
export function baseUrl(host: string, port: number): string {
  const shown = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${port}/`;
}

function sameSecret(a: string, b: string): boolean {
  const ha = new Bun.CryptoHasher("sha256").update(a).digest();
  const hb = new Bun.CryptoHasher("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** A Host header as HTTP allows it: a name or IPv4 address, or a bracketed IPv6 address, then an optional port. */
const HOST_HEADER = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::(\d{1,5}))?$/;

/**
 * What is wrong with a request's Host header, or null when it is well formed or absent (HTTP/1.0):
 * `127.0.0.1 evil`, an IPv6 address without brackets, `127.0.0.1:80@x` or port 99999 are refused
 * before anything else looks at the request.
 */
export function hostProblem(host: string | null): string | null {
  if (host === null) return null;
  const m = HOST_HEADER.exec(host);
  if (m && (m[1] === undefined || Number(m[1]) <= 65535)) return null;
  return `the Host header ${JSON.stringify(host)} is not a host name or address with an optional port`;
}

/**
 * The cookie a browser keeps for the server on `port`: its name carries the port, its value is not
 * the token but a value derived from it for this port. A browser sends a host's cookies to every
 * port of it, so another server on this machine the browser visits sees the cookie: what it learns
 * opens this server only, never the token (which may open others).
 */
export function tokenCookie(token: string, port: number): { name: string; value: string } {
  return { name: `${TOKEN_COOKIE}_${port}`, value: createHmac("sha256", token).update(`loop serve cookie for port ${port}`).digest("hex") };
}

export type Access = { ok: true; setCookie: boolean } | { ok: false; status: 401 | 421; message: string };

/**
 * Whether a request may be answered. With a token: it must come as `Authorization: Bearer <token>`,
 * the cookie the server sets (tokenCookie), or `?token=` (which then sets the cookie: a browser's
 * EventSource cannot send a header). Without one (loopback only): the Host header must name a
 * loopback host. The Host header's form is checked before (hostProblem).
 */
export function checkAccess(req: { headers: Headers; url: URL }, token: string | null, port: number): Access {
  if (token === null) {
    const host = req.headers.get("host") ?? "";
    const name = host.replace(/:\d+$/, "");
    if (!isLoopback(name))
      return {
        ok: false,
        status: 421,
        message: `the Host header ${JSON.stringify(host)} is not a loopback name: this server answers only requests addressed to this machine`,
      };
    return { ok: true, setCookie: false };
  }
  // The scheme's name is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are `Bearer`.
  const auth = /^bearer +(\S+) *$/i.exec(req.headers.get("authorization") ?? "");
  if (auth && sameSecret(auth[1]!, token)) return { ok: true, setCookie: false };
  const expected = tokenCookie(token, port);
  const cookie = cookieValue(req.headers.get("cookie"), expected.name);
  if (cookie !== null && sameSecret(cookie, expected.value)) return { ok: true, setCookie: false };
  const query = req.url.searchParams.get("token");
  if (query !== null && sameSecret(query, token)) return { ok: true, setCookie: true };
  return { ok: false, status: 401, message: "a token is required: send `Authorization: Bearer <token>`, or open the page once with ?token=<token>" };
}

export function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
