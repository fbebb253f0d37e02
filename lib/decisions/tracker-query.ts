// The live tracker query's decision (docs/trackers.md#live-query): of the issues loop.json's tracker
// filter selects, the ones loop.json has no item for yet, as the items to append (`{ref, prompt}`,
// the prompt loop's own words naming the issue: no person reviewed these items, so the issue's
// title reaches the agent only fenced, with its description). An issue already an item (by its ref, however
// written) is left out, and so is one listed twice; nothing is ever taken away: an issue that left
// the filter keeps its item. Pure: plain data in, plain data out (tests/decisions/tracker-query.test.ts).
import { parseRef } from "../definition/refs.ts";

interface QueriedIssue {
  number: number;
}

interface QueryAppend {
  ref: string;
  prompt: string;
}

/** What an appended item asks: loop's words, naming the issue; the issue's own text follows in the handoff, fenced. */
export function queryPrompt(ref: string): string {
  return `Do what the issue ${ref} asks. Its title, description and comments are in this handoff below, as the tracker gives them.`;
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
    // The prompt is loop's own words: nobody reviewed this item, so the issue's text (its title too)
    // reaches the agent only fenced, as the issue context of the handoff (lib/step/forge/issue-context.ts).
    out.push({ ref, prompt: queryPrompt(ref) });
  }
  return out;
}
