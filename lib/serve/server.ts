// `loop serve`'s HTTP server (Bun's own): the pages, the JSON APIs, /metrics and the live updates,
// over one or more loops, reading each only through its read snapshot. GET and HEAD never write, and
// the sources hold no writer. The one write is POST /api/loops/<name>/actions, served only when
// `loop serve` hands in `act` (lib/serve/actions.ts, `loop ctl`'s own function; never under
// --read-only): the token, this origin and the page's CSRF token (csrf.ts) first, then a bounded JSON body.
//
// Every response carries a strict Content-Security-Policy (scripts and styles from this origin only,
// nothing inline, no frames, no form that submits itself: the actions' forms are posted by the
// page's script), and the access rules of access.ts. The poll loop looks at
// each store a few times a second (a stat), folds new events, tells the connected pages, and feeds
// item pages the output of the attempt in flight.
import { LoopError, StoreError } from "../shared/errors.ts";
import { actorOf, csrfFor, csrfProblem, newCsrfSecret, originProblem } from "./csrf.ts";
import { type Act, actionRequest, actionStatus } from "./action-request.ts";
import { itemActionForms, loopActionForms } from "./action-forms.ts";
import { CSS, JS, WORKER_JS } from "./assets.ts";
import { type Access, baseUrl, checkAccess, hostProblem, type Listen, tokenCookie } from "./access.ts";
import { readSlice } from "./files.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { join } from "node:path";
import { sessionDir } from "../shared/paths.ts";
import type { AttemptHistory, ItemHistory } from "../reports/history.ts";
import { metricsText } from "./metrics.ts";
import {
  ASSET_CSS,
  ASSET_JS,
  ASSET_WORKER,
  type AttemptFiles,
  attemptKey,
  errorMain,
  indexMain,
  itemHref,
  itemMain,
  liveTail,
  loopHref,
  loopMain,
  shell,
} from "./page.ts";
import { html, seg, trusted } from "./html.ts";
import type { LoopSource } from "./source.ts";
import { SseHub, type TailTarget } from "./sse.ts";

/** The caps (docs/cli/loop-serve.md#limits). */
const LIMITS = {
  /** Pages connected for live updates at once; one more is refused (503). */
  sseClients: 100,
  /** Events per page of /api/loops/<name>/events (default 100). */
  eventsPage: 1000,
  eventsDefault: 100,
  /** Bytes of an attempt's output, verify output and handoff shown on its item page. */
  outputTail: 32 * 1024,
  verifyTail: 16 * 1024,
  handoff: 64 * 1024,
  /** Characters the live tail keeps in the page. */
  liveTail: 64 * 1024,
  /** Bytes of an action's JSON body (a reply's text is most of it). */
  actionBody: 16 * 1024,
} as const;

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};

export interface ServeOptions {
  /** The loops, each already opened (LoopSource.open), by their names in URLs. */
  sources: LoopSource[];
  listen: Listen;
  token: string | null;
  /** How often the stores are looked at (default 250 ms). */
  pollMs?: number;
  maxClients?: number;
  /** Carries out the page's actions; absent: a read-only server (--read-only) serves none and shows none. */
  act?: Act;
  now?: () => number;
  /** Where the server says what went wrong while serving (a store that became unreadable, an internal error): stderr for the command. */
  log?: (message: string) => void;
}

export interface Served {
  url: string;
  host: string;
  port: number;
  hub: SseHub;
  /** One turn of the poll loop (tests and benches call it to not wait for the timer). */
  poll(): void;
  stop(): Promise<void>;
}

type Route = (req: Request, url: URL, parts: string[]) => Response | Promise<Response>;

function respond(body: ConstructorParameters<typeof Response>[0], status: number, type: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { ...SECURITY_HEADERS, "Content-Type": type, ...extra } });
}
const htmlResponse = (text: string, status = 200, extra: Record<string, string> = {}) => respond(text, status, "text/html; charset=utf-8", extra);
const jsonResponse = (doc: unknown, status = 200) => respond(JSON.stringify(doc) + "\n", status, "application/json; charset=utf-8");
const jsonError = (status: number, code: string, message: string) => jsonResponse({ error: { code, message } }, status);
/** A refusal: its connection is closed after it, so a client retrying in a loop holds no socket open (keep-alive). */
const refuse = (status: number, code: string, message: string, extra: Record<string, string> = {}) =>
  respond(JSON.stringify({ error: { code, message } }) + "\n", status, "application/json; charset=utf-8", { Connection: "close", ...extra });

function storeProblem(err: unknown): { code: string; message: string } {
  if (err instanceof StoreError) return { code: err.code, message: err.message };
  const e = err as { code?: unknown; message?: unknown };
  return { code: typeof e?.code === "string" && /^E[A-Z]+$/.test(e.code) ? "io_error" : "internal", message: String(e?.message ?? err) };
}

/**
 * A file of an attempt's session folder, built from the served state root like every path under it
 * (lib/shared/paths.ts), never taken from the log: the log says whether there is one, not where.
 */
function attemptFile(stateRoot: string, item: string, a: AttemptHistory, name: string): string {
  return join(sessionDir(stateRoot, item, a.epoch, a.n), name);
}

/** The attempt of an item whose agent is at work (reserved or running, not yet ended), or null. */
function runningAttempt(h: ItemHistory | undefined): AttemptHistory | null {
  const a = h?.attempts.at(-1);
  return a && a.epoch === h!.epoch && a.end === null && a.outcome === null && a.abandonedAt === null && a.closed === null ? a : null;
}

export function startServer(o: ServeOptions): Served {
  const now = o.now ?? Date.now;
  const byName = new Map(o.sources.map((s) => [s.name, s]));
  const hub = new SseHub(o.maxClients ?? LIMITS.sseClients);
  const csrfSecret = newCsrfSecret();
  const footerWord = o.act ? "actions on" : "read-only";

  const page = (title: string, crumbs: [string, string | null][], main: ReturnType<typeof html>, status = 200) =>
    htmlResponse(shell({ title, crumbs, live: null, main, footer: html`loop serve · ${footerWord}` }), status);
  const notFound = (req: Request, what: string) =>
    wantsJson(req) ? jsonError(404, "not_found", what) : page("Not found", [["loops", "/"]], errorMain("Not found", what), 404);

  function loopOf(req: Request, name: string | undefined): LoopSource | Response {
    const src = name === undefined ? undefined : byName.get(name);
    return src ?? notFound(req, `no loop named ${JSON.stringify(name ?? "")} is served here (GET /api/loops lists them)`);
  }

  /**
   * A loop's `main`, drawn once per state of the log: when an event arrives, every connected page
   * asks for it at once. Until the loop drains, what is still going grows with the clock, so the
   * drawing is also kept at most 5 s.
   */
  const drawn = new Map<string, { key: string; text: string }>();
  function cachedLoopMain(src: LoopSource, status: ReturnType<LoopSource["status"]>): { text: string; hit: boolean } {
    const t = now();
    const key = [
      src.history.seq,
      status.loop.logSeq,
      status.loop.seq,
      status.loop.state === "drained" ? "" : Math.floor(t / 5000),
      status.findings.map((f) => f.message).join("\u0000"),
    ].join("|");
    const old = drawn.get(src.name);
    if (old?.key === key) return { text: old.text, hit: true };
    const text = loopMain(src.name, status, src.history, t).text;
    drawn.set(src.name, { key, text });
    return { text, hit: false };
  }

  /** POST /api/loops/<name>/actions: the access rules passed; the origin and CSRF token, the body, then `loop ctl`'s function. */
  async function actionRoute(req: Request, name: string | undefined, server: Bun.Server<undefined>): Promise<Response> {
    const src = byName.get(name ?? "");
    if (!src) return jsonError(404, "not_found", `no loop named ${JSON.stringify(name ?? "")} is served here (GET /api/loops lists them)`);
    const fromElsewhere = originProblem(req.headers);
    if (fromElsewhere) return refuse(403, "forbidden", fromElsewhere);
    const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    // A form of another site can post text/plain without asking; JSON it cannot.
    if (type !== "application/json") return refuse(415, "unsupported_media_type", "an action's body is JSON: send Content-Type: application/json");
    const length = Number(req.headers.get("content-length") ?? "NaN");
    if (!Number.isSafeInteger(length) || length > LIMITS.actionBody)
      return refuse(413, "payload_too_large", `an action's body is at most ${LIMITS.actionBody} bytes, with its Content-Length`);
    const text = await req.text();
    if (text.length > LIMITS.actionBody) return refuse(413, "payload_too_large", `an action's body is at most ${LIMITS.actionBody} bytes`);
    const body = actionRequest(text);
    const csrfWrong = csrfProblem(req.headers, { token: o.token, port: server.port!, secret: csrfSecret, sent: body.csrf });
    if (csrfWrong) return refuse(403, "forbidden", csrfWrong);
    if ("problem" in body) return jsonError(400, "usage", body.problem);
    try {
      const doc = await o.act!({ root: src.root, stateRoot: src.stateRoot }, body.a, actorOf(req.headers, o.token));
      // The page updates through its live stream: look at the store now rather than at the next tick of the poll.
      queueMicrotask(poll);
      return jsonResponse(doc);
    } catch (err) {
      if (!(err instanceof LoopError)) throw err;
      return respond(
        JSON.stringify({ error: { code: err.code, message: err.message } }) + "\n",
        actionStatus(err),
        "application/json; charset=utf-8",
        err.code === "busy" ? { "Retry-After": "2" } : {},
      );
    }
  }

  const loopPage: Route = (req, url, [, name]) => {
    const src = loopOf(req, name);
    if (src instanceof Response) return src;
    let status;
    try {
      status = src.status();
    } catch (err) {
      const p = storeProblem(err);
      return page(
        src.name,
        [
          ["loops", "/"],
          [src.name, null],
        ],
        errorMain(`${src.name}: ${p.code}`, p.message),
        503,
      );
    }
    const main = cachedLoopMain(src, status);
    const seqHeader = { "X-Loop-Seq": String(status.loop.logSeq), "X-Loop-Render": main.hit ? "cached" : "rendered" };
    const acts = o.act ? loopActionForms(src.name, status).text : "";
    if (url.searchParams.get("fragment") === "1") return htmlResponse(acts + main.text, 200, seqHeader);
    return htmlResponse(
      shell({
        title: `${status.loop.name ?? src.name} · ${status.loop.state}`,
        crumbs: [
          ["loops", "/"],
          [src.name, null],
        ],
        live: { stream: `/loops/${seg(src.name)}/stream`, fragment: `${loopHref(src.name)}?fragment=1`, seq: status.loop.logSeq },
        // Our own drawing (loopMain escaped what it put in), kept as text between requests.
        main: trusted(acts + main.text),
        csrf: csrfOf(req, server),
        footer: html`loop serve · ${footerWord} · <a href="/api/loops/${seg(src.name)}/status">status JSON</a> · <a href="/api/loops/${seg(src.name)}/events?after=0">events</a> · <a href="/metrics">metrics</a>`,
      }),
      200,
      seqHeader,
    );
  };

  /** The page's CSRF token, when the server takes actions (csrf.ts). */
  const csrfOf = (req: Request, server: Bun.Server<undefined>) => (o.act ? csrfFor(req.headers, o.token, server.port!, csrfSecret) : null);

  const itemPage: Route = (req, url, [, name, , id]) => {
    const src = loopOf(req, name);
    if (src instanceof Response) return src;
    let status;
    try {
      status = src.status();
    } catch (err) {
      const p = storeProblem(err);
      return page(
        src.name,
        [
          ["loops", "/"],
          [src.name, loopHref(src.name)],
        ],
        errorMain(`${src.name}: ${p.code}`, p.message),
        503,
      );
    }
    const item = status.items.find((it) => it.id === id);
    if (!item || id === undefined) return notFound(req, `loop ${JSON.stringify(src.name)} has no item ${JSON.stringify(id ?? "")}`);
    const h = src.history.items.get(id);
    const files = new Map<string, AttemptFiles>();
    const root = src.stateRoot;
    for (const a of h?.attempts ?? [])
      files.set(attemptKey(a), {
        handoff: a.sessionDir ? readSlice(attemptFile(root, id, a, SESSION_FILES.handoff), { root, from: 0, max: LIMITS.handoff }) : null,
        output: a.log ? readSlice(attemptFile(root, id, a, SESSION_FILES.output), { root, max: LIMITS.outputTail }) : null,
        verify: a.verify?.log ? readSlice(attemptFile(root, id, a, SESSION_FILES.verify), { root, max: LIMITS.verifyTail }) : null,
      });
    const main = html`${o.act ? itemActionForms(src.name, item) : ""}${itemMain({ loop: src.name, item, history: h ?? null, files })}`;
    const seqHeader = { "X-Loop-Seq": String(status.loop.logSeq) };
    if (url.searchParams.get("fragment") === "1") return htmlResponse(main.text, 200, seqHeader);
    const running = runningAttempt(h);
    const tail = running
      ? {
          key: attemptKey(running),
          slice: running.log
            ? readSlice(attemptFile(root, id, running, SESSION_FILES.output), { root, max: LIMITS.outputTail })
            : ({ kind: "absent" } as const),
        }
      : null;
    return htmlResponse(
      shell({
        title: `${id} · ${item.status} · ${src.name}`,
        crumbs: [
          ["loops", "/"],
          [src.name, loopHref(src.name)],
          [id, null],
        ],
        live: { stream: `/loops/${seg(src.name)}/stream?item=${seg(id)}`, fragment: `${itemHref(src.name, id)}?fragment=1`, seq: status.loop.logSeq },
        main,
        csrf: csrfOf(req, server),
        after: liveTail(tail, LIMITS.liveTail),
        footer: html`loop serve · ${footerWord} · <a href="/api/loops/${seg(src.name)}/status">status JSON</a>`,
      }),
      200,
      seqHeader,
    );
  };

  const streamRoute =
    (server: Bun.Server<undefined>): Route =>
    (req, url, [, name]) => {
      const src = loopOf(req, name);
      if (src instanceof Response) return src;
      const item = url.searchParams.get("item");
      const attempt = url.searchParams.get("attempt");
      const offset = Number(url.searchParams.get("offset") ?? "0");
      const tail = item !== null && attempt ? { key: attempt, offset: Number.isSafeInteger(offset) && offset >= 0 ? offset : 0 } : null;
      // HEAD gets the headers only: a stream nobody will read must not take a client's place.
      if (req.method === "HEAD") return respond(null, 200, "text/event-stream; charset=utf-8");
      const stream = hub.open(src.name, item, tail);
      if (!stream) return refuse(503, "too_many_clients", `${hub.max} pages are connected for live updates already; try again later`);
      // The connection stays open: no idle timeout for it (heartbeats keep proxies from closing it).
      server.timeout(req, 0);
      queueMicrotask(() => hub.head(src.name, src.history.seq));
      return respond(stream, 200, "text/event-stream; charset=utf-8", { "X-Accel-Buffering": "no" });
    };

  const apiLoops: Route = () =>
    jsonResponse({
      schema: "loop/serve-loops@1",
      loops: o.sources.map((s) => {
        let st: ReturnType<LoopSource["status"]> | null = null;
        let error: { code: string; message: string } | null = null;
        try {
          st = s.status();
        } catch (err) {
          error = storeProblem(err);
        }
        return {
          name: s.name,
          root: s.root,
          stateRoot: s.stateRoot,
          page: loopHref(s.name),
          status: `/api/loops/${seg(s.name)}/status`,
          events: `/api/loops/${seg(s.name)}/events`,
          state: st?.loop.state ?? null,
          healthy: st?.healthy ?? null,
          logSeq: st?.loop.logSeq ?? null,
          counts: st?.loop.counts ?? null,
          error,
        };
      }),
    });

  const apiStatus: Route = (req, url, [, , name]) => {
    const src = loopOf(req, name);
    if (src instanceof Response) return src;
    try {
      return jsonResponse(src.status());
    } catch (err) {
      const p = storeProblem(err);
      return jsonError(503, p.code, p.message);
    }
  };

  const apiEvents: Route = (req, url, [, , name]) => {
    const src = loopOf(req, name);
    if (src instanceof Response) return src;
    const afterText = url.searchParams.get("after") ?? "0";
    const limitText = url.searchParams.get("limit") ?? String(LIMITS.eventsDefault);
    if (!/^\d{1,15}$/.test(afterText))
      return jsonError(400, "bad_request", `after=${JSON.stringify(afterText)}: expected a seq (a whole number, 0 for the start of the log)`);
    if (!/^\d{1,6}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > LIMITS.eventsPage)
      return jsonError(400, "bad_request", `limit=${JSON.stringify(limitText)}: expected 1 to ${LIMITS.eventsPage}`);
    const after = Number(afterText);
    const limit = Number(limitText);
    try {
      const p = src.events(after, limit);
      const last = p.events.at(-1)?.seq ?? after;
      return jsonResponse({ schema: "loop/events@1", loop: src.name, after, head: p.head, events: p.events, next: last < p.head ? last : null });
    } catch (err) {
      const p = storeProblem(err);
      return jsonError(503, p.code, p.message);
    }
  };

  const metrics: Route = () => {
    const loops = o.sources.map((s) => {
      let st = null;
      try {
        st = s.status();
      } catch {}
      return { name: s.name, status: st, history: s.history, lastWrite: s.lastWrite() };
    });
    return respond(metricsText(loops, { now: now(), sseClients: hub.size }), 200, "text/plain; version=0.0.4; charset=utf-8");
  };

  const index: Route = () =>
    page(
      "loop serve",
      [["loops", null]],
      indexMain(
        o.sources.map((s) => {
          try {
            return { name: s.name, root: s.root, status: s.status(), error: null };
          } catch (err) {
            return { name: s.name, root: s.root, status: null, error: storeProblem(err) };
          }
        }),
      ),
    );

  function route(req: Request, url: URL, server: Bun.Server<undefined>): Response | Promise<Response> {
    const parts = url.pathname
      .split("/")
      .slice(1)
      .map((p) => {
        try {
          return decodeURIComponent(p);
        } catch {
          return "\u0000"; // a malformed escape names nothing
        }
      });
    const n = parts.length;
    const [a, , c] = parts;
    if (url.pathname === "/") return index(req, url, parts);
    if (url.pathname === ASSET_CSS) return respond(CSS, 200, "text/css; charset=utf-8", { "Cache-Control": "max-age=300" });
    if (url.pathname === ASSET_JS) return respond(JS, 200, "text/javascript; charset=utf-8", { "Cache-Control": "max-age=300" });
    if (url.pathname === ASSET_WORKER) return respond(WORKER_JS, 200, "text/javascript; charset=utf-8", { "Cache-Control": "max-age=300" });
    if (url.pathname === "/metrics") return metrics(req, url, parts);
    // Browsers ask for it on every page: say there is none without an error in their console.
    if (url.pathname === "/favicon.ico") return respond(null, 204, "image/x-icon", { "Cache-Control": "max-age=86400" });
    if (a === "loops") {
      if (n === 2 || (n === 3 && parts[2] === "")) return loopPage(req, url, parts);
      if (n === 3 && c === "stream") return streamRoute(server)(req, url, parts);
      if (n === 4 && c === "items") return itemPage(req, url, parts);
    }
    if (a === "api" && parts[1] === "loops") {
      if (n === 2) return apiLoops(req, url, parts);
      if (n === 4 && parts[3] === "status") return apiStatus(req, url, parts);
      if (n === 4 && parts[3] === "events") return apiEvents(req, url, parts);
    }
    return notFound(req, `nothing at ${url.pathname}`);
  }

  const server = Bun.serve({
    hostname: o.listen.host,
    port: o.listen.port,
    // Never Bun's development error page (source lines, the working directory, an inline script): every answer is loop's own.
    development: false,
    // Requests carry no body but an action's: anything else sent is refused before it is read.
    maxRequestBodySize: LIMITS.actionBody,
    async fetch(req, server) {
      // The Host header first: a malformed one must not reach anything that parses the address.
      const hostWrong = hostProblem(req.headers.get("host"));
      if (hostWrong) return refuse(400, "bad_request", hostWrong);
      const url = requestUrl(req.url);
      if (!url) return refuse(400, "bad_request", "the request's target is not a path");
      if (o.act && req.method === "POST" && actionName(url) !== null) {
        const access = checkAccess({ headers: req.headers, url }, o.token, server.port!);
        if (!access.ok || access.setCookie) {
          const status = access.ok ? 401 : access.status;
          const message = access.ok ? "an action's token comes in a header or the page's cookie, not in its address" : access.message;
          return refuse(
            status,
            status === 401 ? "unauthorized" : "misdirected_request",
            message,
            status === 401 ? { "WWW-Authenticate": 'Bearer realm="loop serve"' } : {},
          );
        }
        return actionRoute(req, actionName(url)!, server).catch((err) => {
          const p = storeProblem(err);
          o.log?.(`internal error answering POST ${url.pathname}: ${p.message}`);
          return jsonError(500, "internal", p.message);
        });
      }
      if (req.method !== "GET" && req.method !== "HEAD")
        return refuse(405, "method_not_allowed", `${req.method} is not served: loop serve is read-only (GET and HEAD only)`, { Allow: "GET, HEAD" });
      // Refused, not ignored, as docs/cli/loop-serve.md says: a body on a read is a client that means something else.
      if (hasBody(req.headers)) return refuse(400, "bad_request", `a ${req.method} request carries no body: loop serve reads none`);
      const access: Access = checkAccess({ headers: req.headers, url }, o.token, server.port!);
      if (!access.ok)
        return refuse(
          access.status,
          access.status === 401 ? "unauthorized" : "misdirected_request",
          access.message,
          access.status === 401 ? { "WWW-Authenticate": 'Bearer realm="loop serve"' } : {},
        );
      if (access.setCookie) {
        // The token came in the address: keep it in a cookie, and show the address without it.
        url.searchParams.delete("token");
        const cookie = tokenCookie(o.token!, server.port!);
        return new Response(null, {
          status: 303,
          headers: { ...SECURITY_HEADERS, Location: sameOriginPath(url), "Set-Cookie": `${cookie.name}=${cookie.value}; HttpOnly; SameSite=Strict; Path=/` },
        });
      }
      let res: Response;
      const t0 = performance.now();
      try {
        res = await route(req, url, server);
      } catch (err) {
        const p = storeProblem(err);
        o.log?.(`internal error answering ${req.method} ${url.pathname}: ${p.message}`);
        res = jsonError(500, "internal", p.message);
      }
      // What the answer cost the server (bench/serve.ts reads it; so can a browser's developer tools).
      res.headers.set("Server-Timing", `app;dur=${(performance.now() - t0).toFixed(2)}`);
      if (req.method === "HEAD") return new Response(null, { status: res.status, headers: res.headers });
      return res;
    },
    // Whatever escaped the handler above: said once on stderr, answered as loop's own error, never with a stack.
    error(err) {
      const p = storeProblem(err);
      o.log?.(`internal error answering a request: ${p.message}`);
      return refuse(500, "internal", p.message);
    },
  });

  /** What each loop's store said last (an error code, or "" when readable): a change is said once. */
  const said = new Map<string, string>(o.sources.map((s) => [s.name, ""]));
  function poll(): void {
    for (const s of o.sources) {
      if (s.refresh()) hub.head(s.name, s.history.seq);
      const now = s.error ? `${s.error.code}: ${s.error.message}` : "";
      if (now !== said.get(s.name)) {
        o.log?.(now ? `loop ${s.name}: cannot read its store (${now}); its pages say so until it can` : `loop ${s.name}: its store can be read again`);
        said.set(s.name, now);
      }
    }
    for (const w of hub.itemsWatched()) {
      const src = byName.get(w.loop);
      if (!src) continue;
      const a = runningAttempt(src.history.items.get(w.item));
      const target: TailTarget | null = a
        ? { key: attemptKey(a), root: src.stateRoot, path: a.log ? attemptFile(src.stateRoot, w.item, a, SESSION_FILES.output) : null }
        : null;
      hub.tail(w.loop, w.item, target);
    }
  }
  const timer = setInterval(poll, o.pollMs ?? 250);

  const port = server.port!;
  return {
    url: baseUrl(o.listen.host, port),
    host: o.listen.host,
    port,
    hub,
    poll,
    async stop() {
      clearInterval(timer);
      hub.closeAll();
      await server.stop(true);
    },
  };
}

function wantsJson(req: Request): boolean {
  return (requestUrl(req.url)?.pathname ?? "").startsWith("/api/") || !(req.headers.get("accept") ?? "").includes("text/html");
}

/**
 * The request's address. Bun gives the whole URL when the Host header makes one, else only the
 * path (HTTP/1.0 has no Host): the path is then read against a placeholder origin nothing uses.
 */
function requestUrl(raw: string): URL | null {
  try {
    return raw.startsWith("/") ? new URL(raw, "http://loop-serve.invalid") : new URL(raw);
  } catch {
    return null;
  }
}

/** The loop's name of an actions address (`/api/loops/<name>/actions`), or null. */
function actionName(url: URL): string | null {
  const m = /^\/api\/loops\/([^/]+)\/actions$/.exec(url.pathname);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

/** Whether a request says it has a body: a length above 0, or a chunked (or any other) transfer coding. */
function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  return headers.has("transfer-encoding") || (length !== null && length.trim() !== "0");
}

/**
 * The redirect's target, always on this server: a path that begins with two slashes (`//evil.com/`)
 * would be read by a browser as another host, so leading slashes collapse to one.
 */
function sameOriginPath(url: URL): string {
  return "/" + url.pathname.replace(/^[/\\]+/, "") + url.search;
}
