// The live tracker query's decision (docs/trackers.md#live-query): of the issues loop.json's tracker
// filter selects, the ones loop.json has no item for yet, as the items to append (`{ref, prompt:
// <title>}`, what `loop add --from-issues` appends). An issue already an item (by its ref, however
// written) is left out, and so is one listed twice; nothing is ever taken away: an issue that left
// the filter keeps its item. Pure: plain data in, plain data out (tests/decisions/tracker-query.test.ts).
import { parseRef } from "../definition/refs.ts";

interface QueriedIssue {
  number: number;
  /** The issue's title, already sanitized (one line, capped). */
  title: string;
}

interface QueryAppend {
  ref: string;
  prompt: string;
}

export function queryAppends(o: {
  provider: "linear" | "jira";
  /** The team's (Linear) or project's (Jira) key. */
  key: string;
  issues: readonly QueriedIssue[];
  /** The refs of loop.json's items, as written (null for an item without one). */
  existingRefs: readonly (string | null)[];
}): QueryAppend[] {
  const canonical = (ref: string): string | null => {
    try {
      return parseRef(ref).canonical;
    } catch {
      return null;
    }
  };
  const known = new Set(o.existingRefs.flatMap((r) => (r === null ? [] : [canonical(r) ?? r])));
  const out: QueryAppend[] = [];
  for (const issue of o.issues) {
    const ref = canonical(`${o.provider}:${o.key}-${issue.number}`);
    if (ref === null || known.has(ref)) continue;
    known.add(ref);
    // An issue without a title still has a prompt: its ref (loop.json refuses an empty one).
    out.push({ ref, prompt: issue.title.trim() || ref });
  }
  return out;
}
