// Atlassian Document Format (Jira Cloud's descriptions and comments, REST v3: docs/trackers.md#jira)
// to plain text on the way in, and plain text to ADF on the way out. Pure. ADF is what a stranger
// wrote, so the walk is bounded (depth, nodes, characters: an "ADF bomb" of nesting or of millions
// of nodes reads as far as the bounds and says it was cut) and every node it does not know gives
// its text, or its type in brackets, never a guess. The text is still untrusted: callers fence it.

/** How deep ADF nests before the rest is cut (real documents: a table in a panel in a list, < 20). */
const MAX_DEPTH = 64;
/** Nodes read at most. */
const MAX_NODES = 100_000;
/** Characters of text produced at most. */
const MAX_CHARS = 200_000;

type Node = { type?: unknown; text?: unknown; content?: unknown; attrs?: Record<string, unknown> | null };

/** ADF as text: paragraphs and blocks on their own lines, list items marked, mentions and cards by their text; `cut` when a bound was reached. */
export function adfToText(doc: unknown): { text: string; cut: boolean } {
  let nodes = 0;
  let chars = 0;
  let cut = false;
  const out: string[] = [];
  const emit = (s: string) => {
    if (cut) return;
    if (chars + s.length > MAX_CHARS) {
      out.push(s.slice(0, MAX_CHARS - chars));
      chars = MAX_CHARS;
      cut = true;
      return;
    }
    out.push(s);
    chars += s.length;
  };
  const str = (x: unknown) => (typeof x === "string" ? x : "");
  const walk = (n: unknown, depth: number, prefix: string): void => {
    if (cut) return;
    if (depth > MAX_DEPTH || ++nodes > MAX_NODES) {
      cut = true;
      return;
    }
    if (!n || typeof n !== "object" || Array.isArray(n)) return;
    const node = n as Node;
    const kids = Array.isArray(node.content) ? node.content : [];
    const children = (p = prefix) => {
      for (const k of kids) walk(k, depth + 1, p);
    };
    const attrs = node.attrs && typeof node.attrs === "object" ? node.attrs : {};
    switch (node.type) {
      case "text":
        return emit(str(node.text));
      case "hardBreak":
        return emit(`\n${prefix}`);
      case "mention":
        return emit(str(attrs.text) || `@${str(attrs.id)}`);
      case "emoji":
        return emit(str(attrs.text) || str(attrs.shortName));
      case "inlineCard":
      case "blockCard":
        return emit(str(attrs.url) || `[${node.type}]`);
      case "status":
      case "date":
        return emit(str(attrs.text) || str(attrs.timestamp));
      case "rule":
        return emit(`${prefix}---\n`);
      case "paragraph":
      case "heading":
        emit(prefix + (node.type === "heading" ? `${"#".repeat(Math.min(6, Math.max(1, Number(attrs.level) || 1)))} ` : ""));
        children();
        return emit("\n");
      case "codeBlock":
        emit(`${prefix}\`\`\`\n${prefix}`);
        children();
        return emit(`\n${prefix}\`\`\`\n`);
      case "bulletList":
      case "orderedList":
        kids.forEach((k, i) => {
          const mark = node.type === "orderedList" ? `${i + 1}. ` : "- ";
          const item = k as Node;
          const inner = Array.isArray(item?.content) ? item.content : [];
          emit(prefix + mark);
          // The item's first paragraph follows its mark on the same line; the rest indent.
          inner.forEach((c, j) => {
            const para = c as Node;
            if (j === 0 && para?.type === "paragraph") {
              for (const t of Array.isArray(para.content) ? para.content : []) walk(t, depth + 3, `${prefix}  `);
              emit("\n");
            } else walk(c, depth + 2, `${prefix}  `);
          });
          if (inner.length === 0) emit("\n");
          nodes++;
        });
        return;
      case "blockquote":
        return children(`${prefix}> `);
      case "media":
      case "mediaSingle":
      case "mediaGroup":
        if (node.type === "media") return emit(`${prefix}[attachment]\n`);
        return children();
      case "tableRow":
        emit(prefix);
        kids.forEach((k, i) => {
          if (i) emit(" | ");
          const cell = k as Node;
          for (const c of Array.isArray(cell?.content) ? cell.content : []) {
            const p = c as Node;
            if (p?.type === "paragraph") for (const t of Array.isArray(p.content) ? p.content : []) walk(t, depth + 3, prefix);
            else walk(c, depth + 2, prefix);
          }
        });
        return emit("\n");
      default:
        // doc, panel, table, expand, layouts, and types this module does not know: their content.
        if (kids.length) return children();
        if (typeof node.type === "string" && node.type !== "doc") emit(`[${node.type.slice(0, 40)}]`);
    }
  };
  walk(doc, 0, "");
  return {
    text: out
      .join("")
      .replace(/\n{3,}/g, "\n\n")
      .trim(),
    cut,
  };
}

/** Text as an ADF document: paragraphs at blank lines, lines within one joined by hard breaks (ADF's text nodes are never empty). */
export function textToAdf(text: string): { type: "doc"; version: 1; content: unknown[] } {
  const paragraphs = text
    .replace(/\r\n?/g, "\n")
    .split(/\n{2,}/)
    .map((p) => p.replace(/^\n+|\n+$/g, ""))
    .filter((p) => p.trim() !== "");
  const content = paragraphs.map((p) => {
    const inline: unknown[] = [];
    p.split("\n").forEach((line, i) => {
      if (i) inline.push({ type: "hardBreak" });
      if (line) inline.push({ type: "text", text: line });
    });
    return { type: "paragraph", content: inline };
  });
  return { type: "doc", version: 1, content };
}
