// A valibot schema compiled to a predicate that allocates nothing. valibot's `is` builds an output
// copy of every object it checks; replay checks every payload of the log, and that garbage was its
// largest cost (bench/README.md). The predicate answers exactly as `v.is(schema, x)` for the
// constructs lib/log/events.ts uses (tests/log/schema-check.test.ts compares the two on thousands of
// payloads) and refuses to compile any other construct, so a new one cannot be checked wrongly.
import type { GenericSchema } from "valibot";
import { UnsupportedSchemaError } from "../shared/errors.ts";

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

export function compileCheck(schema: GenericSchema): Check {
  const gen = new Gen();
  const body = gen.check(schema as unknown as Node, "x");
  // Straight-line code per schema: one shared closure per construct made every call site in them
  // megamorphic, and replay spent more time dispatching than checking (bench/README.md). The source
  // is built only from the schema's structure; literal values are passed in, never spliced as code.
  const factory = new Function(...gen.names, `return function check(x) {\n${body}\nreturn true;\n};`) as (...a: unknown[]) => Check;
  return factory(...gen.values);
}

/** Emits statements that `return false` when the value in a variable does not match a schema. */
class Gen {
  readonly names: string[] = [];
  readonly values: unknown[] = [];
  private vars = 0;

  /** A value the generated code refers to by name (literals, picklists, nested checks). */
  private param(value: unknown): string {
    this.names.push(`p${this.names.length}`);
    this.values.push(value);
    return this.names[this.names.length - 1]!;
  }

  private fresh(): string {
    return `v${this.vars++}`;
  }

  check(s: Node, x: string): string {
    if (s.pipe) {
      // pipe[0] is the schema the pipe was built on (itself possibly a pipe); the rest are
      // validations that apply once it matched.
      const [head, ...actions] = s.pipe;
      return [this.check(head!, x), ...actions.filter((a) => a.kind !== "metadata").map((a) => this.action(a, x))].join("\n");
    }
    if (s.default !== undefined || s.fallback !== undefined) throw new UnsupportedSchemaError(`${s.type} with a default or fallback`);
    switch (s.type) {
      case "string":
        return `if (typeof ${x} !== "string") return false;`;
      case "number":
        return `if (typeof ${x} !== "number" || ${x} !== ${x}) return false;`; // not NaN, as valibot
      case "boolean":
        return `if (typeof ${x} !== "boolean") return false;`;
      case "nullable":
        return `if (${x} !== null) {\n${this.check(s.wrapped!, x)}\n}`;
      case "literal": {
        const lit = this.param(s.literal);
        return `if (${x} !== ${lit} && !(${x} !== ${x} && ${lit} !== ${lit})) return false;`; // SameValueZero, as valibot
      }
      case "picklist":
        return `if (!${this.param(s.options)}.includes(${x})) return false;`;
      case "union": {
        // Each option is a whole check of its own: failing one must not fail the union.
        const options = (s.options as Node[]).map((o) => this.param(compileCheck(o as unknown as GenericSchema)));
        return `if (!(${options.map((o) => `${o}(${x})`).join(" || ")})) return false;`;
      }
      case "array": {
        const i = this.fresh();
        const e = this.fresh();
        return `if (!Array.isArray(${x})) return false;\nfor (let ${i} = 0; ${i} < ${x}.length; ${i}++) {\nconst ${e} = ${x}[${i}];\n${this.check(s.item!, e)}\n}`;
      }
      case "strict_object": {
        const entries = s.entries!;
        const keys = Object.keys(entries);
        const lines = [`if (!${x} || typeof ${x} !== "object") return false;`];
        for (const k of keys) {
          const v = entries[k]!;
          if (["nullish", "exact_optional"].includes(v.type)) throw new UnsupportedSchemaError(`optional entry "${k}" (${v.type})`);
          const key = JSON.stringify(k);
          const e = this.fresh();
          if (v.type === "optional") {
            // As valibot: an optional key may be absent or hold undefined; anything else is checked.
            if (v.default !== undefined) throw new UnsupportedSchemaError(`optional entry "${k}" with a default`);
            lines.push(`if (${key} in ${x}) {`, `const ${e} = ${x}[${key}];`, `if (${e} !== undefined) {`, this.check(v.wrapped!, e), `}`, `}`);
            continue;
          }
          lines.push(`if (!(${key} in ${x})) return false;`, `const ${e} = ${x}[${key}];`, this.check(v, e));
        }
        // No key but the schema's own: the same test as valibot's, against the entries object.
        const k = this.fresh();
        lines.push(`for (const ${k} in ${x}) if (!Object.prototype.hasOwnProperty.call(${this.param(entries)}, ${k})) return false;`);
        return `{\n${lines.join("\n")}\n}`;
      }
      case "record": {
        const k = this.fresh();
        const e = this.fresh();
        return [
          `if (!${x} || typeof ${x} !== "object") return false;`,
          `for (const ${k} in ${x}) {`,
          `if (!Object.prototype.hasOwnProperty.call(${x}, ${k}) || ${k} === "__proto__" || ${k} === "prototype" || ${k} === "constructor") continue;`,
          this.check(s.key!, k),
          `const ${e} = ${x}[${k}];`,
          this.check(s.value!, e),
          `}`,
        ].join("\n");
      }
      default:
        throw new UnsupportedSchemaError(`schema type "${s.type}"`);
    }
  }

  private action(a: Node, x: string): string {
    if (a.kind !== "validation") throw new UnsupportedSchemaError(`pipe item ${a.kind} "${a.type}"`);
    switch (a.type) {
      case "safe_integer":
        return `if (!Number.isSafeInteger(${x})) return false;`;
      case "min_value":
        return `if (!(${x} >= ${this.param(a.requirement)})) return false;`;
      // A string's or an array's length, as valibot reads it (comment ids: docs/trackers.md#comment-ids).
      case "min_length":
        return `if (!(${x}.length >= ${this.param(a.requirement)})) return false;`;
      case "max_length":
        return `if (!(${x}.length <= ${this.param(a.requirement)})) return false;`;
      default:
        throw new UnsupportedSchemaError(`validation "${a.type}"`);
    }
  }
}
