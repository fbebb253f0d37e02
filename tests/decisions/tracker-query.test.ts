// The live tracker query's decision (lib/decisions/tracker-query.ts) on plain data.
import { describe, expect, test } from "bun:test";
import { queryAppends, queryPrompt } from "../../lib/decisions/tracker-query.ts";

describe("queryAppends", () => {
  test("the issues no item has, in the tracker's order, as {ref, prompt}: loop's words naming the issue, never the tracker's text", () => {
    expect(
      queryAppends({
        provider: "linear",
        key: "ENG",
        issues: [{ number: 3 }, { number: 1 }, { number: 7 }],
        existingRefs: ["linear:ENG-1", null],
      }),
    ).toEqual([
      { ref: "linear:ENG-3", prompt: queryPrompt("linear:ENG-3") },
      { ref: "linear:ENG-7", prompt: queryPrompt("linear:ENG-7") },
    ]);
    expect(queryPrompt("linear:ENG-3")).toBe(
      "Do what the issue linear:ENG-3 asks. Its title, description and comments are in this handoff below, as the tracker gives them.",
    );
  });

  test("a ref already written another way is the same item; an issue listed twice is appended once", () => {
    expect(
      queryAppends({
        provider: "jira",
        key: "PROJ",
        issues: [{ number: 4 }, { number: 5 }, { number: 5 }],
        existingRefs: ["jira:proj-4"],
      }),
    ).toEqual([{ ref: "jira:PROJ-5", prompt: queryPrompt("jira:PROJ-5") }]);
  });

  test("nothing new: nothing to append", () => {
    expect(queryAppends({ provider: "linear", key: "ENG", issues: [{ number: 1 }], existingRefs: ["linear:ENG-1"] })).toEqual([]);
    expect(queryAppends({ provider: "linear", key: "ENG", issues: [], existingRefs: [] })).toEqual([]);
  });
});
