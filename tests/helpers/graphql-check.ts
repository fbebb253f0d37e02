// A checker of GraphQL requests against a published schema (SDL), so a fake GraphQL service cannot
// drift from the real one: every field a request selects must exist on its type, every argument on
// its field (and every required one given), every literal and every variable's value must fit its
// input type (input objects field by field: an unknown filter key is a violation), leaves take no
// selection and objects need one, and each variable used is declared. It knows the parts of GraphQL
// a client writes (operations, selections, aliases, variables, literals); a fragment is refused
// rather than guessed at. Used by fake-linear.ts with Linear's schema (tests/fixtures/linear/).

type TypeRef = { kind: "named"; name: string } | { kind: "list"; of: TypeRef } | { kind: "non_null"; of: TypeRef };
interface FieldDef {
  args: Map<string, { type: TypeRef; hasDefault: boolean }>;
  type: TypeRef;
}
interface TypeDef {
  kind: "object" | "interface" | "input" | "enum" | "scalar" | "union";
  fields: Map<string, FieldDef>;
  values: Set<string>;
}
export interface GraphqlSchema {
  types: Map<string, TypeDef>;
}

type Tok = { k: "name" | "str" | "num" | "punct"; v: string };

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "," || c === "\ufeff") i++;
    else if (c === "#") while (i < n && src[i] !== "\n") i++;
    else if (src.startsWith('"""', i)) {
      const end = src.indexOf('"""', i + 3);
      if (end < 0) throw new Error("unterminated block string");
      out.push({ k: "str", v: src.slice(i + 3, end) });
      i = end + 3;
    } else if (c === '"') {
      let j = i + 1;
      let s = "";
      while (j < n && src[j] !== '"') {
        if (src[j] === "\\") {
          s += src.slice(j, j + 2);
          j += 2;
        } else s += src[j++];
      }
      out.push({ k: "str", v: JSON.parse(`"${s}"`) });
      i = j + 1;
    } else if (src.startsWith("...", i)) {
      out.push({ k: "punct", v: "..." });
      i += 3;
    } else if ("!$&()/:=@[]{}|".includes(c)) {
      out.push({ k: "punct", v: c });
      i++;
    } else {
      const m = /^[_A-Za-z][_0-9A-Za-z]*/.exec(src.slice(i, i + 200)) ?? /^-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(src.slice(i, i + 200));
      if (!m) throw new Error(`unexpected character ${JSON.stringify(c)} at ${i}`);
      out.push({ k: /^[-0-9]/.test(m[0]) ? "num" : "name", v: m[0] });
      i += m[0].length;
    }
  }
  return out;
}

class Parser {
  i = 0;
  constructor(readonly t: Tok[]) {}
  peek(v?: string): boolean {
    const x = this.t[this.i];
    return x !== undefined && (v === undefined || (x.v === v && x.k !== "str"));
  }
  next(): Tok {
    const x = this.t[this.i++];
    if (!x) throw new Error("unexpected end of document");
    return x;
  }
  expect(v: string): void {
    const x = this.next();
    if (x.v !== v || x.k === "str") throw new Error(`expected ${v}, got ${x.v}`);
  }
  name(): string {
    const x = this.next();
    if (x.k !== "name") throw new Error(`expected a name, got ${JSON.stringify(x.v)}`);
    return x.v;
  }
  optDescription(): void {
    if (this.t[this.i]?.k === "str") this.i++;
  }
  type(): TypeRef {
    let t: TypeRef;
    if (this.peek("[")) {
      this.next();
      t = { kind: "list", of: this.type() };
      this.expect("]");
    } else t = { kind: "named", name: this.name() };
    if (this.peek("!")) {
      this.next();
      t = { kind: "non_null", of: t };
    }
    return t;
  }
  /** A value literal, as plain data; a variable is `{ $var: name }`. */
  value(): unknown {
    const x = this.next();
    if (x.k === "str") return x.v;
    if (x.k === "num") return Number(x.v);
    if (x.v === "$") return { $var: this.name() };
    if (x.v === "[") {
      const list: unknown[] = [];
      while (!this.peek("]")) list.push(this.value());
      this.next();
      return list;
    }
    if (x.v === "{") {
      const obj: Record<string, unknown> = {};
      while (!this.peek("}")) {
        const k = this.name();
        this.expect(":");
        obj[k] = this.value();
      }
      this.next();
      return obj;
    }
    if (x.k === "name") return x.v === "true" ? true : x.v === "false" ? false : x.v === "null" ? null : { $enum: x.v };
    throw new Error(`unexpected ${x.v} in a value`);
  }
  directives(): void {
    while (this.peek("@")) {
      this.next();
      this.name();
      if (this.peek("(")) this.args();
    }
  }
  args(): Map<string, unknown> {
    const out = new Map<string, unknown>();
    this.expect("(");
    while (!this.peek(")")) {
      const k = this.name();
      this.expect(":");
      out.set(k, this.value());
    }
    this.next();
    return out;
  }
}

/** Parse an SDL document into the types a request is checked against. */
export function parseSchema(sdl: string): GraphqlSchema {
  const p = new Parser(tokenize(sdl));
  const types = new Map<string, TypeDef>();
  const fieldList = (input: boolean): Map<string, FieldDef> => {
    const fields = new Map<string, FieldDef>();
    p.expect("{");
    while (!p.peek("}")) {
      p.optDescription();
      const name = p.name();
      const args = new Map<string, { type: TypeRef; hasDefault: boolean }>();
      if (!input && p.peek("(")) {
        p.next();
        while (!p.peek(")")) {
          p.optDescription();
          const a = p.name();
          p.expect(":");
          const type = p.type();
          let hasDefault = false;
          if (p.peek("=")) {
            p.next();
            p.value();
            hasDefault = true;
          }
          p.directives();
          args.set(a, { type, hasDefault });
        }
        p.next();
      }
      p.expect(":");
      const type = p.type();
      if (input && p.peek("=")) {
        p.next();
        p.value();
        args.set("$default", { type, hasDefault: true });
      }
      p.directives();
      fields.set(name, { args, type });
    }
    p.next();
    return fields;
  };
  while (p.peek()) {
    p.optDescription();
    let kw = p.name();
    if (kw === "extend") kw = p.name();
    if (kw === "schema") {
      p.directives();
      fieldList(true);
      continue;
    }
    if (kw === "directive") {
      p.expect("@");
      p.name();
      if (p.peek("(")) {
        let depth = 0;
        do {
          const x = p.next();
          if (x.k === "punct" && x.v === "(") depth++;
          if (x.k === "punct" && x.v === ")") depth--;
        } while (depth > 0);
      }
      if (p.peek("repeatable")) p.next();
      p.expect("on");
      if (p.peek("|")) p.next();
      p.name();
      while (p.peek("|")) {
        p.next();
        p.name();
      }
      continue;
    }
    const name = p.name();
    const def: TypeDef = types.get(name) ?? { kind: "scalar", fields: new Map(), values: new Set() };
    if (kw === "scalar") def.kind = "scalar";
    else if (kw === "type" || kw === "interface") {
      def.kind = kw === "type" ? "object" : "interface";
      if (p.peek("implements")) {
        p.next();
        if (p.peek("&")) p.next();
        p.name();
        while (p.peek("&")) {
          p.next();
          p.name();
        }
      }
      p.directives();
      if (p.peek("{")) for (const [k, f] of fieldList(false)) def.fields.set(k, f);
    } else if (kw === "input") {
      def.kind = "input";
      p.directives();
      for (const [k, f] of fieldList(true)) def.fields.set(k, f);
    } else if (kw === "enum") {
      def.kind = "enum";
      p.directives();
      p.expect("{");
      while (!p.peek("}")) {
        p.optDescription();
        def.values.add(p.name());
        p.directives();
      }
      p.next();
    } else if (kw === "union") {
      def.kind = "union";
      p.directives();
      p.expect("=");
      if (p.peek("|")) p.next();
      p.name();
      while (p.peek("|")) {
        p.next();
        p.name();
      }
    } else throw new Error(`unknown definition ${kw}`);
    types.set(name, def);
  }
  for (const s of ["String", "Int", "Float", "Boolean", "ID"]) if (!types.has(s)) types.set(s, { kind: "scalar", fields: new Map(), values: new Set() });
  return { types };
}

const named = (t: TypeRef): string => (t.kind === "named" ? t.name : named(t.of));
const show = (t: TypeRef): string => (t.kind === "named" ? t.name : t.kind === "list" ? `[${show(t.of)}]` : `${show(t.of)}!`);

/**
 * The violations of one request (`query`, `variables`) against the schema: empty when it is one the
 * service would accept. `operationName` is checked only for being one of the document's operations.
 */
export function checkRequest(schema: GraphqlSchema, body: { query?: unknown; variables?: unknown }): string[] {
  const v: string[] = [];
  if (typeof body.query !== "string") return ["the request has no query string"];
  const vars = body.variables ?? {};
  if (typeof vars !== "object" || vars === null || Array.isArray(vars)) return ["variables must be an object"];
  let p: Parser;
  try {
    p = new Parser(tokenize(body.query));
  } catch (e) {
    return [`the query does not parse: ${(e as Error).message}`];
  }
  try {
    let ops = 0;
    while (p.peek()) {
      ops++;
      let root = "Query";
      if (p.peek("query") || p.peek("mutation") || p.peek("subscription")) {
        const kw = p.name();
        root = kw === "mutation" ? "Mutation" : kw === "subscription" ? "Subscription" : "Query";
        if (!p.peek("(") && !p.peek("{") && !p.peek("@")) p.name();
      } else if (p.peek("fragment")) return ["fragments are not checked here (write the selection out)"];
      const declared = new Map<string, TypeRef>();
      if (p.peek("(")) {
        p.next();
        while (!p.peek(")")) {
          p.expect("$");
          const name = p.name();
          p.expect(":");
          const type = p.type();
          if (!schema.types.has(named(type))) v.push(`variable $${name}: unknown type ${named(type)}`);
          const def = schema.types.get(named(type));
          if (def && def.kind !== "input" && def.kind !== "scalar" && def.kind !== "enum") v.push(`variable $${name}: ${named(type)} is not an input type`);
          if (p.peek("=")) {
            p.next();
            p.value();
          }
          declared.set(name, type);
        }
        p.next();
      }
      p.directives();
      const used = new Set<string>();
      selection(schema, p, root, root, declared, used, v);
      for (const [name, type] of declared) {
        const value = (vars as Record<string, unknown>)[name];
        if (value === undefined) {
          if (type.kind === "non_null") v.push(`variable $${name} (${show(type)}) is required and not given`);
        } else checkJson(schema, value, type, `$${name}`, v);
      }
      for (const name of Object.keys(vars)) if (!declared.has(name)) v.push(`variable $${name} is given but not declared`);
      for (const name of used) if (!declared.has(name)) v.push(`variable $${name} is used but not declared`);
    }
    if (ops === 0) v.push("the document has no operation");
  } catch (e) {
    v.push(`the query does not parse: ${(e as Error).message}`);
  }
  return v;
}

function selection(schema: GraphqlSchema, p: Parser, typeName: string, at: string, declared: Map<string, TypeRef>, used: Set<string>, v: string[]): void {
  const type = schema.types.get(typeName);
  if (!type) {
    v.push(`${at}: no type ${typeName}`);
    return;
  }
  p.expect("{");
  while (!p.peek("}")) {
    if (p.peek("...")) throw new Error("fragments are not checked here (write the selection out)");
    let name = p.name();
    if (p.peek(":")) {
      p.next();
      name = p.name();
    }
    const args = p.peek("(") ? p.args() : new Map<string, unknown>();
    p.directives();
    const f = name === "__typename" ? { args: new Map(), type: { kind: "named", name: "String" } as TypeRef } : type.fields.get(name);
    const here = `${at}.${name}`;
    if (!f) {
      v.push(`${here}: ${typeName} has no field ${name}`);
      if (p.peek("{")) skipBlock(p);
      continue;
    }
    for (const [a, value] of args) {
      const def = f.args.get(a);
      if (!def) v.push(`${here}(${a}): no such argument`);
      else checkLiteral(schema, value, def.type, `${here}(${a})`, declared, used, v);
    }
    for (const [a, def] of f.args) if (def.type.kind === "non_null" && !def.hasDefault && !args.has(a)) v.push(`${here}: required argument ${a} is missing`);
    const target = schema.types.get(named(f.type));
    const composite = target && (target.kind === "object" || target.kind === "interface" || target.kind === "union");
    if (p.peek("{")) {
      if (!composite) {
        v.push(`${here}: ${named(f.type)} is a leaf and takes no selection`);
        skipBlock(p);
      } else if (target.kind === "union") skipBlock(p);
      else selection(schema, p, named(f.type), here, declared, used, v);
    } else if (composite) v.push(`${here}: ${named(f.type)} needs a selection`);
  }
  p.next();
}

function skipBlock(p: Parser): void {
  let depth = 0;
  do {
    const x = p.next();
    if (x.k === "punct" && x.v === "{") depth++;
    if (x.k === "punct" && x.v === "}") depth--;
  } while (depth > 0);
}

function checkLiteral(schema: GraphqlSchema, value: unknown, type: TypeRef, at: string, declared: Map<string, TypeRef>, used: Set<string>, v: string[]): void {
  if (value && typeof value === "object" && "$var" in value) {
    const name = (value as { $var: string }).$var;
    used.add(name);
    const d = declared.get(name);
    if (d && named(d) !== named(type)) v.push(`${at}: $${name} is ${show(d)}, the argument wants ${show(type)}`);
    else if (d && type.kind === "non_null" && d.kind !== "non_null") v.push(`${at}: $${name} is nullable (${show(d)}), the argument wants ${show(type)}`);
    return;
  }
  if (type.kind === "non_null") {
    if (value === null) v.push(`${at}: null where ${show(type)} is required`);
    else checkLiteral(schema, value, type.of, at, declared, used, v);
    return;
  }
  if (value === null) return;
  if (type.kind === "list") {
    for (const [i, x] of (Array.isArray(value) ? value : [value]).entries()) checkLiteral(schema, x, type.of, `${at}[${i}]`, declared, used, v);
    return;
  }
  const def = schema.types.get(type.name);
  if (!def) return void v.push(`${at}: no type ${type.name}`);
  if (def.kind === "enum") {
    const e = value && typeof value === "object" && "$enum" in value ? (value as { $enum: string }).$enum : null;
    if (e === null || !def.values.has(e)) v.push(`${at}: not a value of enum ${type.name}`);
    return;
  }
  if (def.kind === "input") {
    if (typeof value !== "object" || Array.isArray(value)) return void v.push(`${at}: ${type.name} must be an object`);
    for (const [k, x] of Object.entries(value as Record<string, unknown>)) {
      const f = def.fields.get(k);
      if (!f) v.push(`${at}.${k}: ${type.name} has no field ${k}`);
      else checkLiteral(schema, x, f.type, `${at}.${k}`, declared, used, v);
    }
    return;
  }
  scalar(type.name, value, at, v);
}

/** A variable's JSON value against its declared type. */
function checkJson(schema: GraphqlSchema, value: unknown, type: TypeRef, at: string, v: string[]): void {
  if (type.kind === "non_null") {
    if (value === null) v.push(`${at}: null where ${show(type)} is required`);
    else checkJson(schema, value, type.of, at, v);
    return;
  }
  if (value === null) return;
  if (type.kind === "list") {
    for (const [i, x] of (Array.isArray(value) ? value : [value]).entries()) checkJson(schema, x, type.of, `${at}[${i}]`, v);
    return;
  }
  const def = schema.types.get(type.name);
  if (!def) return void v.push(`${at}: no type ${type.name}`);
  if (def.kind === "enum") {
    if (typeof value !== "string" || !def.values.has(value)) v.push(`${at}: ${JSON.stringify(value)} is not a value of enum ${type.name}`);
    return;
  }
  if (def.kind === "input") {
    if (typeof value !== "object" || Array.isArray(value)) return void v.push(`${at}: ${type.name} must be an object`);
    for (const [k, x] of Object.entries(value as Record<string, unknown>)) {
      const f = def.fields.get(k);
      if (!f) v.push(`${at}.${k}: ${type.name} has no field ${k}`);
      else checkJson(schema, x, f.type, `${at}.${k}`, v);
    }
    for (const [k, f] of def.fields)
      if (f.type.kind === "non_null" && !f.args.has("$default") && !(k in (value as object))) v.push(`${at}: ${type.name}.${k} is required`);
    return;
  }
  scalar(type.name, value, at, v);
}

function scalar(name: string, value: unknown, at: string, v: string[]): void {
  const ok =
    name === "String" || name === "ID"
      ? typeof value === "string" || (name === "ID" && typeof value === "number")
      : name === "Int"
        ? Number.isSafeInteger(value)
        : name === "Float"
          ? typeof value === "number"
          : name === "Boolean"
            ? typeof value === "boolean"
            : value !== undefined && (typeof value !== "object" || name === "JSON" || name === "JSONObject");
  if (!ok) v.push(`${at}: ${JSON.stringify(value)?.slice(0, 60)} is not a ${name}`);
}

/** One selected field of a request: what a fake executes (fake-linear.ts). Variables are `{ $var }`. */
export interface Selected {
  key: string;
  name: string;
  args: Record<string, unknown>;
  sel: Selected[] | null;
}

/** The first operation of a request, parsed for execution (check it with checkRequest first). */
export function parseOperation(query: string): { root: "Query" | "Mutation"; fields: Selected[] } {
  const p = new Parser(tokenize(query));
  let root: "Query" | "Mutation" = "Query";
  if (p.peek("query") || p.peek("mutation")) {
    root = p.name() === "mutation" ? "Mutation" : "Query";
    if (!p.peek("(") && !p.peek("{")) p.name();
  }
  if (p.peek("(")) {
    p.next();
    while (!p.peek(")")) p.next();
    p.next();
  }
  const block = (): Selected[] => {
    const out: Selected[] = [];
    p.expect("{");
    while (!p.peek("}")) {
      const key = p.name();
      let name = key;
      if (p.peek(":")) {
        p.next();
        name = p.name();
      }
      const args = p.peek("(") ? Object.fromEntries(p.args()) : {};
      out.push({ key, name, args, sel: p.peek("{") ? block() : null });
    }
    p.next();
    return out;
  };
  return { root, fields: block() };
}

/** A literal with its variables put in (enum literals become their names). */
export function resolveVariables(x: unknown, vars: Record<string, unknown>): unknown {
  if (Array.isArray(x)) return x.map((y) => resolveVariables(y, vars));
  if (x && typeof x === "object") {
    if ("$var" in x) return vars[(x as { $var: string }).$var] ?? null;
    if ("$enum" in x) return (x as { $enum: string }).$enum;
    return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, resolveVariables(y, vars)]));
  }
  return x;
}
