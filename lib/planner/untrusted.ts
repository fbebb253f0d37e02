// Text the planner is shown but must never obey (issue titles and bodies, existing items' prompts,
// the brief): cleaned (lib/shared/untrusted-text.ts: hidden characters and HTML comments removed),
// capped, and fenced with a label above it, so it reads as data whatever it says. Pure.
import { cleanText, fence } from "../shared/untrusted-text.ts";

/** Characters of one untrusted field kept at most (the rest is cut, and the cut is said). */
const FIELD_CAP = 4000;

export function cleanUntrusted(text: string, cap = FIELD_CAP): string {
  const s = cleanText(text);
  const chars = Array.from(s);
  return chars.length > cap ? `${chars.slice(0, cap).join("")}\n[… cut: ${chars.length - cap} more characters]` : s;
}

/** One block of data: a label line naming what it is, then the cleaned text, cut at `cap` characters, as one fenced block. */
export function dataBlock(label: string, text: string, cap = FIELD_CAP): string {
  return `data: ${cleanText(label).replace(/\s+/g, " ").trim()}\n${fence(cleanUntrusted(text, cap))}`;
}
