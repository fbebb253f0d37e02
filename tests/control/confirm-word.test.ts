// What an operator types to confirm what cannot be undone (docs/cli/README.md#confirmation): the one
// item's id, else the loop's name.
import { expect, test } from "bun:test";
import { wordToType } from "../../lib/control/confirm.ts";

test("one item (named once or more): its id; several: the loop's name", () => {
  expect(wordToType(["fix-login"], "api")).toEqual({ word: "fix-login", what: "the item's id" });
  expect(wordToType(["fix-login", "fix-login"], "api")).toEqual({ word: "fix-login", what: "the item's id" });
  expect(wordToType(["fix-login", "add-search"], "api")).toEqual({ word: "api", what: "the loop's name" });
  expect(wordToType([], "api")).toEqual({ word: "api", what: "the loop's name" });
});
