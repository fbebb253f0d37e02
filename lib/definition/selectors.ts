// Resolving --work-item values against the loop's items. Fail closed: every value must parse and
// match an item, or nothing is selected and the whole command stops.
import { type Projection, requireItem } from "../log/projection.ts";
import { parseSelector } from "./refs.ts";
import { UnknownItemError } from "../shared/errors.ts";
import { didYouMean } from "../shared/suggest.ts";

/** An item as selectors see it: its id and canonical ref. */
interface SelectableItem {
  id: string;
  ref: string | null;
}

export function resolveSelectors(p: Projection, values: string[]): string[] {
  return resolveSelectorsIn(
    p.order.map((id) => ({ id, ref: requireItem(p, id).def.ref })),
    values,
  );
}

/** Items in presentation order: a ref shared with an item no longer in the definition picks the current one. */
export function resolveSelectorsIn(items: SelectableItem[], values: string[]): string[] {
  const parsed = values.map((v) => ({ v, sel: parseSelector(v) })); // throws RefError on bad syntax
  const out: string[] = [];
  for (const { v, sel } of parsed) {
    const id = sel.kind === "id" ? items.find((it) => it.id === sel.id)?.id : items.find((it) => it.ref === sel.ref.canonical)?.id;
    if (!id)
      throw new UnknownItemError(
        `--work-item "${v}": no item of this loop has this ${sel.kind === "id" ? "id" : "ref"}${
          sel.kind === "id"
            ? didYouMean(
                sel.id,
                items.map((it) => it.id),
              )
            : ""
        } (${knownItems(items)})`,
      );
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

/** The loop's item ids, for an error naming one that is not: the first ten, and how many more. */
function knownItems(items: readonly SelectableItem[]): string {
  if (items.length === 0) return "the loop has no items";
  const ids = items.slice(0, 10).map((it) => it.id);
  return `its items: ${ids.join(", ")}${items.length > 10 ? ` and ${items.length - 10} more` : ""}`;
}
