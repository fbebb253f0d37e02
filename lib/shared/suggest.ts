// "Did you mean": the known word a typo most likely meant. A name differing only in case, or within
// a small edit distance (a transposition counting as one edit: `stauts`, `verfy`), else nothing:
// a far-fetched guess is worse than the plain list.

/** The candidate closest to `word` within reach, or null. */
export function closest(word: string, candidates: readonly string[]): string | null {
  const lower = word.toLowerCase();
  const reach = Math.max(1, Math.floor(word.length / 3));
  let best: { c: string; d: number } | null = null;
  for (const c of candidates) {
    if (c === word) continue;
    const d = c.toLowerCase() === lower ? 0 : distance(lower, c.toLowerCase());
    if (d <= reach && (best === null || d < best.d)) best = { c, d };
  }
  return best?.c ?? null;
}

/** ` (did you mean "x"?)`, or "" when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const c = closest(word, candidates);
  return c === null ? "" : `; did you mean ${JSON.stringify(c)}?`;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return Infinity;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  return d[a.length]![b.length]!;
}
