// A valibot schema compiled to a predicate that allocates nothing. valibot's `is` builds an output
// copy of every object it checks; replay checks every payload of the log, and that garbage was its
// largest cost (bench/README.md). The predicate answers exactly as `v.is(schema, x)` for the
// constructs lib/events.ts uses (tests/schema-check.test.ts compares the two on thousands of
// payloads) and refuses to compile any other construct, so a new one cannot be checked wrongly.
import type { GenericSchema } from "valibot";

export type Check = (x: unknown) => boolean;

type Node = {
  kind: string;
  type: string;
  pipe?: Node[];
  wrapped?: Node;
  item?: Node;
  options?: unknown[];
  literal?: unknown;
  entries?: Record<string, Node>;
  key?: Node;
  value?: Node;
  requirement?: unknown;
  default?: unknown;
  fallback?: unknown;
};

export class UnsupportedSchemaError extends Error {
  override name = "UnsupportedSchemaError";
}

export function compileCheck(schema: GenericSchema): Check {
  return compile(schema as unknown as Node);
}

function compile(s: Node): Check {
  if (s.pipe) {
    // pipe[0] is the schema the pipe was built on (itself possibly a pipe); the rest are
    // validations that apply once it matched.
    const [head, ...actions] = s.pipe;
    const checks = [compile(head!), ...actions.filter((a) => a.kind !== "metadata").map(action)];
    return (x) => {
      for (let i = 0; i < checks.length; i++) if (!checks[i]!(x)) return false;
      return true;
    };
  }
  if (s.default !== undefined || s.fallback !== undefined) throw new UnsupportedSchemaError(`${s.type} with a default or fallback`);
  switch (s.type) {
    case "string":
      return (x) => typeof x === "string";
    case "number":
      return (x) => typeof x === "number" && !Number.isNaN(x);
    case "boolean":
      return (x) => typeof x === "boolean";
    case "nullable": {
      const inner = compile(s.wrapped!);
      return (x) => x === null || inner(x);
    }
    case "literal": {
      const lit = s.literal;
      return (x) => x === lit || (x !== x && lit !== lit); // SameValueZero, as valibot
    }
    case "picklist": {
      const options = s.options!;
      return (x) => options.includes(x);
    }
    case "union": {
      const options = (s.options as Node[]).map(compile);
      return (x) => {
        for (let i = 0; i < options.length; i++) if (options[i]!(x)) return true;
        return false;
      };
    }
    case "array": {
      const item = compile(s.item!);
      return (x) => {
        if (!Array.isArray(x)) return false;
        for (let i = 0; i < x.length; i++) if (!item(x[i])) return false;
        return true;
      };
    }
    case "strict_object": {
      const keys = Object.keys(s.entries!);
      const checks = keys.map((k) => {
        const v = s.entries![k]!;
        if (["optional", "nullish", "exact_optional"].includes(v.type)) throw new UnsupportedSchemaError(`optional entry "${k}"`);
        return compile(v);
      });
      const known = s.entries!;
      return (x) => {
        if (!x || typeof x !== "object") return false;
        const o = x as Record<string, unknown>;
        for (let i = 0; i < keys.length; i++) if (!(keys[i]! in o) || !checks[i]!(o[keys[i]!])) return false;
        for (const k in o) if (!Object.prototype.hasOwnProperty.call(known, k)) return false;
        return true;
      };
    }
    case "record": {
      const key = compile(s.key!);
      const value = compile(s.value!);
      return (x) => {
        if (!x || typeof x !== "object") return false;
        const o = x as Record<string, unknown>;
        for (const k in o)
          if (Object.prototype.hasOwnProperty.call(o, k) && k !== "__proto__" && k !== "prototype" && k !== "constructor")
            if (!key(k) || !value(o[k])) return false;
        return true;
      };
    }
    default:
      throw new UnsupportedSchemaError(`schema type "${s.type}"`);
  }
}

function action(a: Node): Check {
  if (a.kind !== "validation") throw new UnsupportedSchemaError(`pipe item ${a.kind} "${a.type}"`);
  switch (a.type) {
    case "safe_integer":
      return (x) => Number.isSafeInteger(x);
    case "min_value": {
      const min = a.requirement as number;
      return (x) => (x as number) >= min;
    }
    default:
      throw new UnsupportedSchemaError(`validation "${a.type}"`);
  }
}
