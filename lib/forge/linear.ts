// Linear as a tracker (docs/trackers.md#linear): one GraphQL endpoint, over the forge's HTTP layer
// (a deadline on every request, answers bounded in bytes and values, no redirect off its host).
// Items are the issues of one team a filter selects (states, labels); their comments are the control
// channel; loop moves an issue through the workflow states loop.json names. Field names are Linear's
// published schema's (held to it by tests/helpers/fake-linear.ts).
//
// GraphQL answers errors in the body, with HTTP 200 as often as not: `errors` is read before `data`,
// and an answer with errors is a failure whatever `data` holds. RATELIMITED (in an error's
// extensions.code, or HTTP 429) waits until X-RateLimit-Requests-Reset (epoch milliseconds).
// Connections are read page by page to their end, at most MAX_PAGES, else said `cut`; a cursor
// that does not move ends the read, cut. Everything Linear returns is untrusted text.
import type { NormTracker } from "../definition/normalized.ts";
import type { CommentId } from "../log/projection.ts";
import { MAX_PAGES } from "./bounds.ts";
import { ForgeHttp, type Json } from "./http.ts";
import {
  type FetchLike,
  type ForgeComment,
  type ForgeFailure,
  type ForgeIssueFound,
  type ForgeListing,
  type ForgeResult,
  type ForgeThread,
  type IssueLookup,
  type IssueSearch,
  type KeyedTrackerClient,
  type MoveOutcome,
  rateLimited,
} from "./provider.ts";
import { sanitizeLine } from "./untrusted.ts";

interface LinearOptions {
  settings: NormTracker;
  /** The key, read by the caller from the variable settings.tokenEnv names; never logged. */
  token: string | null;
  fetch?: FetchLike;
  now?: () => number;
  timeoutMs?: number;
}

/** Nodes asked for per page (Linear's default is 50, its most 250). */
const PAGE = 100;
/** A rate limit without a reset header waits this long. */
const DEFAULT_WAIT_MS = 60_000;

const ISSUE_FIELDS = "id identifier number title description url state { name type } labels(first: 50) { nodes { name } }";
const COMMENT_FIELDS = "id body createdAt updatedAt user { id email } issue { number }";

/** Where a state of one of these types is, the issue is closed to loop (Linear's WorkflowState.type). */
const CLOSED_TYPES = ["completed", "canceled"];

export class LinearTracker implements KeyedTrackerClient {
  readonly settings: NormTracker;
  readonly #http: ForgeHttp;
  readonly #now: () => number;
  readonly #hasToken: boolean;
  /** Issue numbers to Linear's ids (a comment and a state change name the issue by id). */
  readonly #ids = new Map<number, string>();
  /** Users' emails by id, as comments showed them: authorizedUsers may name either. */
  readonly #emails = new Map<string, string>();

  constructor(o: LinearOptions) {
    this.settings = o.settings;
    this.#now = o.now ?? Date.now;
    this.#hasToken = !!o.token;
    const auth = o.token ? (o.settings.tokenKind === "oauth" ? `Bearer ${o.token}` : o.token) : null;
    this.#http = new ForgeHttp(
      {
        settings: { apiUrl: o.settings.apiUrl },
        token: o.token,
        ...(o.fetch ? { fetch: o.fetch } : {}),
        now: this.#now,
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      },
      {
        headers: { accept: "application/json", ...(auth ? { authorization: auth } : {}) },
        rateLimit: (res, body, now) => limitOf(res, body, now()),
        link: () => null,
        explain: (a) => errorsOf(a.body) ?? `HTTP ${a.status}`,
        redirected: (r) => ({ key: r.to, notice: `Linear answered ${r.status}: ${r.from} is now ${r.to}` }),
      },
    );
  }

  threadKey(t: ForgeThread): string {
    return `${t.kind}:${t.number}`;
  }

  threadLabel(t: ForgeThread): string {
    return `${this.settings.key}-${t.number}`;
  }

  /** One GraphQL request: `errors` first, then `data`, which must be an object. */
  async #gql(query: string, variables: Record<string, unknown>): Promise<ForgeResult<Json>> {
    if (!this.#hasToken)
      return { ok: false, kind: "http", status: 401, message: `no Linear key: the variable ${this.settings.tokenEnv} (tracker.tokenEnv) is not set` };
    const a = await this.#http.request("POST", this.settings.apiUrl, { body: { query, variables } });
    if ("ok" in a) return a;
    const errors = errorsOf(a.body);
    if (errors !== null) return { ok: false, kind: "http", status: authFailed(a.body) ? 401 : a.status, message: `Linear: ${errors}` };
    if (a.status !== 200) return this.#http.fail("POST", this.settings.apiUrl, a);
    const data = (a.body as Json)?.data;
    if (!data || typeof data !== "object" || Array.isArray(data)) return { ok: false, kind: "network", message: "Linear answered without data or errors" };
    return { ok: true, value: data };
  }

  /** Every node of a connection, page by page; `cut` past MAX_PAGES or at a cursor that does not move. */
  async #all(query: string, variables: Record<string, unknown>, at: (data: Json) => Json): Promise<ForgeResult<ForgeListing<Json>>> {
    const items: Json[] = [];
    let after: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await this.#gql(query, { ...variables, after });
      if (!r.ok) return r;
      const conn = at(r.value);
      if (!conn || !Array.isArray(conn.nodes)) return { ok: false, kind: "network", message: "Linear answered a connection without nodes" };
      items.push(...conn.nodes.filter((n: Json) => n && typeof n === "object"));
      const next = conn.pageInfo?.hasNextPage === true && typeof conn.pageInfo.endCursor === "string" ? conn.pageInfo.endCursor : null;
      if (next === null) return { ok: true, value: { items, cut: false } };
      if (next === after) return { ok: true, value: { items, cut: true } };
      after = next;
    }
    return { ok: true, value: { items, cut: true } };
  }

  /** The team loop.json names, or a failure naming tracker.team. */
  async #team(): Promise<ForgeResult<{ id: string }>> {
    const r = await this.#gql("query Team($key: String!) { teams(filter: { key: { eq: $key } }, first: 1) { nodes { id key } } }", { key: this.settings.key });
    if (!r.ok) return r;
    const t = r.value.teams?.nodes?.[0];
    if (!t || typeof t.id !== "string")
      return {
        ok: false,
        kind: "http",
        status: 404,
        message: `Linear has no team with the key ${JSON.stringify(this.settings.key)} (tracker.team), or the key cannot see it`,
      };
    return { ok: true, value: { id: t.id } };
  }

  /** The key's own user: answers whenever Linear does and takes the key, whatever the issues. */
  async reachable(): Promise<ForgeResult<void>> {
    const r = await this.#gql("query Viewer { viewer { id } }", {});
    return r.ok ? { ok: true, value: undefined } : r;
  }

  async getIssue(number: number): Promise<ForgeResult<IssueLookup>> {
    const r = await this.#gql(`query Issue($filter: IssueFilter) { issues(filter: $filter, first: 1) { nodes { ${ISSUE_FIELDS} } } }`, {
      filter: { team: { key: { eq: this.settings.key } }, number: { eq: number } },
    });
    if (!r.ok) return r;
    const i = r.value.issues?.nodes?.[0];
    if (!i)
      return {
        ok: true,
        value: {
          kind: "gone",
          why: "missing",
          message: `${this.settings.key}-${number} is not an issue of the team ${this.settings.key} (deleted, moved to another team, or never there)`,
        },
      };
    if (typeof i.id === "string") this.#ids.set(number, i.id);
    return {
      ok: true,
      value: {
        kind: "issue",
        issue: {
          number,
          title: String(i.title ?? ""),
          body: String(i.description ?? ""),
          state: CLOSED_TYPES.includes(i.state?.type) ? "closed" : "open",
          url: String(i.url ?? ""),
        },
      },
    };
  }

  /** The issues loop.json's filter selects (team, states, labels); `search` is not Linear's and is ignored. */
  async searchOpenIssues(_search: string): Promise<ForgeResult<IssueSearch>> {
    const team = await this.#team();
    if (!team.ok) return team;
    const s = this.settings;
    const filter: Record<string, unknown> = {
      team: { key: { eq: s.key } },
      state: s.states.length ? { name: { in: s.states } } : { type: { nin: CLOSED_TYPES } },
      ...(s.labels.length ? { and: s.labels.map((l) => ({ labels: { some: { name: { eq: l } } } })) } : {}),
    };
    const r = await this.#all(
      `query Issues($filter: IssueFilter, $after: String) { issues(filter: $filter, first: ${PAGE}, after: $after) { nodes { ${ISSUE_FIELDS} } pageInfo { hasNextPage endCursor } } }`,
      { filter },
      (d) => d.issues,
    );
    if (!r.ok) return r;
    const issues: ForgeIssueFound[] = [];
    const notes: string[] = [];
    for (const i of r.value.items) {
      const number = Number(i.number);
      if (!Number.isSafeInteger(number) || number < 1) {
        notes.push(`an issue with no valid number (${sanitizeLine(String(i.identifier ?? "?"), 40)}) was left out`);
        continue;
      }
      if (typeof i.id === "string") this.#ids.set(number, i.id);
      const labels = Array.isArray(i.labels?.nodes) ? i.labels.nodes.map((l: Json) => String(l?.name ?? "")) : [];
      issues.push({ number, title: String(i.title ?? ""), body: String(i.description ?? ""), labels, url: String(i.url ?? "") });
    }
    if (r.value.cut) notes.push(`the search matched more than loop reads at once: the first ${issues.length} issues were read`);
    return { ok: true, value: { issues, notes } };
  }

  async listThreadComments(thread: ForgeThread): Promise<ForgeResult<ForgeListing<ForgeComment>>> {
    const filter = { issue: { team: { key: { eq: this.settings.key } }, number: { eq: thread.number } } };
    const r = await this.#all(
      `query Thread($filter: CommentFilter, $after: String) { comments(filter: $filter, first: ${PAGE}, after: $after, orderBy: createdAt) { nodes { ${COMMENT_FIELDS} } pageInfo { hasNextPage endCursor } } }`,
      { filter },
      (d) => d.comments,
    );
    if (!r.ok) return r;
    return { ok: true, value: { items: this.#comments(r.value.items).sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1)), cut: r.value.cut } };
  }

  async listComments(o: { since: string; threads: ForgeThread[] }): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>> {
    const numbers = [...new Set(o.threads.filter((t) => t.kind === "issue").map((t) => t.number))];
    if (!numbers.length) return { ok: true, value: { items: [], cut: false, notModified: true } };
    const filter = { updatedAt: { gte: o.since }, issue: { team: { key: { eq: this.settings.key } }, number: { in: numbers } } };
    const r = await this.#all(
      `query Since($filter: CommentFilter, $after: String) { comments(filter: $filter, first: ${PAGE}, after: $after, orderBy: updatedAt) { nodes { ${COMMENT_FIELDS} } pageInfo { hasNextPage endCursor } } }`,
      { filter },
      (d) => d.comments,
    );
    if (!r.ok) return r;
    const items = this.#comments(r.value.items).sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : 0));
    return { ok: true, value: { items, cut: r.value.cut, notModified: false } };
  }

  /** Linear's comments in loop's words; one whose id, issue or times cannot be read is left out (it could never be ordered). */
  #comments(nodes: Json[]): ForgeComment[] {
    const out: ForgeComment[] = [];
    for (const c of nodes) {
      const createdAt = isoOf(c.createdAt);
      const number = Number(c.issue?.number);
      if (typeof c.id !== "string" || !/^[A-Za-z0-9-]{1,64}$/.test(c.id) || createdAt === null || !Number.isSafeInteger(number)) continue;
      const user = typeof c.user?.id === "string" ? c.user.id : "";
      if (user && typeof c.user.email === "string") this.#emails.set(user, c.user.email.toLowerCase());
      out.push({
        id: linearCommentId(createdAt, c.id),
        thread: { kind: "issue", number },
        login: user,
        body: String(c.body ?? ""),
        createdAt,
        updatedAt: isoOf(c.updatedAt) ?? createdAt,
      });
    }
    return out;
  }

  async #issueId(number: number): Promise<ForgeResult<string>> {
    const known = this.#ids.get(number);
    if (known) return { ok: true, value: known };
    const r = await this.getIssue(number);
    if (!r.ok) return r;
    if (r.value.kind === "gone") return { ok: false, kind: "http", status: 404, message: r.value.message };
    return { ok: true, value: this.#ids.get(number)! };
  }

  async createComment(thread: ForgeThread, body: string): Promise<ForgeResult<{ id: CommentId; url: string }>> {
    const id = await this.#issueId(thread.number);
    if (!id.ok) return id;
    const r = await this.#gql("mutation Comment($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id createdAt url } } }", {
      input: { issueId: id.value, body },
    });
    if (!r.ok) return r;
    const c = r.value.commentCreate;
    const createdAt = isoOf(c?.comment?.createdAt);
    if (c?.success !== true || typeof c.comment?.id !== "string" || createdAt === null)
      return { ok: false, kind: "network", message: "Linear did not say the comment was created" };
    return { ok: true, value: { id: linearCommentId(createdAt, c.comment.id), url: String(c.comment.url ?? "") } };
  }

  /** Whether loop.json's tracker.authorizedUsers names the user, by id or by the email its comments showed. Never asks Linear. */
  async canWrite(login: string): Promise<ForgeResult<boolean>> {
    const allowed = this.settings.authorizedUsers.map((u) => u.toLowerCase());
    const email = this.#emails.get(login);
    return { ok: true, value: login !== "" && (allowed.includes(login.toLowerCase()) || (email !== undefined && allowed.includes(email))) };
  }

  /**
   * Move the issue to the team's workflow state named `state` (docs/trackers.md#states). A state the
   * team does not have is `unknown_state`, a named fault, never a guess at another.
   */
  async moveIssue(number: number, state: string): Promise<ForgeResult<MoveOutcome>> {
    const id = await this.#issueId(number);
    if (!id.ok) return id;
    const s = await this.#gql("query States($filter: WorkflowStateFilter) { workflowStates(filter: $filter, first: 10) { nodes { id name type } } }", {
      filter: { team: { key: { eq: this.settings.key } }, name: { eq: state } },
    });
    if (!s.ok) return s;
    const found = (s.value.workflowStates?.nodes ?? []).find((n: Json) => n?.name === state && typeof n.id === "string");
    if (!found)
      return {
        ok: true,
        value: { kind: "unknown_state", message: `the team ${this.settings.key} has no workflow state named ${JSON.stringify(state)} (tracker.moveTo)` },
      };
    const r = await this.#gql("mutation Move($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success } }", {
      id: id.value,
      input: { stateId: found.id },
    });
    if (!r.ok) return r;
    if (r.value.issueUpdate?.success !== true) return { ok: false, kind: "network", message: `Linear did not say ${this.settings.key}-${number} was moved` };
    return { ok: true, value: { kind: "moved" } };
  }
}

/** A Linear comment's id as loop keeps it: `<createdAt>~<uuid>`, so ids sort as the comments were made (docs/trackers.md#comment-ids). */
function linearCommentId(createdAt: string, id: string): CommentId {
  return `${createdAt}~${id}`;
}

/** An ISO time as UTC with milliseconds (so times compare as text), or null. */
function isoOf(t: unknown): string | null {
  if (typeof t !== "string") return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** The errors of a GraphQL answer as one line, or null when it has none. */
function errorsOf(body: Json): string | null {
  const errors = body?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return null;
  const said = errors.slice(0, 3).map((e: Json) => {
    const code = typeof e?.extensions?.code === "string" ? `${e.extensions.code}: ` : "";
    return `${code}${typeof e?.message === "string" ? e.message : "error"}`;
  });
  return sanitizeLine(`${said.join("; ")}${errors.length > 3 ? ` (and ${errors.length - 3} more)` : ""}`, 300);
}

function codesOf(body: Json): string[] {
  return Array.isArray(body?.errors) ? body.errors.map((e: Json) => String(e?.extensions?.code ?? "")) : [];
}

function authFailed(body: Json): boolean {
  return codesOf(body).some((c) => c === "AUTHENTICATION_ERROR");
}

/** RATELIMITED (an error's code, or HTTP 429): until X-RateLimit-Requests-Reset, epoch milliseconds. */
function limitOf(res: Response, body: Json, now: number): ForgeFailure | null {
  if (res.status !== 429 && !codesOf(body).includes("RATELIMITED")) return null;
  const reset = Number(res.headers.get("x-ratelimit-requests-reset") ?? res.headers.get("x-ratelimit-complexity-reset") ?? NaN);
  return rateLimited(now, Number.isFinite(reset) ? reset : now + DEFAULT_WAIT_MS, `Linear: ${errorsOf(body) ?? "rate limited"}`);
}
