// Canonical JSON: the byte form every event hash is computed over.
// Keys sorted by UTF-16 code units, no whitespace, strings escaped as JSON.stringify does
// (after rejecting lone surrogates), numbers restricted to safe integers. Anything that could
// serialize two ways (NaN, Infinity, -0, fractions, undefined inside arrays) is rejected, not coerced.

import { CanonicalJsonError } from "../shared/errors.ts";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function canonicalJson(value: unknown): string {
  return encode(value, "");
}

function encode(value: unknown, path: string): string {
  switch (typeof value) {
    case "string":
      if (LONE_SURROGATE.test(value)) throw new CanonicalJsonError("lone surrogate in string", path);
      return JSON.stringify(value);
    case "number":
      if (!Number.isSafeInteger(value) || Object.is(value, -0)) throw new CanonicalJsonError(`number ${value} is not a safe integer`, path);
      return String(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          if (i) out += ",";
          const v = value[i];
          if (v === undefined) throw new CanonicalJsonError("undefined in array", `${path}[${i}]`);
          out += encode(v, `${path}[${i}]`);
        }
        return out + "]";
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new CanonicalJsonError(`unsupported object type ${proto?.constructor?.name ?? "?"}`, path);
      const keys = Object.keys(value).sort();
      let out = "{";
      let first = true;
      for (const k of keys) {
        const v = (value as Record<string, unknown>)[k];
        if (v === undefined) continue; // absent and undefined are the same key set
        if (LONE_SURROGATE.test(k)) throw new CanonicalJsonError("lone surrogate in key", path);
        if (!first) out += ",";
        first = false;
        out += JSON.stringify(k) + ":" + encode(v, path ? `${path}.${k}` : k);
      }
      return out + "}";
    }
    default:
      throw new CanonicalJsonError(`unsupported value of type ${typeof value}`, path);
  }
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/** The prev_hash of the first event: the chain's anchor. */
export const GENESIS_HASH = "0".repeat(64);
