// Item ids made from prompts: stable, readable slugs ("Fix the login redirect loop" ->
// "fix-login-redirect-loop"). Pure: the same prompt always gives the same id, whatever else the loop
// holds, so an id never depends on the order items were added in. A slug that is already taken is
// the caller's to refuse (naming the item that holds it), never silently suffixed.
import { isItemId } from "../definition/refs.ts";

/** Words that add length but no meaning to an id. */
const STOP = new Set([
  "a",
  "an",
  "the",
  "of",
  "to",
  "for",
  "in",
  "on",
  "and",
  "or",
  "with",
  "from",
  "into",
  "by",
  "at",
  "is",
  "be",
  "that",
  "this",
  "it",
  "its",
  "what",
  "which",
  "so",
  "as",
  "all",
  "every",
]);

/** At most this many words and characters: long enough to tell items apart, short enough for a branch name. */
const SLUG_MAX_WORDS = 5;
const SLUG_MAX_CHARS = 48;

/** The id `loop add` gives an item without one: the first meaningful words of its prompt's first line. */
export function slugFromPrompt(prompt: string): string {
  const firstLine = prompt.split("\n").find((l) => l.trim() !== "") ?? "";
  const words = firstLine
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "") // accents off: "café" -> "cafe"
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim()
    .split(" ")
    .filter((w) => w !== "");
  const meaningful = words.filter((w) => !STOP.has(w));
  let slug = "";
  for (const w of (meaningful.length ? meaningful : words).slice(0, SLUG_MAX_WORDS)) {
    const next = slug ? `${slug}-${w}` : w;
    if (next.length > SLUG_MAX_CHARS) break;
    slug = next;
  }
  if (slug === "") slug = (words[0] ?? "").slice(0, SLUG_MAX_CHARS);
  return isItemId(slug) ? slug : "item";
}
