// Comments as commands and replies (docs/forge.md#comments), decided on plain data: which
// comments are loop's own, what a comment asks for, who may ask. The step (lib/step/forge/comments.ts)
// carries the decisions out.

/** The hidden marker every comment loop posts carries; a comment holding it is dropped before anything else. */
export const LOOP_MARKER = "<!-- loop:bot -->";

/** The keywords of `/loop <verb>`. `reset` is deliberately not one: a comment must never erase local state. */
export const COMMENT_VERBS = ["start", "stop", "pause", "resume", "retry", "skip"] as const;
export type CommentVerb = (typeof COMMENT_VERBS)[number];

export type CommentIntent =
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

/** Permissions that count as "write" for authorizeWriters (GitHub's base roles; never a custom role's name). */
const WRITERS = new Set(["admin", "maintain", "write"]);

/** A forge login as GitHub allows them: ASCII letters, digits and inner hyphens. Anything else is nobody. */
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;

export function isLogin(s: string): boolean {
  return LOGIN.test(s);
}

/** ASCII-only case folding: Unicode folding would make U+212A KELVIN SIGN + "ate" equal "kate". */
function foldAscii(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * Whether a login may steer the loop. Fails closed: only a login of GitHub's own alphabet; the
 * allow-list (case-insensitive in ASCII, as GitHub logins are), else, only with authorizeWriters,
 * a write permission read from the forge (never `author_association`, which the commenter's own
 * text does not prove). `permission` is null when it was not (or could not be) read: not authorized.
 */
export function authorized(o: { login: string; allow: readonly string[]; authorizeWriters: boolean; permission: string | null }): boolean {
  if (!isLogin(o.login)) return false;
  const login = foldAscii(o.login);
  if (o.allow.some((a) => foldAscii(a) === login)) return true;
  return o.authorizeWriters && o.permission !== null && WRITERS.has(o.permission);
}

/** A comment loop posts: marked, and attributed visibly. */
export function loopComment(text: string, loopName: string): string {
  return `${LOOP_MARKER}\n${text}\n\n— posted by loop \`${loopName}\``;
}
