// The text format of `loop add --from-file` and `loop export --text` (docs/cli/loop-add.md#the-text-format):
// one item per line, simple enough to paste from anywhere.
//
//   [<ref> | #<N>] [id:<id>] <prompt>
//
// A blank line, or one whose first non-blank characters are `//`, is skipped. The prompt is the rest
// of the line with its surrounding blanks removed; inside it `\n`, `\r`, `\t`, `\s` (a space) and
// `\\` are escapes, and a backslash before any other character keeps that character as it is (so a
// prompt that starts like a ref is written `\github:…`). What a line cannot carry: dependencies,
// runner, model, verify, attempts, timeouts. Pure.
import { isItemId, itemIdFromRef, parseRef, refPrefix } from "../definition/refs.ts";
import { RefError, UsageError } from "../shared/errors.ts";
import { slugFromPrompt } from "./slug.ts";

interface TextItem {
  /** 1-based line number in the input. */
  line: number;
  /** Canonical ref, or null. */
  ref: string | null;
  /** The id given with `id:`, or null (then it comes from the ref, else from the prompt). */
  id: string | null;
  prompt: string;
}

/** The repository `#N` refers to: the forge section's (docs/cli/loop-add.md). Null when loop.json has none. */
export interface DefaultRepo {
  provider: string;
  host: string | null;
  owner: string;
  repo: string;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, (_m, c: string) => ({ n: "\n", r: "\r", t: "\t", s: " " })[c] ?? c);
}

/** Parses the text; throws a UsageError naming the first bad line (`<source>:<line>: …`). */
export function parseItemLines(text: string, o: { source: string; defaultRepo: DefaultRepo | null }): TextItem[] {
  const out: TextItem[] = [];
  const lines = text.replace(/^\uFEFF/, "").split("\n");
  lines.forEach((raw, i) => {
    const line = i + 1;
    const fail = (why: string): never => {
      throw new UsageError(`${o.source}:${line}: ${why}`);
    };
    let rest = raw.replace(/\r$/, "").trim();
    if (rest === "" || rest.startsWith("//")) return;
    let ref: string | null = null;
    let id: string | null = null;
    const first = /^(\S+)(?:\s+|$)/.exec(rest)!;
    const hashN = /^#([0-9]+)$/.exec(first[1]!);
    if (hashN) {
      if (o.defaultRepo === null)
        fail(
          `"#${hashN[1]}" needs the "forge" section of loop.json to say which repository it is in (it has none); write the whole ref, e.g. github:owner/repo#${hashN[1]}`,
        );
      const r = o.defaultRepo!;
      ref = parseRef(`${refPrefix({ provider: r.provider, host: r.host, path: `${r.owner}/${r.repo}` })}#${hashN[1]}`).canonical;
      rest = rest.slice(first[0].length);
    } else if (/^[a-z][a-z0-9-]*:\S*#/.test(first[1]!)) {
      // Shaped like a ref: it must be one (a typo is an error, not the start of a prompt).
      try {
        ref = parseRef(first[1]!).canonical;
      } catch (e) {
        if (e instanceof RefError) fail(e.message);
        throw e;
      }
      rest = rest.slice(first[0].length);
    }
    const idTok = /^id:(\S*)(?:\s+|$)/.exec(rest);
    if (idTok) {
      if (!isItemId(idTok[1]!))
        fail(
          `id:${JSON.stringify(idTok[1])} is not an item id (lowercase letters, digits and '-', with single '.' or '_' between them, at most 64 characters)`,
        );
      id = idTok[1]!;
      rest = rest.slice(idTok[0].length);
    }
    const prompt = unescape(rest);
    if (prompt.trim() === "") fail("no prompt after the ref or id");
    out.push({ line, ref, id, prompt });
  });
  return out;
}

/** The id an item without `id:` gets: from its ref when it has one, else from its prompt (as loop.json derives it). */
export function derivedId(item: { ref: string | null; prompt: string }): string {
  return item.ref !== null ? itemIdFromRef(parseRef(item.ref)) : slugFromPrompt(item.prompt);
}

function escapePrompt(prompt: string): string {
  let s = prompt.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  s = s.replace(/^ +/, (m) => "\\s".repeat(m.length)).replace(/ +$/, (m) => "\\s".repeat(m.length));
  // A first word the parser would take for a ref, `#N`, `id:` or a comment is kept literal.
  if (/^(\/\/|#[0-9]+(\s|$)|id:|[a-z][a-z0-9-]*:\S*#)/.test(s)) s = `\\${s}`;
  return s;
}

/** One line per item; `id:` only where the id is not the one a reader would derive. */
export function formatItemLines(items: readonly { id: string; ref: string | null; prompt: string }[]): string {
  return items
    .map((it) => {
      const parts: string[] = [];
      if (it.ref !== null) parts.push(it.ref);
      if (it.id !== derivedId(it)) parts.push(`id:${it.id}`);
      parts.push(escapePrompt(it.prompt));
      return parts.join(" ") + "\n";
    })
    .join("");
}
