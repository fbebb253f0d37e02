// Building HTML and SVG from text strangers wrote. Everything interpolated into a template is escaped
// for both a text node and a double-quoted attribute (the only two contexts the pages use), unless it
// is a `Markup` this module made. So a forgotten escape is impossible to write: to put raw markup in a
// page, code must ask for it by name (`trusted`), and nothing from the log or a file is ever passed there.
import { printable, printableText } from "../shared/printable.ts";

/** Markup built by `html` (or a constant of ours): interpolated as it is. */
export class Markup {
  /** Makes the type nominal: an object that merely has a `text` is not Markup. */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read by no one: it makes Markup nominal
  private readonly markup = true;
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * Text for a text node or a double-quoted attribute value, in HTML or SVG: the five characters that
 * can end either context, or start markup, are replaced by entities. Control characters and the
 * invisible ones that reorder text (bidi overrides) are shown escaped (lib/shared/printable.ts),
 * so what an agent wrote reads as it is; line breaks and tabs are kept.
 */
export function escapeText(s: string): string {
  if (!NEEDS_WORK.test(s)) return s;
  return printableText(s).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** One line of outside text (a reason, a question as a label): line breaks shown as \n too. */
export function escapeLine(s: string): string {
  if (!NEEDS_WORK.test(s)) return s;
  return printable(s).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/**
 * Anything but printable ASCII without the five characters above: most of a page (ids, statuses,
 * numbers, plain reasons) is nothing else, and is put in as it is (a page of 500 items escapes
 * thousands of strings: bench/README.md, loop serve).
 */
const NEEDS_WORK = /[^\x20-\x21\x23-\x25\x28-\x3b\x3d\x3f-\x7e]/;

type Value = Markup | string | number | boolean | null | undefined | readonly Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Markup) return v.text;
  if (Array.isArray(v)) return (v as readonly Value[]).map(render).join("");
  return escapeText(String(v));
}

/** A template whose every interpolation is escaped, unless it is Markup; arrays are joined. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Markup {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Markup(out);
}

/** One line of outside text as Markup (escapeLine). */
export function line(s: string | null | undefined): Markup {
  return new Markup(s == null ? "" : escapeLine(s));
}

/** Markup of our own (a constant stylesheet link, a pre-built SVG): never anything read from outside. */
export function trusted(text: string): Markup {
  return new Markup(text);
}

/**
 * A link target from outside (a pull request's address from the forge): only http(s) URLs, so a
 * `javascript:` or `data:` address can never become a link; null for anything else (shown as text).
 */
export function safeHref(url: unknown): string | null {
  if (typeof url !== "string") return null;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch {
    return null;
  }
}

/** A path segment of our own URLs (a loop name, an item id): percent-encoded. */
export function seg(s: string): string {
  return encodeURIComponent(s);
}

/** Cut outside text to `max` characters (never half a surrogate pair), with an ellipsis. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max - 1;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end) + "…";
}
