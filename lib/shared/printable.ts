// Text from outside (an agent's question, a verify's or git's message, an operator's reply) shown
// at a terminal: control characters in it could move the cursor, recolour or retitle the terminal,
// so they are printed escaped, visibly (`\u001b`), and every colour on screen is the tool's own.

// C0, DEL, C1; and what reorders or hides text without being seen: soft hyphen, combining grapheme
// joiner, bidi marks, embeddings, overrides and isolates, Mongolian vowel separator, zero-width
// space, word joiner and invisible operators, line and paragraph separators, Hangul fillers, BOM,
// interlinear annotation, tag characters (invisible text). ZWJ and ZWNJ stay: scripts and emoji sequences need them. Right-to-left text shows its
// direction marks escaped, which is the price of never being reordered.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\u3164\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}]/gu;
const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `\u001b` as JSON writes it; `\u{e0041}` beyond the BMP. */
function escaped(c: string): string {
  const cp = c.codePointAt(0)!;
  return SHORT[c] ?? (cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, "0")}`);
}

/** One field or line made safe to print: control and invisible formatting characters escaped. */
export function printable(s: string): string {
  return s.replace(CONTROL, escaped);
}

/** A block of lines made safe to print, its line breaks kept. */
export function printableLines(s: string): string {
  return s.split("\n").map(printable).join("\n");
}

/** Text for a terminal, such as an agent's log: its line breaks and tabs kept, everything else printable() escapes escaped. */
export function printableText(s: string): string {
  return s
    .split("\n")
    .map((line) => line.split("\t").map(printable).join("\t"))
    .join("\n");
}
