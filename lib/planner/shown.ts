// How drafted text is shown to a person before it is written (docs/cli/loop-plan.md#review): escaped
// for the terminal, runs of blank or hidden characters folded into a count, and a field still too
// long clipped at both ends, its length said. A planner (or the issue it read) must not be able to
// push a dangerous head of a verify command out of sight behind a million spaces. What counts as a
// hidden character is printable's (lib/shared/printable.ts) alone: `hidden` is the one place this
// module asks. The editable value of "edit the prompt" is escaped too, reversibly (`editable`).
// Pure.
import { printable } from "../shared/printable.ts";

/** A run of this many characters that are blank or hidden (but plain spaces) is folded into its count. */
const FOLD_RUN = 4;
/** A run of plain spaces is folded from this many on: fewer is indentation. */
const FOLD_SPACES = 16;
/** Characters of a one-line field shown at most: more is clipped at both ends. */
export const FIELD_SHOWN = 400;
/** Lines of a prompt shown at most: more are clipped at both ends. */
export const PROMPT_LINES_SHOWN = 200;
/** A run of this many blank lines in a prompt is folded into one line saying how many. */
const FOLD_BLANK_LINES = 3;

/** A character printable() would escape: control and invisible formatting characters. */
function hidden(c: string): boolean {
  return printable(c) !== c;
}
const blank = (c: string) => /^\s$/u.test(c);

interface Shown {
  text: string;
  /** A run of blank or hidden characters was folded into a count. */
  folded: boolean;
  /** Characters of the middle that are not shown (0: shown whole). */
  cut: number;
  /** The field's length in characters (code points). */
  length: number;
}

/** A piece of what is shown: the text, and how many characters of the original it stands for. */
interface Piece {
  text: string;
  chars: number;
}

/** The pieces of a text: every character escaped, runs of blank or hidden ones folded. */
function pieces(s: string): { pieces: Piece[]; folded: boolean; length: number } {
  const cs = Array.from(s);
  const out: Piece[] = [];
  let folded = false;
  for (let i = 0; i < cs.length; ) {
    const c = cs[i]!;
    if (!blank(c) && !hidden(c)) {
      out.push({ text: c, chars: 1 });
      i++;
      continue;
    }
    let j = i;
    while (j < cs.length && (blank(cs[j]!) || hidden(cs[j]!))) j++;
    const run = cs.slice(i, j);
    const spaces = run.every((x) => x === " ");
    if (run.length >= (spaces ? FOLD_SPACES : FOLD_RUN)) {
      out.push({ text: foldMark(run), chars: run.length });
      folded = true;
    } else for (const x of run) out.push({ text: printable(x), chars: 1 });
    i = j;
  }
  return { pieces: out, folded, length: cs.length };
}

/** `⟨1000000 spaces⟩`, `⟨46 × \u200b⟩`, `⟨46 hidden or blank characters: \u{e0069}\u{e0067}\u{e006e}…⟩`. */
function foldMark(run: string[]): string {
  const n = run.length.toLocaleString("en-US");
  if (run.every((x) => x === " ")) return `⟨${n} spaces⟩`;
  if (run.every((x) => x === run[0])) return `⟨${n} × ${printable(run[0]!)}⟩`;
  return `⟨${n} hidden or blank characters: ${run.slice(0, 3).map(printable).join("")}…⟩`;
}

/** The pieces' text, clipped at both ends to about `max` characters. */
function clipped(ps: Piece[], max: number): { text: string; cut: number } {
  const total = ps.reduce((n, p) => n + p.text.length, 0);
  if (total <= max) return { text: ps.map((p) => p.text).join(""), cut: 0 };
  let headLen = 0;
  let head = 0;
  while (head < ps.length && headLen + ps[head]!.text.length <= max / 2) headLen += ps[head++]!.text.length;
  let tailLen = 0;
  let tail = ps.length;
  while (tail > head && tailLen + ps[tail - 1]!.text.length <= max / 2) tailLen += ps[--tail]!.text.length;
  const cut = ps.slice(head, tail).reduce((n, p) => n + p.chars, 0);
  const text =
    ps
      .slice(0, head)
      .map((p) => p.text)
      .join("") +
    `⟨… ${cut.toLocaleString("en-US")} characters not shown …⟩` +
    ps
      .slice(tail)
      .map((p) => p.text)
      .join("");
  return { text, cut };
}

/** One line of text (a verify, a model, a line of a prompt) as review shows it; `max` clips it. */
export function shownLine(s: string, max: number = FIELD_SHOWN): Shown {
  const p = pieces(s);
  const c = clipped(p.pieces, max);
  return { text: c.text, folded: p.folded, cut: c.cut, length: p.length };
}

interface ShownPrompt {
  lines: string[];
  folded: boolean;
  /** Lines of the middle that are not shown (0: shown whole). */
  cutLines: number;
  lineCount: number;
}

/**
 * A prompt as review shows it, one entry per line: each line escaped and folded (not clipped: the
 * prompt is what the agent reads), runs of blank lines folded, and past PROMPT_LINES_SHOWN lines
 * its middle left out, with how many lines that is.
 */
export function shownPrompt(prompt: string): ShownPrompt {
  const raw = prompt.split("\n");
  let folded = false;
  const lines: string[] = [];
  for (let i = 0; i < raw.length; ) {
    let j = i;
    while (j < raw.length && raw[j]!.trim() === "") j++;
    if (j - i >= FOLD_BLANK_LINES) {
      lines.push(`⟨${(j - i).toLocaleString("en-US")} blank lines⟩`);
      folded = true;
      i = j;
      continue;
    }
    const s = shownLine(raw[i]!, Infinity);
    folded ||= s.folded;
    lines.push(s.text);
    i++;
  }
  if (lines.length <= PROMPT_LINES_SHOWN) return { lines, folded, cutLines: 0, lineCount: raw.length };
  const half = PROMPT_LINES_SHOWN / 2;
  const cutLines = lines.length - 2 * half;
  return {
    lines: [...lines.slice(0, half), `⟨… ${cutLines.toLocaleString("en-US")} lines not shown …⟩`, ...lines.slice(-half)],
    folded,
    cutLines,
    lineCount: raw.length,
  };
}

/**
 * A text as it can be edited at a prompt: on one line, every character that could act on the
 * terminal escaped (`\n`, `\u001b`, `\u202e`), and a backslash doubled, so fromEditable gives back
 * exactly the text when nothing was changed.
 */
export function editable(s: string): string {
  let out = "";
  for (const c of s) {
    if (c === "\\") out += "\\\\";
    else if (c === "\n") out += "\\n";
    else if (c === "\t") out += "\\t";
    else if (c === "\r") out += "\\r";
    else if (hidden(c)) for (let k = 0; k < c.length; k++) out += `\\u${c.charCodeAt(k).toString(16).padStart(4, "0")}`;
    else out += c;
  }
  return out;
}

/** The text an edited value stands for, or the problem with it (a backslash that starts no escape). */
export function fromEditable(s: string): { ok: true; text: string } | { ok: false; problem: string } {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = s[++i];
    if (e === "\\") out += "\\";
    else if (e === "n") out += "\n";
    else if (e === "t") out += "\t";
    else if (e === "r") out += "\r";
    else if (e === "u" && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 1, i + 5))) {
      out += String.fromCharCode(parseInt(s.slice(i + 1, i + 5), 16));
      i += 4;
    } else return { ok: false, problem: `a backslash starts an escape (\\n, \\t, \\uXXXX); write \\\\ for one backslash (at character ${i})` };
  }
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(out))
    return { ok: false, problem: "a \\uXXXX escape leaves half of a surrogate pair: that is not text" };
  return { ok: true, text: out };
}
