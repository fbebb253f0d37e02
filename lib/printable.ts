// Text from outside (an agent's question, a verify's or git's message, an operator's reply) shown
// at a terminal: control characters in it could move the cursor, recolour or retitle the terminal,
// so they are printed escaped, visibly (`\u001b`), and every colour on screen is the tool's own.

// C0, DEL, C1; and what reorders or hides text without being seen: bidi marks, embeddings,
// overrides and isolates, zero-width space, word joiner and invisible operators, line and
// paragraph separators, BOM. (ZWJ and ZWNJ stay: scripts and emoji sequences need them.)
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** One field or line made safe to print: control and invisible formatting characters escaped. */
export function printable(s: string): string {
  return s.replace(CONTROL, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A block of lines made safe to print, its line breaks kept. */
export function printableLines(s: string): string {
  return s.split("\n").map(printable).join("\n");
}
