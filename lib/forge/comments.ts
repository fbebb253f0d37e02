// Comments as commands and replies (docs/forge.md#comments), decided on plain data: which
// comments are loop's own, what a comment asks for, who may ask. The step (lib/step/forge/comments.ts)
// carries the decisions out.
import { isForgeLogin, type ForgeKind } from "../definition/forge-kinds.ts";

/** The hidden marker every comment loop posts carries; a comment holding it is dropped before anything else. */
export const LOOP_MARKER = "<!-- loop:bot -->";

/** The keywords of `/loop <verb>`. `reset` is deliberately not one: a comment must never erase local state. */
const COMMENT_VERBS = ["start", "stop", "pause", "resume", "retry", "skip"] as const;
export type CommentVerb = (typeof COMMENT_VERBS)[number];

type CommentIntent =
  | { kind: "command"; verb: CommentVerb }
  /** Two or more different commands: refused, and answered with why. */
  | { kind: "conflict"; verbs: string[] }
  | { kind: "text" };

export function isLoopsOwn(body: string): boolean {
  return body.includes(LOOP_MARKER);
}

/**
 * What a comment asks for, from its first line, which must start with `/loop <verb>` (leading
 * blanks aside): a keyword in a quote (`> /loop skip`) or in prose (`Please do NOT /loop skip`)
 * is text. Tokens are whole (`/loop started` is not `start`); an unknown verb (`/loop reset`) is
 * not a command either. Another `/loop <verb>` later on that line with a different verb makes the
 * comment a conflict, refused.
 */
export function commentIntent(body: string): CommentIntent {
  const first = body.replace(/^\s+/, "").split("\n", 1)[0] ?? "";
  const lead = /^\/loop[ \t]+([a-z]+)(?=\s|$)/.exec(first);
  if (!lead || !(COMMENT_VERBS as readonly string[]).includes(lead[1]!)) return { kind: "text" };
  const verbs = new Set<string>();
  for (const m of first.matchAll(/(?:^|\s)\/loop\s+([a-z]+)(?=\s|$)/g)) {
    if ((COMMENT_VERBS as readonly string[]).includes(m[1]!)) verbs.add(m[1]!);
  }
  if (verbs.size > 1) return { kind: "conflict", verbs: [...verbs] };
  return { kind: "command", verb: lead[1] as CommentVerb };
}

/** A login as the forge allows them (ASCII only; GitHub's or GitLab's alphabet). Anything else is nobody. */
export function isLogin(provider: ForgeKind, s: string): boolean {
  return isForgeLogin(provider, s);
}

/** ASCII-only case folding: Unicode folding would make U+212A KELVIN SIGN + "ate" equal "kate". */
function foldAscii(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * Whether a login may steer the loop. Fails closed: only a login of the forge's own alphabet; the
 * allow-list (case-insensitive in ASCII, as GitHub logins and GitLab usernames are), else, only
 * with authorizeWriters, a write access read from the forge by the provider (never what the
 * commenter's own text or GitHub's `author_association` claims). `writer` is null when it was not
 * (or could not be) read: not authorized.
 */
export function authorized(o: { provider: ForgeKind; login: string; allow: readonly string[]; authorizeWriters: boolean; writer: boolean | null }): boolean {
  if (!isLogin(o.provider, o.login)) return false;
  const login = foldAscii(o.login);
  if (o.allow.some((a) => foldAscii(a) === login)) return true;
  return o.authorizeWriters && o.writer === true;
}

/** A comment loop posts: marked, and attributed visibly. */
export function loopComment(text: string, loopName: string): string {
  return `${LOOP_MARKER}\n${text}\n\n— posted by loop \`${loopName}\``;
}

/**
 * How much earlier than the log's cursor a listing starts: the log's times are partly this
 * machine's (a baseline of threads without comments) and the forge's clock may differ from it. Ids,
 * not times, decide what was seen, so starting early only reads a few comments again.
 */
export const CURSOR_MARGIN_MS = 15 * 60_000;

/**
 * Where a poll's listing of comments starts (`since`): the log's cursor, the earliest `readFrom` of
 * the items with threads (lib/log/reducer.ts: every comment created before it is at or below its
 * item's mark) less CURSOR_MARGIN_MS; or the cache's, when it is later (it moved only over comments
 * read and acted on). The cache alone never decides: a lost cache file costs requests, not comments.
 * Null when no item has a thread to read.
 */
export function commentCursor(o: { cached: string | null; readFrom: readonly (string | null)[] }): string | null {
  const times = o.readFrom.flatMap((t) => (t === null || Number.isNaN(Date.parse(t)) ? [] : [Date.parse(t)]));
  if (times.length === 0) return null;
  const fromLog = Math.min(...times) - CURSOR_MARGIN_MS;
  const cached = o.cached === null ? Number.NaN : Date.parse(o.cached);
  return Number.isNaN(cached) || cached <= fromLog ? new Date(fromLog).toISOString() : o.cached;
}
