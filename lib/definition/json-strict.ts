// A strict JSON parser for hand-edited files (loop.json), used instead of JSON.parse because:
//   - a syntax error names its line and column (JSON.parse's messages depend on the engine and may
//     give no position), with a hint for the usual slips (trailing commas, end-of-line comments);
//   - a duplicate key, which JSON.parse silently resolves to the last one, is reported at its path
//     (`items[0].verify`), so the caller can list it with its other problems;
//   - a string holding an unpaired surrogate escape ("\ud800"), which JSON.parse accepts but which is
//     not text, is rejected.
// It also ignores a leading byte-order mark and strips full-line `//` comments: a line whose first
// non-blank characters are `//` is blanked before parsing (JSON strings cannot span lines, so such a
// line is never inside a string). Comments anywhere else are syntax errors. Line numbers are kept.
// Nesting is limited (MAX_DEPTH), so hostile input is a syntax error, not a stack overflow.
// "__proto__" is an ordinary own key of the result, never a prototype.
import { JsonSyntaxError } from "../shared/errors.ts";

interface StrictJson {
  value: unknown;
  /** Path of each repeated key (one entry per repeat), in document order; the last value wins. */
  duplicates: string[];
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_DEPTH = 64;

/**
 * A path as `items[3].dependsOn[0]`: numbers as indexes, identifier-like strings as `.key` (no dot
 * first), any other key as `["key"]`. "" for the root.
 */
export function formatJsonPath(keys: readonly unknown[]): string {
  let out = "";
  for (const key of keys) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * The end (exclusive) of the JSON string literal whose opening quote is at `start`, or -1 when it
 * is not a complete one (a raw control character, a bad escape, no closing quote). Scanned run by
 * run: one regular expression over the whole literal recurses per character and gives up on a
 * string of a few megabytes, calling a valid file invalid.
 */
export function stringLiteralEnd(text: string, start: number): number {
  if (text[start] !== '"') return -1;
  let at = start + 1;
  for (;;) {
    PLAIN_RUN.lastIndex = at;
    at += PLAIN_RUN.exec(text)![0].length;
    const c = text[at];
    if (c === '"') return at + 1;
    if (c !== "\\") return -1; // the end of the text, or a raw control character
    ESCAPE.lastIndex = at;
    const esc = ESCAPE.exec(text);
    if (!esc) return -1;
    at += esc[0].length;
  }
}

/** Parses JSON text as described above; throws JsonSyntaxError at the first syntax error. */
export function parseStrictJson(input: string): StrictJson {
  const text = input
    .replace(/^\uFEFF/, "")
    .split("\n")
    .map((line) => (/^\s*\/\//.test(line) ? "" : line))
    .join("\n");
  let pos = 0;
  const duplicates: string[] = [];

  const fail = (expected: string, at = pos): never => {
    const before = text.slice(0, at);
    const line = before.split("\n").length;
    const column = at - before.lastIndexOf("\n");
    const c = text[at];
    const found = c === undefined ? "end of file" : JSON.stringify(c);
    const hint =
      c === "/"
        ? " (only full-line // comments are supported)"
        : (c === "}" || c === "]") && (expected === "a value" || expected === "a string key")
          ? " (trailing commas are not allowed)"
          : "";
    throw new JsonSyntaxError(`invalid JSON at line ${line}, column ${column}: expected ${expected}, found ${found}${hint}`, line, column);
  };
  const skip = () => {
    while (pos < text.length && " \t\r\n".includes(text[pos]!)) pos++;
  };
  const token = (re: RegExp): string | undefined => {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (m) pos += m[0].length;
    return m?.[0];
  };
  const string = (): string => {
    const start = pos;
    const end = stringLiteralEnd(text, start);
    if (end < 0) return fail("a complete string (control characters must be escaped)", start);
    pos = end;
    const s = JSON.parse(text.slice(start, end)) as string;
    if (LONE_SURROGATE.test(s)) fail("a string without unpaired surrogate escapes", start);
    return s;
  };
  const value = (path: (string | number)[]): unknown => {
    if (path.length > MAX_DEPTH) fail(`at most ${MAX_DEPTH} levels of nesting`);
    skip();
    const c = text[pos];
    if (c === '"') return string();
    if (c === "{") {
      pos++;
      const obj: Record<string, unknown> = {};
      skip();
      if (text[pos] === "}") return (pos++, obj);
      for (;;) {
        skip();
        if (text[pos] !== '"') fail("a string key");
        const key = string();
        skip();
        if (text[pos++] !== ":") fail("':'", pos - 1);
        const v = value([...path, key]);
        if (Object.hasOwn(obj, key)) duplicates.push(formatJsonPath([...path, key]));
        // defineProperty, not assignment: a "__proto__" key must stay a plain own key.
        Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
        skip();
        const sep = text[pos++];
        if (sep === "}") return obj;
        if (sep !== ",") fail("',' or '}'", pos - 1);
      }
    }
    if (c === "[") {
      pos++;
      const arr: unknown[] = [];
      skip();
      if (text[pos] === "]") return (pos++, arr);
      for (;;) {
        arr.push(value([...path, arr.length]));
        skip();
        const sep = text[pos++];
        if (sep === "]") return arr;
        if (sep !== ",") fail("',' or ']'", pos - 1);
      }
    }
    const lit = token(/-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])|true\b|false\b|null\b/y);
    if (lit === undefined) return fail("a value");
    return lit === "true" ? true : lit === "false" ? false : lit === "null" ? null : Number(lit);
  };

  const result = value([]);
  skip();
  if (pos < text.length) fail("end of file after the document");
  return { value: result, duplicates };
}
