// The live tracker query's decision (lib/decisions/tracker-query.ts) on plain data.
import { describe, expect, test } from "bun:test";
import { queryAppends } from "../../lib/decisions/tracker-query.ts";

describe("queryAppends", () => {
  test("the issues no item has, in the tracker's order, as {ref, prompt: title}", () => {
    expect(
      queryAppends({
        provider: "linear",
        key: "ENG",
        issues: [
          { number: 3, title: "Fix the login" },
          { number: 1, title: "Add the greeting" },
          { number: 7, title: "Write docs" },
        ],
        existingRefs: ["linear:ENG-1", null],
      }),
    ).toEqual([
      { ref: "linear:ENG-3", prompt: "Fix the login" },
      { ref: "linear:ENG-7", prompt: "Write docs" },
    ]);
  });

  test("a ref already written another way is the same item; an issue listed twice is appended once", () => {
    expect(
      queryAppends({
        provider: "jira",
        key: "PROJ",
        issues: [
          { number: 4, title: "a" },
          { number: 5, title: "b" },
          { number: 5, title: "b again" },
        ],
        existingRefs: ["jira:proj-4"],
      }),
    ).toEqual([{ ref: "jira:PROJ-5", prompt: "b" }]);
  });

  test("nothing new: nothing to append; an issue without a title gets its ref as its prompt", () => {
    expect(queryAppends({ provider: "linear", key: "ENG", issues: [{ number: 1, title: "x" }], existingRefs: ["linear:ENG-1"] })).toEqual([]);
    expect(queryAppends({ provider: "linear", key: "ENG", issues: [], existingRefs: [] })).toEqual([]);
    expect(queryAppends({ provider: "linear", key: "ENG", issues: [{ number: 2, title: "  " }], existingRefs: [] })).toEqual([
      { ref: "linear:ENG-2", prompt: "linear:ENG-2" },
    ]);
  });
});
