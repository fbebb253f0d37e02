// The HTTP both forge clients speak, composed by github.ts and gitlab.ts (loaded only with them,
// through open.ts): one request within a deadline (no answer by then is a `network` result, never a
// hang), a conditional request's 304 answered from the cache, redirects followed only on the API's
// own host (said once; another host never sees the token), listings read page by page up to
// MAX_PAGES, and no message that holds the token. What differs between forges comes in as a
// `Dialect`: the auth and accept headers, how a rate limit, a refusal and the next page are read.
import { type ConditionalCache, DEFAULT_FORGE_TIMEOUT_MS, type FetchLike, type ForgeFailure, type ProviderOptions } from "./provider.ts";
import { sanitizeLine, tailOf } from "./untrusted.ts";
import { MAX_ANSWER_BYTES, MAX_ANSWER_VALUES, MAX_PAGES, MAX_STEP_ANSWER_BYTES } from "./bounds.ts";

/** Redirects followed for one request at most. */
const MAX_REDIRECTS = 3;
const REDIRECTS = [301, 302, 307, 308];

// biome-ignore lint/suspicious/noExplicitAny: a forge's answer is read field by field, each checked where it is used
export type Json = any;

export interface Answer {
  status: number;
  headers: Headers;
  /** What the dialect keeps to find the next page (`Dialect.link`), from the cache on a 304. */
  link: string | null;
  body: Json;
  notModified: boolean;
  /** The URL that answered (after same-host redirects). */
  url: string;
}

interface RequestOptions {
  body?: unknown;
  /** Send If-None-Match from the cache and answer a 304 from it. */
  conditional?: boolean;
  /** Follow same-host redirects (the default); false: the redirect is the answer. */
  follow?: boolean;
  /**
   * A successful answer's body is text, not JSON (a job's log), and only its last this many bytes
   * are kept, as it arrives: however long the log, loop holds no more than that.
   */
  textTail?: number;
}

/**
 * Read a body as it arrives: whole up to `max` bytes (`over`: it was larger, and the rest was not
 * read), or, with `tail`, only its last `tail` bytes (read to its end, holding no more than those).
 */
async function readBody(res: Response, o: { max: number; tail?: number }): Promise<{ text: string } | { over: true }> {
  if (!res.body) return { text: "" };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let held = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    held += value.byteLength;
    if (o.tail !== undefined) {
      // Drop whole chunks that lie before the last `tail` bytes.
      while (chunks.length > 1 && held - chunks[0]!.byteLength >= o.tail) held -= chunks.shift()!.byteLength;
    } else if (held > o.max) {
      await reader.cancel().catch(() => {});
      return { over: true };
    }
  }
  const bytes = Buffer.concat(chunks);
  return { text: o.tail !== undefined ? tailOf(bytes, o.tail) : bytes.toString("utf8") };
}

/** What one forge says differently. */
export interface Dialect {
  /** Its accept and version headers, and the token's. */
  headers: Record<string, string>;
  /** A rate limit as a result; null for any other answer. */
  rateLimit(res: Response, body: Json, now: () => number): ForgeFailure | null;
  /** What an answer (and the cache with it) keeps to find the next page. */
  link(headers: Headers, url: string): string | null;
  /** Why an answer the caller did not expect was refused, in words. */
  explain(a: Answer): string;
  /** A redirect followed on the API's host: what the operator is told, once per key. */
  redirected(r: { method: string; status: number; from: string; to: string }): { key: string; notice: string };
}

export class ForgeHttp {
  /** The API URL, without a trailing slash. */
  readonly base: string;
  readonly #dialect: Dialect;
  readonly #token: string | null;
  readonly #fetch: FetchLike;
  readonly #cache: ConditionalCache | undefined;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #notice: (message: string) => void;
  readonly #noticed = new Set<string>();
  /** Bytes of answers read so far (MAX_STEP_ANSWER_BYTES): a ForgeHttp lives for one step. */
  #readBytes = 0;

  /** `settings`: a forge's, or a tracker's (lib/forge/linear.ts): only its apiUrl is read. */
  constructor(o: Omit<ProviderOptions, "settings"> & { settings: ProviderOptions["settings"] | { apiUrl: string } }, dialect: Dialect) {
    this.base = o.settings.apiUrl.replace(/\/+$/, "");
    this.#dialect = dialect;
    this.#token = o.token;
    this.#fetch = o.fetch ?? ((input, init) => fetch(input, init));
    this.#cache = o.cache;
    this.#now = o.now ?? Date.now;
    this.#timeoutMs = o.timeoutMs ?? DEFAULT_FORGE_TIMEOUT_MS;
    this.#notice = o.notice ?? (() => {});
  }

  /** Whether a URL is on the API's own host, the only one the token is sent to. */
  onHost(u: URL): boolean {
    return u.origin === new URL(this.base).origin;
  }

  /** One request, within the deadline. `path` is under the API URL, or a whole URL on its host. */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<ForgeFailure | Answer> {
    let url = this.#absolute(path);
    const what = `${method} ${this.#shown(url)}`;
    const headers: Record<string, string> = { ...this.#dialect.headers, "user-agent": "loop" };
    // An entry without its link (kept before loop read pages by it) is not used: a 304 would hide the next page.
    const found = o.conditional ? this.#cache?.get(url) : undefined;
    const cached = found && found.link !== undefined ? found : undefined;
    if (cached) headers["if-none-match"] = cached.etag;
    if (o.body !== undefined) headers["content-type"] = "application/json";
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let res: Response;
    let text: string;
    try {
      for (let hop = 0; ; hop++) {
        res = await this.#fetch(url, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body), redirect: "manual", signal });
        const location = res.headers.get("location");
        if (!REDIRECTS.includes(res.status) || !location || o.follow === false) break;
        await res.body?.cancel().catch(() => {});
        const next = new URL(location, url);
        if (!this.onHost(next)) return this.#failure(res.status, `${what}: redirected to another host (${sanitizeLine(next.origin, 100)}); not followed`);
        if (hop >= MAX_REDIRECTS) return this.#failure(res.status, `${what}: more than ${MAX_REDIRECTS} redirects`);
        const said = this.#dialect.redirected({ method, status: res.status, from: this.#shown(url).split("?")[0]!, to: this.#shown(next.href).split("?")[0]! });
        if (!this.#noticed.has(said.key)) {
          this.#noticed.add(said.key);
          this.#notice(said.notice);
        }
        url = next.href;
        delete headers["if-none-match"];
      }
      const left = MAX_STEP_ANSWER_BYTES - this.#readBytes;
      const max = Math.min(MAX_ANSWER_BYTES, left);
      const read = await readBody(res, { max, ...(o.textTail !== undefined && res.ok ? { tail: o.textTail } : {}) });
      if ("over" in read) {
        this.#readBytes = max < MAX_ANSWER_BYTES ? MAX_STEP_ANSWER_BYTES : this.#readBytes;
        const why =
          max < MAX_ANSWER_BYTES
            ? `this step has read ${MAX_STEP_ANSWER_BYTES / 1024 / 1024} MiB from the forge, its most; asked again next step`
            : `answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; not read`;
        return { ok: false, kind: "network", message: this.#scrub(`${what}: ${why}`) };
      }
      text = read.text;
      this.#readBytes += text.length;
    } catch (err) {
      const e = err as Error;
      const late = signal.aborted || e?.name === "TimeoutError" || e?.name === "AbortError";
      return {
        ok: false,
        kind: "network",
        message: this.#scrub(`${what}: ${late ? `no answer within ${Math.round(this.#timeoutMs / 100) / 10}s` : e?.message}`),
      };
    }
    if (res.status === 304 && cached) return { status: 304, headers: res.headers, link: cached.link ?? null, body: cached.body, notModified: true, url };
    // Never believed about its own success: a 304 to a question loop did not make conditional, or a
    // success without the document it promises, is a failed request, not a null to read fields of.
    if (res.status === 304) return { ok: false, kind: "network", message: this.#scrub(`${what}: answered 304 Not Modified, but no answer was kept to reuse`) };
    let body: Json = null;
    if (o.textTail !== undefined && res.ok) body = text;
    else if (text) {
      if (jsonValuesOver(text, MAX_ANSWER_VALUES))
        return {
          ok: false,
          kind: "network",
          message: this.#scrub(`${what}: answered more than ${MAX_ANSWER_VALUES.toLocaleString("en-US")} JSON values; not parsed`),
        };
      try {
        body = JSON.parse(text);
      } catch {
        if (res.ok) return { ok: false, kind: "network", message: this.#scrub(`${what}: answer is not JSON`) };
      }
    }
    if (res.ok && res.status !== 204 && o.textTail === undefined && (body === null || typeof body !== "object"))
      return { ok: false, kind: "network", message: this.#scrub(`${what}: answered ${res.status} without a JSON object or list`) };
    const limited = this.#dialect.rateLimit(res, body, this.#now);
    if (limited) return limited;
    const etag = res.headers.get("etag");
    const link = this.#dialect.link(res.headers, url);
    if (o.conditional && res.ok && etag) this.#cache?.set(url, { etag, body, link });
    return { status: res.status, headers: res.headers, link, body, notModified: false, url };
  }

  /**
   * Every page of a listing, `next` naming each page's successor (null: the last), up to MAX_PAGES;
   * `cut`: a next page remained unread, because MAX_PAGES were read or because it is on another host
   * (the token is never sent there): what was not read is never taken for the end of the listing.
   */
  async pages(
    path: string,
    o: { conditional?: boolean; next: (a: Answer) => string | null },
  ): Promise<ForgeFailure | { answers: Answer[]; cut: boolean; notModified: boolean }> {
    const answers: Answer[] = [];
    let url: string | null = path;
    let notModified = true;
    for (let page = 0; url !== null; page++) {
      if (page === MAX_PAGES || !this.onHost(new URL(this.#absolute(url)))) return { answers, cut: true, notModified };
      const a = await this.request("GET", url, { conditional: o.conditional });
      if ("ok" in a) return a;
      if (a.status !== 200 && a.status !== 304) return this.fail("GET", url, a);
      notModified &&= a.notModified;
      answers.push(a);
      url = o.next(a);
    }
    return { answers, cut: false, notModified };
  }

  /** An answer the caller did not expect, as a failure the dialect explains. */
  fail(method: string, path: string, a: Answer): ForgeFailure {
    return this.#failure(a.status, `${method} ${this.#shown(this.#absolute(path))}: ${this.#dialect.explain(a)}`);
  }

  #failure(status: number, message: string): ForgeFailure {
    return { ok: false, kind: "http", status, message: this.#scrub(message) };
  }

  #absolute(path: string): string {
    return path.startsWith("/") ? `${this.base}${path}` : path;
  }

  /** A URL as it is shown in messages: the path under the API URL when it is there. */
  #shown(url: string): string {
    return url.startsWith(this.base) ? url.slice(this.base.length) || "/" : sanitizeLine(url, 300);
  }

  /**
   * Defence in depth: no message leaves here holding the token, as it is or in the base64 forms it
   * travels in (git's Basic authorization, `x-access-token:<token>` on GitHub, `oauth2:<token>` on GitLab).
   */
  #scrub(s: string): string {
    return scrubToken(s, this.#token);
  }
}

/** Whether a JSON text holds more than `max` values (containers and their elements), counted outside strings, before anything is parsed. */
function jsonValuesOver(text: string, max: number): boolean {
  let n = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91 || c === 44) {
      // `{`, `[` and `,`: each opens a container or adds an element.
      if (++n > max) return true;
    }
  }
  return false;
}

/** `s` with `token` and its base64 forms replaced by "[token]". */
export function scrubToken(s: string, token: string | null | undefined): string {
  if (!token) return s;
  const b64 = (t: string) => Buffer.from(t).toString("base64");
  const forms = [token, b64(token), b64(`x-access-token:${token}`), b64(`oauth2:${token}`)].map((f) => f.replace(/=+$/, "")).filter((f) => f.length >= 8);
  let out = s;
  for (const f of forms) out = out.split(f).join("[token]");
  return out;
}

/** A Link header's target for `rel` (RFC 8288): the first whole URL so named; null when there is none. */
export function linkTarget(link: string | null, rel: string): URL | null {
  if (!link) return null;
  for (const part of link.split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="([^"]+)"/.exec(part.trim());
    if (m && m[2]!.split(/\s+/).includes(rel) && URL.canParse(m[1]!)) return new URL(m[1]!);
  }
  return null;
}
