// GitHub's official OpenAPI description of api.github.com (npm @octokit/openapi), made strict and
// turned into a checker of one HTTP exchange: is this request an operation GitHub has (path, method,
// query parameter names, body), and is this answer one GitHub documents for it (status, and a body
// valid against that status's schema)? The fake GitHub (fake-github.ts) runs every exchange it
// serves through it, so the fake cannot drift from the real API.
//
// Strict means: the description's schemas allow any extra property; here an object schema that lists
// its properties allows no other (an undocumented field is a violation), `nullable` becomes a
// JSON-Schema null, and `allOf` of objects is merged first (so the strictness sees every member).
//
// Answers every operation may give although no operation lists them, each documented by GitHub for
// the whole API (docs.github.com/rest: "Best practices", "Rate limits", "Troubleshooting"):
// 304 to a conditional GET, 403/429 for a rate limit, 301/302/307 for a renamed repository or a
// transferred issue, and 500/502/503. Their bodies must still be a documented error object.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

type Schema = Record<string, any>;

export interface Exchange {
  method: string;
  /** The request path and query as sent, e.g. `/repos/acme/api/pulls?state=all`. */
  url: string;
  requestBody: unknown;
  status: number;
  /** Parsed JSON answer, or null for none. */
  body: unknown;
}

export interface OpenApiChecker {
  /** Violations of the description, one line each; empty when the exchange is one GitHub documents. */
  check(x: Exchange): string[];
  /** The operation a request maps to (`issues/get`), or null. */
  operationOf(method: string, url: string): string | null;
}

const UNIVERSAL: Record<number, string> = {
  304: "a conditional request whose ETag still matches",
  403: "a rate limit (or a refusal)",
  429: "a secondary rate limit",
  301: "a renamed repository or a transferred issue",
  302: "a temporary redirect",
  307: "a renamed repository (non-GET)",
  500: "a server error",
  502: "a server error",
  503: "the service unavailable",
};

let cached: OpenApiChecker | null = null;

/** The checker (built once per process: the description is 13 MB). */
export function githubOpenApi(): OpenApiChecker {
  return (cached ??= build());
}

function build(): OpenApiChecker {
  const require = createRequire(import.meta.url);
  const doc = JSON.parse(readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8")) as Schema;
  const components = doc.components as Schema;
  const deref = (s: Schema | undefined): Schema | undefined => {
    let x = s;
    for (let i = 0; x && typeof x.$ref === "string" && i < 20; i++)
      x = x.$ref
        .split("/")
        .slice(1)
        .reduce((a: Schema, k: string) => a?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
    return x;
  };
  for (const name of Object.keys(components.schemas)) components.schemas[name] = strict(components.schemas[name], deref);
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  // The description's formats that ajv-formats does not know: "repo.nwo" (owner/name) and
  // "timestamp". Named, so ajv has nothing to warn about on stderr (the demo's output with --forge).
  ajv.addFormat("repo.nwo", /^[^/\s]+\/[^/\s]+$/);
  ajv.addFormat("timestamp", true);
  ajv.addSchema({ components: { schemas: components.schemas } }, "gh");

  interface Op {
    id: string;
    template: string;
    re: RegExp;
    method: string;
    op: Schema;
  }
  const ops: Op[] = [];
  for (const [template, item] of Object.entries(doc.paths as Record<string, Schema>))
    for (const method of ["get", "put", "post", "patch", "delete"])
      if (item[method]) {
        const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
        ops.push({ id: item[method].operationId, template, re, method: method.toUpperCase(), op: item[method] });
      }
  // A literal segment beats a parameter (`/issues/comments` is not `/issues/{issue_number}`).
  ops.sort((a, b) => a.template.split("{").length - b.template.split("{").length);

  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (key: string, schema: Schema): ValidateFunction => {
    let v = validators.get(key);
    if (!v) {
      v = ajv.compile(rebase(strict(schema, deref)));
      validators.set(key, v);
    }
    return v;
  };

  const find = (method: string, url: string): Op | null => {
    // GitHub answers a renamed repository's redirect target (/repositories/{id}/...) as the
    // repository's own path (recorded in @octokit/fixtures rename-repository).
    const path = url.split("?")[0]!.replace(/^\/repositories\/\d+/, "/repos/owner/repo");
    return ops.find((o) => o.method === method && o.re.test(path)) ?? null;
  };

  return {
    operationOf: (method, url) => find(method, url)?.id ?? null,
    check(x) {
      const out: string[] = [];
      const where = `${x.method} ${x.url} → ${x.status}`;
      const o = find(x.method, x.url);
      if (!o) return [`${where}: no such operation in GitHub's description`];
      const params = (o.op.parameters ?? []).map((p: Schema) => deref(p)!);
      const known = new Set(params.filter((p: Schema) => p.in === "query").map((p: Schema) => p.name));
      for (const name of new URL(x.url, "http://x").searchParams.keys())
        if (!known.has(name)) out.push(`${where}: undocumented query parameter ${name} for ${o.id}`);
      const reqSchema = deref(o.op.requestBody)?.content?.["application/json"]?.schema;
      if (reqSchema && x.requestBody !== null && x.requestBody !== undefined) {
        const v = validatorOf(`${o.id} request`, reqSchema);
        if (!v(x.requestBody)) out.push(`${where}: request body is not ${o.id}'s: ${ajv.errorsText(v.errors, { dataVar: "body" })}`);
      }
      const documented = deref(o.op.responses?.[String(x.status)]);
      if (!documented && !(x.status in UNIVERSAL)) return [...out, `${where}: status ${x.status} is not documented for ${o.id}`];
      if (x.status === 304) {
        if (x.method !== "GET") out.push(`${where}: a 304 answers only a conditional GET`);
        if (x.body !== null) out.push(`${where}: a 304 has no body`);
        return out;
      }
      const schema = documented ? deref(documented)?.content?.["application/json"]?.schema : components.schemas["basic-error"];
      if (!schema) {
        if (x.body !== null) out.push(`${where}: ${o.id} answers ${x.status} without a body`);
        return out;
      }
      const v = validatorOf(`${o.id} ${documented ? x.status : "error"}`, schema);
      if (!v(x.body)) out.push(`${where}: answer is not ${o.id}'s ${x.status}: ${ajv.errorsText(v.errors, { dataVar: "body", separator: "; " })}`);
      return out;
    },
  };
}

/** `#/components/...` refs → the registered document `gh#/components/...`. */
function rebase(s: unknown): any {
  if (Array.isArray(s)) return s.map(rebase);
  if (!s || typeof s !== "object") return s;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `gh${v}` : rebase(v);
  return out;
}

/** The strict JSON Schema of an OpenAPI 3.0 schema (see the header). Pure: returns a copy. */
export function strict(s: unknown, deref: (s: Schema | undefined) => Schema | undefined, inAllOf = false): any {
  if (Array.isArray(s)) return s.map((x) => strict(x, deref));
  if (!s || typeof s !== "object") return s;
  let x: Schema = { ...(s as Schema) };
  if (x.$ref) return x;
  if (Array.isArray(x.allOf) && x.allOf.every((m: Schema) => isObjectSchema(deref(m)))) {
    // Merge an allOf of objects into one object, so "no other property" sees all of them.
    const members = x.allOf.map((m: Schema) => deref(m)!);
    const { allOf: _, ...rest } = x;
    x = {
      ...rest,
      type: "object",
      properties: Object.assign({}, ...members.map((m: Schema) => m.properties ?? {}), rest.properties ?? {}),
      required: [...new Set([...members.flatMap((m: Schema) => m.required ?? []), ...(rest.required ?? [])])],
      ...(members.some((m: Schema) => m.nullable) || rest.nullable ? { nullable: true } : {}),
    };
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === "properties") out[k] = Object.fromEntries(Object.entries(v as Schema).map(([p, ps]) => [p, strict(ps, deref)]));
    else if (k === "allOf") out[k] = (v as Schema[]).map((m) => strict(m, deref, true));
    else if (k === "items" || k === "additionalProperties" || k === "not") out[k] = typeof v === "object" ? strict(v, deref) : v;
    else if (k === "anyOf" || k === "oneOf") out[k] = (v as Schema[]).map((m) => strict(m, deref));
    else if (k === "example" || k === "examples" || k === "description" || k === "nullable" || k === "discriminator") continue;
    else out[k] = v;
  }
  if (out.properties && out.additionalProperties === undefined && !inAllOf) out.additionalProperties = false;
  if (x.nullable === true) {
    if (typeof out.type === "string") {
      out.type = [out.type, "null"];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    } else return { anyOf: [out, { type: "null" }] };
  }
  return out;
}

function isObjectSchema(s: Schema | undefined): boolean {
  return !!s && (s.type === "object" || (s.properties !== undefined && s.type === undefined)) && !s.anyOf && !s.oneOf && !s.allOf;
}
