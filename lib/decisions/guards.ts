// The guards against attempts that go nowhere (docs/spend.md#guards), on unless loop.json turns them
// off. Pure: the no-progress verdict's words, and whether a failed attempt failed exactly as the one
// before it (same exit code, same verify output digest), which stops the retries early.
import type { AttemptRecord } from "../log/projection.ts";

/** The start of a failed verdict for an attempt that changed nothing; its next handoff shows it. */
export const NO_PROGRESS = "no_progress: this attempt changed nothing (no commit and a clean worktree)";

/** A failed verdict named no_progress: the attempt's reason with the guard's words first (once: the caller names a verdict one time). */
export function noProgressReason(reason: string): string {
  return `${NO_PROGRESS}; ${reason}`;
}

/**
 * The failed attempt before the last one, when both failed their verify the same way: same exit
 * code and same digest of the whole verify output. Attempts that were not failures (a question, an
 * interrupted launch, an environment fault given back) stand between no two failures.
 */
export function identicalFailure(
  attempts: readonly Pick<AttemptRecord, "n" | "verify" | "outcome">[],
): { previous: number; exitCode: number | null; sha256: string } | null {
  const last = attempts.at(-1);
  const v = last?.verify;
  if (!v || v.passed || v.sha256 === null) return null;
  for (let k = attempts.length - 2; k >= 0; k--) {
    const a = attempts[k]!;
    if (a.outcome !== "failed") continue;
    const w = a.verify;
    if (w && !w.passed && w.exitCode === v.exitCode && w.sha256 === v.sha256) return { previous: a.n, exitCode: v.exitCode, sha256: v.sha256 };
    return null;
  }
  return null;
}

/** The verdict of an item whose retries the identical-failure guard stopped. */
export function identicalFailureReason(o: { previous: number; attempt: number; exitCode: number | null; sha256: string }, reason: string): string {
  const exit = o.exitCode === null ? "no exit code" : `exit ${o.exitCode}`;
  return `identical_failure: attempts ${o.previous} and ${o.attempt} failed the same way (${exit}, verify output sha256 ${o.sha256.slice(0, 12)}…), so no further attempt is made; ${reason}`;
}
