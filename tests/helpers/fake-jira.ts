// A stateful fake Jira Cloud site on 127.0.0.1 (Bun.serve; REST v3), for tests. Every exchange is
// checked against Jira's published OpenAPI description (tests/fixtures/jira/, through
// jira-openapi.ts): a request to an operation Jira does not have, an undocumented query parameter or
// a body its schema refuses, and an answer of its own that the description does not document, are
// recorded in `violations`, and `stop()` throws if there were any. A request the description refuses
// is answered 400 with an ErrorCollection, as Jira answers.
//
// It keeps one project, its statuses and workflow (To Do → In Progress → Done, back to To Do, no
// shortcut from To Do to Done), issues with ADF descriptions, comments, and evaluates the JQL loop
// sends (AND/OR/NOT, parentheses, `=`, `!=`, `in`, `not in` on project, key, status,
// statusCategory, labels; ORDER BY ignored; any other field refused as Jira refuses it). Searches
// are paginated by an opaque `nextPageToken`.
//
// It can be hostile as Jira can: 429 with Retry-After and RateLimit-Reason, a token that never
// ends, an issue moved to another project, a request that never answers, a 5xx (to every request,
// or to the next requests of one kind), an API token revoked (`token` changed: every request 401).
import { jiraOpenApi } from "./jira-openapi.ts";

type Json = any;

export interface FakeJiraIssue {
  id: string;
  number: number;
  summary: string;
  /** ADF, or null for none. */
  description: Json;
  status: string;
  labels: string[];
  /** The key it answers under now, when it moved to another project. */
  movedTo?: string;
}
export interface FakeJiraComment {
  id: string;
  issue: number;
  body: Json;
  author: string;
  created: string;
  updated: string;
}

const CATEGORY: Record<string, { id: number; key: string; name: string; colorName: string }> = {
  new: { id: 2, key: "new", name: "To Do", colorName: "blue-gray" },
  indeterminate: { id: 4, key: "indeterminate", name: "In Progress", colorName: "yellow" },
  done: { id: 3, key: "done", name: "Done", colorName: "green" },
};

export class FakeJira {
  readonly projectKey: string;
  readonly email: string;
  /** The API token it accepts; change it to revoke the one loop holds. */
  token: string;
  readonly statuses = [
    { id: "10000", name: "To Do", category: "new" },
    { id: "10001", name: "In Progress", category: "indeterminate" },
    { id: "10002", name: "Done", category: "done" },
  ];
  /** The workflow: from a status, transitions (id, name, to). */
  readonly workflow: Record<string, { id: string; name: string; to: string }[]> = {
    "To Do": [{ id: "11", name: "Start", to: "In Progress" }],
    "In Progress": [
      { id: "21", name: "Finish", to: "Done" },
      { id: "31", name: "Stop", to: "To Do" },
    ],
    Done: [{ id: "31", name: "Reopen", to: "To Do" }],
  };
  readonly users = new Map<string, string>([
    ["5b10a2844c20165700ede21g", "Ada"],
    ["712020:mallory", "Mallory"],
    ["557058:loop-bot", "loop bot"],
  ]);
  /** The account the token belongs to: comments loop creates are its. */
  me = "557058:loop-bot";
  readonly issues: FakeJiraIssue[] = [];
  readonly comments: FakeJiraComment[] = [];
  readonly violations: string[] = [];
  readonly requests: { method: string; url: string; body: Json; authorization: string | null }[] = [];
  switches = {
    /** The next N requests answer 429 with this Retry-After (seconds; null: none) and RateLimit-Reason. */
    rateLimited: 0,
    retryAfter: "30" as string | null,
    rateLimitReset: null as string | null,
    /** 429, or 503 (Jira's answer when it sheds load, with Retry-After). */
    rateLimitStatus: 429,
    /** Searches always say there is a next page, with the same token. */
    endlessToken: false,
    /** Issues (and comments) per page at most, whatever maxResults asks. */
    maxPerPage: 100,
    /** Requests never answer. */
    hang: false,
    /** The next N requests answer HTTP 500 with an ErrorCollection. */
    serverErrors: 0,
    /** What a request's method and path (`POST /rest/api/3/issue/PROJ-1/transitions`) must match to meet `rateLimited` and `serverErrors`; null: any request. */
    only: null as RegExp | null,
    /** Every request answers this HTTP status with an ErrorCollection (503: the site unavailable); 0: none. */
    down: 0,
  };
  #clock = Date.parse("2026-03-01T10:00:00.000Z");
  #seq = 10000;
  #server: ReturnType<typeof Bun.serve> | null = null;

  constructor(o: { projectKey?: string; email?: string; token?: string } = {}) {
    this.projectKey = o.projectKey ?? "PROJ";
    this.email = o.email ?? "bot@acme.dev";
    this.token = o.token ?? "jira-test-token";
  }

  get url(): string {
    return `http://127.0.0.1:${this.#server!.port}`;
  }

  start(): this {
    jiraOpenApi();
    this.#server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => this.#serve(req) });
    return this;
  }

  stop(): void {
    this.#server?.stop(true);
    if (this.violations.length) throw new Error(`the client or the fake left Jira's OpenAPI description:\n${this.violations.join("\n")}`);
  }

  /** Jira's time form: milliseconds and an offset without a colon. */
  #tick(): string {
    this.#clock += 1000;
    return new Date(this.#clock).toISOString().replace("Z", "+0000");
  }

  addIssue(o: Partial<FakeJiraIssue> & { number: number }): FakeJiraIssue {
    const i: FakeJiraIssue = { id: String(++this.#seq), summary: `Issue ${o.number}`, description: null, status: "To Do", labels: [], ...o };
    this.issues.push(i);
    return i;
  }

  addComment(o: { issue: number; body: Json; author?: string }): FakeJiraComment {
    const at = this.#tick();
    const c: FakeJiraComment = {
      id: String(++this.#seq),
      issue: o.issue,
      body: typeof o.body === "string" ? adf(o.body) : o.body,
      author: o.author ?? [...this.users.keys()][0]!,
      created: at,
      updated: at,
    };
    this.comments.push(c);
    return c;
  }

  issue(number: number): FakeJiraIssue {
    return this.issues.find((i) => i.number === number)!;
  }

  async #serve(req: Request): Promise<Response> {
    if (this.switches.hang) return new Promise(() => {});
    const url = new URL(req.url);
    const text = await req.text();
    let body: Json = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    const authorization = req.headers.get("authorization");
    const pathAndQuery = url.pathname + url.search;
    this.requests.push({ method: req.method, url: pathAndQuery, body, authorization });
    const answer = (status: number, b: Json, headers: Record<string, string> = {}): Response => {
      this.violations.push(...jiraOpenApi().answer({ method: req.method, url: pathAndQuery, requestBody: body, status, body: b }));
      return b === null ? new Response(null, { status, headers }) : Response.json(b, { status, headers });
    };
    const requestProblems = jiraOpenApi().request({ method: req.method, url: pathAndQuery, requestBody: body });
    if (requestProblems.length) {
      this.violations.push(...requestProblems);
      return Response.json({ errorMessages: requestProblems }, { status: requestProblems.some((p) => p.includes("no such operation")) ? 404 : 400 });
    }
    if (authorization !== `Basic ${Buffer.from(`${this.email}:${this.token}`).toString("base64")}`)
      return answer(401, { errorMessages: ["Client must be authenticated to access this resource."] });
    if (this.switches.down)
      return answer(this.switches.down, { errorMessages: ["The service is temporarily unavailable. Please try again later."], errors: {} });
    const meets = this.switches.only === null || this.switches.only.test(`${req.method} ${url.pathname}`);
    if (meets && this.switches.serverErrors > 0) {
      this.switches.serverErrors--;
      return answer(500, { errorMessages: ["Internal server error."], errors: {} });
    }
    if (meets && this.switches.rateLimited > 0) {
      this.switches.rateLimited--;
      const h: Record<string, string> = { "ratelimit-reason": "jira-burst-based", "x-ratelimit-limit": "100", "x-ratelimit-remaining": "0" };
      if (this.switches.retryAfter !== null) h["retry-after"] = this.switches.retryAfter;
      if (this.switches.rateLimitReset !== null) h["x-ratelimit-reset"] = this.switches.rateLimitReset;
      return answer(this.switches.rateLimitStatus, { errorMessages: ["Rate limit exceeded."] }, h);
    }
    return this.#route(req.method, url, body, answer);
  }

  #route(method: string, url: URL, body: Json, answer: (status: number, b: Json, headers?: Record<string, string>) => Response): Response {
    const p = url.pathname;
    let m: RegExpExecArray | null;
    if (method === "GET" && (m = /^\/rest\/api\/3\/project\/([^/]+)$/.exec(p))) {
      if (decodeURIComponent(m[1]!) !== this.projectKey)
        return answer(404, { errorMessages: [`No project could be found with key '${decodeURIComponent(m[1]!)}'.`], errors: {} });
      return answer(200, {
        id: "10000",
        key: this.projectKey,
        name: "Project",
        self: `${this.url}/rest/api/3/project/10000`,
        projectTypeKey: "software",
        simplified: false,
        style: "classic",
      });
    }
    if (method === "POST" && p === "/rest/api/3/search/jql") return this.#search(body, answer);
    if (method === "GET" && p === "/rest/api/3/myself") return answer(200, this.#user(this.me));
    if ((m = /^\/rest\/api\/3\/issue\/([^/]+)(\/comment|\/transitions)?$/.exec(p))) {
      const i = this.#find(decodeURIComponent(m[1]!));
      if (!i) return answer(404, { errorMessages: ["Issue does not exist or you do not have permission to see it."], errors: {} });
      if (!m[2] && method === "GET") return answer(200, this.#issueObj(i, url.searchParams.get("fields")?.split(",") ?? null));
      if (m[2] === "/comment" && method === "GET") {
        const all = this.comments.filter((c) => c.issue === i.number).sort((a, b) => a.created.localeCompare(b.created));
        const startAt = Number(url.searchParams.get("startAt") ?? 0);
        const max = Math.min(Number(url.searchParams.get("maxResults") ?? 100), this.switches.maxPerPage);
        return answer(200, { comments: all.slice(startAt, startAt + max).map((c) => this.#commentObj(c)), maxResults: max, startAt, total: all.length });
      }
      if (m[2] === "/comment" && method === "POST") {
        if (body?.body?.type !== "doc") return answer(400, { errorMessages: [], errors: { comment: "Comment body is not valid ADF." } });
        return answer(201, this.#commentObj(this.addComment({ issue: i.number, body: body.body, author: this.me })));
      }
      if (m[2] === "/transitions" && method === "GET") return answer(200, { transitions: (this.workflow[i.status] ?? []).map((t) => this.#transitionObj(t)) });
      if (m[2] === "/transitions" && method === "POST") {
        const t = (this.workflow[i.status] ?? []).find((x) => x.id === body?.transition?.id);
        if (!t) return answer(400, { errorMessages: [`Transition id '${body?.transition?.id}' is not valid for this issue.`], errors: {} });
        i.status = t.to;
        return answer(204, null);
      }
    }
    return answer(404, { errorMessages: ["not found"] });
  }

  #find(keyOrId: string): FakeJiraIssue | undefined {
    return this.issues.find((i) => i.id === keyOrId || `${this.projectKey}-${i.number}` === keyOrId);
  }

  #statusObj(name: string): Json {
    const s = this.statuses.find((x) => x.name === name)!;
    const c = CATEGORY[s.category]!;
    return {
      id: s.id,
      name: s.name,
      self: `${this.url}/rest/api/3/status/${s.id}`,
      iconUrl: `${this.url}/images/icons/status.png`,
      statusCategory: { ...c, self: `${this.url}/rest/api/3/statuscategory/${c.id}` },
    };
  }

  #transitionObj(t: { id: string; name: string; to: string }): Json {
    return {
      id: t.id,
      name: t.name,
      to: this.#statusObj(t.to),
      hasScreen: false,
      isGlobal: false,
      isInitial: false,
      isAvailable: true,
      isConditional: false,
      looped: false,
    };
  }

  #issueObj(i: FakeJiraIssue, fields: string[] | null): Json {
    const all: Json = { summary: i.summary, description: i.description, status: this.#statusObj(i.status), labels: i.labels };
    const f = fields ? Object.fromEntries(Object.entries(all).filter(([k]) => fields.includes(k))) : all;
    return { id: i.id, key: i.movedTo ?? `${this.projectKey}-${i.number}`, self: `${this.url}/rest/api/3/issue/${i.id}`, fields: f };
  }

  #user(accountId: string): Json {
    return {
      accountId,
      displayName: this.users.get(accountId) ?? "Unknown",
      active: true,
      accountType: "atlassian",
      self: `${this.url}/rest/api/3/user?accountId=${encodeURIComponent(accountId)}`,
    };
  }

  #commentObj(c: FakeJiraComment): Json {
    return {
      id: c.id,
      self: `${this.url}/rest/api/3/issue/${this.issue(c.issue).id}/comment/${c.id}`,
      author: this.#user(c.author),
      updateAuthor: this.#user(c.author),
      body: c.body,
      created: c.created,
      updated: c.updated,
      jsdPublic: true,
    };
  }

  #search(body: Json, answer: (status: number, b: Json) => Response): Response {
    let where: Clause | null;
    try {
      where = parseJql(String(body?.jql ?? ""));
    } catch (e) {
      return answer(400, { errorMessages: [(e as Error).message], errors: {} });
    }
    const unknown = fieldsOf(where).find((f) => !JQL_FIELDS.includes(f));
    if (unknown) return answer(400, { errorMessages: [`Field '${unknown}' does not exist or you do not have permission to view it.`], errors: {} });
    const matching = this.issues.filter((i) => !i.movedTo && (where === null || this.#matches(i, where))).sort((a, b) => a.number - b.number);
    const start = typeof body.nextPageToken === "string" ? Number(Buffer.from(body.nextPageToken, "base64url").toString()) : 0;
    const n = Math.min(typeof body.maxResults === "number" ? body.maxResults : 50, this.switches.maxPerPage);
    const fields: string[] | null = Array.isArray(body.fields) ? body.fields : null;
    const page = matching.slice(start, start + n).map((i) => this.#issueObj(i, fields));
    if (this.switches.endlessToken) return answer(200, { issues: page, nextPageToken: "c3R1Y2s", isLast: false });
    const more = start + n < matching.length;
    return answer(200, { issues: page, isLast: !more, ...(more ? { nextPageToken: Buffer.from(String(start + n)).toString("base64url") } : {}) });
  }

  #matches(i: FakeJiraIssue, c: Clause): boolean {
    if ("parts" in c) return c.op === "and" ? c.parts.every((p) => this.#matches(i, p)) : c.parts.some((p) => this.#matches(i, p));
    if ("part" in c) return !this.#matches(i, c.part);
    const status = this.statuses.find((s) => s.name === i.status)!;
    const have: string[] =
      (
        {
          project: [this.projectKey],
          key: [`${this.projectKey}-${i.number}`],
          status: [status.name],
          statuscategory: [CATEGORY[status.category]!.name],
          labels: i.labels,
        } as Record<string, string[]>
      )[c.field.toLowerCase()] ?? [];
    const hit = c.values.some((v) => have.some((h) => h.toLowerCase() === v.toLowerCase()));
    return c.op === "=" || c.op === "in" ? hit : !hit;
  }
}

/** Text as the ADF a person's comment is. */
export function adf(text: string): Json {
  return { type: "doc", version: 1, content: text.split("\n\n").map((p) => ({ type: "paragraph", content: [{ type: "text", text: p }] })) };
}

const JQL_FIELDS = ["project", "key", "status", "statuscategory", "labels"];
type Clause = { op: "and" | "or"; parts: Clause[] } | { op: "not"; part: Clause } | { op: "=" | "!=" | "in" | "not in"; field: string; values: string[] };

function fieldsOf(c: Clause | null): string[] {
  if (!c) return [];
  if ("parts" in c) return c.parts.flatMap(fieldsOf);
  if ("part" in c) return fieldsOf(c.part);
  return [c.field.toLowerCase()];
}

/** The JQL the fake understands, parsed; a syntax error throws Jira's kind of message. */
function parseJql(jql: string): Clause | null {
  const text = jql.replace(/\s+order\s+by\s+.*$/is, "").trim();
  if (!text) return null;
  const tokens = [...text.matchAll(/"((?:[^"\\]|\\.)*)"|(!=|=|\(|\)|,)|([^\s"=!(),]+)/g)].map((m) =>
    m[1] !== undefined ? { s: m[1].replace(/\\(.)/g, "$1"), quoted: true } : { s: m[2] ?? m[3]!, quoted: false },
  );
  let at = 0;
  const fail = (): never => {
    throw new Error(`Error in the JQL Query: expecting a clause near position ${at} of "${jql}".`);
  };
  const peek = () => tokens[at];
  const word = (w: string) => peek() && !peek()!.quoted && peek()!.s.toLowerCase() === w;
  const next = () => tokens[at++] ?? fail();
  const expr = (): Clause => {
    const parts = [term()];
    let op: "and" | "or" | null = null;
    while (word("and") || word("or")) {
      const o = next().s.toLowerCase() as "and" | "or";
      if (op && op !== o) fail();
      op = o;
      parts.push(term());
    }
    return parts.length === 1 ? parts[0]! : { op: op!, parts };
  };
  const term = (): Clause => {
    if (word("not")) return (next(), { op: "not", part: term() });
    if (peek()?.s === "(" && !peek()!.quoted) {
      next();
      const e = expr();
      if (next().s !== ")") fail();
      return e;
    }
    const field = next().s;
    let op = next().s.toLowerCase();
    if (op === "not") op = `not ${next().s.toLowerCase()}`;
    if (op === "=" || op === "!=") return { op, field, values: [next().s] };
    if (op !== "in" && op !== "not in") return fail();
    if (next().s !== "(") fail();
    const values = [next().s];
    while (peek()?.s === ",") next(), values.push(next().s);
    if (next().s !== ")") fail();
    return { op, field, values };
  };
  const out = expr();
  if (at !== tokens.length) fail();
  return out;
}
