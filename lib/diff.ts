// A small structural diff for JSON values: the first few differing paths, for findings.
export function jsonDiff(a: unknown, b: unknown, path = "", out: string[] = [], limit = 20): string[] {
  if (out.length >= limit) return out;
  if (a === b) return out;
  const ta = Array.isArray(a) ? "array" : a === null ? "null" : typeof a;
  const tb = Array.isArray(b) ? "array" : b === null ? "null" : typeof b;
  if (ta !== tb || ta !== "object" && ta !== "array") {
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
    jsonDiff(x[k], y[k], path ? `${path}.${k}` : k, out, limit);
  }
  return out;
}

export function getPath(v: unknown, path: string): unknown {
  const parts = path.replace(/\[(\d+)\]/g, ".$1").split(".").filter(Boolean);
  let cur: any = v;
  for (const p of parts) {
    if (p === "length" && Array.isArray(cur)) return cur.length;
    cur = cur?.[p];
  }
  return cur;
}
