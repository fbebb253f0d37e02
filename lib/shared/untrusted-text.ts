// Text from outside loop is hostile (an issue, a comment, a review, a CI log, an agent's question,
// a planner's answer, a verify's output): it may carry characters that hide text or reorder it, so
// that a person and a model read different things. This module is the one definition of those
// characters and the one fence that quotes outside text as data. Every reader of outside text does
// one of three things with them: removes them (text for an agent or a model: `stripHidden`,
// `cleanText`), escapes them visibly (text for a terminal or a page: lib/shared/printable.ts), or
// refuses them (loop.json stores none: lib/definition/semantics.ts).

/**
 * The hidden characters, as a `v`-mode class: every control (C0, DEL, C1), every format character
 * (bidi marks, embeddings, overrides and isolates, zero-width space and joiners, word joiner and
 * invisible operators, BOM, interlinear annotation, tag characters), every default-ignorable code
 * point (Unicode's own list: soft hyphen, combining grapheme joiner, Hangul fillers, Mongolian
 * selectors, variation selectors U+FE00–FE0F and U+E0100–E01EF, the reserved ones), lone surrogates,
 * the line and paragraph separators, and the Braille blank U+2800, which shows nothing. Emoji
 * sequences lose their joiners and selectors: that is the price of never carrying a hidden message.
 */
const HIDDEN_CLASS = String.raw`[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]`;

/** Hidden characters but tab and newline, which outside text keeps as layout. */
const HIDDEN = new RegExp(String.raw`[${HIDDEN_CLASS}--[\t\n]]`, "gv");
/** Hidden characters, tab and newline included: what one line shown at a terminal escapes. */
export const HIDDEN_OR_LAYOUT = new RegExp(HIDDEN_CLASS, "gv");
const ONE_HIDDEN = new RegExp(String.raw`[${HIDDEN_CLASS}--[\t\n]]`, "v");

/** Whether `text` holds a hidden character (tab and newline excepted). */
export function hasHidden(text: string): boolean {
  return ONE_HIDDEN.test(text);
}

/** `text` without its hidden characters (tab and newline kept; a lone CR is hidden, so normalize line ends first). */
export function stripHidden(text: string): string {
  return text.replace(HIDDEN, "");
}

/**
 * Outside text made fit for an agent or a model to read: line ends normalized, HTML comments cut
 * (they render invisibly on a forge but not in a file; an unclosed one hides the rest, so it is cut
 * to the end), hidden characters removed.
 */
export function cleanText(text: string): string {
  return stripHidden(text.replace(/\r\n?/g, "\n").replace(/<!--[\s\S]*?(?:-->|$)/g, ""));
}

/** The hidden characters of `text` (tab and newline excepted): how many, and the first few as `U+XXXX` at their code-point index. */
export function hiddenIn(text: string, first = 3): { count: number; first: { at: number; codePoint: string }[] } {
  const out: { at: number; codePoint: string }[] = [];
  let count = 0;
  let at = 0;
  for (const c of text) {
    if (ONE_HIDDEN.test(c)) {
      count++;
      if (out.length < first) out.push({ at, codePoint: codePointName(c.codePointAt(0)!) });
    }
    at++;
  }
  return { count, first: out };
}

/** `U+202E`, as Unicode writes a code point. */
export function codePointName(cp: number): string {
  return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
}

/**
 * Text as one code block, as it is: the fence is longer than any run of backticks inside, so the
 * text cannot close it, and none of its lines can read as a heading of the document around it. The
 * caller cleans outside text first (cleanText) and says above the block where it came from and that
 * it is data; loop's own records (a verify log's tail, an operator's reply) are fenced as they are.
 */
export function fence(body: string): string {
  const longest = Math.max(0, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const marks = "`".repeat(Math.max(3, longest + 1));
  return `${marks}text\n${body}\n${marks}`;
}
