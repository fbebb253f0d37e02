// Jira Cloud as a tracker (docs/trackers.md#jira): REST v3 at the site loop.json names, over the
// forge's HTTP layer (a deadline on every request, answers bounded in bytes and values, no redirect
// off the site). Items are the issues of one project a bounded JQL search selects
// (`POST /rest/api/3/search/jql`, read by `nextPageToken`); their comments are the control channel;
// loop moves an issue through the transitions legal from its status, matched on the target status's
// name. Field names are Jira's published OpenAPI description's (held to it by
// tests/helpers/fake-jira.ts).
//
// Descriptions and comments are Atlassian Document Format: flattened to text on the way in
// (lib/forge/adf.ts, bounded against ADF bombs), written as ADF on the way out. Auth is Basic
// `email:token`. A 429 (or a 503 with Retry-After) waits for `Retry-After` seconds, else until
// `X-RateLimit-Reset`, else a minute; the limit's `RateLimit-Reason` is said. A refusal is named
// from Jira's `errorMessages` and `errors`. Everything Jira returns is untrusted text.
import type { NormTracker } from "../definition/normalized.ts";
import type { CommentId } from "../log/projection.ts";
import { adfToText, textToAdf } from "./adf.ts";
import { MAX_PAGES } from "./bounds.ts";
import { type Answer, ForgeHttp, type Json } from "./http.ts";
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
  numericCommentId,
  rateLimited,
} from "./provider.ts";
import { sanitizeLine } from "./untrusted.ts";

interface JiraOptions {
  settings: NormTracker;
  /** The API token, read by the caller from the variable settings.tokenEnv names; never logged. */
  token: string | null;
  fetch?: FetchLike;
  now?: () => number;
  timeoutMs?: number;
}

/** Issues (and comments) asked for per page (Jira's most for a search with these fields is 100). */
const PAGE = 100;
/** A rate limit with neither Retry-After nor X-RateLimit-Reset waits this long. */
const DEFAULT_WAIT_MS = 60_000;
const FIELDS = ["summary", "description", "status", "labels"];
/** Said after a description or comment the ADF reader cut (too deep, too many nodes, too long). */
const ADF_CUT = "\n\n[loop: the rest of this text was not read: its document is larger or deeper than loop reads]";

export class JiraTracker implements KeyedTrackerClient {
  readonly settings: NormTracker;
  readonly #http: ForgeHttp;
  readonly #hasToken: boolean;

  constructor(o: JiraOptions) {
    this.settings = o.settings;
    const now = o.now ?? Date.now;
    this.#hasToken = !!o.token && !!o.settings.email;
    const auth = this.#hasToken ? `Basic ${Buffer.from(`${o.settings.email}:${o.token}`).toString("base64")}` : null;
    this.#http = new ForgeHttp(
      {
        settings: { apiUrl: o.settings.apiUrl },
        token: o.token,
        ...(o.fetch ? { fetch: o.fetch } : {}),
        now,
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      },
      {
        headers: { accept: "application/json", ...(auth ? { authorization: auth } : {}) },
        rateLimit: (res, _body, clock) => limitOf(res, clock()),
        link: () => null,
        explain: (a) =>
          `${errorsOf(a.body) ?? `HTTP ${a.status}`}${a.status === 401 ? " (Jira refused tracker.email with the token in tracker.tokenEnv)" : ""}`,
        redirected: (r) => ({ key: r.to, notice: `Jira answered ${r.status}: ${r.from} is now ${r.to}` }),
      },
    );
  }

  threadKey(t: ForgeThread): string {
    return `${t.kind}:${t.number}`;
  }

  threadLabel(t: ForgeThread): string {
    return this.#key(t.number);
  }

  #key(number: number): string {
    return `${this.settings.key}-${number}`;
  }

  /** One request; any status but `want` a failure named from Jira's error body. */
  async #call(method: string, path: string, want: number, body?: unknown): Promise<ForgeResult<Answer>> {
    const none = this.#noToken();
    if (none) return none;
    const a = await this.#http.request(method, path, body === undefined ? {} : { body });
    if ("ok" in a) return a;
    if (a.status !== want) return this.#http.fail(method, path, a);
    return { ok: true, value: a };
  }

  #noToken(): ForgeFailure | null {
    return this.#hasToken
      ? null
      : { ok: false, kind: "http", status: 401, message: `no Jira API token: the variable ${this.settings.tokenEnv} (tracker.tokenEnv) is not set` };
  }

  /** The project loop.json names, or a failure naming tracker.project. */
  async #project(): Promise<ForgeResult<void>> {
    const path = `/rest/api/3/project/${encodeURIComponent(this.settings.key)}`;
    const r = await this.#call("GET", path, 200);
    if (!r.ok && r.kind === "http" && r.status === 404)
      return {
        ok: false,
        kind: "http",
        status: 404,
        message: `Jira has no project with the key ${JSON.stringify(this.settings.key)} (tracker.project), or the token's user cannot see it`,
      };
    return r.ok ? { ok: true, value: undefined } : r;
  }

  /** The token's own user (`GET /rest/api/3/myself`): answers whenever Jira does and takes the token, whatever the project. */
  async reachable(): Promise<ForgeResult<void>> {
    const r = await this.#call("GET", "/rest/api/3/myself", 200);
    return r.ok ? { ok: true, value: undefined } : r;
  }

  async getIssue(number: number): Promise<ForgeResult<IssueLookup>> {
    const key = this.#key(number);
    const r = await this.#call("GET", `/rest/api/3/issue/${key}?fields=${FIELDS.join(",")}`, 200);
    if (!r.ok) {
      if (r.kind === "http" && r.status === 404)
        return {
          ok: true,
          value: {
            kind: "gone",
            why: "missing",
            message: `${key} is not an issue of the project ${this.settings.key} (deleted, or the token's user cannot see it)`,
          },
        };
      return r;
    }
    const i = r.value.body;
    // Jira answers an issue moved to another project under its new key.
    if (i?.key !== key)
      return {
        ok: true,
        value: {
          kind: "gone",
          why: "transferred",
          message: `${key} is now ${sanitizeLine(String(i?.key ?? "?"), 40)}: it moved out of the project ${this.settings.key}`,
        },
      };
    const f = i.fields ?? {};
    return {
      ok: true,
      value: {
        kind: "issue",
        issue: { number, title: String(f.summary ?? ""), body: textOf(f.description), state: isDone(f.status) ? "closed" : "open", url: this.#browse(key) },
      },
    };
  }

  #browse(key: string): string {
    return `${this.settings.apiUrl}/browse/${key}`;
  }

  /**
   * The JQL of loop.json's filter: the project, the states (none given: any not in the Done
   * category), every label, loop.json's `jql`, and `search` (the operator's JQL, from
   * `--issues`/`--from-issues`), each ANDed.
   */
  jql(search: string): string {
    const s = this.settings;
    const clauses = [
      `project = ${jqlString(s.key)}`,
      s.states.length ? `status in (${s.states.map(jqlString).join(", ")})` : "statusCategory != Done",
      ...s.labels.map((l) => `labels = ${jqlString(l)}`),
    ];
    if (s.jql) clauses.push(`(${s.jql})`);
    if (search.trim() !== "") clauses.push(`(${search.trim()})`);
    return `${clauses.join(" AND ")} ORDER BY key ASC`;
  }

  /** The issues the filter and `search` (JQL) select, every page read, or `cut` said in the notes. */
  async searchOpenIssues(search: string): Promise<ForgeResult<IssueSearch>> {
    const project = await this.#project();
    if (!project.ok) return project;
    const jql = this.jql(search);
    const found: Json[] = [];
    let token: string | null = null;
    let cut = true;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await this.#call("POST", "/rest/api/3/search/jql", 200, { jql, fields: FIELDS, maxResults: PAGE, ...(token ? { nextPageToken: token } : {}) });
      if (!r.ok)
        return r.kind === "http" && r.status === 400
          ? {
              ...r,
              message: `${r.message} (the JQL was built from tracker.project, tracker.states, tracker.labels, tracker.jql and the search: ${sanitizeLine(jql, 300)})`,
            }
          : r;
      const body = r.value.body;
      if (!Array.isArray(body?.issues)) return { ok: false, kind: "network", message: "Jira answered a search without issues" };
      found.push(...body.issues.filter((i: Json) => i && typeof i === "object"));
      const next = body.isLast !== true && typeof body.nextPageToken === "string" && body.nextPageToken !== "" ? body.nextPageToken : null;
      if (next === null) {
        cut = false;
        break;
      }
      if (next === token) break;
      token = next;
    }
    const issues: ForgeIssueFound[] = [];
    const notes: string[] = [];
    const mine = new RegExp(`^${this.settings.key}-([1-9][0-9]{0,14})$`);
    for (const i of found) {
      const m = typeof i.key === "string" ? mine.exec(i.key) : null;
      if (!m) {
        notes.push(`an issue whose key is not one of the project ${this.settings.key}'s (${sanitizeLine(String(i.key ?? "?"), 40)}) was left out`);
        continue;
      }
      const f = i.fields ?? {};
      const body = textOf(f.description);
      if (body.endsWith(ADF_CUT)) notes.push(`the description of ${i.key} is larger or deeper than loop reads: it was cut`);
      const labels = Array.isArray(f.labels) ? f.labels.map((l: unknown) => String(l)) : [];
      issues.push({ number: Number(m[1]), title: String(f.summary ?? ""), body, labels, url: this.#browse(i.key) });
    }
    if (cut) notes.push(`the search matched more than loop reads at once: the first ${issues.length} issues were read`);
    return { ok: true, value: { issues, notes } };
  }

  /** Every comment of one issue, oldest first, read by `startAt` up to MAX_PAGES pages. */
  async listThreadComments(thread: ForgeThread): Promise<ForgeResult<ForgeListing<ForgeComment>>> {
    if (thread.kind !== "issue") return { ok: true, value: { items: [], cut: false } };
    const none = this.#noToken();
    if (none) return none;
    const base = `/rest/api/3/issue/${this.#key(thread.number)}/comment?orderBy=created&maxResults=${PAGE}`;
    const r = await this.#http.pages(`${base}&startAt=0`, {
      next: (a) => {
        const at = Number(a.body?.startAt);
        const n = Array.isArray(a.body?.comments) ? a.body.comments.length : 0;
        const total = Number(a.body?.total);
        return n > 0 && Number.isSafeInteger(at) && Number.isSafeInteger(total) && at + n < total ? `${base}&startAt=${at + n}` : null;
      },
    });
    if ("ok" in r) return r;
    const items: ForgeComment[] = [];
    for (const a of r.answers)
      for (const c of Array.isArray(a.body?.comments) ? a.body.comments : []) {
        const comment = commentOf(c, thread.number);
        if (comment) items.push(comment);
      }
    return { ok: true, value: { items: items.sort((x, y) => (x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : 0)), cut: r.cut } };
  }

  /** Comments created or edited at or after `since` on the issue threads, in the order of their last edit. Jira has no such filter: each issue's comments are read. */
  async listComments(o: { since: string; threads: ForgeThread[] }): Promise<ForgeResult<ForgeListing<ForgeComment> & { notModified: boolean }>> {
    const numbers = [...new Set(o.threads.filter((t) => t.kind === "issue").map((t) => t.number))];
    const items: ForgeComment[] = [];
    let cut = false;
    for (const number of numbers) {
      const r = await this.listThreadComments({ kind: "issue", number });
      if (!r.ok) return r;
      cut ||= r.value.cut;
      items.push(...r.value.items.filter((c) => c.updatedAt >= o.since));
    }
    items.sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : 0));
    return { ok: true, value: { items, cut, notModified: false } };
  }

  async createComment(thread: ForgeThread, body: string): Promise<ForgeResult<{ id: CommentId; url: string }>> {
    const key = this.#key(thread.number);
    const r = await this.#call("POST", `/rest/api/3/issue/${key}/comment`, 201, { body: textToAdf(body) });
    if (!r.ok) return r;
    const id = numericCommentId(r.value.body?.id);
    if (id === "0") return { ok: false, kind: "network", message: `Jira did not say which comment it created on ${key}` };
    return { ok: true, value: { id, url: `${this.#browse(key)}?focusedCommentId=${id}` } };
  }

  /** Whether loop.json's tracker.authorizedUsers names the Jira account id. Never asks Jira. */
  async canWrite(login: string): Promise<ForgeResult<boolean>> {
    return { ok: true, value: login !== "" && this.settings.authorizedUsers.includes(login) };
  }

  /**
   * Move the issue to the status named `state` (docs/trackers.md#states) through a transition legal
   * from its current status. Already there: nothing is done. No transition to it: `unknown_state`,
   * naming the statuses that can be reached, never a guess at another.
   */
  async moveIssue(number: number, state: string): Promise<ForgeResult<MoveOutcome>> {
    const key = this.#key(number);
    const issue = await this.#call("GET", `/rest/api/3/issue/${key}?fields=status`, 200);
    if (!issue.ok) return issue;
    if (issue.value.body?.fields?.status?.name === state) return { ok: true, value: { kind: "moved" } };
    const t = await this.#call("GET", `/rest/api/3/issue/${key}/transitions`, 200);
    if (!t.ok) return t;
    const transitions: Json[] = Array.isArray(t.value.body?.transitions)
      ? t.value.body.transitions.filter((x: Json) => x && typeof x.id === "string" && x.isAvailable !== false)
      : [];
    const found = transitions.find((x) => x.to?.name === state);
    if (!found) {
      const from = sanitizeLine(String(issue.value.body?.fields?.status?.name ?? "?"), 60);
      const legal = transitions.map((x) => JSON.stringify(sanitizeLine(String(x.to?.name ?? "?"), 60))).join(", ") || "none";
      return {
        ok: true,
        value: {
          kind: "unknown_state",
          message: `${key} has no transition from ${JSON.stringify(from)} to a status named ${JSON.stringify(state)} (tracker.moveTo); it can move to ${legal}`,
        },
      };
    }
    const r = await this.#call("POST", `/rest/api/3/issue/${key}/transitions`, 204, { transition: { id: found.id } });
    if (!r.ok) return r;
    return { ok: true, value: { kind: "moved" } };
  }
}

/** A JQL string literal: quoted, `"` and `\` escaped (loop.json's names are one line, checked). */
function jqlString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A description or comment body as text: ADF flattened (a cut said), a plain string as it is (v2's form), nothing as "". */
function textOf(x: unknown): string {
  if (typeof x === "string") return x;
  if (!x || typeof x !== "object") return "";
  const r = adfToText(x);
  return r.cut ? `${r.text}${ADF_CUT}` : r.text;
}

/** Whether a status is in Jira's Done category (closed to loop). */
function isDone(status: Json): boolean {
  return status?.statusCategory?.key === "done";
}

/** A Jira comment in loop's words; one whose id or times cannot be read is left out (it could never be ordered). */
function commentOf(c: Json, number: number): ForgeComment | null {
  const id = numericCommentId(c?.id);
  const createdAt = isoOf(c?.created);
  if (id === "0" || createdAt === null) return null;
  const login = typeof c.author?.accountId === "string" ? c.author.accountId : "";
  return { id, thread: { kind: "issue", number }, login, body: textOf(c.body), createdAt, updatedAt: isoOf(c.updated) ?? createdAt };
}

/** Jira's time (`2021-01-17T12:34:00.000+0000`, an offset without its colon) as ISO UTC with milliseconds, or null. */
function isoOf(t: unknown): string | null {
  if (typeof t !== "string") return null;
  const ms = Date.parse(t.replace(/([+-]\d\d)(\d\d)$/, "$1:$2"));
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** Jira's error body (`errorMessages`, `errors` by field) as one line, or null when it has neither. */
function errorsOf(body: Json): string | null {
  const messages = Array.isArray(body?.errorMessages) ? body.errorMessages.filter((m: unknown) => typeof m === "string") : [];
  const fields =
    body?.errors && typeof body.errors === "object" && !Array.isArray(body.errors) ? Object.entries(body.errors).map(([k, v]) => `${k}: ${String(v)}`) : [];
  const all = [...messages, ...fields];
  if (!all.length) return null;
  return sanitizeLine(`Jira: ${all.slice(0, 5).join("; ")}${all.length > 5 ? ` (and ${all.length - 5} more)` : ""}`, 400);
}

/**
 * A 429 (or a 503 that says Retry-After): `Retry-After` seconds, else `X-RateLimit-Reset` (an ISO
 * time), else a minute; `RateLimit-Reason` names which of Jira's limits it was (the burst, the
 * tenant's or the global quota, or one issue's writes).
 */
function limitOf(res: Response, now: number): ForgeFailure | null {
  const retryAfter = res.headers.get("retry-after");
  if (res.status !== 429 && !(res.status === 503 && retryAfter !== null)) return null;
  const reason = res.headers.get("ratelimit-reason");
  const why = `Jira rate limit${reason ? ` (${sanitizeLine(reason, 60)})` : ""}`;
  if (retryAfter !== null && /^\d+$/.test(retryAfter.trim()))
    return rateLimited(now, now + Number(retryAfter.trim()) * 1000, `${why}: retry-after ${retryAfter.trim()}s`);
  const reset = Date.parse(res.headers.get("x-ratelimit-reset") ?? "");
  if (Number.isFinite(reset)) return rateLimited(now, reset, `${why}: until X-RateLimit-Reset`);
  return rateLimited(now, now + DEFAULT_WAIT_MS, `${why} (no Retry-After)`);
}
