// What landing "merge" with a forge does to the repository, said the same way wherever it is said
// (`loop status`, `loop run` when it imports such a loop.json; docs/forge.md#the-two-locks), and the
// operator's second lock on it. Pure and dependency-free: status imports it without loading the forge.

import { pullTerms } from "./provider.ts";

/** The operator's second lock on auto-merge: read at merge time, never captured earlier. */
export const AUTO_MERGE_VAR = "LOOP_ALLOW_AUTO_MERGE";

/** The second lock is open: exactly "1". */
export function autoMergeAllowed(env: Record<string, string | undefined>): boolean {
  return env[AUTO_MERGE_VAR] === "1";
}

/** One line: what "merge" will do, and whether the variable is set in the environment that reads it. */
export function autoMergeSentence(o: { repo: string; base: string; set: boolean; provider?: string }): string {
  return `landing merge: passing items' ${pullTerms(o.provider).short}s are merged into ${o.base} on ${o.repo} when every check is green (needs ${AUTO_MERGE_VAR}=1 at merge time: ${o.set ? "set" : "unset"})`;
}
