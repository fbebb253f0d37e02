// A stateful fake Linear on 127.0.0.1 (Bun.serve; one GraphQL endpoint, POST /graphql), for tests.
// Every request is checked against Linear's published schema (tests/fixtures/linear/, through
// graphql-check.ts) before it is executed: a field, argument, filter key or variable the schema does
// not have is recorded in `violations` (and answered as Linear answers an invalid query, HTTP 400 with
// GRAPHQL_VALIDATION_FAILED), and `stop()` throws if there were any. Valid requests are executed
// against plain data (a team, its workflow states, issues, labels, comments, users) through the
// request's own selection, relay-paginated (`first`/`after`, `pageInfo`).
//
// It can be hostile as Linear can: errors with HTTP 200 (`switches.errorWith200`), RATELIMITED with
// the X-RateLimit-* headers (reset in epoch ms), a cursor that never ends, an authentication error,
// a request that never answers, a 5xx from its edge (to every request, to one issue's reads, or to
// the next requests of one kind).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { checkRequest, type GraphqlSchema, parseOperation, parseSchema, resolveVariables, type Selected } from "./graphql-check.ts";

let schemaCache: GraphqlSchema | null = null;
/** Linear's schema, parsed once per process. */
export function linearSchema(): GraphqlSchema {
  schemaCache ??= parseSchema(gunzipSync(readFileSync(join(import.meta.dir, "../fixtures/linear/schema.graphql.gz"))).toString("utf8"));
  return schemaCache;
}

export interface FakeLinearIssue {
  id: string;
  number: number;
  title: string;
  description: string | null;
  state: string;
  labels: string[];
}
export interface FakeLinearComment {
  id: string;
  issue: number;
  body: string;
  user: string | null;
  createdAt: string;
  updatedAt: string;
}

type Json = any;

export class FakeLinear {
  readonly teamKey: string;
  readonly teamId = "7a1e0000-0000-4000-8000-000000000001";
  readonly states = [
    { id: "5e000000-0000-4000-8000-000000000001", name: "Backlog", type: "backlog" },
    { id: "5e000000-0000-4000-8000-000000000002", name: "Todo", type: "unstarted" },
    { id: "5e000000-0000-4000-8000-000000000003", name: "In Progress", type: "started" },
    { id: "5e000000-0000-4000-8000-000000000004", name: "Done", type: "completed" },
    { id: "5e000000-0000-4000-8000-000000000005", name: "Canceled", type: "canceled" },
  ];
  readonly users = new Map<string, string>([
    ["0a000000-0000-4000-8000-00000000000a", "ada@acme.dev"],
    ["0b000000-0000-4000-8000-00000000000b", "mallory@evil.example"],
    ["0c000000-0000-4000-8000-00000000000c", "loop-bot@acme.dev"],
  ]);
  /** The user the key belongs to: comments loop creates are theirs. */
  viewer = "0c000000-0000-4000-8000-00000000000c";
  readonly issues: FakeLinearIssue[] = [];
  readonly comments: FakeLinearComment[] = [];
  readonly violations: string[] = [];
  readonly requests: { query: string; variables: Json; authorization: string | null }[] = [];
  /** The Authorization header it accepts, exactly (a personal key bare, an OAuth token after Bearer). */
  authorization: string;
  switches = {
    /** The next N requests answer RATELIMITED (HTTP `rateLimitStatus`: 400 as Linear does, or 200), with a reset at `rateLimitReset`. */
    rateLimited: 0,
    rateLimitReset: 0,
    rateLimitStatus: 400,
    /** The next N requests answer HTTP 500 (its edge's page, not JSON). */
    serverErrors: 0,
    /** The root field (`issueUpdate`, `commentCreate`, `viewer`, …) a request must ask for to meet `rateLimited`, `errorWith200` and `serverErrors`; null: any request. */
    only: null as string | null,
    /** Every request answers this HTTP status (503: its edge's page, not JSON); 0: none. */
    down: 0,
    /** The reads of this issue (a filter naming its number) answer HTTP 502; 0: none. */
    issueDown: 0,
    /** The next N requests answer HTTP 200 with `errors` (and a `data` that looks whole). */
    errorWith200: 0,
    /** Connections always say there is a next page, with the same cursor. */
    endlessCursor: false,
    /** Nodes per page at most, whatever `first` asks. */
    maxPerPage: 250,
    /** Requests never answer. */
    hang: false,
  };
  #clock = Date.parse("2026-03-01T10:00:00.000Z");
  #seq = 0;
  #server: ReturnType<typeof Bun.serve> | null = null;

  constructor(o: { teamKey?: string; authorization?: string } = {}) {
    this.teamKey = o.teamKey ?? "ENG";
    this.authorization = o.authorization ?? "lin_api_test_key";
  }

  get url(): string {
    return `http://127.0.0.1:${this.#server!.port}/graphql`;
  }

  start(): this {
    linearSchema();
    this.#server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => this.#serve(req) });
    return this;
  }

  stop(): void {
    this.#server?.stop(true);
    if (this.violations.length) throw new Error(`the client sent requests Linear's schema does not allow:\n${this.violations.join("\n")}`);
  }

  #uuid(): string {
    return `c0000000-0000-4000-8000-${String(++this.#seq).padStart(12, "0")}`;
  }

  #tick(): string {
    this.#clock += 1000;
    return new Date(this.#clock).toISOString();
  }

  addIssue(o: Partial<FakeLinearIssue> & { number: number }): FakeLinearIssue {
    const i: FakeLinearIssue = { id: this.#uuid(), title: `Issue ${o.number}`, description: "", state: "Todo", labels: [], ...o };
    this.issues.push(i);
    return i;
  }

  addComment(o: { issue: number; body: string; user?: string | null }): FakeLinearComment {
    const at = this.#tick();
    const c: FakeLinearComment = {
      id: this.#uuid(),
      issue: o.issue,
      body: o.body,
      user: o.user === undefined ? [...this.users.keys()][0]! : o.user,
      createdAt: at,
      updatedAt: at,
    };
    this.comments.push(c);
    return c;
  }

  issue(number: number): FakeLinearIssue {
    return this.issues.find((i) => i.number === number)!;
  }

  async #serve(req: Request): Promise<Response> {
    if (this.switches.hang) return new Promise(() => {});
    const url = new URL(req.url);
    if (req.method !== "POST" || url.pathname !== "/graphql") return new Response("not found", { status: 404 });
    const body = (await req.json().catch(() => null)) as Json;
    const authorization = req.headers.get("authorization");
    this.requests.push({ query: String(body?.query ?? ""), variables: body?.variables ?? {}, authorization });
    const json = (status: number, b: unknown, headers: Record<string, string> = {}) =>
      Response.json(b, { status, headers: { ...this.#limitHeaders(), ...headers } });
    if (authorization !== this.authorization)
      return json(400, {
        errors: [
          {
            message: "Authentication required, not authenticated",
            extensions: {
              type: "authentication error",
              code: "AUTHENTICATION_ERROR",
              userPresentableMessage: "You need to authenticate to access this operation.",
            },
          },
        ],
      });
    const problems = checkRequest(linearSchema(), body ?? {});
    if (problems.length) {
      this.violations.push(...problems);
      return json(400, { errors: problems.map((m) => ({ message: m, extensions: { code: "GRAPHQL_VALIDATION_FAILED" } })) });
    }
    if (this.switches.down) return edgePage(this.switches.down);
    const op = parseOperation(body.query);
    const vars = body.variables ?? {};
    const filter = vars.filter ?? {};
    if (this.switches.issueDown && [filter.number?.eq, filter.issue?.number?.eq].includes(this.switches.issueDown)) return edgePage(502);
    const meets = this.switches.only === null || op.fields.some((f) => f.name === this.switches.only);
    if (meets && this.switches.serverErrors > 0) {
      this.switches.serverErrors--;
      return edgePage(500);
    }
    if (meets && this.switches.rateLimited > 0) {
      this.switches.rateLimited--;
      return json(
        this.switches.rateLimitStatus,
        { errors: [{ message: "Rate limit exceeded", extensions: { code: "RATELIMITED" } }] },
        { "x-ratelimit-requests-remaining": "0", "x-ratelimit-requests-reset": String(this.switches.rateLimitReset) },
      );
    }
    if (meets && this.switches.errorWith200 > 0) {
      this.switches.errorWith200--;
      return json(200, {
        data: { issues: { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } } },
        errors: [{ message: "Entity not found: Team\u001b[2J", extensions: { code: "INVALID_INPUT" } }],
      });
    }
    const root = op.root === "Query" ? this.#query() : this.#mutation();
    return json(200, { data: project(root, op.fields, vars) });
  }

  #limitHeaders(): Record<string, string> {
    return { "x-ratelimit-requests-limit": "1500", "x-ratelimit-requests-remaining": "1499", "x-ratelimit-requests-reset": String(Date.now() + 3_600_000) };
  }

  #issueObj(i: FakeLinearIssue): Json {
    const state = this.states.find((s) => s.name === i.state)!;
    return {
      id: i.id,
      identifier: `${this.teamKey}-${i.number}`,
      number: i.number,
      title: i.title,
      description: i.description,
      url: `https://linear.app/acme/issue/${this.teamKey}-${i.number}`,
      state,
      labels: () => ({ nodes: i.labels.map((name) => ({ name })) }),
      team: { id: this.teamId, key: this.teamKey },
    };
  }

  #commentObj(c: FakeLinearComment): Json {
    return {
      id: c.id,
      body: c.body,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
      url: `https://linear.app/acme/issue/${this.teamKey}-${c.issue}#comment-${c.id.slice(0, 8)}`,
      user: c.user ? { id: c.user, email: this.users.get(c.user) ?? null } : null,
      issue: this.#issueObj(this.issue(c.issue)),
    };
  }

  #issueMatches(i: FakeLinearIssue, f: Json): boolean {
    if (!f) return true;
    const state = this.states.find((s) => s.name === i.state)!;
    if (f.team?.key?.eq !== undefined && f.team.key.eq !== this.teamKey) return false;
    if (f.number?.eq !== undefined && f.number.eq !== i.number) return false;
    if (f.number?.in !== undefined && !f.number.in.includes(i.number)) return false;
    if (f.state?.name?.in !== undefined && !f.state.name.in.includes(state.name)) return false;
    if (f.state?.type?.nin?.includes(state.type)) return false;
    if (f.labels?.some?.name?.eq !== undefined && !i.labels.includes(f.labels.some.name.eq)) return false;
    if (Array.isArray(f.and) && !f.and.every((g: Json) => this.#issueMatches(i, g))) return false;
    return true;
  }

  #query(): Json {
    return {
      viewer: { id: this.viewer, email: this.users.get(this.viewer) },
      teams: (a: Json) =>
        this.#page(
          [{ id: this.teamId, key: this.teamKey }].filter((t) => a.filter?.key?.eq === undefined || a.filter.key.eq === t.key),
          a,
        ),
      issues: (a: Json) =>
        this.#page(
          this.issues.filter((i) => this.#issueMatches(i, a.filter)).map((i) => this.#issueObj(i)),
          a,
        ),
      comments: (a: Json) => {
        const f = a.filter ?? {};
        const list = this.comments
          .filter((c) => this.#issueMatches(this.issue(c.issue), f.issue) && (f.updatedAt?.gte === undefined || c.updatedAt >= f.updatedAt.gte))
          .sort((x, y) => (a.orderBy === "updatedAt" ? x.updatedAt.localeCompare(y.updatedAt) : x.createdAt.localeCompare(y.createdAt)));
        return this.#page(
          list.map((c) => this.#commentObj(c)),
          a,
        );
      },
      workflowStates: (a: Json) =>
        this.#page(
          this.states.filter(
            (s) =>
              (a.filter?.team?.key?.eq === undefined || a.filter.team.key.eq === this.teamKey) &&
              (a.filter?.name?.eq === undefined || a.filter.name.eq === s.name),
          ),
          a,
        ),
    };
  }

  #mutation(): Json {
    return {
      commentCreate: (a: Json) => {
        const i = this.issues.find((x) => x.id === a.input.issueId);
        if (!i) return { success: false, lastSyncId: 1, comment: null };
        const c = this.addComment({ issue: i.number, body: a.input.body, user: this.viewer });
        return { success: true, lastSyncId: 1, comment: this.#commentObj(c) };
      },
      issueUpdate: (a: Json) => {
        const i = this.issues.find((x) => x.id === a.id);
        const s = this.states.find((x) => x.id === a.input.stateId);
        if (!i || !s) return { success: false, lastSyncId: 1, issue: null };
        i.state = s.name;
        return { success: true, lastSyncId: 1, issue: this.#issueObj(i) };
      },
    };
  }

  #page(all: Json[], a: Json): Json {
    const start = typeof a.after === "string" ? Number(Buffer.from(a.after, "base64").toString()) : 0;
    const n = Math.min(typeof a.first === "number" ? a.first : 50, this.switches.maxPerPage);
    const nodes = all.slice(start, start + n);
    if (this.switches.endlessCursor) return { nodes, pageInfo: { hasNextPage: true, endCursor: "c3R1Y2s=" } };
    const more = start + n < all.length;
    return { nodes, pageInfo: { hasNextPage: more, endCursor: more ? Buffer.from(String(start + n)).toString("base64") : null } };
  }
}

/** A value through a selection: a field that is a function is called with its arguments. */
function project(value: Json, sel: Selected[], vars: Record<string, unknown>): Json {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map((v) => project(v, sel, vars));
  const out: Json = {};
  for (const f of sel) {
    let v = value[f.name];
    if (typeof v === "function") v = v(resolveVariables(f.args, vars));
    out[f.key] = f.sel ? project(v, f.sel, vars) : (v ?? null);
  }
  return out;
}

/** What Linear's edge answers when the API behind it is down: an HTML page, not JSON. */
function edgePage(status: number): Response {
  const title = `${status} ${status === 502 ? "Bad Gateway" : status === 503 ? "Service Temporarily Unavailable" : "Internal Server Error"}`;
  return new Response(`<html>\n<head><title>${title}</title></head>\n<body>\n<center><h1>${title}</h1></center>\n</body>\n</html>\n`, {
    status,
    headers: { "content-type": "text/html" },
  });
}
