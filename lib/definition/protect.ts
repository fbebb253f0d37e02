// Protected paths (docs/loop-json.md#protect): files an agent must not change. loop.json's `protect`
// globs are added to the built-in ones (loop.json itself and the state root), never replacing them;
// an attempt whose branch changes a matching path fails `protected_path_changed` before its verify
// runs (lib/step/protect.ts). Pure: patterns and paths in, the paths that match out.
//
// A pattern is a glob over paths relative to the repository's top level, as git prints them:
// `*` and `?` stay inside one path segment, `**` spans segments, `[abc]` and `{a,b}` as usual
// (Bun.Glob). A pattern protects a path when it matches the path or one of its parent folders, so
// `tests` and `tests/**` both protect everything under tests/.
import { isAbsolute, relative } from "node:path";

/** Why `pattern` cannot be a protect glob (a message for the operator), or undefined. */
export function protectPatternProblem(pattern: string): string | undefined {
  if (pattern.trim() === "") return "must not be empty";
  if (/[\x00-\x1f\x7f]/.test(pattern)) return "must not contain control characters";
  if (pattern.startsWith("!")) return "must not start with '!': protect only adds paths (the built-in ones always hold)";
  if (pattern.startsWith("/")) return "must be relative to the repository's top level (no leading '/')";
  const segments = stripTrailingSlash(pattern).split("/");
  if (segments.some((s) => s === "")) return "must not contain an empty path segment ('//')";
  if (segments.some((s) => s === "." || s === ".."))
    return "must not contain '.' or '..' segments (paths are as git prints them, from the repository's top level)";
  const unclosed = unbalanced(pattern);
  if (unclosed) return unclosed;
  return undefined;
}

function stripTrailingSlash(p: string): string {
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

/** An unclosed `[` or `{` (or a stray closer): Bun.Glob would read it literally and match nothing the operator meant. */
function unbalanced(p: string): string | undefined {
  let brace = 0;
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === "\\") {
      i++; // an escaped character is literal
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "{") brace++;
    else if (c === "}") {
      if (brace === 0) return "has a '}' without its '{'";
      brace--;
    }
  }
  if (inClass) return "has a '[' without its ']' (write '\\[' for a literal bracket)";
  if (brace > 0) return "has a '{' without its '}'";
  return undefined;
}

/**
 * The built-in protected paths: loop.json itself and, when it lies inside the repository, the
 * state root. `repoTop` is the repository's top level, `root` the folder holding loop.json.
 */
export function builtinProtect(o: { repoTop: string; root: string; stateRoot: string }): string[] {
  const inside = (p: string): string | null => {
    const rel = relative(o.repoTop, p);
    return rel.startsWith("..") || isAbsolute(rel) ? null : rel.split("\\").join("/");
  };
  const out: string[] = [];
  const root = inside(o.root);
  if (root !== null) out.push(root === "" ? "loop.json" : `${root}/loop.json`);
  const state = inside(o.stateRoot);
  if (state) out.push(state);
  return out;
}

/** Which of `changed` (paths relative to the repository's top level) the patterns protect, in order, each once. */
export function protectedChanges(patterns: readonly string[], changed: readonly string[]): string[] {
  const globs = patterns.map((p) => new Bun.Glob(stripTrailingSlash(p)));
  const hit = (path: string) => {
    // The path itself, then each parent folder: a pattern naming a folder protects what is in it.
    for (let p = path; p !== ""; p = p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "") if (globs.some((g) => g.match(p))) return true;
    return false;
  };
  return [...new Set(changed)].filter(hit);
}
