// --work-item values against the loop's items (lib/definition/selectors.ts): fail closed, and say
// which items there are (and the close one) when a value names none.
import { expect, test } from "bun:test";
import { resolveSelectorsIn } from "../../lib/definition/selectors.ts";
import { UnknownItemError } from "../../lib/shared/errors.ts";

const items = ["fix-login", "add-search", "docs"].map((id) => ({ id, ref: null }));
const refused = (values: string[], list = items) => {
  try {
    resolveSelectorsIn(list, values);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(UnknownItemError);
    return (err as Error).message;
  }
};

test("each value once, in the order given; an unknown one names the close item and lists them", () => {
  expect(resolveSelectorsIn(items, ["docs", "fix-login", "docs"])).toEqual(["docs", "fix-login"]);
  expect(refused(["fix-logn"])).toBe(
    '--work-item "fix-logn": no item of this loop has this id; did you mean "fix-login"? (its items: fix-login, add-search, docs)',
  );
  expect(refused(["nosuch"])).toBe('--work-item "nosuch": no item of this loop has this id (its items: fix-login, add-search, docs)');
  expect(refused(["x"], [])).toBe('--work-item "x": no item of this loop has this id (the loop has no items)');
  const many = Array.from({ length: 14 }, (_, i) => ({ id: `item-${i}`, ref: null }));
  expect(refused(["nosuch"], many)).toEndWith("(its items: item-0, item-1, item-2, item-3, item-4, item-5, item-6, item-7, item-8, item-9 and 4 more)");
});
