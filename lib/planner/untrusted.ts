// Text the planner is shown but must never obey (issue titles and bodies, existing items' prompts):
// cleaned, capped and fenced, so it reads as data whatever it says. Pure.
//
// Cleaning removes what could hide text from a reviewer or change how it reads: HTML comments
// (invisible when a forge renders them), control characters other than tab and newline, bidi
// controls and zero-width characters. Fencing puts every line behind "| " between two marker lines
// carrying a nonce the text itself does not contain: no line of the data can start a prompt section
// or close the fence.
import { createHash } from "node:crypto";

// C0/C1 controls except \t and \n; bidi marks, embeddings, overrides and isolates; zero-width and
// invisible formatting characters; BOM; tag characters.
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;

/** Characters of one untrusted field kept at most (the rest is cut, and the cut is said). */
export const FIELD_CAP = 4000;

export function cleanUntrusted(text: string, cap = FIELD_CAP): string {
  let s = text
    .replace(/\r\n?/g, "\n")
    .replace(/<!--[\s\S]*?(-->|$)/g, "")
    .replace(INVISIBLE, "");
  if (s.length > cap) s = `${s.slice(0, cap)}\n[… cut: ${s.length - cap} more characters]`;
  return s;
}

/** A nonce not found in any of the texts (deterministic: a hash of them, lengthened until absent). */
export function fenceNonce(texts: readonly string[]): string {
  const all = texts.join("\u0000");
  let nonce = createHash("sha256").update(all).digest("hex").slice(0, 12);
  while (all.includes(nonce)) nonce = createHash("sha256").update(nonce).digest("hex").slice(0, nonce.length + 4);
  return nonce;
}

/** One block of data: a begin marker naming what it is, each line behind "| ", an end marker; cut at `cap` characters. */
export function fence(label: string, text: string, nonce: string, cap = FIELD_CAP): string {
  const body = cleanUntrusted(text, cap)
    .split("\n")
    .map((l) => `| ${l}`)
    .join("\n");
  return `<<<DATA ${nonce} ${label}\n${body}\n>>>DATA ${nonce}`;
}
