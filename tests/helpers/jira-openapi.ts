// Jira Cloud's published OpenAPI description (the parts loop calls: tests/fixtures/jira/README.md)
// turned into a checker of one HTTP exchange, as github-openapi.ts is for GitHub: is the request an
// operation Jira has (path, method, query parameter names, a body valid against its requestBody),
// and is the answer one Jira documents for it (a status it lists, and a body valid against that
// status's schema)? The fake Jira (fake-jira.ts) runs every exchange it serves through it.
//
// The schemas are used as Atlassian wrote them: they say `additionalProperties` themselves (false on
// most of what loop reads: an undocumented field there is a violation). Two things every operation
// may answer that none lists, each documented by Atlassian for the whole API
// (developer.atlassian.com/cloud/jira/platform: "Rate limiting", "Status codes"): 429 for a rate
// limit and 500/503; and the body of any error, which is an ErrorCollection (`errorMessages`,
// `errors`). Jira writes its times as `2021-01-17T12:34:00.000+0000` (its own examples do), an
// offset without the colon RFC 3339 wants: `date-time` accepts that form too.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

type Schema = Record<string, any>;

export interface JiraRequest {
  method: string;
  /** The request path and query as sent, e.g. `/rest/api/3/issue/PROJ-1?fields=status`. */
  url: string;
  requestBody: unknown;
}
export interface JiraChecker {
  /** Violations of the request (an operation, its query parameter names, its body), one line each. */
  request(x: JiraRequest): string[];
  /** Violations of the answer to a request `request` passed: a documented status, a body its schema holds. */
  answer(x: JiraRequest & { status: number; body: unknown }): string[];
}

const UNIVERSAL: Record<number, string> = { 429: "a rate limit", 500: "a server error", 503: "the service unavailable" };

let cached: JiraChecker | null = null;

/** The checker, built once per process. */
export function jiraOpenApi(): JiraChecker {
  return (cached ??= build());
}

function build(): JiraChecker {
  const doc = JSON.parse(gunzipSync(readFileSync(join(import.meta.dir, "../fixtures/jira/openapi-subset.json.gz"))).toString("utf8")) as Schema;
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, logger: false });
  addFormats(ajv);
  ajv.addFormat("date-time", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)$/);
  ajv.addSchema({ components: doc.components }, "jira");
  const ops: { id: string; re: RegExp; method: string; op: Schema }[] = [];
  for (const [template, item] of Object.entries(doc.paths as Record<string, Schema>))
    for (const [method, op] of Object.entries(item)) {
      const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
      ops.push({ id: op.operationId, re, method: method.toUpperCase(), op });
    }
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (key: string, schema: Schema): ValidateFunction => {
    let v = validators.get(key);
    if (!v) {
      v = ajv.compile(rebase(schema));
      validators.set(key, v);
    }
    return v;
  };
  const find = (x: JiraRequest) => ops.find((op) => op.method === x.method && op.re.test(x.url.split("?")[0]!));
  const request = (x: JiraRequest): string[] => {
    const out: string[] = [];
    const where = `${x.method} ${x.url}`;
    const o = find(x);
    if (!o) return [`${where}: no such operation in Jira's description (tests/fixtures/jira/)`];
    const known = new Set((o.op.parameters ?? []).filter((p: Schema) => p.in === "query").map((p: Schema) => p.name));
    for (const name of new URL(x.url, "http://x").searchParams.keys())
      if (!known.has(name)) out.push(`${where}: undocumented query parameter ${name} for ${o.id}`);
    const reqSchema = o.op.requestBody?.content?.["application/json"]?.schema;
    if (o.op.requestBody?.required && (x.requestBody === null || x.requestBody === undefined)) out.push(`${where}: ${o.id} needs a request body`);
    if (reqSchema && x.requestBody !== null && x.requestBody !== undefined) {
      const v = validatorOf(`${o.id} request`, reqSchema);
      if (!v(x.requestBody)) out.push(`${where}: request body is not ${o.id}'s: ${ajv.errorsText(v.errors, { dataVar: "body" })}`);
    }
    return out;
  };
  const answer = (x: JiraRequest & { status: number; body: unknown }): string[] => {
    const out: string[] = [];
    const where = `${x.method} ${x.url} → ${x.status}`;
    const o = find(x);
    if (!o) return [`${where}: no such operation in Jira's description (tests/fixtures/jira/)`];
    const documented = o.op.responses?.[String(x.status)];
    if (!documented && !(x.status in UNIVERSAL)) return [...out, `${where}: status ${x.status} is not documented for ${o.id}`];
    const schema = x.status >= 400 ? doc.components.schemas.ErrorCollection : documented?.content?.["application/json"]?.schema;
    if (!schema || Object.keys(schema).length === 0) {
      if (x.body !== null && x.status !== 204) out.push(`${where}: ${o.id} answers ${x.status} without a body`);
      return out;
    }
    const v = validatorOf(`${o.id} ${x.status >= 400 ? "error" : x.status}`, schema);
    if (!v(x.body)) out.push(`${where}: answer is not ${o.id}'s ${x.status}: ${ajv.errorsText(v.errors, { dataVar: "body", separator: "; " })}`);
    return out;
  };
  return { request, answer };
}

/** `#/components/...` refs → the registered document `jira#/components/...`. */
function rebase(s: unknown): any {
  if (Array.isArray(s)) return s.map(rebase);
  if (!s || typeof s !== "object") return s;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `jira${v}` : rebase(v);
  return out;
}
