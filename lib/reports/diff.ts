// A small structural diff for JSON values: the first few differing paths, for findings.
export function jsonDiff(a: unknown, b: unknown, path = "", out: string[] = [], limit = 20): string[] {
  if (out.length >= limit) return out;
  if (a === b) return out;
  const ta = Array.isArray(a) ? "array" : a === null ? "null" : typeof a;
  const tb = Array.isArray(b) ? "array" : b === null ? "null" : typeof b;
  if (ta !== tb || (ta !== "object" && ta !== "array")) {
    out.push(path || "<root>");
    return out;
  }
  if (ta === "array") {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) out.push(`${path}.length`);
    for (let i = 0; i < Math.min(x.length, y.length); i++) jsonDiff(x[i], y[i], `${path}[${i}]`, out, limit);
    return out;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
    jsonDiff(own(x, k), own(y, k), path ? `${path}.${k}` : k, out, limit);
  }
  return out;
}

/** A key's own value: an id like "constructor" must not find Object.prototype's. */
function own(o: unknown, k: string): unknown {
  return typeof o === "object" && o !== null && Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined;
}

/** The value at a path jsonDiff reported ("<root>" is the value itself). */
export function getPath(v: unknown, path: string): unknown {
  if (path === "<root>") return v;
  const parts = path
    .replace(/\[(\d+)\]/g, ".$1")
    .split(".")
    .filter(Boolean);
  let cur: unknown = v;
  for (const p of parts) {
    if (p === "length" && Array.isArray(cur)) return cur.length;
    cur = own(cur, p);
  }
  return cur;
}
