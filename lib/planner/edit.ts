// Appending items to loop.json's text without rewriting it: everything outside the `items` array
// (comments, key order, spacing) stays byte for byte; the new items follow the last one, indented
// like it. Pure: text in, text out. The caller validates the result as `loop run` would
// (lib/planner/append.ts); the input must already be syntactically valid JSON (json-strict.ts).
import { stringLiteralEnd } from "../definition/json-strict.ts";

/** Offsets into the text: [start, end) of a value. */
interface Span {
  start: number;
  end: number;
}
interface Member {
  key: string;
  value: Span;
}

/** Full-line `//` comments blanked with spaces, so offsets are those of the original text. */
function blankComments(text: string): string {
  return text.replace(/^[ \t]*\/\/[^\n]*/gm, (m) => " ".repeat(m.length));
}

class Scanner {
  pos = 0;
  constructor(readonly t: string) {}
  ws() {
    while (this.pos < this.t.length && " \t\r\n\uFEFF".includes(this.t[this.pos]!)) this.pos++;
  }
  string(): string {
    const end = stringLiteralEnd(this.t, this.pos);
    if (end < 0) throw new Error(`internal: expected a string at offset ${this.pos}`);
    const lit = this.t.slice(this.pos, end);
    this.pos = end;
    return JSON.parse(lit) as string;
  }
  /** Skips one value; returns its span, and its members or elements when it is an object or an array. */
  value(): { span: Span; members?: Member[]; elements?: Span[] } {
    this.ws();
    const start = this.pos;
    const c = this.t[this.pos];
    if (c === "{") {
      this.pos++;
      const members: Member[] = [];
      this.ws();
      if (this.t[this.pos] === "}") return { span: { start, end: ++this.pos }, members };
      for (;;) {
        this.ws();
        const key = this.string();
        this.ws();
        this.pos++; // ':'
        const v = this.value();
        members.push({ key, value: v.span });
        this.ws();
        if (this.t[this.pos++] === "}") return { span: { start, end: this.pos }, members };
      }
    }
    if (c === "[") {
      this.pos++;
      const elements: Span[] = [];
      this.ws();
      if (this.t[this.pos] === "]") return { span: { start, end: ++this.pos }, elements };
      for (;;) {
        elements.push(this.value().span);
        this.ws();
        if (this.t[this.pos++] === "]") return { span: { start, end: this.pos }, elements };
      }
    }
    if (c === '"') {
      this.string();
      return { span: { start, end: this.pos } };
    }
    const lit = /-?[0-9.eE+-]+|true|false|null/y;
    lit.lastIndex = this.pos;
    const r = lit.exec(this.t);
    if (!r) throw new Error(`internal: expected a value at offset ${this.pos}`);
    this.pos += r[0].length;
    return { span: { start, end: this.pos } };
  }
}

function lineStart(text: string, at: number): number {
  return text.lastIndexOf("\n", at - 1) + 1;
}
function indentAt(text: string, at: number): string {
  return /^[ \t]*/.exec(text.slice(lineStart(text, at)))![0];
}
/** The file's indentation unit: a tab if lines are tab-indented, else the smallest space indent (2 if none). */
function indentUnit(text: string): string {
  if (/^\t+\S/m.test(text)) return "\t";
  const sizes = [...text.matchAll(/^( +)\S/gm)].map((m) => m[1]!.length);
  return " ".repeat(sizes.length ? Math.min(...sizes) : 2);
}

/** An item as JSON: on one line (`{ "id": "a", … }`) or pretty-printed, every line after the first indented by `indent`. */
function itemJson(item: Record<string, unknown>, o: { oneLine: boolean; indent: string; unit: string }): string {
  if (o.oneLine)
    return `{ ${Object.entries(item)
      .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
      .join(", ")} }`;
  return JSON.stringify(item, null, o.unit).split("\n").join(`\n${o.indent}`);
}

interface AppendEdit {
  text: string;
  /**
   * What of the old text is kept as it was: the new text is old[0, kept.before) + the new or grown
   * items array + old[kept.after, end). For an existing array, the span is the array's.
   */
  kept: { before: number; after: number };
}

/** The text with `items` appended to loop.json's top-level `items` array (created when absent). */
export function appendItemsText(text: string, items: readonly Record<string, unknown>[]): AppendEdit {
  const scan = new Scanner(blankComments(text));
  const root = scan.value();
  if (!root.members) throw new Error("internal: loop.json's top level is not an object");
  const unit = indentUnit(text);
  const member = [...root.members].reverse().find((m) => m.key === "items");
  if (member && text[member.value.start] === "[") {
    const arr = member.value;
    const inner = new Scanner(blankComments(text));
    inner.pos = arr.start;
    const elements = inner.value().elements!;
    const last = elements[elements.length - 1];
    let insertAt: number;
    let piece: string;
    if (last) {
      // After the last item, indented like it (or one level in from the key when it shares a line with "[").
      const ownLine = text.slice(lineStart(text, last.start), last.start).trim() === "";
      const indent = ownLine ? indentAt(text, last.start) : indentAt(text, member.value.start) + unit;
      const oneLine = !text.slice(last.start, last.end).includes("\n");
      insertAt = last.end;
      piece = items.map((it) => `,\n${indent}${itemJson(it, { oneLine, indent, unit })}`).join("");
    } else {
      const keyIndent = indentAt(text, arr.start);
      const indent = keyIndent + unit;
      const body = items.map((it) => indent + itemJson(it, { oneLine: false, indent, unit }));
      const close = arr.end - 1;
      if (text.slice(arr.start + 1, close).includes("\n")) {
        // Comments inside the empty array stay where they are; the items go on the lines before "]".
        insertAt = lineStart(text, close);
        piece = body.join(",\n") + "\n";
      } else {
        insertAt = arr.start + 1;
        piece = `\n${body.join(",\n")}\n${keyIndent}`;
        // "[ ]": the blanks inside go too (they are inside the array).
        text = text.slice(0, arr.start + 1) + text.slice(close);
        const newText = text.slice(0, insertAt) + piece + text.slice(insertAt);
        return { text: newText, kept: { before: arr.start, after: arr.end } };
      }
    }
    const newText = text.slice(0, insertAt) + piece + text.slice(insertAt);
    return { text: newText, kept: { before: arr.start, after: arr.end } };
  }
  if (member) throw new Error("internal: items is not an array"); // refused by validation before any edit
  // No "items" key: add one as the last member of the top level.
  const lastMember = root.members[root.members.length - 1];
  const keyIndent = lastMember ? indentAt(text, lastMember.value.start) || unit : unit;
  const indent = keyIndent + unit;
  const body = items.map((it) => indent + itemJson(it, { oneLine: false, indent, unit })).join(",\n");
  const arrayText = `[\n${body}\n${keyIndent}]`;
  const insertAt = lastMember ? lastMember.value.end : root.span.start + 1;
  const prefix = `${lastMember ? "," : ""}\n${keyIndent}"items": `;
  const suffix = lastMember ? "" : "\n";
  const newText = text.slice(0, insertAt) + prefix + arrayText + suffix + text.slice(insertAt);
  return { text: newText, kept: { before: insertAt, after: insertAt } };
}
