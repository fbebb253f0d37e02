// Atlassian Document Format to text and back (lib/forge/adf.ts, for Jira: docs/trackers.md#jira):
// the nodes Jira writes read as text a person would write; unknown nodes give their text or their
// type; a document nested or wide past the bounds (an ADF bomb) is read as far as they go and said
// cut; text goes back as paragraphs with hard breaks, never an empty text node.
import { describe, expect, test } from "bun:test";
import { adfToText, textToAdf } from "../../lib/forge/adf.ts";

const t = (text: string, marks?: unknown[]) => ({ type: "text", text, ...(marks ? { marks } : {}) });
const p = (...content: unknown[]) => ({ type: "paragraph", content });
const doc = (...content: unknown[]) => ({ type: "doc", version: 1, content });

describe("ADF to text", () => {
  test("paragraphs, headings, marks, breaks, mentions, cards, lists, code, quotes, tables", () => {
    const d = doc(
      { type: "heading", attrs: { level: 2 }, content: [t("Steps")] },
      p(t("Run "), t("make", [{ type: "code" }]), { type: "hardBreak" }, t("then ask "), { type: "mention", attrs: { id: "5b10", text: "@Ada" } }),
      {
        type: "bulletList",
        content: [
          { type: "listItem", content: [p(t("one"))] },
          { type: "listItem", content: [p(t("two")), { type: "orderedList", content: [{ type: "listItem", content: [p(t("nested"))] }] }] },
        ],
      },
      { type: "codeBlock", attrs: { language: "sh" }, content: [t("rm -rf /")] },
      { type: "blockquote", content: [p(t("quoted"))] },
      p({ type: "inlineCard", attrs: { url: "https://example.com/x" } }, t(" "), { type: "emoji", attrs: { shortName: ":smile:", text: "😄" } }),
      {
        type: "table",
        content: [
          {
            type: "tableRow",
            content: [
              { type: "tableHeader", content: [p(t("a"))] },
              { type: "tableCell", content: [p(t("b"))] },
            ],
          },
        ],
      },
      { type: "mediaSingle", content: [{ type: "media", attrs: { id: "x", type: "file" } }] },
      { type: "someFutureNode" },
    );
    expect(adfToText(d)).toEqual({
      text: [
        "## Steps",
        "Run make",
        "then ask @Ada",
        "- one",
        "- two",
        "  1. nested",
        "```",
        "rm -rf /",
        "```",
        "> quoted",
        "https://example.com/x 😄",
        "a | b",
        "[attachment]",
        "[someFutureNode]",
      ].join("\n"),
      cut: false,
    });
  });

  test("not ADF at all reads as nothing, never a throw", () => {
    for (const x of [null, "text", 42, [], { type: 7 }, { content: "no" }]) expect(adfToText(x).cut).toBe(false);
    expect(adfToText("text").text).toBe("");
  });

  test("an ADF bomb: nesting past the depth bound, or millions of nodes, is read as far as the bounds and said cut", () => {
    let deep: unknown = t("bottom");
    for (let i = 0; i < 10_000; i++) deep = { type: "blockquote", content: [deep] };
    expect(adfToText(doc(deep)).cut).toBe(true);
    const wide = doc(...Array.from({ length: 300_000 }, () => p(t("x"))));
    const r = adfToText(wide);
    expect(r.cut).toBe(true);
    expect(r.text.length).toBeLessThanOrEqual(200_000);
    const long = adfToText(doc(p(t("y".repeat(1_000_000)))));
    expect([long.cut, long.text.length]).toEqual([true, 200_000]);
  });
});

describe("text to ADF", () => {
  test("paragraphs at blank lines, hard breaks within, no empty text node; and back again", () => {
    const adf = textToAdf("loop: landed in PR #12\nhttps://x/pull/12\n\n\nDone.\r\n");
    expect(adf).toEqual({ type: "doc", version: 1, content: [p(t("loop: landed in PR #12"), { type: "hardBreak" }, t("https://x/pull/12")), p(t("Done."))] });
    expect(adfToText(adf).text).toBe("loop: landed in PR #12\nhttps://x/pull/12\nDone.");
    expect(
      textToAdf("a\n\nb")
        .content.flatMap((x: any) => x.content)
        .every((n: any) => n.type !== "text" || n.text !== ""),
    ).toBe(true);
    expect(textToAdf("")).toEqual({ type: "doc", version: 1, content: [] });
  });
});
