// Text from outside (an agent's question, a verify's or git's message, an operator's reply) shown
// at a terminal or on a page: control characters in it could move the cursor, recolour or retitle
// the terminal, and hidden ones could hide or reorder what a person reads, so every character of
// lib/shared/untrusted-text.ts's hidden set is printed escaped, visibly (`\u001b`), and every colour
// on screen is the tool's own. Right-to-left text shows its direction marks escaped, and an emoji
// sequence its joiners: the price of never being reordered or hiding a message.
import { HIDDEN_OR_LAYOUT } from "./untrusted-text.ts";

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `\u001b` as JSON writes it; `\u{e0041}` beyond the BMP. */
function escaped(c: string): string {
  const cp = c.codePointAt(0)!;
  return SHORT[c] ?? (cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, "0")}`);
}

/** One field or line made safe to print: control and hidden characters escaped, line breaks and tabs included. */
export function printable(s: string): string {
  return s.replace(HIDDEN_OR_LAYOUT, escaped);
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
