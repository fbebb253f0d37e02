// Resolving --work-item values against the loop's items. Fail closed: every value must parse and
// match an item, or nothing is selected and the whole command stops.
import type { Projection } from "./reducer.ts";
import { parseSelector } from "./refs.ts";

export class UnknownItemError extends Error {
  override name = "UnknownItemError";
}

export function resolveSelectors(p: Projection, values: string[]): string[] {
  const parsed = values.map((v) => ({ v, sel: parseSelector(v) })); // throws RefError on bad syntax
  const out: string[] = [];
  for (const { v, sel } of parsed) {
    const id =
      sel.kind === "id"
        ? (p.items[sel.id] ? sel.id : undefined)
        : Object.keys(p.items).find((k) => p.items[k]!.def.ref === sel.ref.canonical);
    if (!id) throw new UnknownItemError(`--work-item "${v}": no item of this loop has this ${sel.kind === "id" ? "id" : "ref"}`);
    if (!out.includes(id)) out.push(id);
  }
  return out;
}
